package engine

import (
	"context"
	"sync"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Parent-object locks (engine.md, "Parent-object locks"; seeds: ADR 0019).
//
// A line whose op names a parent object (adapter.ParentLocker) writes that
// object by read-modify-write, so two scopes writing it at once can lose
// each other's entries. Around every write of such a line the engine
// holds the object's lease — the scope lease's machinery (LeaseKeeper) on
// receipt.ParentTarget(identity) — and inspects the line again under it:
//
//   - only a line that would write takes it (unchanged lines never
//     contend), and it is held for that one line's write, then released;
//   - held by another run: without Options.Wait the line fails with
//     LOCK_HELD (the run then fails and rolls back: RUN_FAILED, exit 1);
//     with it the worker waits, bounded by WaitTimeout, printing progress;
//   - a parent lease lost before or during the write (LOCK_LOST with a
//     "parent" detail) fails the line, not the run: the scope lease and
//     the receipt are still the run's;
//   - the identity goes on the line's intents and ledger entries, so
//     rollback and destroy lock the object found in the ledger, even when
//     the line is gone from the plan; they always wait (bounded), since
//     giving up would leave resources behind;
//   - a worker holds at most one parent lease, only while it writes one
//     line, and never waits for a scope lease while holding one (scope
//     leases are all taken before any line runs), so two runs cannot
//     deadlock. Two lines of one run on the same object take turns on an
//     in-process mutex first, so they never see each other as LOCK_HELD.
//
// The holder of a parent lease is "<run id>/<line id>" ("<run
// id>/destroy" for rollback and destroy), so `sponson locks` shows which
// line of which run holds it.

// localParent is the in-process mutex of one parent object for this run.
func (l *scopeLease) localParent(identity string) *sync.Mutex {
	l.parentMu.Lock()
	defer l.parentMu.Unlock()
	if l.parentLocks == nil {
		l.parentLocks = map[string]*sync.Mutex{}
	}
	m := l.parentLocks[identity]
	if m == nil {
		m = &sync.Mutex{}
		l.parentLocks[identity] = m
	}
	return m
}

// lockParent takes the lease on a parent object for one write and returns
// the keeper and the function that gives it back (the lease, then the
// in-process mutex). wait forces waiting even without Options.Wait
// (rollback and destroy); the wait is bounded by WaitTimeout either way.
// A release that keeps failing is a warning naming the lease.
func (l *scopeLease) lockParent(ctx context.Context, identity, holder string, wait bool) (*LeaseKeeper, func(), error) {
	mu := l.localParent(identity)
	mu.Lock()
	pk, err := l.st.acquire(ctx, receipt.ParentTarget(identity), l.parentOwner(holder), wait || l.st.o.Wait, nil)
	if err != nil {
		mu.Unlock()
		return nil, nil, err
	}
	release := func() {
		l.st.release(ctx, pk, func(w Warning) { l.notes.warn(w.Code, "%s", w.Message) })
		mu.Unlock()
	}
	return pk, release, nil
}

// checkParent is the holder's check of a parent lease before (and after) a
// provider write: LOCK_LOST with the "parent" detail once it is lost or
// its own deadline is near.
func checkParent(pk *LeaseKeeper, identity, line string) error {
	if pk == nil {
		return nil
	}
	if err := pk.Check(); err != nil {
		return errs.Wrap(err, errs.LOCK_LOST, "line %q lost the lease on parent object %s", line, identity).
			With("parent", identity).
			WithHint("Another run may have written the object meanwhile; re-run (what this run created is rolled back).")
	}
	return nil
}

// writeUnderParent writes a line whose op has a parent object: it takes
// the object's lease, inspects the line again under it (the read made
// before may be stale), and writes from that fresh state; the lease is
// released whatever happens. A lease lost before the write fails the line
// with nothing sent; one found lost after it fails the line too (the write
// may have raced another writer), and rollback undoes what it created.
func (a *applier) writeUnderParent(ctx context.Context, ls *lineState) {
	identity := ls.parent
	pk, release, err := a.w.lease.lockParent(ctx, identity, ls.pl.id, false)
	if err != nil {
		ls.status, ls.err = LineFailed, err
		return
	}
	defer release()
	// What is decided under the lease is read under it.
	a.in.reads.Drop(identity)
	defer a.in.reads.Drop(identity)
	a.in.inspect(ctx, ls)
	if !a.judged(ls) {
		return
	}
	if ls.status == PlanUnchanged {
		a.recordUnchanged(ls)
		return
	}
	if ls.parent != identity {
		// The re-read resolved the line to another object: never write one
		// object under another's lease.
		ls.status, ls.err = LineFailed, errs.New(errs.INTERNAL, "line %q named parent object %s, then %s", ls.pl.id, identity, ls.parent)
		return
	}
	if err := checkParent(pk, identity, ls.pl.id); err != nil {
		ls.status, ls.err = LineFailed, err
		return
	}
	ls.pk = pk
	defer func() { ls.pk = nil }()
	a.write(ctx, ls)
	if ls.status == LineCreated || ls.status == LineUpdated {
		if err := checkParent(pk, identity, ls.pl.id); err != nil {
			ls.status, ls.err = LineFailed, err
		}
	}
}
