package action

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

// workflowCommand is a workflow command anywhere in a line.
var workflowCommand = regexp.MustCompile(`::(add-mask|warning|error|notice|group|endgroup|debug|set-output)[ :]`)

// checkLog fails when a workflow command does not start its line (the
// runner then ignores it and prints it, a mask's value included), when
// the Neon connection string (a sensitive output) is printed anywhere but
// in its own mask, or when its mask was never sent.
func (w *world) checkLog() {
	w.t.Helper()
	maskSent := false
	for i, line := range strings.Split(w.out.String(), "\n") {
		for _, loc := range workflowCommand.FindAllStringIndex(line, -1) {
			if loc[0] != 0 {
				w.t.Errorf("stdout line %d: a command does not start the line: %s", i+1, line)
			}
		}
		if strings.HasPrefix(line, "::add-mask::postgresql://") {
			maskSent = true
		} else if strings.Contains(line, "postgresql://") {
			w.t.Errorf("stdout line %d: the connection string is printed: %s", i+1, line)
		}
	}
	if !maskSent {
		w.t.Errorf("the connection string's mask was never sent:\n%s", w.out.String())
	}
}

// A lease taken over from a cancelled run prints a progress line while the
// run's sensitive output (the Neon connection string) is still to come:
// its mask starts a line of its own, and the connection string is printed
// nowhere else.
func TestLeaseTakeoverThenSensitiveOutput(t *testing.T) {
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
	if !strings.Contains(w.out.String(), "\ntook over the lease on preview/pr-2 held by ") {
		t.Fatalf("no takeover line:\n%s", w.out.String())
	}
	w.checkLog()
}

// releaseOn is the job's stdout: when the line of a lease wait appears,
// the lease it waits for is released, as its holder finishing would.
type releaseOn struct {
	mu      sync.Mutex
	w       *world
	release func()
	once    sync.Once
	seen    strings.Builder
}

func (r *releaseOn) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen.Write(p)
	if strings.Contains(r.seen.String(), "waiting for lock on preview/pr-2") {
		r.once.Do(func() { go r.release() })
	}
	return r.w.out.Write(p)
}

// A run that waits for a live lease prints the wait, gets the lease when
// its holder lets go, and applies; its sensitive output's mask starts a
// line of its own, and the connection string is printed nowhere else.
func TestLeaseWaitThenSensitiveOutput(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.gh.AddRun(githubtest.WorkflowRun{Repo: repoName, ID: 78, Status: "in_progress"})
	st, err := gitstore.New(context.Background(), gitstore.Options{URL: w.gh.URL + "/" + repoName + ".git", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	owner := receipt.Owner{RunID: "r-held", Operation: receipt.OpApply, Kind: receipt.KindAction, Host: "vm", PID: 28042,
		GitHubRunID: 78, GitHubRunAttempt: 1, Repository: repoName}
	held, _, err := st.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-2"), owner, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	// The wait is as long as the release takes: the verdict does not
	// depend on how fast the machine is.
	w.vars["INPUT_LOCK_WAIT"] = "10m"
	w.stdout = &releaseOn{w: w, release: func() { released <- st.Release(context.Background(), held) }}
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if w.run() != 0 {
		t.Fatalf("exit %d\n%s", w.code, w.out.String())
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	w.want("status", "complete")
	w.checkLog()
}
