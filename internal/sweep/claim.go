package sweep

import (
	"cmp"
	"context"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// ClaimIdentity is the parent object whose lease, in a repository's own
// receipt store, gives one replica that repository's sweep (Sweeper.Claim).
// `sponson locks` lists it as "parent sponson-sweep".
const ClaimIdentity = "sponson-sweep"

// claim takes r's sweep for ttl: true when this caller now holds it, false
// (and nil) when another replica's claim is live. The claim is not
// released after the sweep: it lasts its TTL, so replicas whose timers
// fire later in the same interval find it held and leave the repository
// to the one that swept. A claim whose holder stopped expires by itself.
func (s *Sweeper) claim(ctx context.Context, r Repo) (bool, error) {
	owner := r.Owner
	owner.RunID = newRunID()
	target := receipt.ParentTarget(ClaimIdentity)
	_, _, err := r.Store.Acquire(ctx, target, owner, s.Claim)
	if errs.CodeOf(err) == errs.LOCK_HELD {
		// A claim whose holder is certainly gone (a killed process on
		// this host) is taken over at once, as a scope's lease is.
		held, ok := receipt.HeldLease(err)
		if !ok || r.HolderGone == nil {
			return false, nil
		}
		if why, _ := r.HolderGone(ctx, held); why == "" {
			return false, nil
		}
		if _, ferr := r.Store.ForceRelease(ctx, target, "the sweep's claim: its holder is gone", cmp.Or(r.Actor, "the sweep")); ferr != nil {
			return false, ferr
		}
		_, _, err = r.Store.Acquire(ctx, target, owner, s.Claim)
		if errs.CodeOf(err) == errs.LOCK_HELD {
			return false, nil
		}
	}
	return err == nil, err
}

// ClaimTTL is the lease's TTL for a sweep every interval: a little less
// than the interval, so the holder's own next sweep finds it expired.
func ClaimTTL(interval time.Duration) time.Duration {
	return interval - interval/10
}
