package gitstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/receipttest"
)

// reachable is the number of commits reachable from ref in repository
// dir, counted in-process by go-git reading the repository's files (no
// git process: the compaction tests ask after every run).
func reachable(t testing.TB, dir, ref string) int {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	r, err := repo.Reference(plumbing.ReferenceName(ref), true)
	if err != nil {
		t.Fatalf("%s in %s: %v", ref, dir, err)
	}
	seen := map[plumbing.Hash]bool{}
	for todo := []plumbing.Hash{r.Hash()}; len(todo) > 0; {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := repo.CommitObject(h)
		if err != nil {
			t.Fatalf("commit %s of %s in %s: %v", h, ref, dir, err)
		}
		todo = append(todo, c.ParentHashes...)
	}
	return len(seen)
}

// run is one apply of a scope as the engine makes it: acquire, a
// checkpoint, the final receipt and the release in one commit (three
// commits), or, every third run, a run that wrote nothing to a provider
// (one WriteAt, no lease). Run i adds key k-i to the ledger and, from the
// fifth on, drops the key of four runs before: the ledger changes, every
// run is one event.
func oneRun(t *testing.T, s *Store, clock *clock.Fake, env, scope string, i int, ledger *[]string) {
	t.Helper()
	ctx := context.Background()
	target := receipt.ScopeTarget(env, scope)
	run := fmt.Sprintf("run-%d", i)
	clock.Advance(time.Minute)
	if i%3 == 2 {
		_, v, err := s.Read(ctx, env, scope)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteAt(ctx, newReceipt(env, scope, run, *ledger...), v); err != nil {
			t.Fatalf("run %d: WriteAt: %v", i, err)
		}
		return
	}
	l := mustLease(t, s, target, run, time.Hour)
	*ledger = append(*ledger, fmt.Sprintf("k-%d", i))
	if len(*ledger) > 4 {
		*ledger = (*ledger)[1:]
	}
	r := newReceipt(env, scope, run, *ledger...)
	r.Status = receipt.StatusPartial
	if err := s.Write(ctx, r, l); err != nil {
		t.Fatalf("run %d: checkpoint: %v", i, err)
	}
	r.Status = receipt.StatusComplete
	if err := s.WriteRelease(ctx, r, l); err != nil {
		t.Fatalf("run %d: final write: %v", i, err)
	}
}

// A branch written run after run stays within the bound (the squash and at
// most MaxDepth-1 commits on it), over both real remotes; the history
// keeps every run (fewer than carriedEvents here) in order, once each; the
// receipt, its version and the provenance of its ledger are as without
// compaction; and git fsck stays clean.
func TestCompactionBoundsTheBranch(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			const bound = 7
			rem := newRemote(t, tr)
			clock := clock.NewFake(start)
			s := newStore(t, rem.url, clock, func(o *Options) { o.MaxDepth = bound })
			ctx := context.Background()
			ref := refOf(receipt.ScopeTarget("preview", "pr-1")).String()
			var ledger []string
			const runs = 40
			maxSeen := 0
			for i := 0; i < runs; i++ {
				oneRun(t, s, clock, "preview", "pr-1", i, &ledger)
				n := reachable(t, rem.dir, ref)
				maxSeen = max(maxSeen, n)
				if n > bound {
					t.Fatalf("after run %d the branch reaches %d commits, bound %d", i, n, bound)
				}
			}
			if maxSeen < bound-1 {
				t.Errorf("the branch never grew past %d commits: nothing to compact was tested", maxSeen)
			}
			tip := strings.TrimSpace(gittest.Run(t, rem.dir, "rev-parse", ref))
			root := strings.TrimSpace(gittest.Run(t, rem.dir, "rev-list", "--max-parents=0", ref))
			if msg := gittest.Run(t, rem.dir, "log", "-1", "--format=%B", root); !strings.Contains(msg, trailerSquash) {
				t.Errorf("the root of a compacted branch is not a squash:\n%s", msg)
			}

			r, v, err := s.Read(ctx, "preview", "pr-1")
			if err != nil || r == nil || r.RunID != fmt.Sprintf("run-%d", runs-1) {
				t.Fatalf("Read = %+v, %v; want the last run's receipt", r, err)
			}
			if string(v) != tip {
				t.Errorf("version %s, want the tip %s (it wrote the receipt)", v, tip)
			}

			hist, err := s.History(ctx, receipt.ScopeTarget("preview", "pr-1"))
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != runs {
				t.Fatalf("History has %d events, want %d (one per run): %+v", len(hist), runs, hist)
			}
			for i, ev := range hist {
				if ev.RunID != fmt.Sprintf("run-%d", i) || ev.Status != receipt.StatusComplete {
					t.Fatalf("History[%d] = %+v, want run-%d complete", i, ev, i)
				}
			}
			if hist[runs-1].Version != v {
				t.Errorf("the last event's version %s, want %s", hist[runs-1].Version, v)
			}
			recent, more, err := s.RecentHistory(ctx, receipt.ScopeTarget("preview", "pr-1"), 5)
			if err != nil || !more || len(recent) != 5 || recent[0].RunID != fmt.Sprintf("run-%d", runs-5) {
				t.Errorf("RecentHistory(5) = %+v, more %v, %v; want runs %d..%d and more", recent, more, err, runs-5, runs-1)
			}

			ids, ok, err := s.Recorded(ctx, receipt.ScopeTarget("preview", "pr-1"))
			if err != nil || !ok {
				t.Fatalf("Recorded: %v, %v", ok, err)
			}
			for _, en := range r.Ledger {
				if !ids[en.Ref().Identity()] {
					t.Errorf("Recorded lacks %s, which a run of this store introduced", en.Key)
				}
			}
			gittest.Fsck(t, rem.dir)
		})
	}
}

