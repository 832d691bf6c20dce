package engine

import (
	"sync"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// scopeLease is the scope lease of a run that writes (apply, destroy) and
// what it knows of it, behind its own lock: whether a provider write was
// attempted, whether the lease was lost, and the run's turns on parent
// objects (parent.go).
type scopeLease struct {
	st     *start
	keeper *LeaseKeeper
	notes  *notes

	mu      sync.Mutex
	touched bool  // a provider write was attempted
	lost    error // the scope lease was lost

	parentMu    sync.Mutex
	parentLocks map[string]*sync.Mutex // identity → this run's turn on it
}

// setLost records that the scope lease was lost (the first error wins).
func (l *scopeLease) setLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = err
	}
}

// checked is the scope lease's check before a provider write
// (LeaseKeeper.Check), recording its loss.
func (l *scopeLease) checked() error {
	if err := l.keeper.Check(); err != nil {
		l.setLost(err)
		return err
	}
	return nil
}

// confirmed is LeaseKeeper.confirm, recording a loss.
func (l *scopeLease) confirmed() error {
	if err := l.keeper.confirm(); err != nil {
		l.setLost(err)
		return err
	}
	return nil
}

func (l *scopeLease) lostErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

func (l *scopeLease) setTouched() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.touched = true
}

func (l *scopeLease) wasTouched() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.touched
}

// noteTakeover records on the receipt why a live lease was taken over.
func (l *scopeLease) noteTakeover() {
	if why := l.keeper.TakeoverReason(); why != "" {
		pre := l.keeper.Preempted()
		l.notes.warn(errs.LEASE_TAKEN_OVER, "took over the lease on %s of %s before its TTL: %s", pre.Target, describeOwner(pre.Holder, pre.Owner), why)
	}
}

// needed is errLeaseNeeded when the run started without the scope lease
// and could not take it (held, or the scope moved since the read), else
// err.
func (l *scopeLease) needed(err error) error {
	if d := l.keeper.deferred; d != nil && !l.keeper.Held() && d.err != nil {
		return errLeaseNeeded
	}
	return err
}

// parentOwner is the owner of a parent lease taken for what (a line id,
// or "destroy").
func (l *scopeLease) parentOwner(what string) receipt.Owner {
	o := l.st.owner
	o.RunID = l.st.owner.RunID + "/" + what
	return o
}
