package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/progress"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// Apply runs the plan in its scope (engine.md, "Apply", steps 1–8).
//
// Errors, and what comes with them:
//   - a refusal before anything is read (prepare, ENV_NOT_APPROVED): exit
//     2, nil result;
//   - the scope lease held (LOCK_HELD, exit 3) or, with Wait, not obtained
//     in time (WAIT_TIMEOUT): nil result;
//   - the stored receipt unreadable (RECEIPT_CORRUPT, RECEIPT_VERSION),
//     SCOPE_CLOSED, SCOPE_COLLISION, STORE_*: nil result, nothing written;
//   - a run that started and failed: the result (status failed) and an
//     error that exits 1 (the first failing line's, ROLLBACK_FAILED when
//     rollback left resources, INTERRUPTED when ctx was cancelled), or
//     LOCK_LOST (exit 3) when the run lost its lease;
//   - a final receipt write that failed after providers were touched: the
//     result with Unsaved set (the receipt kept on disk, the resources not
//     recorded, the command that finishes the job) and the write's error.
//
// A partial run (lines waiting on an external event) and a stale run
// (this commit is an ancestor of the last one applied: nothing written)
// return their result and nil.
func (e *Engine) Apply(ctx context.Context, p *plan.Plan, c scope.Ctx, o Options) (*RunResult, error) {
	ctx = e.events(ctx)
	if err := e.check(); err != nil {
		return nil, err
	}
	// Every refusal that needs no provider, secrets included, before the
	// lease and the first write.
	pr, err := e.preflight(ctx, p, c, o, false)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	if err := pr.approve(o); err != nil {
		return nil, err
	}
	owner, err := e.owner(o, receipt.OpApply)
	if err != nil {
		return nil, err
	}
	if _, ok := e.Store.(receipt.Sessions); ok {
		return e.applySession(ctx, pr, o, owner)
	}
	keeper, err := AcquireLease(ctx, e.leaseConfig(o, o.Wait), receipt.ScopeTarget(pr.env, pr.scope), owner)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	return e.applyHeld(ctx, pr, o, owner, keeper, nil)
}

// applyHeld is applyLocked with keeper's lease given up on every way out,
// a panic included.
func (e *Engine) applyHeld(ctx context.Context, pr *prepared, o Options, owner receipt.Owner, keeper *LeaseKeeper, view *receipt.View) (res *RunResult, err error) {
	defer func() { res = e.released(ctx, keeper, res) }()
	return e.applyLocked(ctx, pr, o, owner, keeper, view)
}

// released gives the keeper's lease up (if the run has not already, with
// its final write) and adds a release that failed to the result's
// warnings.
func (e *Engine) released(ctx context.Context, k *LeaseKeeper, res *RunResult) *RunResult {
	if rerr := k.Release(context.WithoutCancel(ctx)); rerr != nil && res != nil {
		res.Warnings = append(res.Warnings, Warning{Code: errs.CodeOf(rerr), Message: e.redactor().String(errs.Coded(rerr).Message)})
	}
	return res
}

// errLeaseNeeded ends a run that started without the scope lease and
// found it needs one it could not take on the state it read (another run
// holds it, or the scope moved since the read). Nothing was written, to
// providers or to the store: the run starts again, taking the lease first.
var errLeaseNeeded = errors.New("the run needs the scope lease")

// viewAttempts bounds how many times an apply reads the scope again
// because it moved between the read and the acquire, before it takes the
// lease without a version and reads under it.
const viewAttempts = 8

// applySession is Apply on a store with receipt.Sessions, at the floor of
// round trips (docs/adr/0008): one View reads the scope, its lease and the
// environment (or the environment when a line first needs it: e.view); with no lease stored, the run starts without one and takes
// it (AcquireAt the version read: the View stays the run's read) only
// before its first write — so a run that writes nothing to a provider
// takes no lease and records itself with one WriteAt. A run that needs
// the lease takes it on the version read, and ends with one WriteRelease.
// When the scope moved or is held, the run that started without the lease
// has written nothing: it starts again with the lease taken first, as
// Apply always did.
func (e *Engine) applySession(ctx context.Context, pr *prepared, o Options, owner receipt.Owner) (*RunResult, error) {
	target := receipt.ScopeTarget(pr.env, pr.scope)
	view, err := e.view(ctx, pr)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	if view.Lease == nil {
		cfg := e.leaseConfig(o, false)
		cfg.At = &view.Version
		keeper := DeferLease(ctx, cfg, target, owner)
		res, err := e.applyHeld(ctx, pr, o, owner, keeper, view)
		if !errors.Is(err, errLeaseNeeded) {
			return res, err
		}
		view = nil
	}
	for attempt := 0; attempt < viewAttempts; attempt++ {
		if view == nil {
			if view, err = e.view(ctx, pr); err != nil {
				return nil, e.redactor().Error(err)
			}
		}
		cfg := e.leaseConfig(o, o.Wait)
		cfg.At = &view.Version
		keeper, err := AcquireLease(ctx, cfg, target, owner)
		if receiptMoved(err) {
			view = nil
			continue
		}
		if err != nil {
			return nil, e.redactor().Error(err)
		}
		return e.applyHeld(ctx, pr, o, owner, keeper, view)
	}
	keeper, err := AcquireLease(ctx, e.leaseConfig(o, o.Wait), target, owner)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	return e.applyHeld(ctx, pr, o, owner, keeper, nil)
}

func (e *Engine) owner(o Options, op receipt.Operation) (receipt.Owner, error) {
	ow := o.Owner
	ow.Operation = op
	if ow.RunID == "" {
		id, err := newRunID(e.rand())
		if err != nil {
			return ow, err
		}
		ow.RunID = id
	}
	return ow, nil
}

