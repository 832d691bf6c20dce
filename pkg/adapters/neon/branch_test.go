package neon_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/adapters/neon"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

type world struct {
	*simtest.World
	project string
}

func newWorld(t *testing.T, opts sim.Options) *world {
	t.Helper()
	w := &world{World: simtest.New(t, opts)}
	w.project = w.Cloud.Console.SeedNeonProject(sim.NeonProject{}).ID
	return w
}

func (w *world) op() *neon.BranchOp { return neon.NewBranch(w.With(nil), w.Client) }

var run = adapter.RunCtx{Env: "preview", Scope: "pr-7", Branch: "feat/x"}

func (w *world) request(params map[string]any) adapter.Request {
	return adapter.Request{Line: "db", Params: params, Provider: adapter.Provider{"project": w.project}, Run: run}
}

func TestConformance(t *testing.T) {
	w := newWorld(t, sim.Options{Seed: 2})
	adaptertest.Run(t, adaptertest.Case{
		Op:            w.op(),
		Request:       w.request(map[string]any{}),
		Other:         w.request(map[string]any{"name": "sponson/preview/pr-8"}),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[neon.TokenVar], "wrong-key-123"}},
		Unauthorized:  neon.NewBranch(w.With(map[string]string{neon.TokenVar: "wrong-key-123"}), w.Client),
		NoCredential:  neon.NewBranch(w.With(map[string]string{neon.TokenVar: ""}), w.Client),
		CredentialVar: neon.TokenVar,
	})
}

func defaults(t *testing.T, op adapter.Op, req adapter.Request) adapter.Request {
	t.Helper()
	p, err := op.(adapter.Defaulter).Defaults(req.Params, req.Provider, req.Run)
	if err != nil {
		t.Fatal(err)
	}
	req.Params = p
	return req
}

func TestDefaults(t *testing.T) {
	op := neon.NewBranch(nil, nil)
	p := adapter.Provider{"project": "p1"}
	got, err := op.Defaults(map[string]any{}, p, run)
	if err != nil || got["name"] != "sponson/preview/pr-7" || got["parent"] != "main" {
		t.Errorf("defaults = %v, %v", got, err)
	}
	pending := adapter.Marker{Kind: adapter.Pending, Ref: "x.name"}
	if _, err := op.Defaults(map[string]any{"name": pending}, p, run); err != nil {
		t.Errorf("a pending name is refused before references resolve: %v", err)
	}
	for _, c := range []struct {
		params map[string]any
		run    adapter.RunCtx
		p      adapter.Provider
		name   string
	}{
		{map[string]any{}, adapter.RunCtx{}, p, "name"},
		{map[string]any{"name": ""}, run, p, "name"},
		{map[string]any{"name": strings.Repeat("x", 300)}, run, p, "name"},
		{map[string]any{"parent": 3}, run, p, "parent"},
		{map[string]any{"size": 3}, run, p, "size"},
		{map[string]any{}, run, adapter.Provider{}, "project"},
	} {
		if _, err := op.Defaults(c.params, c.p, c.run); errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), c.name) {
			t.Errorf("Defaults(%v) = %v, want PARAM_INVALID naming %s", c.params, err, c.name)
		}
	}
}

func TestOutputs(t *testing.T) {
	w := newWorld(t, sim.Options{Seed: 3})
	op := w.op()
	req := defaults(t, op, w.request(map[string]any{}))
	res, err := op.Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := res.Outputs["connection_string"].(string)
	u, err := url.Parse(cs)
	if err != nil || u.Hostname() == "" || res.Outputs["host"] != u.Hostname() || res.Outputs["branch_id"] != res.Resources[0].ID {
		t.Errorf("outputs = %v", res.Outputs)
	}
	if v := res.Resources[0].Value.(map[string]any); v["parent"] != "main" || v["name"] != "sponson/preview/pr-7" {
		t.Errorf("value = %v", v)
	}
}

