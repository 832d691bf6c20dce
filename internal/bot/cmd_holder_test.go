package bot

import (
	"context"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/receipt"
)

// workflowLease makes the Action's workflow run id hold the preview of
// pull request #2, with an hour to live.
func (w *appWorld) workflowLease(id int64) {
	w.t.Helper()
	ws, err := w.ws.Open(context.Background(), Repository{Installation: 1, Owner: "Codertocat", Name: "Hello-World"})
	if err != nil {
		w.t.Fatal(err)
	}
	defer ws.close()
	owner := receipt.Owner{RunID: "wf-run", Kind: receipt.KindAction, GitHubRunID: id, GitHubRunAttempt: 1, Repository: hello}
	if _, _, err := ws.Store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-2"), owner, time.Hour); err != nil {
		w.t.Fatal(err)
	}
}

// A workflow run that was cancelled while it held the preview's lease
// holds nothing: the bot asks GitHub and a comment's apply takes the
// lease over at once. A run still in progress keeps it.
func TestCommentTakesOverAFinishedWorkflowsLease(t *testing.T) {
	w := stepWorld(t)
	w.gh.AddRun(githubtest.WorkflowRun{Repo: hello, ID: 77, Status: "in_progress", Attempt: 1})
	w.workflowLease(77)
	w.say("wes", "/sponson apply --env preview")
	if r := w.receipt("preview", "pr-2"); r != nil && len(r.Ledger) != 0 {
		t.Fatalf("applied under a live workflow's lease: %+v", r)
	}
	if n := w.gh.Count("actions/get-workflow-run"); n == 0 {
		t.Errorf("the workflow run was never asked about")
	}

	w.gh.AddRun(githubtest.WorkflowRun{Repo: hello, ID: 77, Status: "completed", Conclusion: "cancelled", Attempt: 1})
	w.say("wes", "/sponson apply --env preview")
	r := w.receipt("preview", "pr-2")
	if r == nil || len(r.Ledger) != 2 {
		t.Fatalf("the cancelled workflow's lease was not taken over: %+v", r)
	}
	if r.LockPreempted == nil || r.LockPreempted.Holder != "wf-run" {
		t.Errorf("the receipt does not record the takeover: %+v", r.LockPreempted)
	}
}