// leaseConfig is how a lease is taken: waiting up to the wait timeout
// when wait (--wait), else up to Options.LockWait when that is set (a
// lease held by another run is usually released within seconds), else
// not at all.
func (e *Engine) leaseConfig(o Options, wait bool) LeaseConfig {
	timeout := o.waitTimeout()
	lockOnly := false
	if !wait && o.LockWait > 0 {
		wait, timeout, lockOnly = true, o.LockWait, true
	}
	return LeaseConfig{LockWaitOnly: lockOnly, Store: e.Store, Clock: e.clock(), After: e.after(), Sleep: e.sleep, Rand: e.rand(),
		Progress: func(s string) { e.progress("%s", s) }, TTL: e.ttl(), Wait: wait, WaitTimeout: timeout, HolderGone: e.HolderGone}
}

// applier is one apply: its lines, run under the scope lease, and what
// it created (for rollback).
type applier struct {
	*scopeRun

	// Guarded by run.mu (lines run concurrently):
	created []createdKey // what this run created, in completion order

	initial map[string]bool // identities in the ledger when the lines started
}

// newApplier is an apply of pr under keeper; at is the version of the
// scope's receipt it read.
func newApplier(e *Engine, pr *prepared, o Options, keeper *LeaseKeeper, owner receipt.Owner, at receipt.Version) *applier {
	return &applier{scopeRun: newScopeRun(e, pr, o, keeper, owner, at)}
}

type createdKey struct {
	ls  *lineState
	key string
}

// applyLocked runs the apply with keeper's lease (held, or deferred until
// the first write) on the state view read; with a nil view it reads the
// scope and the environment itself, under the lease.
func (e *Engine) applyLocked(ctx context.Context, pr *prepared, o Options, owner receipt.Owner, keeper *LeaseKeeper, view *receipt.View) (*RunResult, error) {
	var (
		prev *receipt.Receipt
		at   receipt.Version
		err  error
	)
	if view != nil {
		prev, at = view.Receipt, view.Version
	} else if prev, at, err = e.Store.Read(ctx, pr.env, pr.scope); err != nil {
		return nil, e.redactor().Error(err)
	}
	var reopened *receipt.Tombstone
	if prev != nil && prev.Closed != nil {
		if !o.Reopen {
			return nil, closedError(pr.env, pr.scope, prev.Closed)
		}
		reopened = prev.Closed
	}
	if prev != nil {
		if err := scope.CheckCollision(pr.scope, prev.Branch, pr.ctx.Git.Branch); err != nil {
			return nil, err
		}
	}
	// One List(env) gives the other scopes' ledgers (foreign resources) and
	// the scopes this one succeeds; a View may leave the other scopes to
	// be read when a line first needs them (owners.go).
	var stored []receipt.Stored
	if view != nil {
		stored = storedOf(view, pr.env, pr.scope)
	} else if stored, err = e.Store.List(ctx, pr.env); err != nil {
		return nil, e.redactor().Error(err)
	}
	// --recreate is judged on the ledger before anything is read or
	// deleted: a line recreated without the producer of a once-only value
	// it uses would be left with nothing to write.
	if len(o.Recreate) > 0 {
		var held receipt.Ledger
		if prev != nil {
			held = prev.Ledger
		}
		if o.Recreate, err = recreateSet(pr, o.Recreate, held); err != nil {
			return nil, e.redactor().Error(err)
		}
	}
	// Who runs it: a confirmed manual step records it.
	pr.run.Actor = firstOf(owner.Actor, owner.Host, "unknown")
	a := newApplier(e, pr, o, keeper, owner, at)
	a.noteTakeover()
	stored = a.readable(stored)
	a.loadForeign(stored)
	if view != nil {
		a.foreignLater(view.Rest, view.Named)
	}
	if reopened != nil {
		a.warn(errs.SCOPE_REOPENED, "scope %s/%s was closed by %s at %s%s; reopened by this run (--reopen)", pr.env, pr.scope,
			reopened.By, reopened.At.UTC().Format(time.RFC3339), headOf(reopened))
	}
	// A stale run writes nothing, a hand-over included: decided on the
	// scope's own history, which succession does not change.
	stale := a.stale(prev)
	if !stale {
		if prev, err = a.succeed(ctx, prev, stored, false); err != nil {
			return nil, a.leaseNeeded(e.redactor().Error(err))
		}
	}
	a.rec.w = a.startReceipt(prev)
	a.hashKey = a.rec.w.HashKey
	a.ledger = slices.Clone(a.rec.w.Ledger)
	if a.rec.w.SupersededBy != "" && len(a.ledger) == 0 {
		// Everything was handed over; applying the scope again starts it
		// anew (what it creates now is its own, not in transit).
		a.warn(errs.SUCCESSION, "scope %s was superseded by %s, which owns what it had created; this run starts it anew", pr.scope, a.rec.w.SupersededBy)
		a.rec.w.SupersededBy = ""
	}
	if a.hashKey == "" {
		if a.hashKey, err = receipt.NewHashKey(e.rand()); err != nil {
			return nil, err
		}
		a.rec.w.HashKey = a.hashKey
	}

	if stale {
		a.rec.w.Stale, a.rec.w.Status, a.rec.w.FinishedAt = true, receipt.StatusComplete, e.now()
		a.rec.w.Lines = map[string]receipt.LineResult{}
		return a.result(nil, nil, nil)
	}

	// A line the ledger holds nothing of asks who owns what it declares
	// before it writes: the environment is read beside the first reads.
	if a.someLineNew() {
		a.prefetchOwners(ctx)
		defer a.owners.settle()
	}

	// Secrets are registered before any output exists (step 4).
	a.resolveSecrets(ctx)

	a.initial = map[string]bool{}
	for _, en := range a.ledger {
		a.initial[en.Ref().Identity()] = true
	}
	failure := a.runLines(ctx)
	if a.leaseNeeded(nil) != nil {
		// No line got past its first write: nothing to undo or record.
		return nil, errLeaseNeeded
	}
	interrupted := ctx.Err() != nil
	var rollbackErr error
	if failure != nil && a.lostErr() == nil && !interrupted {
		rollbackErr = a.rollback(ctx)
	}
	a.settle(context.WithoutCancel(ctx))

	status := receipt.StatusComplete
	for _, ls := range a.lines {
		if ls.status == LineWaiting {
			status = receipt.StatusPartial
		}
	}
	lost := a.lostErr()
	if failure != nil || lost != nil || interrupted || rollbackErr != nil {
		status = receipt.StatusFailed
	}
	a.finish(status)

	var runErr error
	switch {
	case lost != nil:
		runErr = lost
	case interrupted:
		runErr = errs.Wrap(ctx.Err(), errs.INTERRUPTED, "apply of %s/%s was interrupted; what was created is recorded", pr.env, pr.scope)
	case rollbackErr != nil:
		runErr = rollbackErr
	case failure != nil:
		runErr = runError(failure, "apply")
	}
	return a.result(runErr, nil, nil)
}

