package bot

import (
	"net/http"
	"testing"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
)

// The bot's teardown of a closed pull request marks the deployment the
// Action made for its preview inactive; another environment's is left.
func TestTeardownLeavesTheDeploymentInactive(t *testing.T) {
	w := newAppWorld(t)
	if err := w.gh.AddInstallation(githubtest.Installation{ID: 1, App: 4242, Account: "Codertocat", Repos: []string{hello},
		Permissions: map[string]string{"contents": "write", "pull_requests": "write", "actions": "read", "metadata": "read", "deployments": "write"}}); err != nil {
		t.Fatal(err)
	}
	tip := w.gh.Branches(hello)["changes"]
	live := githubtest.DeploymentStatus{State: "success", URL: "https://pr-2.example.dev"}
	ours := w.gh.Deploys.AddDeployment(githubtest.Deployment{Repo: hello, SHA: tip, Ref: tip, Environment: "preview/pr-2", Task: github.DeploymentTask, Statuses: []githubtest.DeploymentStatus{live}})
	other := w.gh.Deploys.AddDeployment(githubtest.Deployment{Repo: hello, SHA: tip, Ref: tip, Environment: "preview/pr-3", Task: github.DeploymentTask, Statuses: []githubtest.DeploymentStatus{live}})
	w.apply("preview", "pr-2", "changes")

	if err := w.gh.SetPullState(hello, 2, "closed", false); err != nil {
		t.Fatal(err)
	}
	if code := w.post("pull_request", "close-1", fixture(t, "pull_request/closed.payload.json")); code != http.StatusAccepted {
		t.Fatalf("closed: %d", code)
	}
	w.idle()
	if r := w.receipt("preview", "pr-2"); r == nil || r.Closed == nil {
		t.Fatalf("not torn down: %+v", r)
	}
	last := map[int64]string{}
	for _, d := range w.gh.Deploys.Deployments(hello) {
		last[d.ID] = d.Statuses[len(d.Statuses)-1].State
	}
	if last[ours] != "inactive" || last[other] != "success" {
		t.Errorf("latest states %v: want %d inactive, %d success", last, ours, other)
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}
