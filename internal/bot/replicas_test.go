package bot

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/receipt"
)

// replica is another process of the bot on the same GitHub: its own App
// client and token, its own clone of each repository's receipts.
func (w *appWorld) replica(i int, interval time.Duration) *Bot {
	return w.replicaClaiming(i, sweep.ClaimTTL(interval))
}

func (w *appWorld) replicaClaiming(i int, claim time.Duration) *Bot {
	w.t.Helper()
	app, err := github.NewApp(github.Config{APIURL: w.gh.APIURL, ServerURL: w.gh.URL, Clock: w.tm}, 4242, w.key)
	if err != nil {
		w.t.Fatal(err)
	}
	ws := &AppWorkspaces{App: app, ServerURL: w.gh.URL, Clock: w.tm, Ops: w.cloud.Registry(), Dir: w.t.TempDir(),
		Identity: wire.Identity{Kind: receipt.KindBot, Host: fmt.Sprintf("replica-%d", i), Actor: w.bot.Identity}}
	return &Bot{Identity: w.bot.Identity, Workspace: ws, Installed: AppInstallations{App: app}, Clock: w.tm,
		Metrics: NewMetrics(nil, nil), Sweeper: &sweep.Sweeper{Clock: w.tm, Claim: claim}}
}

// sweepWork counts the GitHub requests of the sweep's own work: the
// pull request and branch questions and the receipts' pushes. What every
// replica asks before it knows whether the repository is its to sweep
// (the installations, a token, the receipts' listing, the claim's push)
// is counted apart.
func sweepWork(reqs []githubtest.Request) (rest, pushes int) {
	for _, r := range reqs {
		switch {
		case strings.HasPrefix(r.Op, "pulls/"), strings.HasPrefix(r.Op, "repos/get-branch"):
			rest++
		case r.Op == "git-receive-pack":
			pushes++
		}
	}
	return rest, pushes
}

// Replicas share the sweep: R replicas sweeping within one interval do a
// repository's work once — the same pull request questions and teardown
// pushes as one replica (plus one claim push each) — and the next
// interval's sweep is done again, by whichever replica comes first.
func TestReplicasShareTheSweep(t *testing.T) {
	const interval = 15 * time.Minute
	type result struct{ rest, pushes, swept, skipped int }
	run := func(replicas int) result {
		w := newAppWorld(t)
		w.apply("preview", "pr-2", "changes")
		if err := w.gh.SetPullState(hello, 2, "closed", false); err != nil {
			t.Fatal(err)
		}
		bots := make([]*Bot, replicas)
		for i := range bots {
			bots[i] = w.replica(i, interval)
		}
		before := len(w.gh.Requests())
		var res result
		for i, b := range bots {
			reps := b.SweepAll(context.Background())
			if len(reps) != 1 {
				t.Fatalf("replica %d: %+v", i, reps)
			}
			if reps[0].Skipped {
				res.skipped++
			} else {
				res.swept++
			}
			// The replicas' timers fire a few minutes apart.
			w.tm.Advance(interval / time.Duration(2*replicas))
		}
		if keys := w.cloud.Keys(); len(keys) != 0 {
			t.Fatalf("%d replicas: left %v", replicas, keys)
		}
		claims := 0
		for _, b := range bots {
			claims += int(testutil.ToFloat64(b.Metrics.Sweeps.WithLabelValues("ok")))
		}
		if claims != 1 {
			t.Errorf("%d replicas: %d sweeps done, want 1", replicas, claims)
		}
		res.rest, res.pushes = sweepWork(w.gh.Requests()[before:])
		// The next interval: swept again, once.
		w.tm.Advance(interval)
		again := 0
		for _, b := range bots {
			if reps := b.SweepAll(context.Background()); len(reps) == 1 && !reps[0].Skipped {
				again++
			}
		}
		if again != 1 {
			t.Errorf("%d replicas: the next interval was swept %d times, want 1", replicas, again)
		}
		return res
	}
	one, three := run(1), run(3)
	if one.swept != 1 || one.skipped != 0 || three.swept != 1 || three.skipped != 2 {
		t.Fatalf("swept/skipped: one replica %+v, three %+v", one, three)
	}
	if one.rest == 0 || three.rest != one.rest {
		t.Errorf("pull request and branch questions: %d with one replica, %d with three; want the same, not zero", one.rest, three.rest)
	}
	// A claim found held costs no push: the pushes are the winner's claim
	// and the teardown's, the same with three replicas as with one.
	if one.pushes == 0 || three.pushes != one.pushes {
		t.Errorf("pushes: %d with one replica, %d with three; want the same", one.pushes, three.pushes)
	}
	t.Logf("one replica: %+v; three: %+v", one, three)
}

// Without the claim every replica sweeps, and asks GitHub again: the
// count the claim saves.
func TestReplicasWithoutTheClaimEachSweep(t *testing.T) {
	w := newAppWorld(t)
	w.apply("preview", "pr-2", "changes")
	if err := w.gh.SetPullState(hello, 2, "closed", false); err != nil {
		t.Fatal(err)
	}
	before := len(w.gh.Requests())
	for i := range 3 {
		if reps := w.replicaClaiming(i, 0).SweepAll(context.Background()); len(reps) != 1 || reps[0].Skipped {
			t.Fatalf("replica %d: %+v", i, reps)
		}
	}
	rest, _ := sweepWork(w.gh.Requests()[before:])
	if rest <= 3 {
		t.Errorf("three unclaimed sweeps asked GitHub %d pull request or branch questions, want more than one sweep's 3", rest)
	}
	t.Logf("three unclaimed sweeps: %d questions", rest)
}
