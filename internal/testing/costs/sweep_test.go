package costs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/githubtest"
)

// ghToken is the workflow token `sponson gc` runs with in these worlds.
const ghToken = "ghs_costsworkflowtoken0123456789"

// withGitHub gives the world a fake GitHub holding the repository
// acme/shop, whose pull requests 1 and 1001..1000+open are open, and the
// variables `sponson gc` reads to ask it.
func withGitHub(tb testing.TB, w *world, open int) *githubtest.Server {
	tb.Helper()
	gh := githubtest.Start(tb, nil)
	if err := gh.AddRepo(githubtest.Repo{FullName: "acme/shop"}); err != nil {
		tb.Fatal(err)
	}
	gh.AddToken(githubtest.Token{Value: ghToken, Identity: githubtest.ActionsBot,
		Permissions: map[string]string{"contents": "write", "pull_requests": "read", "metadata": "read"}})
	var head, base githubtest.Ref
	add := func(n int) {
		// The first resolves main; the others are given its commits
		// (resolving it for each was most of a 10,000-scope setup).
		if _, err := gh.AddPull(githubtest.PullRequest{Repo: "acme/shop", Number: n, Head: githubtest.Ref{Ref: "main", SHA: head.SHA}, Base: base}); err != nil {
			tb.Fatal(err)
		}
	}
	add(1)
	if pr, ok := gh.Issues.Pull("acme/shop", 1); ok {
		head, base = pr.Head, pr.Base
	}
	for i := 0; i < open; i++ {
		add(1001 + i)
	}
	for k, v := range map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/shop", "GITHUB_TOKEN": ghToken,
		"GITHUB_API_URL": gh.APIURL, "GITHUB_SERVER_URL": gh.URL} {
		w.vars[k] = v
	}
	return gh
}

// gitCost is what one command cost at the git server: requests and the
// bytes it sent.
type gitCost struct {
	requests int
	bytes    int64
	log      []string
}

func (w *world) measureGit(args ...string) (gitCost, string) {
	w.tb.Helper()
	g0, b0 := len(w.git.Log()), w.git.BytesSent()
	out := w.run(args...)
	return gitCost{requests: len(w.git.Log()) - g0, bytes: w.git.BytesSent() - b0, log: w.git.Log()[g0:]}, out
}

// TestSweepAtManyScopes: `sponson gc` with nothing to do reads the ref
// listing once and no receipt: at 2,001 scopes (and 2,000 lock branches)
// at most 5 git requests and under 2 MB from the git server.
func TestSweepAtManyScopes(t *testing.T) {
	t.Parallel()
	const n = 2000
	w := newWorld(t, plan20)
	w.run("apply", "--pr", "1")
	seedScopes(t, w, n)
	withGitHub(t, w, n)
	c, out := w.measureGit("gc")
	if !strings.Contains(out, fmt.Sprintf("%d scope(s), 0 finding(s)", n+1)) {
		t.Fatalf("gc: %s", out)
	}
	t.Logf("gc at %d scopes: %d git requests, %d bytes", n+1, c.requests, c.bytes)
	if c.requests > 5 || c.bytes >= 2<<20 {
		t.Errorf("gc with nothing to do at %d scopes: %d git requests and %d bytes, want at most 5 and under 2 MB:\n  %s",
			n+1, c.requests, c.bytes, strings.Join(c.log, "\n  "))
	}
}

