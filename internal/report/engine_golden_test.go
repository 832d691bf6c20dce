package report_test

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/testing/goldentest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/secret"
)

// What the engine returns, drawn as the commands draw it: plan, apply and
// destroy of one story run by a real engine against the fake cloud, then
// rendered by FromPlan / FromRun and WriteText.

const (
	engineSecret = "sk-the-api-key-value-1234"
	engineKeyDB  = "object:p1:db-pr-12"
	engineKeyApp = "object:p1:app-pr-12"
)

const engineBasicPlan = optest.BasicPlan

const engineDeployPlan = `
version: 1
changes:
  - { id: app, adapter: fake, op: object, name: "app-${ctx.scope}", deploy: true }
  - { id: cb, adapter: fake, op: item, list: callbacks, item: { from: app.deploy_url } }
  - { id: other, adapter: fake, op: object, name: "other-${ctx.scope}" }
`

// engineWorld is one engine on the fake cloud, a memory store and a fake
// time.
type engineWorld struct {
	t     *testing.T
	cloud *optest.Cloud
	store *memstore.Store
	eng   *engine.Engine
	env   map[string]string
}

func newEngineWorld(t *testing.T) *engineWorld {
	tm := enginetest.NewTime(time.Date(2026, 12, 1, 14, 2, 0, 0, time.UTC))
	w := &engineWorld{t: t, cloud: optest.New(), store: memstore.New(tm), env: map[string]string{"API_KEY": engineSecret}}
	w.eng = &engine.Engine{Store: w.store, Ops: w.cloud.Registry(),
		Secrets:  secret.New(secret.Config{LookupEnv: func(n string) (string, bool) { v, ok := w.env[n]; return v, ok }}),
		Redactor: redact.New(), Clock: tm, Rand: &countRand{}, UnsavedDir: t.TempDir()}
	return w
}

// countRand is a deterministic byte source, so run ids are stable.
type countRand struct {
	mu sync.Mutex
	n  byte
}

func (r *countRand) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range p {
		r.n++
		p[i] = r.n
	}
	return len(p), nil
}

