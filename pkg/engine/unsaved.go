package engine

import (
	"context"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// PushMode says what PushUnsaved writes.
type PushMode string

// Push modes (`sponson receipts push`).
const (
	// PushShow writes nothing: it shows the difference between the stored
	// ledger and the unsaved one.
	PushShow PushMode = ""
	// PushAdoptMissing adds the entries the stored ledger lacks, never
	// removing or changing anything (--adopt-missing).
	PushAdoptMissing PushMode = "adopt-missing"
	// PushReplace writes the unsaved receipt whole (--replace).
	PushReplace PushMode = "replace"
)

// PushResult is what PushUnsaved found and did.
type PushResult struct {
	Env     string           `json:"env"`
	Scope   string           `json:"scope"`
	Path    string           `json:"path"`
	Mode    PushMode         `json:"mode"`
	Diff    receipt.Diff     `json:"diff"`
	Written bool             `json:"written"`
	Receipt *receipt.Receipt `json:"receipt"` // the receipt written, or the stored one
}

// PushUnsaved finishes the job of a run whose final receipt write failed:
// it loads the unsaved receipt at path, takes its scope's lease, compares
// the stored ledger with the unsaved one, and — never silently — writes
// what mode says (PushShow writes nothing). A merge of two divergent
// receipts is never attempted: adopt-missing only adds entries.
//
// Errors: USAGE (no file, unknown mode), RECEIPT_CORRUPT / RECEIPT_VERSION
// (the file or the stored receipt), LOCK_HELD / WAIT_TIMEOUT, LOCK_LOST,
// STORE_*.
func (e *Engine) PushUnsaved(ctx context.Context, path string, mode PushMode, o Options) (*PushResult, error) {
	ctx, st, err := e.begin(ctx, scope.Ctx{}, o, receipt.OpPush)
	if err != nil {
		return nil, err
	}
	switch mode {
	case PushShow, PushAdoptMissing, PushReplace:
	default:
		return nil, errs.New(errs.USAGE, "unknown push mode %q", mode).WithHint("Use --adopt-missing or --replace.")
	}
	u, err := receipt.LoadUnsaved(path)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	if plan.Production(u.Env) && mode != PushShow && o.ApprovedBy == "" {
		return nil, errs.New(errs.ENV_NOT_APPROVED, "pushing a receipt of production needs a named approver")
	}
	keeper, err := st.acquire(ctx, u.Target(), st.owner, o.Wait, nil)
	if err != nil {
		return nil, err
	}
	defer st.release(ctx, keeper, nil)
	stored, _, err := e.Store.Read(ctx, u.Env, u.Scope)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	res := &PushResult{Env: u.Env, Scope: u.Scope, Path: path, Mode: mode, Diff: receipt.CompareLedgers(stored, u), Receipt: stored}
	if mode == PushShow {
		return redactTyped(e, res)
	}
	var out *receipt.Receipt
	if mode == PushAdoptMissing {
		out, err = receipt.AdoptMissing(stored, u)
	} else {
		out, err = u.Clone()
	}
	if err != nil {
		return nil, err
	}
	now := e.now()
	out.RunID, out.Operation, out.FinishedAt = st.owner.RunID, receipt.OpPush, now
	out.History = appendHistory(out.History, receipt.HistoryEntry{SHA: u.SHA, At: now, RunID: st.owner.RunID, Status: out.Status})
	rec := newRecorder(e, keeper, "", nil)
	if out, err = rec.redacted(out); err != nil {
		return nil, err
	}
	if err := rec.write(ctx, out); err != nil {
		return nil, e.redactor().Error(err)
	}
	res.Written, res.Receipt = true, out
	return redactTyped(e, res)
}
