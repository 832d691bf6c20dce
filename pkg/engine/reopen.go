package engine

import (
	"cmp"
	"context"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// Reopen clears the tombstone of scope sc in env (o.Env, then "preview",
// when env is ""): its pull request reopened, so a later apply (or a
// succession into it) must not be refused SCOPE_CLOSED. Under the scope's
// lease (o.Wait / o.LockWait as for any run) the receipt is written again
// without its tombstone and with a SCOPE_REOPENED warning; its ledger and
// history are untouched. It is idempotent: a scope that has no receipt or
// is not closed is not written (reopened false).
//
// Errors: USAGE for an invalid scope; LOCK_HELD (exit 3) / WAIT_TIMEOUT;
// RECEIPT_CORRUPT, RECEIPT_VERSION, STORE_* and LOCK_LOST from the store.
func (e *Engine) Reopen(ctx context.Context, env, sc string, o Options) (reopened bool, err error) {
	o.Env = cmp.Or(env, o.Env)
	ctx, st, err := e.begin(ctx, scope.Ctx{}, o, receipt.OpReopen)
	if err != nil {
		return false, err
	}
	env = st.env
	if err := scope.Validate(sc); err != nil {
		return false, err
	}
	// Read first: a scope that is not closed takes no lease at all, so
	// replayed deliveries cost one read.
	prev, _, err := e.Store.Read(ctx, env, sc)
	if err != nil || prev == nil || prev.Closed == nil {
		return false, e.redactor().Error(err)
	}
	keeper, err := st.acquire(ctx, st.target(sc), st.owner, o.Wait, nil)
	if err != nil {
		return false, err
	}
	defer st.release(ctx, keeper, nil)
	prev, _, err = e.Store.Read(ctx, env, sc)
	if err != nil || prev == nil || prev.Closed == nil {
		return false, e.redactor().Error(err)
	}
	next, err := prev.Clone()
	if err != nil {
		return false, err
	}
	was := prev.Closed
	now := e.now()
	next.RunID, next.Operation, next.Status, next.Stale = st.owner.RunID, receipt.OpReopen, receipt.StatusComplete, false
	next.Closed = nil
	next.Lines = map[string]receipt.LineResult{}
	next.LockPreempted = keeper.Preempted()
	next.StartedAt, next.FinishedAt = now, now
	next.Warnings = []Warning{{Code: errs.SCOPE_REOPENED, Message: sprintf("scope %s/%s was closed by %s at %s%s; its pull request reopened",
		env, sc, was.By, was.At.UTC().Format(time.RFC3339), headOf(was))}}
	if err := keeper.Check(); err != nil {
		return false, err
	}
	rec := newRecorder(e, keeper, "", nil)
	if next, err = rec.redacted(next); err != nil {
		return false, err
	}
	if err := rec.write(ctx, next); err != nil {
		return false, e.redactor().Error(err)
	}
	return true, nil
}
