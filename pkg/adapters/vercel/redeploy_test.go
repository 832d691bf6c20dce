package vercel_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters/vercel"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

// linkedWorld is a project linked to its repository, so that a push
// starts a build.
func linkedWorld(t *testing.T, link *sim.VercelGitLink) *world {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web", Link: link})
	return w
}

func (w *world) defaulted(t *testing.T, params map[string]any, rc adapter.RunCtx) adapter.Request {
	t.Helper()
	req := request("web", params)
	req.Run = rc
	p, err := w.op().Defaults(req.Params, req.Provider, req.Run)
	if err != nil {
		t.Fatal(err)
	}
	req.Params = p
	return req
}

// await polls AwaitExternal as the engine does until it answers.
func (w *world) await(t *testing.T, req adapter.Request) map[string]any {
	t.Helper()
	for range 6 {
		out, err := w.op().AwaitExternal(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out != nil {
			return out
		}
	}
	t.Fatal("no deployment became the preview")
	return nil
}

func (w *world) project(t *testing.T) sim.VercelProject {
	t.Helper()
	p, ok := w.Cloud.State().VercelProject("web")
	if !ok {
		t.Fatal("no project web")
	}
	return p
}

func (w *world) deployment(t *testing.T, uid string) sim.VercelDeployment {
	t.Helper()
	for _, d := range w.project(t).Deployments {
		if d.UID == uid {
			return d
		}
	}
	t.Fatalf("no deployment %s", uid)
	return sim.VercelDeployment{}
}

// The git integration starts building the commit on push, while the
// workflow that writes the variables is still running: that build has no
// DATABASE_URL. The write rebuilds it, records the redeploy on every
// variable it wrote, and the preview is the rebuilt deployment, created
// after the last write and built with the variables.
func TestPreviewIsBuiltAfterItsVariables(t *testing.T) {
	w := linkedWorld(t, &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 4815162342, ProductionBranch: "main"})
	pushed, err := w.Cloud.Push(sim.Push{SHA: run.SHA, Branch: run.Branch, PullRequest: 7})
	if err != nil || len(pushed.Vercel) != 1 {
		t.Fatalf("push: %+v, %v", pushed, err)
	}
	req := w.defaulted(t, map[string]any{"values": map[string]any{"DATABASE_URL": "postgres://pr-7", "API_BASE": "https://api.pr-7.dev"}}, run)
	res, err := w.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	for _, r := range res.Resources {
		got, ok := r.Outputs[vercel.RedeployOutput].(map[string]any)
		if !ok {
			t.Fatalf("resource %s records no redeploy: %v", r.Key, r.Outputs)
		}
		rec = got
	}
	if rec["replaces"] != pushed.Vercel[0] || rec["deployment_id"] == "" || rec["deployment_id"] == pushed.Vercel[0] {
		t.Fatalf("redeploy record = %v, want a new deployment replacing %s", rec, pushed.Vercel[0])
	}
	out := w.await(t, req)
	if out["deployment_id"] != rec["deployment_id"] {
		t.Fatalf("preview from %v, want the redeploy %v (the push's build has no variables)", out["deployment_id"], rec["deployment_id"])
	}
	proj := w.project(t)
	stale, _ := proj.StaleVariables(out["deployment_id"].(string))
	if len(stale) != 0 {
		t.Errorf("the preview's deployment was created before the writes of %v", stale)
	}
	if d := w.deployment(t, out["deployment_id"].(string)); d.Env["DATABASE_URL"] != "postgres://pr-7" || d.SHA != run.SHA || d.Branch != run.Branch || d.RedeployOf != pushed.Vercel[0] {
		t.Errorf("the preview's build = %+v, want commit %s of %s with DATABASE_URL", d, run.SHA, run.Branch)
	}
	if old, _ := proj.StaleVariables(pushed.Vercel[0]); !slices.Contains(old, "DATABASE_URL") {
		t.Errorf("the push's build should predate the variables, stale = %v", old)
	}

	// Applying again writes nothing and rebuilds nothing.
	before := len(w.project(t).Deployments)
	res, err = w.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil || len(w.project(t).Deployments) != before {
		t.Fatalf("second apply: %v, %d deployments, want %d", err, len(w.project(t).Deployments), before)
	}
	for _, r := range res.Resources {
		if _, ok := r.Outputs[vercel.RedeployOutput]; ok {
			t.Errorf("a write-free apply records a redeploy on %s", r.Key)
		}
	}
}

