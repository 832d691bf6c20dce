package action

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/sim"
)

// deployWorld is a world whose workflow grants deployments: write and
// statuses: write, with the pull request's head at the real tip of its
// branch (GitHub deploys a commit it has) and a plan whose
// environment_url is the callback line's url.
func deployWorld(t *testing.T) (*world, string) {
	t.Helper()
	w := newWorld(t)
	w.gh.AddToken(githubtest.Token{Value: token, Identity: githubtest.ActionsBot, Repos: []string{repoName},
		Permissions: map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "actions": "read",
			"deployments": "write", "statuses": "write", "metadata": "read"}})
	w.writePlan(strings.Replace(planFor(w.demo), "changes:\n", "environment_url: { from: callback.url }\nchanges:\n", 1))
	tip := w.gh.Refs(repoName, "refs/heads/changes")["refs/heads/changes"]
	if tip == "" {
		t.Fatal("no tip of changes")
	}
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: repoName, Number: 2, State: "open", Head: githubtest.Ref{Ref: "changes", SHA: tip}}); err != nil {
		t.Fatal(err)
	}
	return w, tip
}

// prEvent is a pull_request fixture whose head is sha.
func prEvent(t *testing.T, action, sha string) []byte {
	return edit(t, fixture(t, "pull_request/"+action+".payload.json"), func(m map[string]any) {
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = sha
	})
}

// wantCalls checks how many requests of each operation the fake served.
func wantCalls(t *testing.T, gh *githubtest.Server, want map[string]int) {
	t.Helper()
	for op, n := range want {
		if got := gh.Count(op); got != n {
			t.Errorf("%s: %d requests, want %d", op, got, n)
		}
	}
}

func states(d githubtest.Deployment) []string {
	var out []string
	for _, s := range d.Statuses {
		out = append(out, s.State)
	}
	return out
}

// TestApplyDeploys: an apply creates the deployment of preview/pr-2 for
// the head commit, in_progress then success with the environment URL the
// plan names, and sets sponson/preview on the head commit linking to the
// comment; a second apply of the same commit reuses the deployment; the
// close (destroy) marks it inactive.
func TestApplyDeploys(t *testing.T) {
	t.Parallel()
	w, tip := deployWorld(t)
	w.event("pull_request", prEvent(t, "opened", tip))
	if w.run() != 0 {
		t.Fatalf("opened: exit %d\n%s", w.code, w.out.String())
	}
	if strings.Contains(w.out.String(), "::warning::") {
		t.Errorf("warnings:\n%s", w.out.String())
	}
	ds := w.gh.Deploys.Deployments(repoName)
	if len(ds) != 1 {
		t.Fatalf("deployments %+v", ds)
	}
	d := ds[0]
	if d.Environment != "preview/pr-2" || d.SHA != tip || d.Transient || d.Production {
		t.Errorf("deployment %+v", d)
	}
	if got := states(d); !slices.Equal(got, []string{"in_progress", "success"}) {
		t.Errorf("statuses %v, want in_progress, success", got)
	}
	last := d.Statuses[len(d.Statuses)-1]
	if last.URL != "https://pr-2.test.dev/callback" || last.LogURL != w.gh.URL+"/"+repoName+"/actions/runs/9001" {
		t.Errorf("success status %+v", last)
	}
	cs := w.comments(2)
	st := w.gh.Deploys.Statuses(repoName)
	if len(cs) != 1 || len(st) != 2 {
		t.Fatalf("comments %d, statuses %+v", len(cs), st)
	}
	if st[0].Context != "sponson/preview" || st[0].State != "pending" || st[0].SHA != tip {
		t.Errorf("first status %+v", st[0])
	}
	commentURL := fmt.Sprintf("%s/%s/pull/2#issuecomment-%d", w.gh.URL, repoName, cs[0].ID)
	if st[1].Context != "sponson/preview" || st[1].State != "success" || st[1].SHA != tip || st[1].TargetURL != commentURL {
		t.Errorf("last status %+v, want a link to %s", st[1], commentURL)
	}

	// What it costs: one look-up, one deployment, two deployment statuses
	// and two commit statuses.
	wantCalls(t, w.gh, map[string]int{"repos/list-deployments": 1, "repos/create-deployment": 1, "repos/create-deployment-status": 2, "repos/create-commit-status": 2})

	// The same commit again: the same deployment, two more statuses.
	w.gh.ResetLog()
	w.event("pull_request", prEvent(t, "synchronize", tip))
	if w.run() != 0 {
		t.Fatalf("synchronize: exit %d\n%s", w.code, w.out.String())
	}
	ds = w.gh.Deploys.Deployments(repoName)
	if len(ds) != 1 || !slices.Equal(states(ds[0]), []string{"in_progress", "success", "in_progress", "success"}) {
		t.Fatalf("after synchronize: %+v", ds)
	}
	wantCalls(t, w.gh, map[string]int{"repos/list-deployments": 1, "repos/create-deployment": 0, "repos/create-deployment-status": 2, "repos/create-commit-status": 2})
	w.gh.ResetLog()

	// The close destroys the preview: its deployment is inactive.
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: repoName, Number: 2, State: "closed", Head: githubtest.Ref{Ref: "changes", SHA: tip}}); err != nil {
		t.Fatal(err)
	}
	w.event("pull_request", prEvent(t, "closed", tip))
	if w.run() != 0 {
		t.Fatalf("closed: exit %d\n%s", w.code, w.out.String())
	}
	ds = w.gh.Deploys.Deployments(repoName)
	if got := states(ds[0]); len(ds) != 1 || got[len(got)-1] != "inactive" {
		t.Errorf("after closed: %+v", ds)
	}
	wantCalls(t, w.gh, map[string]int{"repos/list-deployments": 1, "repos/create-deployment": 0, "repos/create-deployment-status": 1, "repos/create-commit-status": 2})
	if len(w.gh.Violations()) != 0 {
		t.Errorf("requests GitHub would refuse: %v", w.gh.Violations())
	}
}

