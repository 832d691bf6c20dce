package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/receipt"
)

// Two sweepers with a claim on one store: the first sweeps and keeps the
// claim, the second is skipped without judging anything, and once the
// claim's TTL has passed the next sweep (either's) is done again. The
// claim is the parent object sponson-sweep's lease, seen by `sponson
// locks`.
func TestClaimGivesTheSweepToOne(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 3, "feat/a")
	w.close(3)
	ttl := ClaimTTL(15 * time.Minute)
	a, b := &Sweeper{Clock: w.tm, Claim: ttl}, &Sweeper{Clock: w.tm, Claim: ttl}

	rep, err := a.Sweep(context.Background(), w.repo())
	if err != nil || rep.Skipped || rep.Count(ClosedPR) != 1 {
		t.Fatalf("first: %+v %v", rep, err)
	}
	w.tm.Advance(5 * time.Minute)
	rep, err = b.Sweep(context.Background(), w.repo())
	if err != nil || !rep.Skipped || len(rep.Findings) != 0 || rep.Scopes != 0 {
		t.Fatalf("second, within the interval: %+v %v", rep, err)
	}
	l, err := w.store.Lease(context.Background(), receipt.ParentTarget(ClaimIdentity))
	if err != nil || l == nil || l.TTL != ttl {
		t.Fatalf("the claim's lease: %+v %v", l, err)
	}
	w.tm.Advance(10 * time.Minute)
	rep, err = b.Sweep(context.Background(), w.repo())
	if err != nil || rep.Skipped {
		t.Fatalf("next interval: %+v %v", rep, err)
	}
	if ClaimTTL(15*time.Minute) >= 15*time.Minute {
		t.Errorf("the claim outlives the interval")
	}
}

// A claim whose holder is certainly gone (HolderGone says why) is taken
// over at once; one whose holder may live is left.
func TestClaimOfAGoneHolderIsTakenOver(t *testing.T) {
	w := memWorld(t)
	ttl := ClaimTTL(15 * time.Minute)
	s := &Sweeper{Clock: w.tm, Claim: ttl}
	if rep, err := s.Sweep(context.Background(), w.repo()); err != nil || rep.Skipped {
		t.Fatalf("first: %+v %v", rep, err)
	}
	r := w.repo()
	r.HolderGone = func(context.Context, receipt.Lease) (string, error) { return "", nil }
	if rep, err := s.Sweep(context.Background(), r); err != nil || !rep.Skipped {
		t.Fatalf("a holder that may live: %+v %v", rep, err)
	}
	r.HolderGone = func(context.Context, receipt.Lease) (string, error) { return "process 42 is gone", nil }
	if rep, err := s.Sweep(context.Background(), r); err != nil || rep.Skipped {
		t.Fatalf("a gone holder: %+v %v", rep, err)
	}
}