// storedOf is the environment of a View as List returns it: every scope
// with a receipt, the viewed one included, sorted by scope.
func storedOf(v *receipt.View, env, scope string) []receipt.Stored {
	out := slices.Clone(v.Others)
	if v.Receipt != nil {
		out = append(out, receipt.Stored{Env: env, Scope: scope, Receipt: v.Receipt, Version: v.Version})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scope < out[j].Scope })
	return out
}

// stale reports whether this commit is an ancestor of the last commit
// applied to the scope (a re-run of an old job): then nothing is written.
func (a *applier) stale(prev *receipt.Receipt) bool {
	sha := a.pr.ctx.Git.SHA
	last := lastApplied(prev)
	if sha == "" || last == "" || sha == last {
		return false
	}
	if a.e.Ancestry == nil {
		a.warn(errs.STALE_UNDECIDED, "cannot tell whether commit %s is older than %s, the last one applied to the scope: applying", short(sha), short(last))
		return false
	}
	anc, err := a.e.Ancestry(sha, last)
	if err != nil {
		a.warn(errs.STALE_UNDECIDED, "cannot tell whether commit %s is older than %s, the last one applied to the scope (%v): applying", short(sha), short(last), a.e.redactor().Error(err))
		return false
	}
	if anc {
		a.warn(errs.STALE_RUN, "commit %s is an ancestor of %s, already applied to the scope: this run is stale and writes nothing", short(sha), short(last))
	}
	return anc
}

