package adaptertest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/errs"
)

// memOp is an in-memory op of one object per line (key obj:<name>, value
// the fields), with switches that break one rule each, so the suite is
// seen to catch them.
type memOp struct {
	mu      sync.Mutex
	objects map[string]memObj
	writes  int
	nextID  int
	token   string
	// broken rule
	mode string
}

type memObj struct {
	id     string
	fields map[string]any
}

const goodToken = "mem-token-secret"

func newMem(mode string) *memOp {
	return &memOp{objects: map[string]memObj{}, token: goodToken, mode: mode}
}

func (m *memOp) Spec() adapter.Spec {
	return adapter.Spec{Adapter: "mem", Op: "object", Outputs: []adapter.OutputSpec{{Name: "id", When: adapter.Immediate}}}
}

func (m *memOp) auth() error {
	if m.token != goodToken {
		return errs.New(errs.PROVIDER_AUTH, "mem: token refused")
	}
	return nil
}

func (m *memOp) key(req adapter.Request) string {
	if m.mode == "same-key" {
		return "obj:one"
	}
	return "obj:" + req.Params["name"].(string)
}

func (m *memOp) res(key string, o memObj) adapter.Resource {
	v := map[string]any{}
	for k, x := range o.fields {
		v[k] = x
	}
	if m.mode == "id-in-value" {
		v["id"] = o.id
	}
	return adapter.Resource{Key: key, ID: o.id, Value: v, Outputs: map[string]any{"id": o.id}}
}

func (m *memOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	if err := m.auth(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mode == "read-writes" {
		m.writes++
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if o, ok := m.objects[m.key(req)]; ok {
		r := m.res(m.key(req), o)
		live.Resources = append(live.Resources, r)
		live.Outputs = r.Outputs
	}
	return live, nil
}

func (m *memOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	key := m.key(req)
	want := req.Params["fields"]
	d := adapter.ResourceDiff{Key: key, Desired: want, Action: adapter.Create}
	if lr := live.Resource(key); lr != nil {
		d.Action = adapter.Update
		if adapter.Equal(lr.Value, want) {
			d.Action = adapter.Unchanged
		}
	}
	return []adapter.ResourceDiff{d}, nil
}

func (m *memOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	if err := m.auth(); err != nil {
		return nil, err
	}
	key := m.key(req)
	m.mu.Lock()
	o, exists := m.objects[key]
	m.mu.Unlock()
	fields, _ := req.Params["fields"].(map[string]any)
	var created []string
	switch {
	case !exists:
		if m.mode == "create-before-intend" {
			m.mu.Lock()
			m.writes++
			m.mu.Unlock()
		}
		if err := intend(key); err != nil {
			return nil, err
		}
		m.mu.Lock()
		m.nextID++
		o = memObj{id: "id-" + strings.Repeat("x", m.nextID), fields: fields}
		m.objects[key] = o
		m.writes++
		m.mu.Unlock()
		created = []string{key}
	case m.mode == "always-writes" || !adapter.Equal(o.fields, fields):
		m.mu.Lock()
		o.fields = fields
		m.objects[key] = o
		m.writes++
		m.mu.Unlock()
	}
	r := m.res(key, o)
	return &adapter.Result{Resources: []adapter.Resource{r}, Created: created, Outputs: r.Outputs}, nil
}

func (m *memOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	if err := m.auth(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return nil, nil
	}
	r := m.res(key, o)
	return &r, nil
}

func (m *memOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	if err := m.auth(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[r.Key]; !ok {
		if m.mode == "gone-fails" {
			return errs.New(errs.PROVIDER_NOT_FOUND, "mem: %s is gone", r.Key)
		}
		return nil
	}
	delete(m.objects, r.Key)
	m.writes++
	return nil
}

func (m *memOp) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

func req(name string) adapter.Request {
	return adapter.Request{Params: map[string]any{"name": name, "fields": map[string]any{"size": int64(2), "tags": []any{"a"}}}}
}

func caseFor(mode string) adaptertest.Case {
	op := newMem(mode)
	bad := &memOp{objects: op.objects, token: "wrong", mode: mode}
	return adaptertest.Case{
		Op: op, Request: req("a"), Other: req("b"),
		World:        adaptertest.World{Writes: op.count, Secrets: []string{goodToken}},
		Unauthorized: bad,
	}
}

func TestCompliantOpPasses(t *testing.T) {
	adaptertest.Run(t, caseFor(""))
}

// TestViolation runs the suite against a broken op; it is the child of
// TestSuiteCatchesViolations and is skipped on its own.
func TestViolation(t *testing.T) {
	mode := os.Getenv("ADAPTERTEST_MODE")
	if mode == "" {
		t.Skip("run by TestSuiteCatchesViolations")
	}
	adaptertest.Run(t, caseFor(mode))
}

func TestSuiteCatchesViolations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	for mode, want := range map[string]string{
		"read-writes":          "must never write",
		"create-before-intend": "Apply whose intend failed wrote",
		"same-key":             "declared by both requests",
		"id-in-value":          "holds the provider's id",
		"always-writes":        "an unchanged Apply wrote",
		"gone-fails":           "already gone",
	} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestViolation$", "-test.v")
			cmd.Env = append(os.Environ(), "ADAPTERTEST_MODE="+mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed an op that breaks %q:\n%s", mode, out)
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("the suite failed, but not with %q:\n%s", want, out)
			}
		})
	}
}
