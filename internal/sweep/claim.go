package sweep

import (
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
	_, _, err := r.Store.Acquire(ctx, receipt.ParentTarget(ClaimIdentity), owner, s.Claim)
	switch {
	case err == nil:
		return true, nil
	case errs.CodeOf(err) == errs.LOCK_HELD:
		return false, nil
	}
	return false, err
}

// ClaimTTL is the lease's TTL for a sweep every interval: a little less
// than the interval, so the holder's own next sweep finds it expired.
func ClaimTTL(interval time.Duration) time.Duration {
	return interval - interval/10
}