func TestParentChangeIsReplace(t *testing.T) {
	w := newWorld(t, sim.Options{Seed: 4})
	if _, err := w.Cloud.Console.SeedNeonBranch(w.project, sim.NeonBranch{Name: "staging"}); err != nil {
		t.Fatal(err)
	}
	op := w.op()
	ctx := context.Background()
	req := defaults(t, op, w.request(map[string]any{}))
	first, err := op.Apply(ctx, req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	moved := defaults(t, op, w.request(map[string]any{"parent": "staging"}))
	live, _ := op.Read(ctx, moved)
	d, _ := op.Diff(live, moved)
	if d[0].Action != adapter.Replace || d[0].Fields[0].Before != "main" || d[0].Fields[0].After != "staging" {
		t.Fatalf("diff = %+v", d)
	}
	var intended []string
	res, err := op.Apply(ctx, moved, live, func(k ...string) error { intended = append(intended, k...); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Resources[0].ID == first.Resources[0].ID || len(res.Created) != 1 || len(intended) != 1 {
		t.Errorf("replace: %+v (intended %v)", res, intended)
	}
	kept := defaults(t, op, w.request(map[string]any{"parent": adapter.Marker{Kind: adapter.Keep}}))
	live, _ = op.Read(ctx, kept)
	if d, _ := op.Diff(live, kept); d[0].Action != adapter.Unchanged {
		t.Errorf("kept parent: %+v", d)
	}
	missing := defaults(t, op, w.request(map[string]any{"name": "other", "parent": "nope"}))
	if _, err := op.Apply(ctx, missing, nil, func(...string) error { return nil }); errs.CodeOf(err) != errs.PROVIDER_NOT_FOUND {
		t.Errorf("unknown parent: %v", err)
	}
}

func TestLockedIsRetried(t *testing.T) {
	w := newWorld(t, sim.Options{Seed: 5})
	op := w.op()
	ctx := context.Background()
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindFail, Provider: "neon", Method: "POST", Status: 423, Count: 2})
	req := defaults(t, op, w.request(map[string]any{}))
	res, err := op.Apply(ctx, req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatalf("create through 423: %v", err)
	}
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindFail, Provider: "neon", Method: "DELETE", Status: 423, Count: 2})
	if err := op.Destroy(ctx, req.Provider, run, res.Resources[0]); err != nil {
		t.Fatalf("delete through 423: %v", err)
	}
	if got, _ := op.Lookup(ctx, req.Provider, run, res.Resources[0].Key); got != nil {
		t.Error("the branch survived its destroy")
	}
}

func TestAsynchronousCreateIsAwaited(t *testing.T) {
	w := newWorld(t, sim.Options{Seed: 6, NeonOpsAfterRequests: 5})
	op := w.op()
	ctx := context.Background()
	req := defaults(t, op, w.request(map[string]any{}))
	res, err := op.Apply(ctx, req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range w.Cloud.State().Neon[0].Operations {
		if o.BranchID == res.Resources[0].ID && o.Status != "finished" {
			t.Errorf("operation %s is %s after Apply returned", o.Action, o.Status)
		}
	}
}

func TestLostCreateAnswer(t *testing.T) {
	w := newWorld(t, sim.Options{Seed: 7})
	op := w.op()
	ctx := context.Background()
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindDrop, Provider: "neon", Method: "POST", Count: 1})
	req := defaults(t, op, w.request(map[string]any{}))
	res, err := op.Apply(ctx, req, nil, func(...string) error { return nil })
	if err != nil || len(res.Created) != 1 {
		t.Fatalf("lost answer: %+v, %v", res, err)
	}
	posts := 0
	for _, e := range w.Cloud.Writes() {
		if e.Method == "POST" {
			posts++
		}
	}
	if posts != 1 {
		t.Errorf("%d creates sent, want 1 (a create is never repeated)", posts)
	}
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindFail, Provider: "neon", Method: "POST", Status: 500, Count: 1})
	other := defaults(t, op, w.request(map[string]any{"name": "other"}))
	_, err = op.Apply(ctx, other, nil, func(...string) error { return nil })
	if errs.CodeOf(err) != errs.PROVIDER_TRANSIENT || !httpclient.IsAmbiguous(err) {
		t.Errorf("a failed create that did not happen: %v", err)
	}
}

func TestRecreatedOutsideIsNotDestroyed(t *testing.T) {
	w := newWorld(t, sim.Options{Seed: 8})
	op := w.op()
	ctx := context.Background()
	req := defaults(t, op, w.request(map[string]any{}))
	res, err := op.Apply(ctx, req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	r := res.Resources[0]
	if _, err := w.Cloud.Drift(sim.Drift{Provider: sim.ProviderNeon, Action: sim.DriftRecreate, Project: w.project, ID: r.ID}); err != nil {
		t.Fatal(err)
	}
	before := w.Writes()
	if err := op.Destroy(ctx, req.Provider, run, r); err != nil || w.Writes() != before {
		t.Errorf("destroy of a re-created branch: %v, %d writes", err, w.Writes()-before)
	}
	listed, err := op.ListScope(ctx, req)
	if err != nil || len(listed) != 1 || listed[0].ID == r.ID {
		t.Errorf("ListScope = %+v, %v", listed, err)
	}
}
