package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// notes is a provider that lives only in this file: a list of notes under
// /notes. Registering it is one line (withProvider); everything else — its
// routes behind authentication and chaos, the write log, snapshots,
// drift, Env, Reset — comes from the shared machinery.
type notes struct {
	*core
	routes *api
	notes  []string
}

func newNotes(c *core) provider {
	n := &notes{core: c}
	p := &api{name: "notes", mux: http.NewServeMux(), token: func() string { return "notes-token" }}
	p.env = func(url string) []string { return []string{"NOTES_URL=" + url} }
	p.fail = func(w http.ResponseWriter, status int, code, msg string) {
		writeJSON(w, status, map[string]any{"error": code})
	}
	p.deny = func(w http.ResponseWriter, missing bool) { p.fail(w, http.StatusUnauthorized, "unauthorized", "") }
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		p.fail(w, http.StatusTooManyRequests, "slow_down", "")
	}
	p.handle("POST /notes", func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.notes = append(n.notes, string(readBody(r)))
		writeJSON(w, http.StatusCreated, map[string]any{"count": len(n.notes)})
	})
	p.handle("GET /notes", func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		defer n.mu.Unlock()
		writeJSON(w, http.StatusOK, n.notes)
	})
	n.routes = p
	return n
}

func (n *notes) api() *api { return n.routes }
func (n *notes) reset()    { n.notes = nil }
func (n *notes) snapshot(s *Snapshot, now time.Time) {
	if s.More == nil {
		s.More = map[string]any{}
	}
	s.More["notes"] = slices.Clone(n.notes)
}
func (n *notes) drift(d Drift) (string, error) {
	if d.Action != DriftRemove {
		return "", badAction(d)
	}
	n.notes = slices.DeleteFunc(n.notes, func(x string) bool { return x == d.Value })
	return d.Value, nil
}

// withProvider adds a provider to the list for one test.
func withProvider(t *testing.T, mk func(*core) provider) {
	saved := providers
	providers = append(slices.Clip(providers), mk)
	t.Cleanup(func() { providers = saved })
}

func TestAProviderIsOneFileAndOneLine(t *testing.T) {
	withProvider(t, newNotes)
	tc := newCloud(t, Options{})

	tc.raw(t.Context(), "POST", "/notes/notes", "", `x`, nil).want(t, 401)
	tc.raw(t.Context(), "POST", "/notes/notes", "Bearer notes-token", `first`, nil).want(t, 201)
	tc.c.MustAddRule(Rule{Kind: KindRateLimit, Provider: "notes", Count: 1})
	if r := tc.raw(t.Context(), "POST", "/notes/notes", "Bearer notes-token", `limited`, nil).want(t, 429); r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After on the provider's own 429")
	}
	tc.raw(t.Context(), "POST", "/notes/notes", "Bearer notes-token", `second`, nil).want(t, 201)

	var got []string
	for _, w := range tc.c.Writes() {
		got = append(got, fmt.Sprintf("%s %s %s %d", w.Provider, w.Method, w.Path, w.Status))
	}
	if want := []string{"notes POST /notes 401", "notes POST /notes 201", "notes POST /notes 429", "notes POST /notes 201"}; !slices.Equal(got, want) {
		t.Errorf("write log %q, want %q", got, want)
	}
	if s := tc.c.State().More["notes"]; !slices.Equal(s.([]string), []string{"first", "second"}) {
		t.Errorf("snapshot %v", s)
	}
	if _, err := tc.c.Drift(Drift{Provider: "notes", Action: DriftRemove, Value: "first"}); err != nil {
		t.Fatal(err)
	}
	var listed []string
	if err := json.Unmarshal(tc.raw(t.Context(), "GET", "/notes/notes", "Bearer notes-token", nil, nil).want(t, 200).body, &listed); err != nil || !slices.Equal(listed, []string{"second"}) {
		t.Errorf("after drift %q (%v)", listed, err)
	}
	if env := tc.c.Env("http://sim"); !slices.Contains(env, "NOTES_URL=http://sim/notes") {
		t.Errorf("Env %q", env)
	}
	tc.c.Reset()
	if s := tc.c.State().More["notes"]; len(s.([]string)) != 0 {
		t.Errorf("after reset %v", s)
	}
}

// Every route a described provider registers is an operation of its
// description: nothing is served that the real API does not have.
func TestProvidersServeOnlyTheirDescriptions(t *testing.T) {
	c := New(Options{})
	for _, name := range c.order {
		a := c.providers[name]
		if len(a.described.files) == 0 || a.described.partial {
			continue // undescribed (see describe.go), or any path by design
		}
		for _, pattern := range a.patterns {
			method, path, ok := strings.Cut(pattern, " ")
			if !ok {
				continue // the catch-all 404
			}
			segs := strings.Split(strings.Trim(path, "/"), "/")
			for i, s := range segs {
				if strings.HasPrefix(s, "{") {
					segs[i] = "x"
				}
			}
			sub := "/" + strings.Join(segs, "/")
			if !strings.HasPrefix(sub, a.described.base+"/") {
				t.Errorf("%s: %s is outside the base path %s", name, pattern, a.described.base)
				continue
			}
			found := false
			for _, f := range a.described.files {
				d, err := loadDescription(f)
				if err != nil {
					t.Fatal(err)
				}
				if rt, _, _ := d.match(method, strings.TrimPrefix(sub, a.described.base)); rt != nil {
					found = true
				}
			}
			if !found {
				t.Errorf("%s serves %s, which no operation of %v describes", name, pattern, a.described.files)
			}
		}
	}
}