// lastApplied is the commit of the last run that did not fail.
func lastApplied(prev *receipt.Receipt) string {
	if prev == nil {
		return ""
	}
	for i := len(prev.History) - 1; i >= 0; i-- {
		if h := prev.History[i]; h.SHA != "" && h.Status != receipt.StatusFailed {
			return h.SHA
		}
	}
	return ""
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// applyLine runs one line (step 5) and sets its apply status. The
// scheduler counted the line on its way to its first write (arrive) when
// it started it; the line departs when it asks for a write, waits for an
// event, or ends.
func (a *applier) applyLine(ctx context.Context, ls *lineState) {
	pl := ls.pl
	defer a.depart(ls)
	for _, dep := range pl.deps {
		d := a.byID[dep]
		if d == nil {
			continue
		}
		switch d.status {
		case LineFailed, LineBlocked, LineSkipped, LineRollbackFailed:
			ls.status = LineSkipped
			ls.err = errs.New(errs.DEPENDENCY_BLOCKED, "line %q depends on %q, which %s", pl.id, dep, d.status)
			return
		case LineWaiting:
			ls.status = LineWaiting
			ls.pending = append(ls.pending, pendingRef{line: dep, waitingFor: "line " + dep})
			return
		}
	}
	if _, pend, _ := a.resolve(pl); len(pend) > 0 {
		// Waiting for an external event is not on the way to a write:
		// checkpoints do not wait for it (arrive).
		a.depart(ls)
		if !a.awaitInputs(ctx, ls, pend) {
			return
		}
		a.arrive(ls)
	}
	if slices.Contains(a.o.Recreate, pl.id) && !a.recreate(ctx, ls) {
		return
	}
	a.inspect(ctx, ls)
	if !a.judged(ls) {
		return
	}
	if ls.status == PlanUnchanged {
		a.recordUnchanged(ls)
		return
	}
	if pl.spec.Manual {
		a.confirmStep(ctx, ls)
		return
	}
	// A lease deferred until now is taken before anything is written
	// (and before a parent's lease: a parent lease is never held while
	// waiting on the scope's). A line whose first write is a create takes
	// it with its intents, in the same commit, when the store can.
	ls.byIntent = a.rec.combines() && (ls.parent == "" || a.e.unlockedParents) && createsOnly(ls.diffs)
	if !ls.byIntent {
		if err := a.takeLease(ctx, ls); err != nil {
			ls.status, ls.err = LineFailed, a.e.redactor().Error(err)
			return
		}
	}
	if ls.parent != "" && !a.e.unlockedParents {
		a.writeUnderParent(ctx, ls)
		return
	}
	a.write(ctx, ls)
}

// arrive counts the line on its way to its first write (recorder.arrive),
// from the moment it is started: a line not yet scheduled by the runtime
// is on its way too. depart, once per arrive, when it asks for a
// checkpoint or the lease, waits for an event, or ends.
func (a *applier) arrive(ls *lineState) {
	if ls.heading.CompareAndSwap(false, true) {
		a.rec.arrive()
	}
}

func (a *applier) depart(ls *lineState) {
	if ls.heading.CompareAndSwap(true, false) {
		a.rec.depart()
	}
}

// takeLease takes the scope lease deferred until the line's first write,
// if the run has not taken it yet (recorder.lease).
func (a *applier) takeLease(ctx context.Context, ls *lineState) error {
	a.depart(ls)
	return a.rec.lease(ctx)
}

// someLineNew reports whether a line of the plan has no entry in the
// run's ledger.
func (a *applier) someLineNew() bool {
	held := map[string]bool{}
	for _, en := range a.ledger {
		held[en.Line] = true
	}
	for _, ls := range a.lines {
		if !held[ls.pl.id] {
			return true
		}
	}
	return false
}

// createsOnly reports whether every change of diffs is a create: then the
// op's first write is a create, preceded by its intent.
func createsOnly(diffs []adapter.ResourceDiff) bool {
	n := 0
	for _, d := range diffs {
		switch d.Action {
		case adapter.Create:
			n++
		case adapter.Unchanged:
		default:
			return false
		}
	}
	return n > 0
}

// redactVars masks registered secrets in a todo's values (a var may be a
// secret or a sensitive output).
func redactVars(e *Engine, vars map[string]any) map[string]any {
	if vars == nil {
		return nil
	}
	out := make(map[string]any, len(vars))
	for k, v := range vars {
		if s, ok := v.(string); ok {
			v = e.redactor().String(s)
		}
		out[k] = v
	}
	return out
}

// recreate deletes what this scope created for the line (apply
// --recreate <line>), so the inspection that follows creates it again in
// this run. Adopted resources are left alone (a warning says so). It
// reports whether the line can go on.
func (a *applier) recreate(ctx context.Context, ls *lineState) bool {
	pl := ls.pl
	var mine []receipt.ResourceRef
	var others []receipt.LedgerEntry
	a.mu.Lock()
	for _, en := range a.ledger {
		if en.Line != pl.id || en.Adapter != pl.spec.Adapter || en.Op != pl.spec.Op {
			continue
		}
		if en.CreatedBy == receipt.CreatedBySponson {
			mine = append(mine, en.Ref())
		} else {
			others = append(others, en)
		}
	}
	a.mu.Unlock()
	for _, en := range others {
		a.warn(errs.RECREATE_SKIPPED, "line %q: %s is %s, not created by this scope; --recreate leaves it alone", pl.id, en.Key, en.CreatedBy)
	}
	if len(mine) == 0 {
		a.warn(errs.RECREATE_SKIPPED, "line %q: this scope created nothing for it yet; --recreate creates it as usual", pl.id)
	}
	if len(mine) > 0 {
		if err := a.takeLease(ctx, ls); err != nil {
			ls.status, ls.err = LineFailed, a.e.redactor().Error(err)
			return false
		}
	}
	for _, ref := range mine {
		ls.touched = true
		if err := a.destroyEntry(ctx, pl.op, ref, true); err != nil {
			ls.status, ls.err = LineFailed, a.e.redactor().Error(errs.Wrap(err, errs.DESTROY_FAILED, "line %q: --recreate could not delete %s", pl.id, ref.Key))
			return false
		}
	}
	return true
}

// confirmStep records a manual step someone says is done (--confirm
// <line>), once its verify check agrees; a step nobody confirmed leaves the
// line waiting, and the run partial.
func (a *applier) confirmStep(ctx context.Context, ls *lineState) {
	pl := ls.pl
	if !slices.Contains(a.o.Confirm, pl.id) {
		ls.status = LineWaiting
		ls.pending = []pendingRef{{line: pl.id, waitingFor: "apply --confirm " + pl.id}}
		return
	}
	if st, ok := pl.op.(adapter.Stepper); ok {
		if err := st.Verify(ctx, ls.req); err != nil {
			ls.status, ls.err = LineFailed, a.e.redactor().Error(err)
			return
		}
	}
	ls.todo = nil
	if err := a.takeLease(ctx, ls); err != nil {
		ls.status, ls.err = LineFailed, a.e.redactor().Error(err)
		return
	}
	a.write(ctx, ls)
}

// write sends the line's changes (op.Apply) from its last inspection and
// records the result, after checking the scope lease's deadline.
func (a *applier) write(ctx context.Context, ls *lineState) {
	pl := ls.pl
	if err := a.checkLease(ls); err != nil {
		ls.status, ls.err = LineFailed, err
		return
	}
	ls.touched = true
	a.setTouched()
	actx := ctx
	if ls.byIntent {
		// Its intent's checkpoint takes the lease; a write the op sends
		// before its intent takes it first.
		actx = adapter.WithBeforeWrite(ctx, func() error {
			if !a.keeper.attempted() {
				if err := a.takeLease(ctx, ls); err != nil {
					return err
				}
			}
			return a.leaseChecked()
		})
	}
	res, err := pl.op.Apply(actx, ls.req, ls.live, a.intend(ctx, ls))
	if err != nil {
		a.dropRefused(ls, adapter.NotCreatedKeys(err))
		if lost := a.lostErr(); lost != nil {
			ls.status, ls.err = LineFailed, lost
			return
		}
		ls.status, ls.err = LineFailed, a.e.redactor().Error(err)
		return
	}
	if res == nil {
		res = &adapter.Result{}
	}
	a.recordResult(ls, res)
	ls.ran = true
	ls.status = LineUpdated
	if len(res.Created) > 0 {
		ls.status = LineCreated
	}
	// An output that a later line needs may be external: it is looked for
	// when that line runs.
}

// checkLease is the lease check before a line's provider write
// (leaseChecked), except for a line whose first write is a create while
// the lease is still to be taken: its intent's checkpoint takes it, and
// the check follows.
func (a *applier) checkLease(ls *lineState) error {
	if ls.byIntent && !a.keeper.attempted() {
		return nil
	}
	return a.leaseChecked()
}

// judged maps the inspection's plan status to the line's apply status,
// reporting whether the line goes on to be written or recorded.
func (a *applier) judged(ls *lineState) bool {
	switch ls.status {
	case PlanError:
		ls.status = LineFailed
		return false
	case PlanBlocked:
		ls.status = LineBlocked
		return false
	case PlanPending:
		// The inputs resolved before the read; only an op that cannot read
		// without them gets here.
		ls.status = LineWaiting
		return false
	}
	return true
}

// awaitInputs handles inputs not known yet: an external output not there
// yet makes the line waiting, or with Wait is polled until it arrives
// (EXTERNAL_FAILED; a wait that times out leaves the line waiting, with a
// WAIT_TIMEOUT warning); an immediate output a line that ran did
// not return is a wrong output path of the plan or an op bug
// (missingOutput). It reports whether the line can go on.
func (a *applier) awaitInputs(ctx context.Context, ls *lineState, pend []pendingRef) bool {
	for _, p := range pend {
		src := a.byID[p.line]
		if !p.external {
			ls.status = LineFailed
			ls.err = missingOutput(ls, src, p)
			return false
		}
		if !a.o.Wait {
			// Without --wait the output is looked for once: the event may
			// have happened since the run that ended partial.
			arrived, err := a.lookExternal(ctx, src, p)
			if err != nil {
				ls.status, ls.err = LineFailed, a.e.redactor().Error(err)
				return false
			}
			if !arrived {
				ls.status, ls.pending = LineWaiting, pend
				return false
			}
			continue
		}
		if err := a.await(ctx, src, p); err != nil {
			if errs.CodeOf(err) == errs.WAIT_TIMEOUT {
				// Running out of patience is not a failure: the line waits,
				// as without --wait, and the run ends partial keeping what
				// it created; the next apply continues.
				a.warn(errs.WAIT_TIMEOUT, "%s; line %q is waiting, the run ends partial", errs.Coded(err).Message, ls.pl.id)
				ls.status, ls.pending = LineWaiting, pend
				return false
			}
			ls.status, ls.err = LineFailed, a.e.redactor().Error(err)
			return false
		}
	}
	return true
}

// lookExternal asks the source line's op once whether its external
// outputs have arrived, and reports whether p is known now. An error means
// the event failed for good (EXTERNAL_FAILED).
func (a *applier) lookExternal(ctx context.Context, src *lineState, p pendingRef) (bool, error) {
	aw, ok := src.pl.op.(adapter.Awaiter)
	if !ok {
		return false, errs.New(errs.INTERNAL, "op %s declares the external output %s but cannot await it", src.pl.spec.Name(), p.output)
	}
	outs, err := aw.AwaitExternal(ctx, src.req, src.live)
	if err != nil {
		if errs.CodeOf(err) != errs.EXTERNAL_FAILED {
			return false, errs.Wrap(err, errs.EXTERNAL_FAILED, "waiting for %s of line %q", p.waitingFor, src.pl.id)
		}
		return false, err
	}
	if outs != nil {
		a.learn(src.pl, outs)
		a.mergeOutputs(src, outs)
	}
	_, known := a.output(p.line, p.output)
	return known, nil
}

// await polls the source line's external outputs until p is known.
func (a *applier) await(ctx context.Context, src *lineState, p pendingRef) error {
	start := a.e.now()
	deadline := start.Add(a.o.waitTimeout())
	backoff := time.Second
	said := false
	ev := progress.Event{Kind: progress.External, Target: fmt.Sprintf("%s of line %q (%s)", p.waitingFor, src.pl.id, p.ref()),
		Line: src.pl.id, Started: start, Deadline: deadline}
	for {
		arrived, err := a.lookExternal(ctx, src, p)
		if err != nil || arrived {
			if ev.Attempt > 0 {
				ev.Now, ev.Done, ev.OK = a.e.now(), true, arrived
				progress.Report(ctx, ev)
			}
			return err
		}
		now := a.e.now()
		ev.Now, ev.Attempt = now, ev.Attempt+1
		if !now.Before(deadline) {
			ev.Done = true
			progress.Report(ctx, ev)
			return errs.New(errs.WAIT_TIMEOUT, "%s of line %q did not arrive within %s", p.waitingFor, src.pl.id, a.o.waitTimeout())
		}
		progress.Report(ctx, ev)
		if !said {
			a.e.progress("waiting for %s of line %q (%s), up to %s", p.waitingFor, src.pl.id, p.ref(), a.o.waitTimeout())
			said = true
		}
		d := min(jitter(a.e.rand(), backoff), deadline.Sub(now))
		if err := a.e.sleep(ctx, d); err != nil {
			return errs.Wrap(err, errs.INTERRUPTED, "interrupted while waiting for %s of line %q", p.waitingFor, src.pl.id)
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// mergeOutputs records external outputs on the source line's ledger
// entries ("the last non-sensitive outputs, external ones included").
func (a *applier) mergeOutputs(src *lineState, outs map[string]any) {
	pub := src.pl.publicOutputs(outs)
	if len(pub) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range src.resKeys {
		if i := a.ledger.Index(src.pl.ref(k)); i >= 0 {
			m := map[string]any{}
			for x, v := range a.ledger[i].Outputs {
				m[x] = v
			}
			for x, v := range pub {
				m[x] = v
			}
			a.ledger[i].Outputs = m
		}
	}
}

// dropRefused forgets the intents of creates the provider refused outright
// (adapter.NotCreated): nothing was created, so a resource later found at
// such a key is someone else's and must be neither claimed nor rolled back.
// An entry the key had before the intent gets its previous owner back.
func (a *applier) dropRefused(ls *lineState, keys []string) {
	if len(keys) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range keys {
		i := slices.Index(ls.intents, k)
		if i < 0 {
			continue
		}
		ls.intents = slices.Delete(ls.intents, i, i+1)
		j := a.ledger.Index(ls.pl.ref(k))
		if j < 0 || a.ledger[j].CreatedBy != receipt.CreatedByIntent {
			continue
		}
		if prior := ls.priorBy[k]; prior != "" {
			a.ledger[j].CreatedBy = prior
		} else {
			a.ledger = slices.Delete(a.ledger, j, j+1)
		}
		delete(ls.priorBy, k)
	}
}

// intend is the Intend an op calls before any create: the keys become
// intents in the ledger and a fenced checkpoint receipt is written before
// it returns. The op sends nothing when it fails.
func (a *applier) intend(ctx context.Context, ls *lineState) adapter.Intend {
	return func(keys ...string) error {
		if err := a.checkLease(ls); err != nil {
			return err
		}
		if err := checkParent(ls.pk, ls.parent, ls.pl.id); err != nil {
			return err
		}
		a.mu.Lock()
		for _, k := range keys {
			ref := ls.pl.ref(k)
			if ls.priorBy == nil {
				ls.priorBy = map[string]receipt.CreatedBy{}
			}
			if !slices.Contains(ls.intents, k) {
				ls.intents = append(ls.intents, k)
			}
			if i := a.ledger.Index(ref); i >= 0 {
				// Recreating what went missing, or replacing: until the
				// answer comes, the entry is an intent like any create.
				if _, seen := ls.priorBy[k]; !seen {
					ls.priorBy[k] = a.ledger[i].CreatedBy
				}
				a.ledger[i].CreatedBy, a.ledger[i].Parent, a.ledger[i].Line = receipt.CreatedByIntent, ls.parent, ls.pl.id
				continue
			}
			if _, seen := ls.priorBy[k]; !seen {
				ls.priorBy[k] = ""
			}
			a.ledger = append(a.ledger, receipt.LedgerEntry{Adapter: ref.Adapter, Op: ref.Op, Provider: cloneMap(ref.Provider),
				Key: k, CreatedBy: receipt.CreatedByIntent, Line: ls.pl.id, Parent: ls.parent})
		}
		a.mu.Unlock()
		a.depart(ls)
		if err := a.rec.checkpoint(ctx); err != nil {
			if errs.CodeOf(err) == errs.LOCK_LOST {
				a.setLost(err)
			}
			return err
		}
		if ls.byIntent {
			// The lease came with this checkpoint (or just before it).
			return a.leaseChecked()
		}
		return nil
	}
}

// recordUnchanged records a line whose diffs are all unchanged: no
// provider write; the ledger learns ids, hashes and outputs as found live.
func (a *applier) recordUnchanged(ls *lineState) {
	for _, d := range ls.diffs {
		if lv := ls.live.Resource(d.Key); lv != nil {
			a.upsert(ls, *lv, false)
		}
	}
	if ls.live != nil {
		a.learn(ls.pl, ls.live.Outputs)
	}
	ls.resKeys = ls.declared()
	ls.status, ls.ran = LineUnchanged, true
}

// recordResult records what Apply returned.
func (a *applier) recordResult(ls *lineState, res *adapter.Result) {
	created := map[string]bool{}
	a.mu.Lock()
	for _, k := range res.Created {
		created[k] = true
		ls.created = append(ls.created, k)
		if !ls.pl.spec.Manual { // a step a person did is never rolled back
			a.created = append(a.created, createdKey{ls: ls, key: k})
		}
	}
	a.mu.Unlock()
	ls.resKeys = nil
	for _, r := range res.Resources {
		a.upsert(ls, r, created[r.Key])
		ls.resKeys = append(ls.resKeys, r.Key)
	}
	a.learn(ls.pl, res.Outputs)
}

// upsert writes the ledger entry of one resource the line manages.
func (a *applier) upsert(ls *lineState, res adapter.Resource, created bool) {
	v := ls.verdict[res.Key]
	if v.Foreign {
		return
	}
	a.learnSensitive(ls.pl, res.Outputs)
	ref := ls.pl.ref(res.Key)
	a.mu.Lock()
	defer a.mu.Unlock()
	i := a.ledger.Index(ref)
	by := receipt.CreatedByAdopted
	switch {
	case created:
		by = receipt.CreatedBySponson
	case i >= 0 && v.Adopt:
		by = receipt.CreatedByAdopted
	case i >= 0 && a.ledger[i].CreatedBy == receipt.CreatedByIntent:
		by = receipt.CreatedBySponson // the create of an earlier run landed
		if prior, mine := ls.priorBy[res.Key]; mine {
			// This run intended it and did not create it: it was there.
			by = firstOf(prior, receipt.CreatedByAdopted)
		}
	case i >= 0:
		by = a.ledger[i].CreatedBy
	}
	en := receipt.LedgerEntry{Adapter: ref.Adapter, Op: ref.Op, Provider: cloneMap(ref.Provider), Key: res.Key, ID: res.ID,
		Hash: a.hash(res.Value), CreatedBy: by, Line: ls.pl.id, Outputs: ls.pl.publicOutputs(res.Outputs), Parent: ls.parent,
		Fingerprints: a.fingerprints(ls.pl, res.Outputs)}
	if en.Fingerprints == nil && i >= 0 && !created {
		en.Fingerprints = a.ledger[i].Fingerprints // the value made by the create stands
	}
	if i >= 0 {
		a.ledger[i] = en
	} else {
		a.ledger = append(a.ledger, en)
	}
}

// rollback undoes what this run created (step 6), once it has confirmed
// it still holds the scope lease: first it re-reads the intents this run
// recorded whose create may have landed (a lost answer), then destroys
// what this run created, newest first, each entry with a
// parent under that parent's lease (always waiting, bounded). Nothing an
// earlier run created is touched. A destroy that fails leaves its entry
// and makes the line rollback_failed; the error is ROLLBACK_FAILED naming
// the resources.
func (a *applier) rollback(ctx context.Context) error {
	// A run taken over by force (the unlock escape hatch) may not have
	// noticed yet: undoing what it created would contradict the receipt
	// its successor now holds. Confirm the lease first; lost, the run
	// stops (LOCK_LOST) and what it created stays for the unsaved receipt.
	if err := a.keeper.confirm(); err != nil {
		a.setLost(err)
		return nil
	}
	created := map[string]bool{}
	for _, ck := range a.created {
		created[ck.ls.pl.ref(ck.key).Identity()] = true
	}
	for _, ls := range a.lines {
		for _, k := range ls.intents {
			ref := ls.pl.ref(k)
			i, en := a.entry(ref)
			// A create of this run whose answer never came back (the line
			// did not record a result) may have been seen since by another
			// line running at the same time, which then recorded it as
			// found: it is still this run's to undo. So it is when the key
			// held only an earlier run's intent: that create had not landed
			// (the line found the key absent before intending it), so the
			// intent is no owner to give the resource back to.
			prior := ls.priorBy[k]
			mine := !ls.ran && (prior == "" || prior == receipt.CreatedByIntent) && !created[ref.Identity()]
			if en == nil || (en.CreatedBy != receipt.CreatedByIntent && !mine) {
				continue
			}
			found, err := ls.pl.op.Lookup(ctx, ls.pl.provider, a.pr.run, k)
			switch {
			case err != nil:
				ls.rollback = append(ls.rollback, k)
				a.warn(errs.INTENT_UNRESOLVED, "line %q: could not tell whether %s was created: %v", ls.pl.id, k, a.e.redactor().Error(err))
			case found == nil:
				a.mu.Lock()
				a.ledger = slices.Delete(a.ledger, i, i+1)
				a.mu.Unlock()
			default:
				a.mu.Lock()
				a.ledger[i].CreatedBy, a.ledger[i].ID, a.ledger[i].Hash = receipt.CreatedBySponson, found.ID, a.hash(found.Value)
				a.mu.Unlock()
				if !slices.Contains(ls.created, k) {
					ls.created = append(ls.created, k)
					a.created = append(a.created, createdKey{ls: ls, key: k})
				}
			}
		}
	}
	for i := len(a.created) - 1; i >= 0; i-- {
		ck := a.created[i]
		if err := a.destroyEntry(ctx, ck.ls.pl.op, ck.ls.pl.ref(ck.key), true); err != nil {
			ck.ls.rollback = append(ck.ls.rollback, ck.key)
			a.warn(errs.CodeOf(err), "rollback of %s (line %q): %v", ck.key, ck.ls.pl.id, a.e.redactor().Error(err))
			if a.lostErr() != nil {
				break
			}
			continue
		}
		ck.ls.resKeys = slices.DeleteFunc(ck.ls.resKeys, func(k string) bool { return k == ck.key })
	}
	var left []string
	for _, ls := range a.lines {
		if len(ls.rollback) > 0 {
			ls.outcome = ls.status
			ls.status = LineRollbackFailed
			ls.err = errs.New(errs.ROLLBACK_FAILED, "line %q: rollback left %s", ls.pl.id, strings.Join(ls.rollback, ", ")).With("resources", ls.rollback)
			left = append(left, ls.rollback...)
			continue
		}
		if len(ls.created) > 0 && (ls.status == LineCreated || ls.status == LineUpdated) {
			ls.outcome = ls.status
			ls.status = LineRolledBack
		}
	}
	if len(left) > 0 {
		return errs.New(errs.ROLLBACK_FAILED, "rollback left %d resource(s) this run created: %s", len(left), strings.Join(left, ", ")).
			With("resources", left)
	}
	return nil
}

// settle applies the ledger rules of step 7: an entry no current line
// declares becomes orphan (we created it) or is forgotten (adopted); an
// intent no line declares is looked up (found: an orphan we created; gone:
// dropped). Entries of lines that did not run are left as they are.
func (a *applier) settle(ctx context.Context) {
	var out receipt.Ledger
	for _, en := range a.ledger {
		ls := a.byID[en.Line]
		switch {
		case ls != nil && !ls.ran:
			// The line did not run: its entries stay as they are.
			out = append(out, en)
			continue
		case ls != nil && declares(ls, en):
			en.Orphan = false
			out = append(out, en)
			continue
		}
		switch en.CreatedBy {
		case receipt.CreatedByAdopted:
			a.warn(errs.ADOPTED_FORGOTTEN, "%s (%s.%s) was adopted and no line declares it now: forgotten, left as it is", en.Key, en.Adapter, en.Op)
			continue
		case receipt.CreatedByIntent:
			if op, ok := a.e.Ops.Lookup(en.Adapter, en.Op); ok {
				found, err := op.Lookup(ctx, adapter.Provider(en.Provider), a.pr.run, en.Key)
				switch {
				case err == nil && found == nil:
					continue
				case err == nil:
					en.CreatedBy, en.ID, en.Hash = receipt.CreatedBySponson, found.ID, a.hash(found.Value)
				}
			}
		}
		en.Orphan = true
		out = append(out, en)
	}
	if out == nil {
		out = receipt.Ledger{}
	}
	// Entries this run added come after the ones it started from, in run
	// order of their lines: lines running at once add them in any order,
	// the receipt must not depend on it (destroy walks the ledger newest
	// first, and run order puts every line after its dependencies).
	pos := make(map[string]int, len(a.lines))
	for i, ls := range a.lines {
		pos[ls.pl.id] = i
	}
	sort.SliceStable(out, func(i, j int) bool {
		oi, oj := a.initial[out[i].Ref().Identity()], a.initial[out[j].Ref().Identity()]
		if oi || oj {
			return oi && !oj
		}
		return pos[out[i].Line] < pos[out[j].Line]
	})
	a.ledger = out
}

// lineResults are the receipt's lines: what this run did with each line.
func (a *applier) lineResults() map[string]receipt.LineResult {
	out := make(map[string]receipt.LineResult, len(a.lines))
	for _, ls := range a.lines {
		if ls.status == "" {
			continue
		}
		out[ls.pl.id] = a.lineResult(ls)
	}
	return out
}

// lineResult is what this run did with one line.
func (a *applier) lineResult(ls *lineState) receipt.LineResult {
	{
		lr := receipt.LineResult{Status: ls.status}
		if ls.err != nil {
			le := lineError(ls.err)
			lr.ErrorCode, lr.Error = le.Code, le.Message
		}
		if ls.status == LineWaiting {
			var on []string
			for _, p := range ls.pending {
				if p.output == "" {
					on = append(on, p.waitingFor)
				} else {
					on = append(on, fmt.Sprintf("%s (%s)", p.ref(), p.waitingFor))
				}
			}
			lr.Error = "waiting for " + strings.Join(on, ", ")
		}
		lr.Resources = slices.Clone(ls.resKeys)
		if ls.ran && ls.status != LineRolledBack && ls.status != LineRollbackFailed {
			lr.Outputs = a.outputStates(ls.pl)
		}
		return lr
	}
}

// finish stamps the final receipt.
func (a *applier) finish(status receipt.Status) {
	now := a.e.now()
	a.rec.w.Status, a.rec.w.FinishedAt = status, now
	a.rec.w.Ledger = slices.Clone(a.ledger)
	a.rec.w.Lines = a.lineResults()
	a.rec.w.History = appendHistory(a.rec.w.History, receipt.HistoryEntry{SHA: a.pr.ctx.Git.SHA, At: now, RunID: a.owner.RunID, Status: status})
	a.rec.w.Warnings = slices.Clone(a.warnings)
	if a.rec.w.LockPreempted == nil {
		a.rec.w.LockPreempted = a.keeper.Preempted() // a deferred lease takes over when it is taken
	}
}

// saveUnsaved keeps a receipt the store refused and names what it holds
// that the stored ledger lacks.
// UnsavedRefs is a store that can keep unsaved receipts itself (the git
// store: sponson-receipts/_unsaved/<env>/<scope>/<run>, create-only).
type UnsavedRefs interface {
	SaveUnsaved(ctx context.Context, r *receipt.Receipt) (ref string, err error)
	LoadUnsaved(ctx context.Context, ref string) (*receipt.Receipt, error)
}

func (e *Engine) saveUnsaved(ctx context.Context, r *receipt.Receipt) *Unsaved {
	u := &Unsaved{Resources: []string{}}
	path, err := receipt.SaveUnsaved(e.unsavedDir(), r)
	// A store that can keep it too (the git store: a create-only side ref
	// nobody else writes) does, so a CI run that ends now loses nothing.
	if rs, ok := e.Store.(UnsavedRefs); ok {
		if ref, rerr := rs.SaveUnsaved(ctx, r); rerr == nil {
			u.Ref = ref
		}
	}
	switch {
	case err == nil:
		u.Path = path
		u.Command = "sponson receipts push " + path + " --adopt-missing"
	case u.Ref != "":
		u.Command = "sponson receipts push " + u.Ref + " --adopt-missing"
	default:
		u.Command = "the receipt could not be saved either: " + e.redactor().String(err.Error())
	}
	stored, _, rerr := e.Store.Read(ctx, r.Env, r.Scope)
	if rerr != nil {
		stored = nil
	}
	d := receipt.CompareLedgers(stored, r)
	for _, en := range d.Missing {
		u.Resources = append(u.Resources, en.Adapter+"."+en.Op+" "+en.Key)
	}
	for _, c := range d.Changed {
		u.Resources = append(u.Resources, c.Unsaved.Adapter+"."+c.Unsaved.Op+" "+c.Unsaved.Key+" (recorded as "+string(c.Stored.CreatedBy)+")")
	}
	return u
}

// maxHistory bounds the history a receipt carries: the stale check needs
// the last commits, and the store keeps every run (one commit or file per
// write), so an unbounded list would only make every receipt write slower.
const maxHistory = 100

func appendHistory(h []receipt.HistoryEntry, e receipt.HistoryEntry) []receipt.HistoryEntry {
	h = append(h, e)
	if len(h) > maxHistory {
		h = slices.Clone(h[len(h)-maxHistory:])
	}
	return h
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// onceUses lists, for each line, the lines whose once-only outputs
// (adapter.OutputSpec.Once: a password the provider answers only to its
// create) it uses, with the output's reference.
func onceUses(pr *prepared) map[string][][2]string {
	uses := map[string][][2]string{}
	for _, pl := range pr.lines {
		for _, v := range pl.line.FromRefs() {
			src := pr.byID[v.From.Line]
			if src == nil || !src.outputs[v.From.Output].Once {
				continue
			}
			uses[pl.id] = append(uses[pl.id], [2]string{src.id, v.From.String()})
		}
	}
	return uses
}

// recreateSet is the lines apply --recreate recreates: the named ones and,
// with every line among them, the lines that use its once-only outputs,
// which get the new value only by being written again in the same run.
// A named line that uses a once-only output of a line this scope already
// holds and does not recreate is refused (OUTPUT_UNAVAILABLE) before
// anything is deleted: the value is gone with that line's create, and the
// line would be deleted with nothing to write back.
func recreateSet(pr *prepared, named []string, held receipt.Ledger) ([]string, error) {
	uses := onceUses(pr)
	set := slices.Clone(named)
	for grown := true; grown; {
		grown = false
		for _, pl := range pr.lines {
			if slices.Contains(set, pl.id) {
				continue
			}
			for _, u := range uses[pl.id] {
				if slices.Contains(set, u[0]) {
					set, grown = append(set, pl.id), true
					break
				}
			}
		}
	}
	holds := map[string]bool{}
	for _, en := range held {
		holds[en.Line] = true
	}
	for _, id := range named {
		for _, u := range uses[id] {
			if slices.Contains(set, u[0]) || !holds[u[0]] {
				continue
			}
			src := pr.byID[u[0]]
			return nil, errs.New(errs.OUTPUT_UNAVAILABLE,
				"--recreate %s: line %q uses %s, which %s answers only when it is created, and line %q is not recreated; nothing was deleted",
				id, id, u[1], src.spec.Name(), u[0]).
				WithHint("Recreate the line that makes the value too: --recreate %s (its users get the new value in the same run).", u[0])
		}
	}
	return set, nil
}

// fingerprints are the keyed hashes (the scope's HashKey) of the
// once-only outputs among outs, by name; nil when there are none. The
// values themselves are never recorded.
func (r *run) fingerprints(pl *pline, outs map[string]any) map[string]string {
	var fp map[string]string
	for name, v := range outs {
		if !pl.outputs[name].Once || v == nil {
			continue
		}
		if h := r.hash(v); h != "" {
			if fp == nil {
				fp = map[string]string{}
			}
			fp[name] = h
		}
	}
	return fp
}