// TestSweepClosedGrowsWithClosed: `sponson gc` tearing down closed pull
// requests makes as many git requests at 607 scopes as at 107: they
// grow with the scopes it acts on (3 each time, applied for real), not
// with the scopes the store holds.
func TestSweepClosedGrowsWithClosed(t *testing.T) {
	t.Parallel()
	const closed = 3
	w := newWorld(t, plan20)
	for i := 1; i <= 2*closed+1; i++ {
		w.run("apply", "--pr", fmt.Sprint(i))
	}
	seedScopes(t, w, 100)
	gh := withGitHub(t, w, 600)
	for i := 2; i <= 2*closed+1; i++ {
		if _, err := gh.AddPull(githubtest.PullRequest{Repo: "acme/shop", Number: i, Head: githubtest.Ref{Ref: "main"}}); err != nil {
			t.Fatal(err)
		}
	}
	gc := func(from int) (gitCost, string) {
		for i := from; i < from+closed; i++ {
			if err := gh.SetPullState("acme/shop", i, "closed", true); err != nil {
				t.Fatal(err)
			}
		}
		// One teardown at a time: teardowns at once wait for each
		// other's lease on the shared list, and how often they ask
		// depends on timing.
		return w.measureGit("gc", "--concurrency", "1")
	}
	small, out := gc(2)
	if !strings.Contains(out, fmt.Sprintf("%d finding(s)", closed)) {
		t.Fatalf("gc at 107 scopes: %s", out)
	}
	seedScopesFrom(t, w, 1101, 500)
	large, out := gc(2 + closed)
	if !strings.Contains(out, fmt.Sprintf("%d finding(s)", closed)) {
		t.Fatalf("gc at 607 scopes: %s", out)
	}
	t.Logf("gc of %d closed pull requests: %d git requests (%d bytes) at 107 scopes, %d (%d bytes) at 607", closed, small.requests, small.bytes, large.requests, large.bytes)
	if large.requests != small.requests || large.requests > 5+closed*40 {
		t.Errorf("gc of %d closed pull requests: %d git requests at 607 scopes, %d at 107, want the same and at most %d:\n  %s",
			closed, large.requests, small.requests, 5+closed*40, strings.Join(large.log, "\n  "))
	}
}

// BenchmarkSweepAtScopes is `sponson gc` with nothing to do (every pull
// request open) at 500, 2,000 and 10,000 scopes (and as many lock
// branches): git requests and bytes the git server sent per gc, and
// x-plan, its time over a steady plan's of one scope (pr-2: no seeded
// scope's name extends it) at the same number of branches, timed beside it,
// and that plan's git requests and bytes.
//
//	go test ./internal/testing/costs -run '^$' -bench SweepAtScopes -benchtime 2x -count 1 -timeout 60m
func BenchmarkSweepAtScopes(b *testing.B) {
	for _, n := range []int{500, 2000, 10000} {
		b.Run(fmt.Sprintf("scopes=%d", n), func(b *testing.B) {
			w := newWorld(b, plan20)
			w.run("apply", "--pr", "1")
			w.run("apply", "--pr", "2")
			seedScopes(b, w, n-2)
			gh := withGitHub(b, w, n-2)
			if _, err := gh.AddPull(githubtest.PullRequest{Repo: "acme/shop", Number: 2, Head: githubtest.Ref{Ref: "main"}}); err != nil {
				b.Fatal(err)
			}
			w.run("gc") // warm the server's caches
			var gc, plan time.Duration
			var reqs, planReqs int
			var bytes, planBytes int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				c, _ := w.measureGit("gc")
				t1 := time.Now()
				p, _ := w.measureGit("plan", "--pr", "2")
				gc, plan = gc+t1.Sub(t0), plan+time.Since(t1)
				reqs, bytes = reqs+c.requests, bytes+c.bytes
				planReqs, planBytes = planReqs+p.requests, planBytes+p.bytes
			}
			b.ReportMetric(float64(reqs)/float64(b.N), "git-requests/op")
			b.ReportMetric(float64(bytes)/float64(b.N), "git-bytes/op")
			b.ReportMetric(float64(planReqs)/float64(b.N), "plan-git-requests/op")
			b.ReportMetric(float64(planBytes)/float64(b.N), "plan-git-bytes/op")
			b.ReportMetric(float64(gc.Microseconds())/1000/float64(b.N), "gc-ms")
			b.ReportMetric(float64(gc)/float64(plan), "x-plan")
		})
	}
}
