package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
)

// opPermission is the permission GitHub asks of an installation for each
// operation the bot calls ("" for one the App's JWT or any installation
// token may call), after GitHub's REST reference for fine-grained
// permissions; git's smart HTTP counts as contents. An operation the bot
// calls that is not here fails TestManifestCoversTheBotsCalls: add it,
// and the permission to app-manifest.json.
var opPermission = map[string]string{
	"apps/get-authenticated":                          "",
	"apps/list-installations":                         "",
	"apps/create-installation-access-token":           "",
	"apps/get-repo-installation":                      "",
	"apps/list-repos-accessible-to-installation":      "metadata:read",
	"actions/get-workflow-run":                        "actions:read",
	"issues/list-comments":                            "pull_requests:read",
	"issues/create-comment":                           "pull_requests:write",
	"issues/update-comment":                           "pull_requests:write",
	"issues/delete-comment":                           "pull_requests:write",
	"issues/list-labels-on-issue":                     "pull_requests:read",
	"issues/add-labels":                               "pull_requests:write",
	"issues/remove-label":                             "pull_requests:write",
	"reactions/create-for-issue-comment":              "pull_requests:write",
	"reactions/list-for-issue-comment":                "pull_requests:read",
	"pulls/get":                                       "pull_requests:read",
	"pulls/list":                                      "pull_requests:read",
	"repos/list-pull-requests-associated-with-commit": "pull_requests:read",
	"repos/get":                                       "metadata:read",
	"repos/get-collaborator-permission-level":         "metadata:read",
	"repos/get-branch":                                "contents:read",
	"repos/list-branches":                             "contents:read",
	"repos/compare-commits":                           "contents:read",
	"repos/get-content":                               "contents:read",
	"git/get-ref":                                     "contents:read",
	"git/list-matching-refs":                          "contents:read",
	"git/create-ref":                                  "contents:write",
	"git/update-ref":                                  "contents:write",
	"git/delete-ref":                                  "contents:write",
	"git-upload-pack":                                 "contents:read",
	"git-receive-pack":                                "contents:write",
	"info-refs":                                       "contents:read",
	"repos/list-deployments":                          "deployments:read",
	"repos/list-deployment-statuses":                  "deployments:read",
	"repos/create-deployment":                         "deployments:write",
	"repos/create-deployment-status":                  "deployments:write",
	"repos/create-commit-status":                      "statuses:write",
	"checks/create":                                   "checks:write",
	"checks/update":                                   "checks:write",
	"checks/list-for-ref":                             "checks:read",
	"teams/get-membership-for-user-in-org":            "members:read",
	"rate-limit/get":                                  "",
}

// manifestPermissions is the App manifest's default_permissions.
func manifestPermissions(t *testing.T) map[string]string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "app-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Permissions map[string]string `json:"default_permissions"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Permissions
}

// grants reports whether level have covers level want (write covers read).
func grants(have, want string) bool {
	return have == want || have == "write" && want == "read" || have == "admin"
}

// Installed with exactly the manifest's permissions, the bot goes through
// every kind of work it does — comment commands (apply over a cancelled
// workflow's lease, confirm, keep and
// unkeep, a production apply by a member of the approvers team, destroy),
// a closed pull request's teardown with its deployment, a sweep — and
// GitHub refuses none of its calls; every permission the manifest asks
// for is one of those calls' (metadata, which GitHub gives every App,
// aside).
func TestManifestCoversTheBotsCalls(t *testing.T) {
	perms := manifestPermissions(t)
	w := stepWorld(t)
	if err := w.gh.AddInstallation(githubtest.Installation{ID: 1, App: 4242, Account: "Codertocat", Repos: []string{hello}, Permissions: perms}); err != nil {
		t.Fatal(err)
	}
	w.gh.ExpireTokens(1)
	w.bot.Approvers = "Codertocat/approvers"
	if err := w.gh.Repos.SetCollaborator(hello, "ada", "write"); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Repos.AddTeamMember(githubtest.Member{Org: "Codertocat", Team: "approvers", Login: "ada"}); err != nil {
		t.Fatal(err)
	}
	prod := strings.Replace(strings.TrimLeft(stepPlan, "\n"), "[preview, staging]", "[preview, production]", 1)
	sha, err := w.gh.Git.CommitFiles(hello, "changes", "production too", map[string]string{"release.plan.yaml": prod})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Issues.SetPullHead(hello, 2, sha); err != nil {
		t.Fatal(err)
	}
	live := githubtest.DeploymentStatus{State: "success", URL: "https://pr-2.example.dev"}
	for _, env := range []string{"preview/pr-2", "production/pr-2"} {
		w.gh.Deploys.AddDeployment(githubtest.Deployment{Repo: hello, SHA: sha, Ref: sha, Environment: env, Task: github.DeploymentTask, Statuses: []githubtest.DeploymentStatus{live}})
	}
	// A workflow run that was cancelled holding the preview's lease.
	w.gh.AddRun(githubtest.WorkflowRun{Repo: hello, ID: 78, Status: "completed", Conclusion: "cancelled", Attempt: 1})
	w.workflowLease(78)
	w.gh.ResetLog()

	w.say("wes", "/sponson apply --env preview")
	w.say("wes", "/sponson confirm dns --env preview")
	w.say("wes", "/sponson keep")
	w.say("wes", "/sponson unkeep")
	w.say("ada", "/sponson apply --env production")
	w.say("wes", "/sponson destroy --env preview")
	if r := w.receipt("production", "pr-2"); r == nil || r.ApprovedBy != "ada" {
		t.Fatalf("the approver's apply did not run: %+v", r)
	}
	if err := w.gh.SetPullState(hello, 2, "closed", false); err != nil {
		t.Fatal(err)
	}
	if code := w.post("pull_request", "close-2", fixture(t, "pull_request/closed.payload.json")); code != http.StatusAccepted {
		t.Fatalf("closed: %d", code)
	}
	w.idle()
	w.bot.SweepAll(context.Background())

	needed := map[string]string{}
	for _, r := range w.gh.Requests() {
		if r.Status == http.StatusForbidden || r.Status == http.StatusUnauthorized {
			t.Errorf("GitHub refused %s %s (%s): %d", r.Method, r.Path, r.Op, r.Status)
		}
		perm, known := opPermission[r.Op]
		if !known {
			t.Errorf("the bot called %s (%s %s), which opPermission does not list", r.Op, r.Method, r.Path)
			continue
		}
		if name, level, ok := strings.Cut(perm, ":"); ok && !grants(needed[name], level) {
			needed[name] = level
		}
	}
	for name, level := range needed {
		if !grants(perms[name], level) {
			t.Errorf("the bot's calls need %s: %s; the manifest gives %q", name, level, perms[name])
		}
	}
	for name, level := range perms {
		if name != "metadata" && needed[name] != level {
			t.Errorf("the manifest asks for %s: %s; the bot's calls need %q", name, level, needed[name])
		}
	}
	for _, want := range []string{"actions/get-workflow-run", "teams/get-membership-for-user-in-org", "repos/create-deployment-status", "issues/add-labels", "reactions/create-for-issue-comment", "git-receive-pack"} {
		if !slices.ContainsFunc(w.gh.Requests(), func(r githubtest.Request) bool { return r.Op == want }) {
			t.Errorf("the journey never called %s", want)
		}
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}
