package netlify_test

import (
	"context"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/adapters/netlify"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

const sha = "5b1d6e0c9a8f7e6d5c4b3a2918070605f4e3d2c1"

type world struct {
	*simtest.World
	site string
}

func newWorld(t *testing.T) *world {
	w := &world{World: simtest.New(t, sim.Options{Seed: 17})}
	w.site = w.Cloud.Console.SeedNetlifySite(sim.NetlifySite{Name: "shop", Env: []sim.NetlifyEnvVar{
		{Key: "API_URL", Values: []sim.NetlifyEnvValue{{Value: "https://api.example.com", Context: "production"}}},
		{Key: "SHARED", Values: []sim.NetlifyEnvValue{{Value: "one", Context: "all"}}},
	}})
	return w
}

func (w *world) req(ctx string, values map[string]any) adapter.Request {
	return adapter.Request{Line: "env", Params: map[string]any{"context": ctx, "values": values},
		Provider: adapter.Provider{"site": w.site}, Run: adapter.RunCtx{Env: "preview", Scope: "pr-7", Branch: "feat/login", SHA: sha}}
}

func TestConformance(t *testing.T) {
	w := newWorld(t)
	adaptertest.Run(t, adaptertest.Case{
		Op:            netlify.NewEnv(w.With(nil), w.Client),
		Request:       w.req("deploy-preview", map[string]any{"API_URL": "https://pr.example.com", "NEW_ONE": "x"}),
		Other:         w.req("branch-deploy", map[string]any{"API_URL": "https://branch.example.com"}),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[netlify.TokenVar], "nfp_wrong"}},
		Unauthorized:  netlify.NewEnv(w.With(map[string]string{netlify.TokenVar: "nfp_wrong"}), w.Client),
		NoCredential:  netlify.NewEnv(w.With(map[string]string{netlify.TokenVar: ""}), w.Client),
		CredentialVar: netlify.TokenVar,
	})
	st := w.Cloud.State().Netlify[0]
	if len(st.Env) != 2 || len(st.Env[0].Values) != 1 || st.Env[0].Values[0].Context != "production" {
		t.Errorf("site variables after the suite = %+v, want only the seeded ones", st.Env)
	}
}

func intendOK(...string) error { return nil }

func TestAllContextsRefusedAndBranchContext(t *testing.T) {
	w := newWorld(t)
	op := netlify.NewEnv(w.With(nil), w.Client)
	_, err := op.Apply(context.Background(), w.req("deploy-preview", map[string]any{"SHARED": "two"}), nil, intendOK)
	if errs.CodeOf(err) != errs.PROVIDER_CONFLICT || w.Writes() != 0 {
		t.Errorf("value beside an all value: %v (%d writes)", err, w.Writes())
	}
	r := w.req("branch", map[string]any{"API_URL": "b"})
	d, err := op.Defaults(r.Params, r.Provider, r.Run)
	if err != nil || d["branch"] != "feat/login" {
		t.Fatalf("defaults = %v, %v", d, err)
	}
	r.Params = d
	res, err := op.Apply(context.Background(), r, nil, intendOK)
	if err != nil || len(res.Created) != 1 || res.Created[0] != "env:branch:feat/login:API_URL" {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	if id := op.LockOn(r.Params, r.Provider); id != "netlify:"+w.site+":env" {
		t.Errorf("LockOn = %q", id)
	}
}

// The deploy's outputs come from the newest deploy of the commit in the
// context that started after the values changed.
func TestAwaitDeploy(t *testing.T) {
	w := newWorld(t)
	op := netlify.NewEnv(w.With(nil), w.Client)
	ctx := context.Background()
	r := w.req("deploy-preview", map[string]any{"API_URL": "https://pr.example.com"})
	if _, err := op.Apply(ctx, r, nil, intendOK); err != nil {
		t.Fatal(err)
	}
	if out, err := op.AwaitExternal(ctx, r, nil); out != nil || err != nil {
		t.Fatalf("before any deploy: %v, %v", out, err)
	}
	id, _ := w.Cloud.Console.NetlifyDeploy(sim.NetlifyDeploySpec{Site: w.site, Context: "deploy-preview", CommitRef: sha, ReviewID: 7})
	if _, err := w.Cloud.Console.NetlifyDeploy(sim.NetlifyDeploySpec{Site: w.site, Context: "production", CommitRef: sha, State: "ready"}); err != nil {
		t.Fatal(err)
	}
	if out, err := op.AwaitExternal(ctx, r, nil); out != nil || err != nil {
		t.Fatalf("while building: %v, %v", out, err)
	}
	if err := w.Cloud.Console.SetNetlifyDeployState(w.site, id, "ready"); err != nil {
		t.Fatal(err)
	}
	out, err := op.AwaitExternal(ctx, r, nil)
	if err != nil || out["deploy_id"] != id || out["deploy_preview_url"] != "https://deploy-preview-7--shop.netlify.app" || out["preview_url"] != "https://"+id+"--shop.netlify.app" {
		t.Fatalf("ready: %v, %v", out, err)
	}
	failed, _ := w.Cloud.Console.NetlifyDeploy(sim.NetlifyDeploySpec{Site: w.site, Context: "deploy-preview", CommitRef: sha, State: "error"})
	if _, err := op.AwaitExternal(ctx, r, nil); errs.CodeOf(err) != errs.EXTERNAL_FAILED {
		t.Errorf("newest deploy %s failed: %v, want EXTERNAL_FAILED", failed, err)
	}
}

func TestParams(t *testing.T) {
	op := netlify.NewEnv(nil, nil)
	p := adapter.Provider{"site": "s"}
	d, err := op.Defaults(map[string]any{"values": map[string]any{"A": "1"}}, p, adapter.RunCtx{Env: "production"})
	if err != nil || d["context"] != "production" || op.WritesEnvironment(d, p, adapter.RunCtx{}) != "production" {
		t.Errorf("production defaults = %v, %v", d, err)
	}
	for _, bad := range []map[string]any{
		{"values": map[string]any{"A": "1"}, "context": "staging"},
		{"values": map[string]any{"A": "1"}, "context": "production", "branch": "x"},
		{"values": map[string]any{"1A": "1"}, "context": "production"},
		{"context": "production"},
	} {
		if _, err := op.Defaults(bad, p, adapter.RunCtx{Env: "preview"}); errs.CodeOf(err) != errs.PARAM_INVALID {
			t.Errorf("%v: %v, want PARAM_INVALID", bad, err)
		}
	}
	if _, err := op.Defaults(map[string]any{"values": map[string]any{"A": "1"}}, adapter.Provider{}, adapter.RunCtx{Env: "preview"}); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("no site: %v", err)
	}
}

// A site deleted in the Netlify UI took its variables with it: Netlify
// answers 404 for it, and destroying (or looking up) a value of it is
// success, not an error that blocks the scope's teardown forever.
func TestSiteGoneIsGone(t *testing.T) {
	w := newWorld(t)
	op := netlify.NewEnv(w.With(nil), w.Client)
	key := netlify.Key("deploy-preview", "", "API_URL")
	for _, gone := range []adapter.Provider{{"site": "deleted-meanwhile"}, {"site": "deleted-meanwhile", "account": "acme"}} {
		w.ParentGone(t, op, gone, adapter.Resource{Key: key, ID: "v1"})
	}
}
