package journeys

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/bot"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/scope"
)

// monthPRs is the size of "a month in the life": SPONSON_MONTH_PRS pull
// requests (300 on demand), a small month by default so CI stays quick.
func monthPRs(t *testing.T) int {
	if v := os.Getenv("SPONSON_MONTH_PRS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SPONSON_MONTH_PRS=%q is not a positive number", v)
		}
		return n
	}
	if testing.Short() {
		return 8
	}
	return 30
}

// monthSeed is the seed of the month's randomness: SPONSON_MONTH_SEED, by
// default 20261201 (so CI runs one month, the same every time).
func monthSeed(t *testing.T) uint64 {
	v := os.Getenv("SPONSON_MONTH_SEED")
	if v == "" {
		return 20261201
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("SPONSON_MONTH_SEED=%q is not a non-negative integer", v)
	}
	return seed
}

type monthEvent struct {
	at   time.Time
	kind string // branch, open, push, close, late, reopen, delete, restart, sweep
	pr   int
	seq  int
}

// A month in the life (invariant I12): pull requests open, push, close and
// reopen at random over a simulated month; 10% of close deliveries are
// lost, 5% of runs are SIGKILLed (workflow applies and the bot's own
// teardowns), late workflow runs arrive after closes, and the bot restarts
// a few times. At the end, after one sweep interval, no resource of a
// closed pull request (or of a deleted branch) is left in the cloud, none
// was created again after its scope's tombstone (unless reopened), and
// every open pull request still has its resources.
func TestBotMonthInTheLife(t *testing.T) {
	t.Parallel()
	n := monthPRs(t)
	seed := monthSeed(t)
	// The whole month is a function of (seed, size) on an injected clock:
	// a failure says how to run exactly this month again.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay this month: SPONSON_MONTH_PRS=%d SPONSON_MONTH_SEED=%d go test ./internal/testing/journeys -run TestBotMonthInTheLife -v", n, seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	w := newBotWorld(t)
	start := w.tm.Now()
	month := 30 * 24 * time.Hour
	at := func(lo, hi time.Duration) time.Time {
		return start.Add(lo + time.Duration(rng.Int64N(int64(hi-lo)+1)))
	}
	var evs []monthEvent
	add := func(e monthEvent) { e.seq = len(evs); evs = append(evs, e) }
	for i := 1; i <= n; i++ {
		open := time.Duration(rng.Int64N(int64(month * 3 / 4)))
		if rng.IntN(4) == 0 {
			add(monthEvent{at: start.Add(open), kind: "branch", pr: i}) // an agent applied the branch first
		}
		add(monthEvent{at: start.Add(open + time.Minute), kind: "open", pr: i})
		life := time.Duration(1+rng.IntN(6*24)) * time.Hour
		for p := range 1 + rng.IntN(3) {
			add(monthEvent{at: start.Add(open + time.Duration(p+1)*life/5), kind: "push", pr: i})
		}
		if rng.IntN(10) == 0 {
			continue // still open at the end of the month
		}
		closeAt := open + life
		add(monthEvent{at: start.Add(closeAt), kind: "close", pr: i})
		if rng.IntN(4) == 0 {
			add(monthEvent{at: start.Add(closeAt + time.Duration(1+rng.IntN(30))*time.Minute), kind: "late", pr: i})
		}
		if rng.IntN(6) == 0 {
			reopen := closeAt + time.Duration(1+rng.IntN(48))*time.Hour
			add(monthEvent{at: start.Add(reopen), kind: "reopen", pr: i})
			add(monthEvent{at: start.Add(reopen + time.Hour), kind: "push", pr: i})
			if rng.IntN(3) > 0 {
				add(monthEvent{at: start.Add(reopen + 3*time.Hour), kind: "close", pr: i})
			}
		} else if rng.IntN(2) == 0 {
			add(monthEvent{at: start.Add(closeAt + 2*time.Hour), kind: "delete", pr: i})
		}
	}
	for d := time.Duration(0); d < month; d += 6 * time.Hour {
		add(monthEvent{at: start.Add(d), kind: "sweep"})
	}
	for range 3 {
		add(monthEvent{at: at(0, month), kind: "restart"})
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].at.Equal(evs[j].at) {
			return evs[i].at.Before(evs[j].at)
		}
		return evs[i].seq < evs[j].seq
	})

	branch := func(i int) string { return fmt.Sprintf("feat-%d-x", i) }
	closed := map[int]bool{}
	lost, killed, late := 0, 0, 0
	ctx := context.Background()
	// tombstoned reports whether pr-i is closed in some environment.
	tombstoned := func(i int) bool {
		for _, env := range []string{"preview", "staging"} {
			if r, _, _ := w.store.Read(ctx, env, scope.PRScope(i)); r != nil && r.Closed != nil {
				return true
			}
		}
		return false
	}
	for k, e := range evs {
		if d := e.at.Sub(w.tm.Now()); d > 0 {
			w.tm.Advance(d)
		}
		b := branch(e.pr)
		before := len(w.cloud.Writes())
		wasTombstoned := e.pr > 0 && tombstoned(e.pr)
		kill := rng.IntN(20) == 0
		switch e.kind {
		case "branch":
			w.gh.setBranch(b, true)
			for _, env := range []string{"preview", "staging"} {
				if w.applyAs(env, 0, b, kill) != nil && kill {
					killed++
				}
			}
		case "open":
			w.gh.setBranch(b, true)
			w.gh.setPR(e.pr, true, b, w.tm.Now())
			w.deliver("pull_request", fmt.Sprintf("d-%d", k), prPayload(t, "opened", e.pr, b, w.tm.Now()))
			w.idle()
			fallthrough
		case "push":
			if !w.gh.isOpen(e.pr) {
				break
			}
			for _, env := range []string{"preview", "staging"} {
				if w.applyAs(env, e.pr, b, kill) != nil && kill {
					killed++
				}
			}
		case "close":
			w.gh.setPR(e.pr, false, b, w.tm.Now())
			closed[e.pr] = true
			if rng.IntN(10) == 0 {
				lost++
				break
			}
			if kill {
				killed++
				w.cloud.Crash(optest.Match{Method: optest.MethodDelete}, func() { panic("SIGKILL") })
			}
			w.deliver("pull_request", fmt.Sprintf("d-%d", k), prPayload(t, "closed", e.pr, b, w.tm.Now()))
			w.idle()
			w.cloud.ClearFaults()
		case "late":
			// A workflow run queued before the close runs after it.
			late++
			for _, env := range []string{"preview", "staging"} {
				_ = w.applyAs(env, e.pr, b, false)
			}
		case "reopen":
			w.gh.setPR(e.pr, true, b, w.tm.Now())
			closed[e.pr] = false
			body := prPayload(t, "opened", e.pr, b, w.tm.Now())
			body = []byte(strings.Replace(string(body), `"action":"opened"`, `"action":"reopened"`, 1))
			w.deliver("pull_request", fmt.Sprintf("d-%d", k), body)
			w.idle()
			wasTombstoned = false
		case "delete":
			w.gh.setBranch(b, false)
			w.deliver("push", fmt.Sprintf("d-%d", k), deletePayload(t, b, w.tm.Now()))
			w.idle()
		case "restart":
			w.restart()
		case "sweep":
			w.bot.SweepAll(ctx)
		}
		// Nothing of a tombstoned scope is created again.
		if wasTombstoned {
			for _, wr := range w.cloud.Writes()[before:] {
				mine := strings.Contains(wr.Key, "-"+b+"-db") || strings.Contains(wr.Key, "-"+b+".example")
				if mine && wr.Method == optest.MethodCreate && !wr.Failed {
					t.Errorf("%s of pull request #%d: %s created after its tombstone", e.kind, e.pr, wr.Key)
				}
			}
		}
	}

	// One sweep interval after the month: the bot sweeps.
	w.tm.Advance(bot.DefaultSweepInterval + time.Minute)
	w.bot.SweepAll(ctx)
	openLeft, closedLeft := 0, 0
	for i := 1; i <= n; i++ {
		left := w.keysOf(branch(i))
		if closed[i] {
			if len(left) > 0 {
				closedLeft++
				t.Errorf("pull request #%d is closed but left %v", i, left)
			}
			continue
		}
		openLeft++
		// An open pull request's next run converges; nothing of it was
		// destroyed by the bot in the meantime that a run cannot restore.
		for _, env := range []string{"preview", "staging"} {
			if err := w.applyAs(env, i, branch(i), false); err != nil {
				t.Errorf("open pull request #%d: apply in %s: %v", i, env, err)
			}
		}
		if got := len(w.keysOf(branch(i))); got != 4 {
			t.Errorf("open pull request #%d has %d resources, want 4", i, got)
		}
	}
	if closedLeft == 0 {
		t.Logf("month of %d pull requests (seed %d, %d events): %d close deliveries lost, %d runs killed, %d late runs, %d still open; nothing of a closed pull request left",
			n, seed, len(evs), lost, killed, late, openLeft)
	}
}
