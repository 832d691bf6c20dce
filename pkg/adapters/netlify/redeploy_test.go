package netlify_test

import (
	"context"
	"slices"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters/netlify"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

func (w *world) siteState(t *testing.T) sim.NetlifySite {
	t.Helper()
	for _, s := range w.Cloud.State().Netlify {
		if s.ID == w.site {
			return s
		}
	}
	t.Fatal("no site")
	return sim.NetlifySite{}
}

func (w *world) deploy(t *testing.T, id string) sim.NetlifyDeploy {
	t.Helper()
	for _, d := range w.siteState(t).Deploys {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("no deploy %s", id)
	return sim.NetlifyDeploy{}
}

func (w *world) apply(t *testing.T, r adapter.Request) map[string]any {
	t.Helper()
	op := netlify.NewEnv(w.With(nil), w.Client)
	d, err := op.Defaults(r.Params, r.Provider, r.Run)
	if err != nil {
		t.Fatal(err)
	}
	r.Params = d
	res, err := op.Apply(context.Background(), r, nil, intendOK)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	for i, rs := range res.Resources {
		got, _ := rs.Outputs[netlify.RedeployOutput].(map[string]any)
		if i > 0 && (got == nil) != (rec == nil) {
			t.Fatalf("the values of one line record different redeploys: %v", res.Resources)
		}
		rec = got
	}
	return rec
}

// awaitAll polls AwaitExternal as the engine does, n times at most.
func (w *world) awaitAll(t *testing.T, r adapter.Request, n int) (map[string]any, error) {
	t.Helper()
	op := netlify.NewEnv(w.With(nil), w.Client)
	for range n {
		out, err := op.AwaitExternal(context.Background(), r, nil)
		if out != nil || err != nil {
			return out, err
		}
	}
	return nil, nil
}

// A branch deploy started by the push read none of the line's values: the
// write starts a build of the branch (createSiteBuild), records it on
// every value, and the preview is that build's deploy, started after the
// values and built with them.
func TestBranchDeployIsRebuiltAfterItsValues(t *testing.T) {
	w := newWorld(t)
	pushed, err := w.Cloud.Push(sim.Push{SHA: sha, Branch: "feat/login"})
	if err != nil {
		t.Fatal(err)
	}
	r := w.req("branch-deploy", map[string]any{"DATABASE_URL": "postgres://feat", "API_URL": "https://feat.example.com"})
	rec := w.apply(t, r)
	if rec == nil || rec["replaces"] != pushed.Netlify[0] || rec["deploy_id"] == "" || rec["deploy_id"] == pushed.Netlify[0] {
		t.Fatalf("redeploy record = %v, want a build replacing %s", rec, pushed.Netlify[0])
	}
	out, err := w.awaitAll(t, r, 4)
	if err != nil || out == nil || out["deploy_id"] != rec["deploy_id"] {
		t.Fatalf("preview = %v, %v; want the rebuilt deploy %v", out, err, rec["deploy_id"])
	}
	site := w.siteState(t)
	if stale, _ := site.StaleVariables(rec["deploy_id"].(string)); len(stale) != 0 {
		t.Errorf("the preview's deploy started before the writes of %v", stale)
	}
	if old, _ := site.StaleVariables(pushed.Netlify[0]); !slices.Contains(old, "DATABASE_URL") {
		t.Errorf("the push's deploy should predate the values, stale = %v", old)
	}
	if d := w.deploy(t, rec["deploy_id"].(string)); d.CommitRef != sha || d.Context != "branch-deploy" || d.Branch != "feat/login" || d.Env["DATABASE_URL"] != "postgres://feat" {
		t.Errorf("the rebuilt deploy = %+v", d)
	}
}

// A production deploy is rebuilt as a production build.
func TestProductionDeployIsRebuilt(t *testing.T) {
	w := newWorld(t)
	pushed, _ := w.Cloud.Push(sim.Push{SHA: sha, Branch: "main"})
	r := w.req("production", map[string]any{"API_URL": "https://api.v2.example.com"})
	r.Run = adapter.RunCtx{Env: "production", Scope: "main", Branch: "main", SHA: sha}
	rec := w.apply(t, r)
	if rec == nil || rec["replaces"] != pushed.Netlify[0] {
		t.Fatalf("production redeploy = %v", rec)
	}
	if d := w.deploy(t, rec["deploy_id"].(string)); d.Context != "production" || d.Env["API_URL"] != "https://api.v2.example.com" {
		t.Errorf("the rebuilt deploy = %+v", d)
	}
	if out, err := w.awaitAll(t, r, 4); err != nil || out["deploy_id"] != rec["deploy_id"] {
		t.Errorf("production preview = %v, %v", out, err)
	}
}

// A deploy preview cannot be rebuilt through the API: it is recorded as
// stale, nothing is sent, and the line waits, even once that deploy is
// ready, for the pull request's next deploy.
func TestStaleDeployPreviewIsWaitedFor(t *testing.T) {
	w := newWorld(t)
	pushed, _ := w.Cloud.Push(sim.Push{SHA: sha, Branch: "feat/login", PullRequest: 7})
	r := w.req("deploy-preview", map[string]any{"DATABASE_URL": "postgres://pr-7"})
	before := w.Writes()
	rec := w.apply(t, r)
	if rec == nil || rec["stale"] != pushed.Netlify[0] || rec["deploy_id"] != nil {
		t.Fatalf("deploy preview record = %v, want stale %s", rec, pushed.Netlify[0])
	}
	if n := w.Writes() - before; n != 1 {
		t.Errorf("%d writes, want the variable's alone", n)
	}
	if out, err := w.awaitAll(t, r, 4); out != nil || err != nil {
		t.Fatalf("the stale deploy preview became the preview: %v, %v", out, err)
	}
	if d := w.deploy(t, pushed.Netlify[0]); d.State != "ready" {
		t.Fatalf("the stale deploy is %s, want ready (the test would prove nothing)", d.State)
	}
	next, _ := w.Cloud.Push(sim.Push{SHA: sha, Branch: "feat/login", PullRequest: 7})
	out, err := w.awaitAll(t, r, 4)
	if err != nil || out == nil || out["deploy_id"] != next.Netlify[0] || out["deploy_preview_url"] != "https://deploy-preview-7--shop.netlify.app" {
		t.Errorf("after the next deploy: %v, %v; want %s", out, err, next.Netlify[0])
	}
}

// A failed build of the commit is not rebuilt; the line reports it.
func TestFailedDeployIsNotRebuilt(t *testing.T) {
	w := newWorld(t)
	if _, err := w.Cloud.Console.NetlifyDeploy(sim.NetlifyDeploySpec{Site: w.site, Context: "branch-deploy", Branch: "feat/login", CommitRef: sha, State: "error"}); err != nil {
		t.Fatal(err)
	}
	r := w.req("branch-deploy", map[string]any{"DATABASE_URL": "postgres://feat"})
	if rec := w.apply(t, r); rec != nil || len(w.siteState(t).Deploys) != 1 {
		t.Fatalf("failed deploy: record %v, %d deploys; want no build", rec, len(w.siteState(t).Deploys))
	}
	if _, err := w.awaitAll(t, r, 1); errs.CodeOf(err) != errs.EXTERNAL_FAILED {
		t.Errorf("await = %v, want EXTERNAL_FAILED", err)
	}
}

// The dev context has no deploys: nothing is rebuilt.
func TestNeverRebuildForDev(t *testing.T) {
	w := newWorld(t)
	if _, err := w.Cloud.Push(sim.Push{SHA: sha, Branch: "feat/login"}); err != nil {
		t.Fatal(err)
	}
	if rec := w.apply(t, w.req("dev", map[string]any{"DEBUG": "1"})); rec != nil || len(w.siteState(t).Deploys) != 1 {
		t.Errorf("dev: record %v, %d deploys", rec, len(w.siteState(t).Deploys))
	}
}