// What a hand edit added before a compaction is still not recorded after
// it: the squash carries the provenance, not the ledger.
func TestCompactionKeepsProvenance(t *testing.T) {
	t.Parallel()
	rem := newRemote(t, "file")
	clock := clock.NewFake(start)
	s := newStore(t, rem.url, clock, func(o *Options) { o.MaxDepth = 4 })
	ctx := context.Background()
	target := receipt.ScopeTarget("preview", "pr-1")
	l := mustLease(t, s, target, "run-0", time.Hour)
	if err := s.WriteRelease(ctx, newReceipt("preview", "pr-1", "run-0", "mine"), l); err != nil {
		t.Fatal(err)
	}
	planted := newReceipt("preview", "pr-1", "run-0", "mine", "theirs")
	data, _ := receipt.Encode(planted)
	hostilePush(t, rem.dir, shortRef(refOf(target)), map[string][]byte{receipt.ReceiptFile: data})
	for i := 1; i <= 6; i++ { // carries the hand edit forward, compacting twice
		clock.Advance(time.Minute)
		_, v, err := s.Read(ctx, "preview", "pr-1")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteAt(ctx, newReceipt("preview", "pr-1", fmt.Sprintf("run-%d", i), "mine", "theirs"), v); err != nil {
			t.Fatal(err)
		}
	}
	if n := reachable(t, rem.dir, refOf(target).String()); n > 4 {
		t.Fatalf("the branch reaches %d commits, bound 4", n)
	}
	ids, ok, err := s.Recorded(ctx, target)
	if err != nil || !ok {
		t.Fatalf("Recorded: %v, %v", ok, err)
	}
	mine := newReceipt("preview", "pr-1", "x", "mine").Ledger[0].Ref().Identity()
	theirs := newReceipt("preview", "pr-1", "x", "theirs").Ledger[0].Ref().Identity()
	if !ids[mine] || ids[theirs] {
		t.Errorf("Recorded = %v; want %q (written by the store) and not %q (a hand edit)", ids, mine, theirs)
	}
}

