package sweep

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// ClaimIdentity is the parent object whose lease, in a repository's own
// receipt store, gives one replica that repository's sweep (Sweeper.Claim).
// `sponson locks` lists it as "parent sponson-sweep".
const ClaimIdentity = "sponson-sweep"

// claim takes r's sweep for ttl: the lease when this caller now holds it,
// nil (and nil) when another replica's claim is live. The claim is not
// released after the sweep: it lasts its TTL, so replicas whose timers
// fire later in the same interval find it held and leave the repository
// to the one that swept. A claim whose holder stopped expires by itself.
func (s *Sweeper) claim(ctx context.Context, r Repo) (*receipt.Lease, error) {
	owner := r.Owner
	owner.RunID = newRunID()
	target := receipt.ParentTarget(ClaimIdentity)
	l, _, err := r.Store.Acquire(ctx, target, owner, s.Claim)
	if errs.CodeOf(err) == errs.LOCK_HELD {
		// A claim whose holder is certainly gone (a killed process on
		// this host) is taken over at once, as a scope's lease is.
		held, ok := receipt.HeldLease(err)
		if !ok || r.HolderGone == nil {
			return nil, nil
		}
		if why, _ := r.HolderGone(ctx, held); why == "" {
			return nil, nil
		}
		if _, ferr := r.Store.ForceRelease(ctx, target, "the sweep's claim: its holder is gone", cmp.Or(r.Actor, "the sweep")); ferr != nil {
			return nil, ferr
		}
		l, _, err = r.Store.Acquire(ctx, target, owner, s.Claim)
		if errs.CodeOf(err) == errs.LOCK_HELD {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// keepClaim renews claim l every third of its TTL on the sweeper's clock
// until stop is called, so a sweep longer than the claim stays this
// sweeper's alone. A renewal the store refuses (LOCK_LOST: another
// replica took the claim after it lapsed) sets lost, and the sweep judges
// no scope after that; a renewal that fails otherwise is tried again at
// the next tick (the claim lasts its TTL from the last renewal that
// landed). stop waits for the renewer to end.
func (s *Sweeper) keepClaim(ctx context.Context, r Repo, l receipt.Lease, lost *atomic.Bool) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	every := s.Claim / 3
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-clock.Or(s.Clock).After(every):
			}
			nl, err := r.Store.Renew(ctx, l)
			switch {
			case err == nil:
				l = nl
			case errs.CodeOf(err) == errs.LOCK_LOST:
				lost.Store(true)
				s.log().Warn("the sweep's claim was lost: this sweep stops judging", "repository", r.Name, "error", errs.Coded(err).Message)
				return
			default:
				s.log().Warn("the sweep's claim could not be renewed; trying again", "repository", r.Name, "code", string(errs.CodeOf(err)), "error", errs.Coded(err).Message)
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// ClaimTTL is the lease's TTL for a sweep every interval: a little less
// than the interval, so the holder's own next sweep finds it expired.
func ClaimTTL(interval time.Duration) time.Duration {
	return interval - interval/10
}
