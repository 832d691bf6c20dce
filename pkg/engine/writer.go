package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// scopeWriter is what apply and destroy share: the parts of a run that
// writes to providers under the scope lease and records what it did. It
// owns no state of its own: the ledger, the warnings, the lease and the
// recorder each keep theirs. Succession, as part of such a run (succeed),
// uses the same lease. Apply's lines and rollback are the applier's;
// destroy's walk of the ledger is the destroyer's.
type scopeWriter struct {
	st    *start
	pr    *prepared
	led   *ledger
	notes *notes
	lease *scopeLease
	rec   *recorder // the receipt's one writer
	// reads is what the run read of shared parent objects (inspector.reads).
	reads *adapter.ReadCache
}

// newScopeWriter opens the parts of a run of pr under keeper; at is the
// version of the scope's receipt it read.
func newScopeWriter(st *start, pr *prepared, keeper *LeaseKeeper, at receipt.Version) *scopeWriter {
	n := &notes{e: st.e}
	w := &scopeWriter{st: st, pr: pr, led: &ledger{}, notes: n, reads: adapter.NewReadCache(),
		lease: &scopeLease{st: st, keeper: keeper, notes: n}}
	w.rec = newRecorder(st.e, keeper, at, w.led.snapshot)
	return w
}

// startReceipt is the receipt this run writes, starting from the stored
// one: the ledger, hash key, history and branch are carried forward. The
// run's ledger starts from it.
func (w *scopeWriter) startReceipt(prev *receipt.Receipt, op receipt.Operation) {
	r := &receipt.Receipt{Version: receipt.FormatVersion, Env: w.pr.env, Scope: w.pr.scope, RunID: w.st.owner.RunID,
		Operation: op, Status: receipt.StatusFailed, Branch: w.pr.ctx.Git.Branch, SHA: w.pr.ctx.Git.SHA, PlanHash: w.pr.planHash,
		ApprovedBy: w.st.o.ApprovedBy, Lines: map[string]receipt.LineResult{}, Ledger: receipt.Ledger{}, LockPreempted: w.lease.keeper.Preempted(),
		StartedAt: w.st.e.now()}
	if prev != nil {
		r.HashKey = prev.HashKey
		r.Ledger = slices.Clone(prev.Ledger)
		r.History = slices.Clone(prev.History)
		r.Branch = cmp.Or(r.Branch, prev.Branch)
		r.SupersededBy = prev.SupersededBy
	}
	w.rec.w = r
	w.led.reset(r.Ledger, r.HashKey)
}

// stamp sets the final receipt's status, ledger, history and warnings.
func (w *scopeWriter) stamp(status receipt.Status) {
	now := w.st.e.now()
	w.rec.w.Status, w.rec.w.FinishedAt = status, now
	w.rec.w.Ledger = w.led.snapshot()
	if w.rec.w.Ledger == nil {
		w.rec.w.Ledger = receipt.Ledger{}
	}
	w.rec.w.History = appendHistory(w.rec.w.History, receipt.HistoryEntry{SHA: w.pr.ctx.Git.SHA, At: now, RunID: w.st.owner.RunID, Status: status})
	w.rec.w.Warnings = w.notes.all()
}

// destroyEntry destroys one ledger entry (already gone is success) and
// removes it from the ledger; an entry with a parent is destroyed under
// that parent's lease. wait forces waiting for the parent (rollback and
// destroy always wait, bounded).
func (w *scopeWriter) destroyEntry(ctx context.Context, op adapter.Op, ref receipt.ResourceRef, wait bool) error {
	_, en := w.led.entry(ref)
	if en == nil {
		return nil
	}
	if en.Parent != "" && !w.st.e.unlockedParents {
		pk, release, err := w.lease.lockParent(ctx, en.Parent, "destroy", wait)
		if err != nil {
			return err
		}
		defer release()
		defer w.reads.Drop(en.Parent)
		if err := checkParent(pk, en.Parent, cmp.Or(en.Line, en.Key)); err != nil {
			return err
		}
	}
	if err := w.lease.checked(); err != nil {
		return err
	}
	w.lease.setTouched()
	if err := op.Destroy(ctx, adapter.Provider(en.Provider), w.pr.run, adapter.Resource{Key: en.Key, ID: en.ID, Outputs: en.Outputs}); err != nil {
		return err
	}
	w.led.remove(ref)
	return nil
}