// A write before the push needs no redeploy: the push's build reads the
// variables.
func TestNoRedeployWhenTheBuildStartsAfterTheWrite(t *testing.T) {
	w := linkedWorld(t, &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 1, ProductionBranch: "main"})
	req := w.defaulted(t, map[string]any{"values": map[string]any{"DATABASE_URL": "postgres://pr-7"}}, run)
	res, err := w.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil || res.Resources[0].Outputs[vercel.RedeployOutput] != nil {
		t.Fatalf("apply before any build: %+v, %v", res, err)
	}
	pushed, _ := w.Cloud.Push(sim.Push{SHA: run.SHA, Branch: run.Branch})
	if out := w.await(t, req); out["deployment_id"] != pushed.Vercel[0] || len(w.project(t).Deployments) != 1 {
		t.Errorf("preview = %v, want the push's build %s and no other", out, pushed.Vercel[0])
	}
}

// A build of the commit that failed is not rebuilt: it stays the commit's
// failure, which the line reports.
func TestFailedDeploymentIsNotRedeployed(t *testing.T) {
	for _, b := range []string{sim.DeployFail, sim.DeployCancel} {
		w := linkedWorld(t, &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 1})
		if _, err := w.Cloud.Console.Deploy(sim.DeploySpec{Project: "web", SHA: run.SHA, Branch: run.Branch, Behavior: b}); err != nil {
			t.Fatal(err)
		}
		req := w.defaulted(t, map[string]any{"values": map[string]any{"DATABASE_URL": "postgres://pr-7"}}, run)
		for range 2 { // the build ends on the second look
			_, _ = w.op().AwaitExternal(context.Background(), req, nil)
		}
		res, err := w.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
		if err != nil || res.Resources[0].Outputs[vercel.RedeployOutput] != nil || len(w.project(t).Deployments) != 1 {
			t.Errorf("%s: apply = %+v, %v, %d deployments; want no redeploy", b, res, err, len(w.project(t).Deployments))
		}
		if _, err := w.op().AwaitExternal(context.Background(), req, nil); errs.CodeOf(err) != errs.EXTERNAL_FAILED {
			t.Errorf("%s: await = %v, want EXTERNAL_FAILED", b, err)
		}
	}
}

// Variables for development reach no deployment: nothing is rebuilt.
func TestNeverRedeployForDevelopment(t *testing.T) {
	w := linkedWorld(t, &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 1, ProductionBranch: "main"})
	if _, err := w.Cloud.Push(sim.Push{SHA: run.SHA, Branch: run.Branch}); err != nil {
		t.Fatal(err)
	}
	req := w.defaulted(t, map[string]any{"target": "development", "values": map[string]any{"DEBUG": "1"}}, run)
	res, err := w.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil || res.Resources[0].Outputs[vercel.RedeployOutput] != nil || len(w.project(t).Deployments) != 1 {
		t.Errorf("development: %+v, %v, %d deployments; want no redeploy", res, err, len(w.project(t).Deployments))
	}
}

// Production: the push to the production branch is rebuilt as a
// production deployment.
func TestProductionRedeploy(t *testing.T) {
	w := linkedWorld(t, &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 1, ProductionBranch: "main"})
	prod := adapter.RunCtx{Env: "production", Scope: "main", Branch: "main", SHA: run.SHA}
	pushed, _ := w.Cloud.Push(sim.Push{SHA: prod.SHA, Branch: "main"})
	req := w.defaulted(t, map[string]any{"values": map[string]any{"DATABASE_URL": "postgres://prod"}}, prod)
	res, err := w.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := res.Resources[0].Outputs[vercel.RedeployOutput].(map[string]any)
	if rec["replaces"] != pushed.Vercel[0] {
		t.Fatalf("production redeploy = %v", rec)
	}
	d := w.deployment(t, rec["deployment_id"].(string))
	if d.Target != "production" || d.Env["DATABASE_URL"] != "postgres://prod" {
		t.Errorf("production redeploy built %+v", d)
	}
	if out := w.await(t, req); out["deployment_id"] != rec["deployment_id"] {
		t.Errorf("production preview = %v", out)
	}
}