// A branch from before compaction (no depth trailers: 60 commits made
// with git fast-import) is compacted by the first write, which learns its
// depth by walking it; the history it had is carried.
func TestCompactionOfAnOldBranch(t *testing.T) {
	t.Parallel()
	rem := newRemote(t, "http")
	seedRuns(t, rem.dir, "preview", "pr-1", 60)
	ref := refOf(receipt.ScopeTarget("preview", "pr-1")).String()
	if n := reachable(t, rem.dir, ref); n != 60 {
		t.Fatalf("seeded %d commits, want 60", n)
	}
	clock := clock.NewFake(start)
	s := newStore(t, rem.url, clock, func(o *Options) { o.MaxDepth = 10 })
	ctx := context.Background()
	l := mustLease(t, s, receipt.ScopeTarget("preview", "pr-1"), "run-new", time.Hour)
	if n := reachable(t, rem.dir, ref); n != 2 {
		t.Errorf("after the first write the branch reaches %d commits, want 2 (the squash and the write)", n)
	}
	if err := s.WriteRelease(ctx, newReceipt("preview", "pr-1", "run-new", "a"), l); err != nil {
		t.Fatal(err)
	}
	hist, err := s.History(ctx, receipt.ScopeTarget("preview", "pr-1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 61 || hist[0].RunID != "seed-0" || hist[59].RunID != "seed-59" || hist[60].RunID != "run-new" {
		t.Errorf("History: %d events (%v ... ), want the 60 seeded runs then run-new", len(hist), hist[:min(2, len(hist))])
	}
	gittest.Fsck(t, rem.dir)
}

// A remote that refuses non-fast-forward updates (receive.denyNonFastForwards)
// refuses the compaction's push: the same write lands the ordinary way,
// the store warns once (STORE_UNCOMPACTED) and never tries again, and the
// refusal is never taken for contention (no backoff, the budget untouched).
func TestCompactionRefusedFallsBack(t *testing.T) {
	t.Parallel()
	// denyNonFastForwards over both remotes, and a pre-receive hook that
	// refuses force pushes with GitHub's words for its "Block force pushes"
	// rule (GH013): a refusal the store only knows as a server rule.
	type refusal struct {
		name, transport string
		refuse          func(t *testing.T, dir string)
	}
	var cases []refusal
	for _, tr := range transports {
		cases = append(cases, refusal{"denyNonFastForwards/" + tr, tr, func(t *testing.T, dir string) {
			gittest.Run(t, dir, "config", "receive.denyNonFastForwards", "true")
		}})
	}
	cases = append(cases, refusal{"ruleset-hook/http", "http", func(t *testing.T, dir string) {
		gittest.Hook(t, dir, "pre-receive", `while read old new ref; do
  case $old in 0000000000000000000000000000000000000000) continue;; esac
  case $new in 0000000000000000000000000000000000000000) continue;; esac
  if ! git merge-base --is-ancestor "$old" "$new"; then
    echo "error: GH013: Repository rule violations found for $ref." >&2
    echo "- Cannot force-push to this branch" >&2
    exit 1
  fi
done
exit 0`)
	}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rem := newRemote(t, c.transport)
			c.refuse(t, rem.dir)
			clock := clock.NewFake(start)
			slept := 0
			s := newStore(t, rem.url, clock, func(o *Options) {
				o.MaxDepth = 3
				o.Sleep = func(context.Context, time.Duration) error { slept++; return nil }
			})
			ctx := context.Background()
			ref := refOf(receipt.ScopeTarget("preview", "pr-1")).String()
			var ledger []string
			for i := 0; i < 6; i++ {
				oneRun(t, s, clock, "preview", "pr-1", i, &ledger)
			}
			if n := reachable(t, rem.dir, ref); n != 14 {
				t.Errorf("the branch reaches %d commits, want all 14 (nothing rewritten)", n)
			}
			if slept != 0 {
				t.Errorf("the store backed off %d times: a refusal taken for contention", slept)
			}
			ws := s.Warnings()
			if len(ws) != 1 || ws[0].Code != errs.STORE_UNCOMPACTED || !strings.Contains(ws[0].HintText(), "force-push") {
				t.Fatalf("warnings = %v, want one STORE_UNCOMPACTED saying what to allow", ws)
			}
			if again := s.Warnings(); len(again) != 0 {
				t.Errorf("warnings again = %v, want none", again)
			}
			// Remembered: the next write is the ordinary one and costs
			// what it always did (one push: two round trips), no fetch.
			l := mustLease(t, s, receipt.ScopeTarget("preview", "pr-1"), "run-x", time.Hour)
			before := s.wire.RoundTrips()
			if err := s.WriteRelease(ctx, newReceipt("preview", "pr-1", "run-x", "a"), l); err != nil {
				t.Fatal(err)
			}
			if got := s.wire.RoundTrips() - before; got != 2 {
				t.Errorf("a write after the refusal took %d round trips, want 2", got)
			}
			hist, err := s.History(ctx, receipt.ScopeTarget("preview", "pr-1"))
			if err != nil || len(hist) != 7 {
				t.Errorf("History: %d events, %v; want 7", len(hist), err)
			}
			gittest.Fsck(t, rem.dir)
		})
	}
}

// The conformance suite holds with compaction every few commits: fencing,
// compare-and-swap, leases, history and provenance are the same across a
// rewrite of the branch.
func TestConformanceCompacting(t *testing.T) {
	t.Parallel()
	receipttest.Run(t, func(t *testing.T, clock *clock.Fake) receipt.Store {
		r := newRemote(t, "file")
		s := newStore(t, r.url, clock, func(o *Options) { o.MaxDepth = minDepth + 1 })
		t.Cleanup(func() {
			if !t.Failed() {
				gittest.Fsck(t, r.dir)
			}
		})
		return s
	}, receipttest.WithPlant(plant), receipttest.WithRacers(4, 2))
}

// A compacting push whose answer is lost (the server applied it, the
// client got a 502) is recognised on the re-read as landed: never written
// twice, never reported as a failure.
func TestCompactionLostAnswer(t *testing.T) {
	t.Parallel()
	rem := newRemote(t, "http")
	clock := clock.NewFake(start)
	s := newStore(t, rem.url, clock, func(o *Options) { o.MaxDepth = 3 })
	ctx := context.Background()
	target := receipt.ScopeTarget("preview", "pr-1")
	l := mustLease(t, s, target, "run-1", time.Hour)
	for i := 0; i < 2; i++ {
		if err := s.Write(ctx, newReceipt("preview", "pr-1", "run-1", fmt.Sprint(i)), l); err != nil {
			t.Fatal(err)
		}
	}
	ref := refOf(target).String()
	if n := reachable(t, rem.dir, ref); n != 3 {
		t.Fatalf("%d commits before the compaction, want 3", n)
	}
	rem.srv.LoseNextAnswers(1)
	if err := s.Write(ctx, newReceipt("preview", "pr-1", "run-1", "last"), l); err != nil {
		t.Fatalf("a compacting write whose answer was lost: %v", err)
	}
	if n := reachable(t, rem.dir, ref); n != 2 {
		t.Errorf("%d commits after the compaction, want 2 (the squash and the write, once)", n)
	}
	if r, _, err := s.Read(ctx, "preview", "pr-1"); err != nil || r.Ledger[0].Key != "last" {
		t.Errorf("Read = %+v, %v", r, err)
	}
	if ws := s.Warnings(); len(ws) != 0 {
		t.Errorf("warnings %v: a lost answer is not a refusal", ws)
	}
}
