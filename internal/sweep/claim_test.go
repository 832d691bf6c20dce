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