// TestFailedApplyDeploysFailure: an apply that fails leaves the deployment
// at failure, without a URL, and sponson/preview at failure.
func TestFailedApplyDeploysFailure(t *testing.T) {
	t.Parallel()
	w, tip := deployWorld(t)
	// The database branch cannot be made: Neon refuses every write.
	w.cloud.MustAddRule(sim.Rule{Kind: sim.KindFail, Provider: "neon", Method: "WRITE", Status: 403})
	w.event("pull_request", prEvent(t, "opened", tip))
	if w.run() != 1 {
		t.Fatalf("exit %d, want 1\n%s", w.code, w.out.String())
	}
	ds := w.gh.Deploys.Deployments(repoName)
	if len(ds) != 1 || !slices.Equal(states(ds[0]), []string{"in_progress", "failure"}) {
		t.Fatalf("deployments %+v", ds)
	}
	if u := ds[0].Statuses[1].URL; u != "" {
		t.Errorf("a failed apply set the URL %q", u)
	}
	st := w.gh.Deploys.Statuses(repoName)
	if len(st) != 2 || st[1].State != "failure" || st[1].Context != "sponson/preview" {
		t.Errorf("statuses %+v", st)
	}
}

// TestDeployWithoutPermission: a workflow that does not grant
// deployments: write still applies; each refused call is a warning.
func TestDeployWithoutPermission(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if w.run() != 0 {
		t.Fatalf("exit %d\n%s", w.code, w.out.String())
	}
	w.want("status", "complete")
	if !strings.Contains(w.out.String(), "::warning::GITHUB_PERMISSION: the deployment could not be created") {
		t.Errorf("no warning:\n%s", w.out.String())
	}
	if len(w.gh.Deploys.Deployments(repoName)) != 0 {
		t.Error("a deployment without the permission")
	}
}

// TestOwnDeploymentIsIgnored: a deployment_status of a deployment Sponson
// made (task "sponson") is a skip, even a success outside production with
// its pull request open: with a token whose events start workflows, it
// would otherwise apply again on every run.
func TestOwnDeploymentIsIgnored(t *testing.T) {
	payload := edit(t, fixture(t, "deployment_status/payload.json"), func(m map[string]any) {
		m["deployment"].(map[string]any)["task"] = "sponson"
		m["deployment"].(map[string]any)["production_environment"] = false
		m["deployment_status"].(map[string]any)["state"] = "success"
		m["deployment"].(map[string]any)["environment"] = "preview/pr-2"
		m["deployment_status"].(map[string]any)["environment"] = "preview/pr-2"
	})
	ev, err := ParseEvent("deployment_status", payload)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Deployment.Own() {
		t.Fatalf("not Sponson's own: %+v", ev.Deployment)
	}
	n := 2
	d := Decide(CommandAuto, ev, scope.Ctx{Scope: "pr-2", PR: scope.PR{Number: &n}}, true)
	if !d.Skipped() || d.Code != errs.EVENT_IGNORED || !strings.Contains(d.Skip, "Sponson's own") {
		t.Errorf("decision %+v", d)
	}
	ev.Deployment.Task = "deploy"
	if d := Decide(CommandAuto, ev, scope.Ctx{Scope: "pr-2", PR: scope.PR{Number: &n}}, true); d.Skipped() {
		t.Errorf("another's deployment skipped: %+v", d)
	}
}
