package action

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

// The event table, row by row.
func TestDecide(t *testing.T) {
	pr := func(n int) scope.Ctx { return scope.Ctx{Scope: scope.PRScope(n), PR: scope.PR{Number: &n}} }
	fork := pr(3)
	fork.Fork, fork.HeadRepo = true, "evil/app"
	branch := scope.Ctx{Scope: "branch-feat-x", Git: scope.Git{Branch: "feat/x"}}
	deleted := branch
	deleted.Deleted = true
	main := scope.Ctx{Scope: "main", Git: scope.Git{Branch: "main"}}
	dep := func(state, env string) Event {
		return Event{Name: "deployment_status", Deployment: &Deployment{State: state, Environment: env, SHA: headSHA}}
	}
	for _, tc := range []struct {
		name    string
		command string
		ev      Event
		c       scope.Ctx
		prFound bool
		want    Decision
	}{
		{"opened", "auto", Event{Name: "pull_request", Action: "opened"}, pr(1), false, Decision{Command: "apply"}},
		{"synchronize", "auto", Event{Name: "pull_request", Action: "synchronize"}, pr(1), false, Decision{Command: "apply"}},
		{"reopened clears the tombstone", "auto", Event{Name: "pull_request", Action: "reopened"}, pr(1), false, Decision{Command: "apply", Reopen: true}},
		{"closed leaves one", "auto", Event{Name: "pull_request", Action: "closed"}, pr(1), false, Decision{Command: "destroy", Close: true}},
		{"target like pull_request", "auto", Event{Name: "pull_request_target", Action: "opened"}, pr(1), false, Decision{Command: "apply"}},
		{"plan on opened", "plan", Event{Name: "pull_request", Action: "opened"}, pr(1), false, Decision{Command: "plan"}},
		{"explicit destroy on close", "destroy", Event{Name: "pull_request", Action: "closed"}, pr(1), false, Decision{Command: "destroy", Close: true}},
		{"labeled", "auto", Event{Name: "pull_request", Action: "labeled"}, pr(1), false, Decision{Code: errs.EVENT_IGNORED}},
		{"fork", "auto", Event{Name: "pull_request", Action: "opened"}, fork, false, Decision{Code: errs.FORK_NO_SECRETS}},
		{"fork even when told", "apply", Event{Name: "pull_request_target", Action: "opened"}, fork, false, Decision{Code: errs.FORK_NO_SECRETS}},
		{"deployment with its PR", "auto", dep("success", "Preview"), pr(2), true, Decision{Command: "apply"}},
		{"deployment without", "auto", dep("success", "Preview"), branch, false, Decision{Code: errs.NO_OPEN_PR}},
		{"deployment failed", "auto", dep("failure", "Preview"), pr(2), true, Decision{Code: errs.EVENT_IGNORED}},
		{"deployment to production", "auto", dep("success", "production"), pr(2), true, Decision{Code: errs.EVENT_IGNORED}},
		{"push to default", "auto", Event{Name: "push"}, main, false, Decision{Command: "apply"}},
		{"push to a branch", "auto", Event{Name: "push"}, branch, false, Decision{Code: errs.EVENT_IGNORED}},
		{"push applying a branch when told", "apply", Event{Name: "push"}, branch, false, Decision{Command: "apply"}},
		{"push deleting a branch", "auto", Event{Name: "push"}, deleted, false, Decision{Command: "destroy"}},
		{"delete event of a branch", "auto", Event{Name: "delete"}, deleted, false, Decision{Command: "destroy"}},
		{"dispatch", "auto", Event{Name: "workflow_dispatch"}, branch, false, Decision{Command: "apply"}},
		{"dispatch destroy", "destroy", Event{Name: "workflow_dispatch"}, branch, false, Decision{Command: "destroy"}},
		{"issue comment", "auto", Event{Name: "issue_comment", Action: "created"}, pr(1), false, Decision{Code: errs.EVENT_IGNORED}},
	} {
		got := Decide(tc.command, tc.ev, tc.c, tc.prFound)
		if got.Command != tc.want.Command || got.Code != tc.want.Code || got.Close != tc.want.Close || got.Reopen != tc.want.Reopen || got.Skipped() != (tc.want.Command == "") {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A closed pull request's scope is destroyed from its ledger even when the
// plan file is gone (the pull request deleted it).
func TestCloseWithoutAPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	w.run()
	w.want("status", "complete")
	if err := os.Remove(filepath.Join(w.ws, "release.plan.yaml")); err != nil {
		t.Fatal(err)
	}
	w.event("pull_request", fixture(t, "pull_request/closed.payload.json"))
	if w.run() != 0 {
		t.Fatalf("exit %d\n%s", w.code, w.out.String())
	}
	w.want("status", "complete")
	if r := w.receipt("preview", "pr-2"); r == nil || !r.Destroyed || len(r.Ledger) != 0 {
		t.Errorf("not destroyed: %+v", r)
	}
}