func enginePlan(t *testing.T, src string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(src, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func enginePR(n int) scope.Ctx {
	return scope.Ctx{Env: "preview", Scope: scope.PRScope(n), Git: scope.Git{Branch: "feat/x", SHA: "aaaaaaa1111111111111111111111111111111", ShortSHA: "aaaaaaa"},
		PR: scope.PR{Number: &n}, Repo: "acme/shop"}
}

var engineLinks = report.Links{Server: "https://github.com", Repo: "acme/shop", RunID: 9001, RunAttempt: 1, SHA: "aaaaaaa1111111111111111111111111111111", PR: 12}

func drawPlan(res *engine.PlanResult, err error) []byte {
	var b bytes.Buffer
	_ = report.WriteText(&b, report.FromPlan(res, err, engineLinks), report.TextOptions{Width: 100})
	return b.Bytes()
}

func drawRun(command string, res *engine.RunResult, err error, p *plan.Plan) []byte {
	var b bytes.Buffer
	_ = report.WriteText(&b, report.FromRun(command, res, err, p, engineLinks), report.TextOptions{Width: 100})
	return b.Bytes()
}

// engineGolden compares got with testdata/engine/<name>, temporary paths
// normalised.
func engineGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = regexp.MustCompile(`/tmp/[^ "\n]*/`).ReplaceAll(got, []byte("$$TMP/"))
	goldentest.Check(t, filepath.Join("testdata", "engine", name), got)
}

// A fresh plan, its apply, a plan that finds drift, and a destroy that
// leaves a resource, as the commands print them.
func TestEngineRunsRendered(t *testing.T) {
	w := newEngineWorld(t)
	p := enginePlan(t, engineBasicPlan)
	c := enginePR(12)
	ctx := context.Background()

	pres, err := w.eng.Plan(ctx, p, c, engine.Options{})
	engineGolden(t, "plan-fresh.txt", drawPlan(pres, err))

	res, err := w.eng.Apply(ctx, p, c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	engineGolden(t, "apply-created.txt", drawRun("apply", res, err, p))

	w.cloud.Edit(engineKeyDB, map[string]any{"size": 2})
	w.cloud.SeedObject("p1", "db-pr-12-old", nil, nil)
	pres, err = w.eng.Plan(ctx, p, c, engine.Options{})
	engineGolden(t, "plan-drift.txt", drawPlan(pres, err))

	w.cloud.Edit(engineKeyDB, map[string]any{"size": 1})
	w.cloud.FailNext(optest.Match{Key: engineKeyDB, Method: optest.MethodDelete}, nil, 1)
	res, err = w.eng.Destroy(ctx, c, engine.Options{})
	engineGolden(t, "destroy-failed.txt", drawRun("destroy", res, err, nil))
}

// A plan waiting on an external event, and an apply whose final receipt
// write failed: the output says where the receipt was kept.
func TestEngineWaitingAndUnsavedRendered(t *testing.T) {
	w := newEngineWorld(t)
	p := enginePlan(t, engineDeployPlan)
	ctx := context.Background()
	pres, err := w.eng.Plan(ctx, p, enginePR(3), engine.Options{})
	engineGolden(t, "plan-waiting.txt", drawPlan(pres, err))

	st := &keepingStore{Store: w.store, saved: map[string]*receipt.Receipt{}}
	w.eng.Store = st
	// The fault hits the third receipt write: which line's checkpoint that
	// is depends on the interleaving unless lines run one at a time.
	w.store.Inject(memstore.Fault{Method: memstore.MethodWrite, Skip: 2, Err: errs.New(errs.STORE_UNAVAILABLE, "remote hung up")})
	res, err := w.eng.Apply(ctx, p, enginePR(3), engine.Options{Parallelism: 1})
	if errs.CodeOf(err) != errs.STORE_UNAVAILABLE || res == nil || res.Unsaved == nil || res.Unsaved.Ref == "" {
		t.Fatalf("no unsaved receipt: %v %+v", err, res)
	}
	text := drawRun("apply", res, err, p)
	if !bytes.Contains(text, []byte("kept in the store as "+res.Unsaved.Ref)) {
		t.Errorf("the output does not say where the receipt was kept:\n%s", text)
	}
	engineGolden(t, "apply-unsaved.txt", text)
}

// keepingStore is a memory store that also keeps unsaved receipts, as the
// git store does on side refs (engine.UnsavedRefs).
type keepingStore struct {
	*memstore.Store
	saved map[string]*receipt.Receipt
}

func (s *keepingStore) SaveUnsaved(_ context.Context, r *receipt.Receipt) (string, error) {
	ref := "sponson-receipts/_unsaved/" + r.Env + "/" + r.Scope + "/" + r.RunID
	s.saved[ref] = r
	return ref, nil
}

func (s *keepingStore) LoadUnsaved(_ context.Context, ref string) (*receipt.Receipt, error) {
	return s.saved[ref], nil
}

// No secret reaches what the commands print: not a value the plan uses,
// not a provider's error that echoes it, not a rotated one shown as an
// update (by its state and reference only).
func TestEngineRenderedTextHoldsNoSecret(t *testing.T) {
	w := newEngineWorld(t)
	p := enginePlan(t, engineBasicPlan)
	c := enginePR(12)
	ctx := context.Background()
	var out bytes.Buffer
	pres, err := w.eng.Plan(ctx, p, c, engine.Options{})
	out.Write(drawPlan(pres, err))
	w.cloud.FailNext(optest.Match{Key: engineKeyApp, Method: optest.MethodCreate}, errs.New(errs.PROVIDER_INVALID, "api_key %q is not valid here", engineSecret), 1)
	res, err := w.eng.Apply(ctx, p, c, engine.Options{})
	if err == nil || !strings.Contains(res.Receipt.Lines["app"].Error, "***") {
		t.Fatalf("the provider's error was not kept, masked: %v", err)
	}
	out.Write(drawRun("apply", res, err, p))
	res, err = w.eng.Apply(ctx, p, c, engine.Options{})
	out.Write(drawRun("apply", res, err, p))
	w.env["API_KEY"] = "sk-a-rotated-api-key-value-5678"
	pres, err = w.eng.Plan(ctx, p, c, engine.Options{})
	rotated := drawPlan(pres, err)
	if !bytes.Contains(rotated, []byte("env://API_KEY")) || !strings.Contains(string(rotated), "update") {
		t.Errorf("a rotated secret is not shown as an update by its reference:\n%s", rotated)
	}
	out.Write(rotated)
	res, err = w.eng.Destroy(ctx, c, engine.Options{})
	out.Write(drawRun("destroy", res, err, nil))
	for _, s := range []string{engineSecret, "sk-a-rotated-api-key-value-5678"} {
		if bytes.Contains(out.Bytes(), []byte(s)) {
			t.Errorf("the rendered output holds a secret:\n%s", out.String())
		}
	}
}
