package engine

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// scopeRun is what apply and destroy share: a run that writes to
// providers under the scope lease and records what it did through its
// recorder. Succession, as part of such a run (succeed), uses the same
// lease. Apply's lines and rollback are the applier's; destroy's walk of
// the ledger is the destroyer's.
type scopeRun struct {
	*run
	keeper *LeaseKeeper
	owner  receipt.Owner
	rec    *recorder // the receipt's one writer

	// Guarded by run.mu (lines run concurrently):
	touched bool  // a provider write was attempted
	lost    error // the scope lease was lost

	parentMu    sync.Mutex
	parentLocks map[string]*sync.Mutex // identity → this run's turn on it
}

// newScopeRun is a run of pr that writes under keeper; at is the version
// of the scope's receipt it read.
func newScopeRun(e *Engine, pr *prepared, o Options, keeper *LeaseKeeper, owner receipt.Owner, at receipt.Version) *scopeRun {
	a := &scopeRun{run: newRun(e, pr, o, true), keeper: keeper, owner: owner}
	a.rec = newRecorder(e, keeper, at, a.ledgerSnapshot)
	return a
}

// ledgerSnapshot is a copy of the run's ledger as it is now.
func (a *scopeRun) ledgerSnapshot() receipt.Ledger {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ledger)
}

// setLost records that the scope lease was lost (the first error wins).
func (a *scopeRun) setLost(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lost == nil {
		a.lost = err
	}
}

// leaseChecked is the scope lease's check before a provider write
// (LeaseKeeper.Check), recording its loss.
func (a *scopeRun) leaseChecked() error {
	if err := a.keeper.Check(); err != nil {
		a.setLost(err)
		return err
	}
	return nil
}

func (a *scopeRun) lostErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lost
}

func (a *scopeRun) setTouched() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.touched = true
}

func (a *scopeRun) wasTouched() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.touched
}

// noteTakeover records on the receipt why a live lease was taken over.
func (a *scopeRun) noteTakeover() {
	if why := a.keeper.TakeoverReason(); why != "" {
		pre := a.keeper.Preempted()
		a.warn(errs.LEASE_TAKEN_OVER, "took over the lease on %s of %s before its TTL: %s", pre.Target, describeOwner(pre.Holder, pre.Owner), why)
	}
}

// leaseNeeded is errLeaseNeeded when the run started without the scope
// lease and could not take it (held, or the scope moved since the read),
// else err.
func (a *scopeRun) leaseNeeded(err error) error {
	if d := a.keeper.deferred; d != nil && !a.keeper.Held() && d.err != nil {
		return errLeaseNeeded
	}
	return err
}

// startReceipt is the receipt this run writes, starting from the stored
// one: the ledger, hash key, history and branch are carried forward.
func (a *scopeRun) startReceipt(prev *receipt.Receipt) *receipt.Receipt {
	w := &receipt.Receipt{Version: receipt.FormatVersion, Env: a.pr.env, Scope: a.pr.scope, RunID: a.owner.RunID,
		Operation: receipt.OpApply, Status: receipt.StatusFailed, Branch: a.pr.ctx.Git.Branch, SHA: a.pr.ctx.Git.SHA,
		ApprovedBy: a.o.ApprovedBy, Lines: map[string]receipt.LineResult{}, Ledger: receipt.Ledger{}, LockPreempted: a.keeper.Preempted(),
		StartedAt: a.e.now()}
	if prev != nil {
		w.HashKey = prev.HashKey
		w.Ledger = slices.Clone(prev.Ledger)
		w.History = slices.Clone(prev.History)
		if w.Branch == "" {
			w.Branch = prev.Branch
		}
		w.SupersededBy = prev.SupersededBy
	}
	return w
}

func (a *scopeRun) parentOwner(what string) receipt.Owner {
	o := a.owner
	o.RunID = a.owner.RunID + "/" + what
	return o
}

// destroyEntry destroys one ledger entry (already gone is success) and
// removes it from the ledger; an entry with a parent is destroyed under
// that parent's lease. wait forces waiting for the parent (rollback and
// destroy always wait, bounded).
func (a *scopeRun) destroyEntry(ctx context.Context, op adapter.Op, ref receipt.ResourceRef, wait bool) error {
	_, en := a.entry(ref)
	if en == nil {
		return nil
	}
	if en.Parent != "" && !a.e.unlockedParents {
		pk, release, err := a.lockParent(ctx, en.Parent, "destroy", wait)
		if err != nil {
			return err
		}
		defer release()
		defer a.reads.Drop(en.Parent)
		if err := checkParent(pk, en.Parent, firstOf(en.Line, en.Key)); err != nil {
			return err
		}
	}
	if err := a.leaseChecked(); err != nil {
		return err
	}
	a.setTouched()
	if err := op.Destroy(ctx, adapter.Provider(en.Provider), a.pr.run, adapter.Resource{Key: en.Key, ID: en.ID, Outputs: en.Outputs}); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if j := a.ledger.Index(ref); j >= 0 {
		a.ledger = slices.Delete(a.ledger, j, j+1)
	}
	return nil
}

// result writes the final receipt (fenced, step 8) unless the run is
// stale, and builds the result: the lines in order (run order when nil),
// the manual steps undo names first. A write that fails after providers were
// touched keeps the receipt on disk (SaveUnsaved) and says what was applied
// but not recorded.
func (a *scopeRun) result(runErr error, order []string, undo []adapter.Todo) (*RunResult, error) {
	red, err := a.rec.redacted(a.rec.w)
	if err != nil {
		return nil, err
	}
	res := &RunResult{Env: a.pr.env, Scope: a.pr.scope, Receipt: red, Order: order, Warnings: slices.Clone(a.warnings)}
	res.Todos = append(res.Todos, undo...)
	for _, ls := range a.lines {
		if ls.todo != nil && ls.status == LineWaiting {
			t := *ls.todo
			t.Vars = redactVars(a.e, t.Vars)
			res.Todos = append(res.Todos, t)
		}
	}
	if res.Order == nil {
		for _, ls := range a.lines {
			if _, ok := red.Lines[ls.pl.id]; ok {
				res.Order = append(res.Order, ls.pl.id)
			}
		}
	}
	if res.Order == nil {
		res.Order = []string{}
	}
	if res.Warnings == nil {
		res.Warnings = []Warning{}
	}
	if !a.rec.w.Stale {
		ctx := context.Background()
		werr := a.rec.writeFinal(ctx, red)
		if errors.Is(werr, errLeaseNeeded) {
			return nil, werr
		}
		if werr != nil {
			werr = a.e.redactor().Error(werr)
			if a.wasTouched() {
				res.Unsaved = a.e.saveUnsaved(ctx, red)
			}
			if runErr == nil || errs.CodeOf(werr) == errs.LOCK_LOST {
				runErr = werr
			}
		}
	}
	// The receipt is redacted already; the rest is text.
	rd := a.e.redactor()
	for i := range res.Warnings {
		res.Warnings[i].Message = rd.String(res.Warnings[i].Message)
	}
	if u := res.Unsaved; u != nil {
		u.Path, u.Command = rd.String(u.Path), rd.String(u.Command)
		for i := range u.Resources {
			u.Resources[i] = rd.String(u.Resources[i])
		}
	}
	if runErr != nil {
		runErr = rd.Error(runErr)
	}
	return res, runErr
}
