package action

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

// holdLease leaves a lease on preview/pr-2 held by GitHub run ghRun, as a
// killed or cancelled job leaves it.
func (w *world) holdLease(ghRun int64) {
	w.t.Helper()
	st, err := gitstore.New(context.Background(), gitstore.Options{URL: w.gh.URL + "/" + repoName + ".git", Token: token})
	if err != nil {
		w.t.Fatal(err)
	}
	owner := receipt.Owner{RunID: "r-held", Operation: receipt.OpApply, Kind: receipt.KindAction, GitHubRunID: ghRun, GitHubRunAttempt: 1, Repository: repoName}
	if _, _, err := st.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-2"), owner, 15*time.Minute); err != nil {
		w.t.Fatal(err)
	}
}

// A lease whose GitHub run was cancelled is taken over at once, long before
// its TTL, and the receipt says whose it was and why.
func TestLeaseOfACancelledRunIsTakenOver(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.gh.AddRun(githubtest.WorkflowRun{Repo: repoName, ID: 77, Status: "completed", Conclusion: "cancelled"})
	w.holdLease(77)
	w.vars["INPUT_LOCK_WAIT"] = "0s"
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if w.run() != 0 {
		t.Fatalf("exit %d\n%s", w.code, w.out.String())
	}
	w.want("status", "complete")
	r := w.receipt("preview", "pr-2")
	if r.LockPreempted == nil || r.LockPreempted.Holder != "r-held" {
		t.Fatalf("lock_preempted %+v", r.LockPreempted)
	}
	found := false
	for _, wn := range r.Warnings {
		found = found || wn.Code == errs.LEASE_TAKEN_OVER && strings.Contains(wn.Message, "GitHub run 77 of "+repoName+" was cancelled")
	}
	if !found {
		t.Errorf("the receipt does not say why: %+v", r.Warnings)
	}
	if body := w.comments(2)[0].Body; !strings.Contains(body, "Took over the lease") {
		t.Errorf("the comment does not say the lease was taken over:\n%s", body)
	}
}

// A lease whose GitHub run is still running blocks (LOCK_HELD, exit 3), and
// the comment names the holder and links its run.
func TestLeaseOfALiveRunBlocks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.gh.AddRun(githubtest.WorkflowRun{Repo: repoName, ID: 78, Status: "in_progress"})
	w.holdLease(78)
	w.vars["INPUT_LOCK_WAIT"] = "0s"
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if w.run() != 3 {
		t.Fatalf("exit %d, want 3\n%s", w.code, w.out.String())
	}
	w.want("status", "failed", "exit_code", "3")
	body := w.comments(2)[0].Body
	if !strings.Contains(body, "held by another run") || !strings.Contains(body, "/"+repoName+"/actions/runs/78") {
		t.Errorf("the comment does not name the holder's run:\n%s", body)
	}
	if w.writes() != 0 {
		t.Errorf("%d provider writes without the lease", w.writes())
	}
}

// With no local history (a shallow checkout), an older commit's run is
// recognised as stale through the compare API and writes no receipt.
func TestStaleRunThroughTheCompareAPI(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	older, err := w.gh.Commit(repoName, "changes", "one")
	if err != nil {
		t.Fatal(err)
	}
	newer, err := w.gh.Commit(repoName, "changes", "two")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: repoName, Number: 2, State: "open", Head: githubtest.Ref{Ref: "changes", SHA: newer}}); err != nil {
		t.Fatal(err)
	}
	at := func(sha string) []byte {
		return edit(t, fixture(t, "pull_request/synchronize.payload.json"), func(m map[string]any) {
			m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = sha
		})
	}
	w.event("pull_request", at(newer))
	w.run()
	w.want("status", "complete")
	run := w.receipt("preview", "pr-2").RunID
	w.event("pull_request", at(older))
	if w.run() != 0 {
		t.Fatalf("exit %d\n%s", w.code, w.out.String())
	}
	w.want("status", "stale")
	if r := w.receipt("preview", "pr-2"); r.RunID != run {
		t.Errorf("the stale run wrote its receipt")
	}
}

// A cancelled job (SIGTERM: a done context) touches no provider, and still
// says so on the pull request.
func TestCancelledJob(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.ctx = ctx
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if code := w.run(); code == 0 {
		t.Fatalf("exit 0\n%s", w.out.String())
	}
	w.want("status", "failed")
	if w.writes() != 0 {
		t.Errorf("%d provider writes after the cancel", w.writes())
	}
	if cs := w.comments(2); len(cs) != 1 || !strings.Contains(cs[0].Body, "INTERRUPTED") {
		t.Errorf("the comment does not say the run was interrupted: %+v", cs)
	}
}
