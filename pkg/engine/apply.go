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
	ctx, st, err := e.begin(ctx, c, o, receipt.OpApply)
	if err != nil {
		return nil, err
	}
	if err := checkConfirmer(st.o); err != nil {
		return nil, err
	}
	// Every refusal that needs no provider, secrets included, before the
	// lease and the first write.
	pr, err := e.preflight(ctx, p, c, st.o, false)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	if err := pr.approve(st.o); err != nil {
		return nil, err
	}
	if _, ok := e.Store.(receipt.Sessions); ok {
		return st.applySession(ctx, pr)
	}
	keeper, err := st.acquire(ctx, st.target(pr.scope), st.owner, st.o.Wait, nil)
	if err != nil {
		return nil, err
	}
	return st.applyHeld(ctx, pr, keeper, nil)
}

// applyHeld is applyLocked with keeper's lease given up on every way out,
// a panic included; a release that failed is a warning of the result.
func (st *start) applyHeld(ctx context.Context, pr *prepared, keeper *LeaseKeeper, view *receipt.View) (res *RunResult, err error) {
	defer st.release(ctx, keeper, func(w Warning) {
		if res != nil {
			res.Warnings = append(res.Warnings, w)
		}
	})
	return st.applyLocked(ctx, pr, keeper, view)
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
func (st *start) applySession(ctx context.Context, pr *prepared) (*RunResult, error) {
	e, target := st.e, st.target(pr.scope)
	view, err := st.view(ctx, pr)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	if view.Lease == nil {
		res, err := st.applyHeld(ctx, pr, st.deferred(ctx, target, &view.Version), view)
		if !errors.Is(err, errLeaseNeeded) {
			return res, err
		}
		view = nil
	}
	for attempt := 0; attempt < viewAttempts; attempt++ {
		if view == nil {
			if view, err = st.view(ctx, pr); err != nil {
				return nil, e.redactor().Error(err)
			}
		}
		keeper, err := st.acquire(ctx, target, st.owner, st.o.Wait, &view.Version)
		if receiptMoved(err) {
			view = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		return st.applyHeld(ctx, pr, keeper, view)
	}
	keeper, err := st.acquire(ctx, target, st.owner, st.o.Wait, nil)
	if err != nil {
		return nil, err
	}
	return st.applyHeld(ctx, pr, keeper, nil)
}

// applier is one apply: its lines, run under the scope lease by the
// scheduler (runLines), the parts it writes through (the scope writer:
// ledger, warnings, lease, recorder) and what it created, for rollback.
type applier struct {
	e  *Engine
	o  Options
	pr *prepared
	w  *scopeWriter
	in *inspector
	rb *rollback

	initial map[string]bool // identities in the ledger when the lines started
}

// newApplier is an apply of pr under keeper; at is the version of the
// scope's receipt it read.
func newApplier(st *start, pr *prepared, keeper *LeaseKeeper, at receipt.Version) *applier {
	w := newScopeWriter(st, pr, keeper, at)
	in := newInspector(st.e, pr, st.o, true, w.led, w.notes)
	in.reads = w.reads
	return &applier{e: st.e, o: st.o, pr: pr, w: w, in: in, rb: &rollback{w: w, in: in}}
}

// applyLocked runs the apply with keeper's lease (held, or deferred until
// the first write) on the state view read; with a nil view it reads the
// scope and the environment itself, under the lease.
func (st *start) applyLocked(ctx context.Context, pr *prepared, keeper *LeaseKeeper, view *receipt.View) (*RunResult, error) {
	e, o := st.e, st.o
	var reopened *receipt.Tombstone
	prev, at, stored, err := st.readScope(ctx, pr, view, func(prev *receipt.Receipt) error {
		if prev == nil || prev.Closed == nil {
			return nil
		}
		if !o.Reopen {
			return closedError(pr.env, pr.scope, prev.Closed)
		}
		reopened = prev.Closed
		return nil
	})
	if err != nil {
		return nil, err
	}
	// --recreate is judged on the ledger before anything is read or
	// deleted: a line recreated without the producer of a once-only value
	// it uses would be left with nothing to write.
	if len(o.Recreate) > 0 {
		var held receipt.Ledger
		if prev != nil {
			held = prev.Ledger
		}
		if st.o.Recreate, err = recreateSet(pr, o.Recreate, held); err != nil {
			return nil, e.redactor().Error(err)
		}
	}
	// Who confirms: a confirmed manual step records it (steps.go).
	pr.run.Actor = confirmer(st.o)
	a := newApplier(st, pr, keeper, at)
	stale, err := a.open(ctx, prev, stored, view, reopened)
	if err != nil {
		return nil, err
	}
	if stale {
		a.w.rec.w.Stale, a.w.rec.w.Status, a.w.rec.w.FinishedAt = true, receipt.StatusComplete, e.now()
		a.w.rec.w.Lines = map[string]receipt.LineResult{}
		return a.w.result(nil, nil, nil, a.in.lines)
	}
	return a.run(ctx)
}

// open readies the apply on the scope's receipt prev and the
// environment's stored (view: what is left to read of it): the other
// scopes' ledgers, the hand-overs (unless stale), the receipt to write and
// its ledger, the hash key. It reports whether the run is stale.
func (a *applier) open(ctx context.Context, prev *receipt.Receipt, stored []receipt.Stored, view *receipt.View, reopened *receipt.Tombstone) (bool, error) {
	pr := a.pr
	a.w.lease.noteTakeover()
	stored = readable(stored, pr.scope, a.w.notes)
	a.in.owners.load(stored)
	if view != nil {
		a.in.owners.later(view.Rest, view.Named)
	}
	if reopened != nil {
		a.w.notes.warn(errs.SCOPE_REOPENED, "scope %s/%s was closed by %s at %s%s; reopened by this run (--reopen)", pr.env, pr.scope,
			reopened.By, reopened.At.UTC().Format(time.RFC3339), headOf(reopened))
	}
	// A stale run writes nothing, a hand-over included: decided on the
	// scope's own history, which succession does not change.
	stale := a.stale(prev)
	if !stale {
		var err error
		if prev, err = a.w.succeed(ctx, prev, stored, false, a.in.owners); err != nil {
			return false, a.w.lease.needed(a.e.redactor().Error(err))
		}
	}
	a.w.startReceipt(prev, receipt.OpApply)
	w := a.w.rec.w
	if w.SupersededBy != "" && len(w.Ledger) == 0 {
		// Everything was handed over; applying the scope again starts it
		// anew (what it creates now is its own, not in transit).
		a.w.notes.warn(errs.SUCCESSION, "scope %s was superseded by %s, which owns what it had created; this run starts it anew", pr.scope, w.SupersededBy)
		w.SupersededBy = ""
	}
	if w.HashKey == "" {
		key, err := receipt.NewHashKey(a.e.rand())
		if err != nil {
			return false, err
		}
		w.HashKey = key
		a.w.led.reset(w.Ledger, key)
	}
	return stale, nil
}

// run runs the lines (step 5), rolls back what they created when one
// failed (step 6), settles the ledger (step 7) and writes the final
// receipt (step 8).
func (a *applier) run(ctx context.Context) (*RunResult, error) {
	// A line the ledger holds nothing of asks who owns what it declares
	// before it writes: the environment is read beside the first reads.
	if a.someLineNew() {
		a.in.owners.prefetch(ctx)
		defer a.in.owners.settle()
	}
	// Secrets are registered before any output exists (step 4).
	a.in.resolveSecrets(ctx)
	a.initial = a.w.led.identities()
	failure := a.runLines(ctx)
	if a.w.lease.needed(nil) != nil {
		// No line got past its first write: nothing to undo or record.
		return nil, errLeaseNeeded
	}
	interrupted := ctx.Err() != nil
	var rollbackErr error
	if failure != nil && a.w.lease.lostErr() == nil && !interrupted {
		rollbackErr = a.rb.undo(ctx)
	}
	a.settle(context.WithoutCancel(ctx))
	lost := a.w.lease.lostErr()
	status := receipt.StatusComplete
	switch {
	case failure != nil || lost != nil || interrupted || rollbackErr != nil:
		status = receipt.StatusFailed
	case slices.ContainsFunc(a.in.lines, func(ls *lineState) bool { return ls.status == LineWaiting }):
		status = receipt.StatusPartial
	}
	a.finish(status)
	var runErr error
	switch {
	case lost != nil:
		runErr = lost
	case interrupted:
		runErr = errs.Wrap(ctx.Err(), errs.INTERRUPTED, "apply of %s/%s was interrupted; what was created is recorded", a.pr.env, a.pr.scope)
	case rollbackErr != nil:
		runErr = rollbackErr
	case failure != nil:
		runErr = runError(failure, "apply")
	}
	return a.w.result(runErr, nil, nil, a.in.lines)
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
		a.w.notes.warn(errs.STALE_UNDECIDED, "cannot tell whether commit %s is older than %s, the last one applied to the scope: applying", short(sha), short(last))
		return false
	}
	anc, err := a.e.Ancestry(sha, last)
	if err != nil {
		a.w.notes.warn(errs.STALE_UNDECIDED, "cannot tell whether commit %s is older than %s, the last one applied to the scope (%v): applying", short(sha), short(last), a.e.redactor().Error(err))
		return false
	}
	if anc {
		a.w.notes.warn(errs.STALE_RUN, "commit %s is an ancestor of %s, already applied to the scope: this run is stale and writes nothing", short(sha), short(last))
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
		d := a.in.byID[dep]
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
	if _, pend, _ := a.in.resolve(pl); len(pend) > 0 {
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
	a.in.inspect(ctx, ls)
	if !a.judged(ls) {
		return
	}
	if err := refuseSecretKeys(a.e.redactor(), ls); err != nil {
		ls.status, ls.err = LineFailed, err
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
	ls.byIntent = a.w.rec.combines() && (ls.parent == "" || a.e.unlockedParents) && createsOnly(ls.diffs)
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
		a.w.rec.arrive()
	}
}

func (a *applier) depart(ls *lineState) {
	if ls.heading.CompareAndSwap(true, false) {
		a.w.rec.depart()
	}
}

// takeLease takes the scope lease deferred until the line's first write,
// if the run has not taken it yet (recorder.lease).
func (a *applier) takeLease(ctx context.Context, ls *lineState) error {
	a.depart(ls)
	return a.w.rec.lease(ctx)
}

// someLineNew reports whether a line of the plan has no entry in the
// run's ledger.
func (a *applier) someLineNew() bool {
	held := a.w.led.lines()
	return slices.ContainsFunc(a.in.lines, func(ls *lineState) bool { return !held[ls.pl.id] })
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
	mine, others := a.w.led.ofLine(pl)
	for _, en := range others {
		a.w.notes.warn(errs.RECREATE_SKIPPED, "line %q: %s is %s, not created by this scope; --recreate leaves it alone", pl.id, en.Key, en.CreatedBy)
	}
	if len(mine) == 0 {
		a.w.notes.warn(errs.RECREATE_SKIPPED, "line %q: this scope created nothing for it yet; --recreate creates it as usual", pl.id)
	}
	if len(mine) > 0 {
		if err := a.takeLease(ctx, ls); err != nil {
			ls.status, ls.err = LineFailed, a.e.redactor().Error(err)
			return false
		}
	}
	for _, ref := range mine {
		ls.touched = true
		if err := a.w.destroyEntry(ctx, pl.op, ref, true); err != nil {
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
	a.w.lease.setTouched()
	actx := ctx
	if ls.byIntent {
		// Its intent's checkpoint takes the lease; a write the op sends
		// before its intent takes it first.
		actx = adapter.WithBeforeWrite(ctx, func() error {
			if !a.w.lease.keeper.attempted() {
				if err := a.takeLease(ctx, ls); err != nil {
					return err
				}
			}
			return a.w.lease.checked()
		})
	}
	res, err := pl.op.Apply(actx, ls.req, ls.live, a.intend(ctx, ls))
	if err != nil {
		a.w.led.dropRefused(ls, adapter.NotCreatedKeys(err))
		if lost := a.w.lease.lostErr(); lost != nil {
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
	if ls.byIntent && !a.w.lease.keeper.attempted() {
		return nil
	}
	return a.w.lease.checked()
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
		src := a.in.byID[p.line]
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
				a.w.notes.warn(errs.WAIT_TIMEOUT, "%s; line %q is waiting, the run ends partial", errs.Coded(err).Message, ls.pl.id)
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
		a.in.learn(src.pl, outs)
		a.w.led.mergeOutputs(src, outs)
	}
	_, known := a.in.output(p.line, p.output)
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
		if err := a.e.clock().Sleep(ctx, d); err != nil {
			return errs.Wrap(err, errs.INTERRUPTED, "interrupted while waiting for %s of line %q", p.waitingFor, src.pl.id)
		}
		backoff = min(backoff*2, 30*time.Second)
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
		a.w.led.intend(ls, keys)
		a.depart(ls)
		if err := a.w.rec.checkpoint(ctx); err != nil {
			if errs.CodeOf(err) == errs.LOCK_LOST {
				a.w.lease.setLost(err)
			}
			return err
		}
		if ls.byIntent {
			// The lease came with this checkpoint (or just before it).
			return a.w.lease.checked()
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
		a.in.learn(ls.pl, ls.live.Outputs)
	}
	ls.resKeys = ls.declared()
	ls.status, ls.ran = LineUnchanged, true
}

// recordResult records what Apply returned.
func (a *applier) recordResult(ls *lineState, res *adapter.Result) {
	created := map[string]bool{}
	for _, k := range res.Created {
		created[k] = true
		ls.created = append(ls.created, k)
		if !ls.pl.spec.Manual { // a step a person did is never rolled back
			a.rb.add(ls, k)
		}
	}
	ls.resKeys = nil
	for _, r := range res.Resources {
		a.upsert(ls, r, created[r.Key])
		ls.resKeys = append(ls.resKeys, r.Key)
	}
	a.in.learn(ls.pl, res.Outputs)
}

// upsert writes the ledger entry of one resource the line manages
// (never of one it relies on: foreign), its sensitive outputs registered
// first.
func (a *applier) upsert(ls *lineState, res adapter.Resource, created bool) {
	if ls.verdict[res.Key].Foreign {
		return
	}
	a.in.learnSensitive(ls.pl, res.Outputs)
	a.w.led.upsert(ls, res, created)
}

// lineResults are the receipt's lines: what this run did with each line.
func (a *applier) lineResults() map[string]receipt.LineResult {
	out := make(map[string]receipt.LineResult, len(a.in.lines))
	for _, ls := range a.in.lines {
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
			lr.Outputs = a.in.outputStates(ls.pl)
		}
		return lr
	}
}

// finish stamps the final receipt.
func (a *applier) finish(status receipt.Status) {
	a.w.stamp(status)
	a.w.rec.w.Lines = a.lineResults()
	if a.w.rec.w.LockPreempted == nil {
		a.w.rec.w.LockPreempted = a.w.lease.keeper.Preempted() // a deferred lease takes over when it is taken
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

func (w *scopeWriter) saveUnsaved(ctx context.Context, r *receipt.Receipt) *Unsaved {
	e := w.st.e
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