// result writes the final receipt (fenced, step 8) unless the run is
// stale, and builds the result: the lines in order (run order of lines
// when order is nil), the manual steps undo names first, then the todos
// of lines still waiting. A write that fails after providers were touched
// keeps the receipt on disk (SaveUnsaved) and says what was applied but
// not recorded.
func (w *scopeWriter) result(runErr error, order []string, undo []adapter.Todo, lines []*lineState) (*RunResult, error) {
	red, err := w.rec.redacted(w.rec.w)
	if err != nil {
		return nil, err
	}
	res := &RunResult{Env: w.pr.env, Scope: w.pr.scope, Receipt: red, Order: order, Warnings: w.notes.all()}
	res.Todos = append(res.Todos, undo...)
	for _, ls := range lines {
		if ls.todo != nil && ls.status == LineWaiting {
			t := *ls.todo
			t.Vars = redactVars(w.st.e, t.Vars)
			res.Todos = append(res.Todos, t)
		}
	}
	if res.Order == nil {
		for _, ls := range lines {
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
	res.Changes = changesOf(res.Order, lines)
	if !w.rec.w.Stale {
		if runErr, err = w.writeFinal(res, red, runErr); err != nil {
			return nil, err
		}
	}
	return redactResult(w.st.e, res, runErr)
}

// changesOf is what the lines that ran wrote (created or updated), in
// order, each with the diffs that were not unchanged.
func changesOf(order []string, lines []*lineState) []LineChanges {
	byID := make(map[string]*lineState, len(lines))
	for _, ls := range lines {
		byID[ls.pl.id] = ls
	}
	var out []LineChanges
	for _, id := range order {
		ls := byID[id]
		if ls == nil || !ls.ran || (ls.status != LineCreated && ls.status != LineUpdated) {
			continue
		}
		var diffs []Diff
		for _, d := range ls.diffsOf() {
			if d.Action != string(adapter.Unchanged) {
				diffs = append(diffs, d)
			}
		}
		if len(diffs) == 0 {
			continue
		}
		ins := ls.inputs
		if ins == nil {
			ins = []Input{}
		}
		out = append(out, LineChanges{Line: id, Diffs: diffs, Inputs: ins})
	}
	return out
}

// writeFinal writes the final receipt red: a failed write becomes the
// run's error (unless one is more telling) and, after providers were
// touched, the receipt is kept on disk (res.Unsaved). err is
// errLeaseNeeded alone.
func (w *scopeWriter) writeFinal(res *RunResult, red *receipt.Receipt, runErr error) (error, error) {
	ctx := context.Background()
	werr := w.rec.writeFinal(ctx, red)
	if errors.Is(werr, errLeaseNeeded) {
		return nil, werr
	}
	if werr == nil {
		return runErr, nil
	}
	werr = w.st.e.redactor().Error(werr)
	if w.lease.wasTouched() {
		res.Unsaved = w.saveUnsaved(ctx, red)
	}
	if runErr == nil || errs.CodeOf(werr) == errs.LOCK_LOST {
		runErr = werr
	}
	return runErr, nil
}

// changeNames are the members of LineChanges that name things (a line, a
// resource key, a field's path, a state, a reference): never masked, as a
// receipt never masks its structure; a secret equal to one is refused
// before the run (SECRET_IN_STRUCTURE).
var changeNames = map[string]bool{
	"line": true, "key": true, "action": true, "path": true, "state": true,
	"before_state": true, "after_state": true, "after_ref": true, "ref": true,
}

// redactResult redacts what a run result holds besides its receipt
// (redacted already: the rest is text) and the run's error.
func redactResult(e *Engine, res *RunResult, runErr error) (*RunResult, error) {
	rd := e.redactor()
	for i := range res.Warnings {
		res.Warnings[i].Message = rd.String(res.Warnings[i].Message)
	}
	if u := res.Unsaved; u != nil {
		u.Path, u.Command = rd.String(u.Path), rd.String(u.Command)
		for i := range u.Resources {
			u.Resources[i] = rd.String(u.Resources[i])
		}
	}
	if len(res.Changes) > 0 {
		// Values a line wrote may hold a secret another line resolved:
		// masked as everywhere else, the structure kept.
		doc, err := rd.Document(res.Changes, func(m string) bool { return changeNames[m] })
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(doc)
		if err == nil {
			res.Changes = nil
			err = json.Unmarshal(raw, &res.Changes)
		}
		if err != nil {
			return nil, errs.Wrap(err, errs.INTERNAL, "a run's changes could not be read back after redaction")
		}
	}
	if runErr != nil {
		runErr = rd.Error(runErr)
	}
	return res, runErr
}