// A Bitbucket-linked project names its repository by uuid; the redeploy's
// gitSource carries it as repoUuid (the project's connection must match).
func TestBitbucketLinkedRedeploy(t *testing.T) {
	w := linkedWorld(t, &sim.VercelGitLink{Type: "bitbucket", UUID: "{1b7c5e0a-4d1e-4a57-9b1d-0f2e3c4d5e6f}",
		WorkspaceUUID: "{9a8b7c6d-0000-4000-8000-123456789abc}", Owner: "acme", Slug: "web", ProductionBranch: "main"})
	pushed, _ := w.Cloud.Push(sim.Push{SHA: run.SHA, Branch: run.Branch})
	req := w.defaulted(t, map[string]any{"values": map[string]any{"DATABASE_URL": "postgres://pr-7"}}, run)
	res, err := w.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := res.Resources[0].Outputs[vercel.RedeployOutput].(map[string]any)
	if rec["replaces"] != pushed.Vercel[0] {
		t.Fatalf("bitbucket redeploy = %v", rec)
	}
}

// A deployment built before the line's variables last changed is never
// the preview, even READY: the line waits for one built after them.
func TestStaleDeploymentIsNotThePreview(t *testing.T) {
	w := linkedWorld(t, &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 1})
	pushed, _ := w.Cloud.Push(sim.Push{SHA: run.SHA, Branch: run.Branch})
	if _, err := w.Cloud.Console.SeedVercelEnv("web", sim.VercelEnv{Key: "DATABASE_URL", Value: "postgres://pr-7", Target: []string{"preview"}, GitBranch: run.Branch}); err != nil {
		t.Fatal(err)
	}
	req := w.defaulted(t, map[string]any{"values": map[string]any{"DATABASE_URL": "postgres://pr-7"}}, run)
	for range 4 {
		if out, err := w.op().AwaitExternal(context.Background(), req, nil); out != nil || err != nil {
			t.Fatalf("the push's build %s predates the variable, yet await = %v, %v", pushed.Vercel[0], out, err)
		}
	}
	if d := w.deployment(t, pushed.Vercel[0]); d.State != "READY" {
		t.Fatalf("the push's build is %s, want READY (the test would prove nothing)", d.State)
	}
}

// A rebuild the provider refuses fails the line, saying which deployment
// and why it was rebuilt; a lost answer whose rebuild landed is not sent
// twice.
func TestRedeployRefusedOrLost(t *testing.T) {
	w := linkedWorld(t, &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 1})
	pushed, _ := w.Cloud.Push(sim.Push{SHA: run.SHA, Branch: run.Branch})
	if _, err := w.Cloud.AddRule(sim.Rule{Kind: sim.KindFail, Provider: "vercel", Method: "POST", Path: "/v13/deployments", Status: 400, Count: 1}); err != nil {
		t.Fatal(err)
	}
	req := w.defaulted(t, map[string]any{"values": map[string]any{"DATABASE_URL": "postgres://pr-7"}}, run)
	_, err := w.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
	if errs.CodeOf(err) != errs.PROVIDER_INVALID || !strings.Contains(err.Error(), pushed.Vercel[0]) {
		t.Fatalf("refused rebuild: %v, want PROVIDER_INVALID naming %s", err, pushed.Vercel[0])
	}

	w2 := linkedWorld(t, &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 1})
	w2.Cloud.Push(sim.Push{SHA: run.SHA, Branch: run.Branch})
	if _, err := w2.Cloud.AddRule(sim.Rule{Kind: sim.KindDrop, Provider: "vercel", Method: "POST", Path: "/v13/deployments", Count: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := w2.op().Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := res.Resources[0].Outputs[vercel.RedeployOutput].(map[string]any)
	if n := len(w2.project(t).Deployments); rec == nil || n != 2 {
		t.Errorf("lost answer: record %v, %d deployments; want the one rebuild found again", rec, n)
	}
}
