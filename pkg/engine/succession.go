package engine

import (
	"cmp"
	"context"
	"slices"
	"sort"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// Succession (engine.md, "Succession"; seeds: ADR 0008).
//
// An agent may apply from a branch before its pull request exists (scope
// branch-feat-x); the pull request's scope (pr-12) must then own what was
// created. One function moves the ledger, handOver; Succeed (the bot, at
// PR open), Apply of the PR scope and Destroy call it.
//
// The ownership rule — how a reader of the environment's receipts counts
// each resource once (Owners):
//
//	an entry of a receipt whose superseded_by names a scope and whose
//	ledger is not empty is IN TRANSIT: it is owned by that scope, whether
//	or not the successor's ledger has it yet; every other entry is owned
//	by its receipt's scope.
//
// The writes, each fenced by its scope's lease (both are held):
//
//	store with AtomicMulti: one WriteMany {successor + entries,
//	predecessor emptied + superseded_by};
//	otherwise, in this order:
//	  1. predecessor: superseded_by = successor, ledger unchanged (the
//	     entries are now in transit: owned by the successor);
//	  2. successor: ledger + every in-transit entry it lacks;
//	  3. predecessor: ledger emptied (superseded_by stays).
//
// Before 1 the predecessor owns the entries; from 1 on the successor does,
// through the predecessor's in-transit ledger, its own, or both (counted
// once): at no observable moment two scopes or none. Running it again
// after a crash between two writes repairs it: with superseded_by already
// naming the successor, 1 is skipped, 2 adds only what is missing, 3
// empties. The successor's receipt needs no marker of its own (and
// receipt.Receipt has no field for one): superseded_by is the marker.
//
// So the repair can never bring back an entry the successor has since
// destroyed, every run that changes the successor's ledger (Apply,
// Destroy) first finishes a hand-over in transit to it, waiting for the
// predecessor's lease (bounded) if it must. A run of the predecessor
// scope finds its ledger in transit too and finishes the move before it
// does anything, taking the successor's lease without waiting; if that
// lease is held it stops with LOCK_HELD and touches nothing.
//
// Leases are taken in one fixed order, successor first: Succeed takes the
// PR scope's, then the branch scope's; Apply and Destroy of the PR scope
// hold theirs and wait for the predecessor's; a run of the branch scope
// never waits for the PR scope's. No parent lease is held meanwhile
// (succession happens before any line runs), so no deadlock is possible.
//
// Ledger hashes are keyed by the scope's hash key: a successor without a
// receipt takes the predecessor's key with the entries; one that has its
// own key gets the moved entries without a hash (judged again, and hashed
// under its key, at its next apply).

// SuccessionResult is what Succeed did.
type SuccessionResult struct {
	Env  string `json:"env"`
	From string `json:"from"` // the predecessor, branch-<name>
	To   string `json:"to"`   // the successor, pr-<n>
	// Moved names the resources handed over by this call, "adapter.op
	// key", in ledger order; empty when there was nothing (left) to move.
	Moved []string `json:"moved"`
	// Repaired is true when this call finished a hand-over an earlier one
	// began (a crash between its writes).
	Repaired bool `json:"repaired"`
	// Predecessor and Successor are the receipts as they stand after the
	// call (nil when the scope has none).
	Predecessor *receipt.Receipt `json:"predecessor"`
	Successor   *receipt.Receipt `json:"successor"`
	Warnings    []Warning        `json:"warnings"`
}

// Succeed hands the ledger of the branch scope from over to the pull
// request scope to, in env (o.Env, then "preview", when env is ""): the
// bot calls it when a pull request opens; Apply of a PR scope does the
// same when the predecessor still has a ledger. It is idempotent (nothing
// left to move: Moved is empty) and crash-safe (see the package's
// succession notes: a crash between two writes is repaired by calling it
// again, and every resource has exactly one owner at every moment).
//
// Leases: the successor's first, then the predecessor's, both with
// o.Wait (bounded by o.WaitTimeout).
//
// Errors: USAGE when from is not a branch- scope or to not a pr- scope;
// LOCK_HELD (exit 3) / WAIT_TIMEOUT for either lease; SCOPE_CLOSED when
// to was closed and o.Reopen is not set; OWNED_BY_OTHER_SCOPE when from is
// already being handed over to another scope; SCOPE_COLLISION when the
// two receipts record different branches; RECEIPT_CORRUPT,
// RECEIPT_VERSION, STORE_* and LOCK_LOST from the store. Nothing is
// written on a refusal.
func (e *Engine) Succeed(ctx context.Context, env, from, to string, o Options) (*SuccessionResult, error) {
	o.Env = cmp.Or(env, o.Env)
	ctx, st, err := e.begin(ctx, scope.Ctx{}, o, receipt.OpSuccession)
	if err != nil {
		return nil, err
	}
	if k, _, err := scope.Parse(from); err != nil || k != scope.KindBranch {
		return nil, errs.New(errs.USAGE, "succession moves a branch- scope's ledger; %q is not one", from)
	}
	if k, _, err := scope.Parse(to); err != nil || k != scope.KindPR {
		return nil, errs.New(errs.USAGE, "succession moves a ledger into a pr- scope; %q is not one", to)
	}
	res := &SuccessionResult{Env: st.env, From: from, To: to, Moved: []string{}, Warnings: []Warning{}}
	warn := func(w Warning) { res.Warnings = append(res.Warnings, w) }
	toK, err := st.acquire(ctx, st.target(to), st.owner, o.Wait, nil)
	if err != nil {
		return nil, err
	}
	defer st.release(ctx, toK, warn)
	fromK, err := st.acquire(ctx, st.target(from), st.owner, o.Wait, nil)
	if err != nil {
		return nil, err
	}
	defer st.release(ctx, fromK, warn)
	out, err := st.handOver(ctx, handOverIn{from: from, to: to, fromK: fromK, toK: toK, reopen: o.Reopen})
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	for _, en := range out.moved {
		res.Moved = append(res.Moved, en.Adapter+"."+en.Op+" "+en.Key)
	}
	res.Repaired, res.Predecessor, res.Successor = out.repaired, out.pred, out.succ
	res.Warnings = append(res.Warnings, out.warnings...)
	return redactTyped(e, res)
}

type handOverIn struct {
	from, to   string
	fromK, toK *LeaseKeeper
	reopen     bool   // a closed successor is reopened (its tombstone cleared)
	intoClosed bool   // a closed successor keeps its tombstone (Destroy, which then destroys it all)
	branch     string // the successor's head branch, "" when not known
}

type handOverOut struct {
	pred, succ *receipt.Receipt // as they stand after the call
	moved      []receipt.LedgerEntry
	repaired   bool
	warnings   []Warning
}

// handOver moves in.from's ledger into in.to under both leases (held by
// the caller), reading both receipts afresh. See the succession notes at
// the top of this file for the order of the writes and the rule.
func (st *start) handOver(ctx context.Context, in handOverIn) (handOverOut, error) {
	var out handOverOut
	pred, _, err := st.e.Store.Read(ctx, st.env, in.from)
	if err != nil {
		return out, err
	}
	succ, _, err := st.e.Store.Read(ctx, st.env, in.to)
	if err != nil {
		return out, err
	}
	out.pred, out.succ = pred, succ
	if pred == nil || len(pred.Ledger) == 0 {
		return out, nil
	}
	branch, err := st.mayHandOver(in, pred, succ, &out)
	if err != nil {
		return out, err
	}
	now := st.e.now()
	moved := slices.Clone(pred.Ledger)
	n := len(moved)
	newSucc, err := st.successor(in, pred, succ, branch, now)
	if err != nil {
		return out, err
	}
	newPred, err := pred.Clone()
	if err != nil {
		return out, err
	}
	st.stampHandOver(newPred, in.fromK, now, sprintf("handed %d resource(s) over to scope %s (succession)", n, in.to))
	newPred.Ledger, newPred.SupersededBy = receipt.Ledger{}, in.to
	if newSucc, newPred, err = st.writeHandOver(ctx, in, pred, newSucc, newPred); err != nil {
		return out, err
	}
	out.pred, out.succ, out.moved = newPred, newSucc, moved
	out.warnings = []Warning{{Message: sprintf("scope %s inherited %d resource(s) from scope %s; %s's receipt says superseded_by: %s", in.to, n, in.from, in.from, in.to)}}
	return out, nil
}

// mayHandOver refuses a hand-over of pred into succ that is another
// scope's, or of another branch, or into a closed scope, or under a lease
// lost; it returns the successor's branch and notes a repair in out.
func (st *start) mayHandOver(in handOverIn, pred, succ *receipt.Receipt, out *handOverOut) (string, error) {
	switch pred.SupersededBy {
	case "":
	case in.to:
		out.repaired = true
	default:
		return "", errs.New(errs.OWNED_BY_OTHER_SCOPE, "scope %s is being handed over to %s, which owns its %d resource(s); it cannot be handed over to %s",
			in.from, pred.SupersededBy, len(pred.Ledger), in.to).
			WithHint("Apply %s (or run succession into it) to finish that hand-over first.", pred.SupersededBy)
	}
	branch := in.branch
	if branch == "" && succ != nil {
		branch = succ.Branch
	}
	if pred.Branch != "" && branch != "" && pred.Branch != branch {
		return "", errs.New(errs.SCOPE_COLLISION, "scope %s belongs to branch %q, but %s is the pull request of branch %q", in.from, pred.Branch, in.to, branch).
			With("recorded_branch", pred.Branch).With("branch", branch)
	}
	if succ != nil && succ.Closed != nil && !in.reopen && !in.intoClosed {
		return "", closedError(st.env, in.to, succ.Closed)
	}
	for _, k := range []*LeaseKeeper{in.toK, in.fromK} {
		if err := k.Check(); err != nil {
			return "", err
		}
	}
	return branch, nil
}

// stampHandOver stamps a receipt the hand-over writes under k.
func (st *start) stampHandOver(r *receipt.Receipt, k *LeaseKeeper, now time.Time, msg string) {
	r.RunID, r.Operation, r.Status, r.Stale = st.owner.RunID, receipt.OpSuccession, receipt.StatusComplete, false
	r.Lines = map[string]receipt.LineResult{}
	r.Warnings = []Warning{{Message: msg}}
	r.LockPreempted = k.Preempted()
	r.StartedAt, r.FinishedAt = now, now
}

// successor is the successor's receipt after the hand-over: its own (or a
// new one) with every entry of pred it lacks, hashed under pred's key when
// it has none of its own (else left to be hashed again).
func (st *start) successor(in handOverIn, pred, succ *receipt.Receipt, branch string, now time.Time) (*receipt.Receipt, error) {
	newSucc := &receipt.Receipt{Version: receipt.FormatVersion, Env: st.env, Scope: in.to, Ledger: receipt.Ledger{}}
	if succ != nil {
		var err error
		if newSucc, err = succ.Clone(); err != nil {
			return nil, err
		}
	}
	st.stampHandOver(newSucc, in.toK, now, sprintf("inherited %d resource(s) from scope %s (succession)", len(pred.Ledger), in.from))
	newSucc.Branch = cmp.Or(newSucc.Branch, branch, pred.Branch)
	if in.reopen && newSucc.Closed != nil {
		newSucc.Closed = nil
		newSucc.Warnings = append(newSucc.Warnings, Warning{Code: errs.SCOPE_REOPENED, Message: "the scope was closed; reopened by this succession"})
	}
	rehash := false
	if newSucc.HashKey == "" {
		newSucc.HashKey = pred.HashKey
	} else {
		rehash = newSucc.HashKey != pred.HashKey
	}
	have := newSucc.Ledger.ByIdentity()
	for _, en := range pred.Ledger {
		if _, ok := have[en.Ref().Identity()]; ok {
			continue
		}
		if rehash {
			en.Hash = ""
		}
		newSucc.Ledger = append(newSucc.Ledger, en)
	}
	newSucc.Destroyed = newSucc.Destroyed && len(newSucc.Ledger) == 0
	return newSucc, nil
}

// writeHandOver writes both receipts, each through the recorder of its
// lease: in one WriteMany where the store can, else in order.
func (st *start) writeHandOver(ctx context.Context, in handOverIn, pred, newSucc, newPred *receipt.Receipt) (*receipt.Receipt, *receipt.Receipt, error) {
	toRec, fromRec := newRecorder(st.e, in.toK, "", nil), newRecorder(st.e, in.fromK, "", nil)
	newSucc, err := toRec.redacted(newSucc)
	if err != nil {
		return nil, nil, err
	}
	if newPred, err = fromRec.redacted(newPred); err != nil {
		return nil, nil, err
	}
	if st.e.Store.Capabilities().AtomicMulti {
		err = st.e.Store.WriteMany(ctx, []receipt.Write{{Receipt: newSucc, Lease: in.toK.Lease()}, {Receipt: newPred, Lease: in.fromK.Lease()}})
	} else {
		err = st.writeInOrder(ctx, pred, newSucc, newPred, in, toRec, fromRec)
	}
	return newSucc, newPred, err
}

// writeInOrder is the hand-over on a store without atomic multi-writes:
// mark the predecessor in transit (unless an earlier call did), write the
// successor with the entries, then empty the predecessor.
func (st *start) writeInOrder(ctx context.Context, pred, newSucc, newPred *receipt.Receipt, in handOverIn, toRec, fromRec *recorder) error {
	if pred.SupersededBy == "" {
		mark, err := pred.Clone()
		if err != nil {
			return err
		}
		mark.SupersededBy = in.to
		mark.RunID, mark.Operation, mark.Status, mark.Stale = st.owner.RunID, receipt.OpSuccession, receipt.StatusComplete, false
		mark.Lines = map[string]receipt.LineResult{}
		mark.Warnings = []Warning{{Message: sprintf("handing %d resource(s) over to scope %s (succession in progress)", len(pred.Ledger), in.to)}}
		if mark, err = fromRec.redacted(mark); err != nil {
			return err
		}
		if err := fromRec.write(ctx, mark); err != nil {
			return err
		}
	}
	if err := toRec.write(ctx, newSucc); err != nil {
		return err
	}
	return fromRec.write(ctx, newPred)
}

// Owners applies the ownership rule of succession to the receipts of one
// environment (as Store.List returns them): it maps the identity
// (receipt.ResourceRef.Identity) of every resource found in a ledger to
// the scopes that own it, sorted. An entry of a receipt whose
// superseded_by names a scope and whose ledger is not empty is in
// transit: owned by that scope, whether or not the successor's ledger has
// it yet. Every other entry is owned by its receipt's scope. Succession
// keeps exactly one owner per resource at every moment a reader can
// observe; two owners mean two scopes manage one resource (apply refuses
// that with OWNED_BY_OTHER_SCOPE, so only a hand edit can make it).
func Owners(stored []receipt.Stored) map[string][]string {
	out := map[string][]string{}
	for _, s := range stored {
		if s.Receipt == nil {
			continue
		}
		owner := s.Scope
		if inTransit(s.Receipt) {
			owner = s.Receipt.SupersededBy
		}
		for _, en := range s.Receipt.Ledger {
			id := en.Ref().Identity()
			if !slices.Contains(out[id], owner) {
				out[id] = append(out[id], owner)
				sort.Strings(out[id])
			}
		}
	}
	return out
}

// inTransit reports whether r's ledger is being handed over to the scope
// its superseded_by names.
func inTransit(r *receipt.Receipt) bool {
	return r != nil && r.SupersededBy != "" && len(r.Ledger) > 0
}

// succeed is succession as part of a run of scope pr.scope (engine.md,
// "Apply", step 3), before any line runs. prev is the scope's receipt as
// read under its lease, stored the environment's receipts from the run's
// first read (a ScopeViewer's: the head branch's scope at least, see
// Engine.view). It returns the scope's receipt after the hand-overs.
//
//   - A PR scope finishes every hand-over in transit to it (waiting,
//     bounded, for the predecessor's lease whatever Options.Wait says:
//     the repair must happen before this scope's ledger changes), and,
//     unless destroying (Apply), inherits the ledger of its head branch's
//     scope (Ctx.Git.Branch) with a warning. A fresh inheritance whose
//     predecessor's lease is held without Options.Wait, that is being
//     handed to another scope, or whose receipt records another branch,
//     is skipped with a warning: those resources stay the branch's
//     (foreign here), which is safe.
//   - A branch scope whose own ledger is in transit finishes the move
//     first, taking the successor's lease without waiting (the fixed
//     order is successor first); LOCK_HELD when it is held.
func (w *scopeWriter) succeed(ctx context.Context, prev *receipt.Receipt, stored []receipt.Stored, destroying bool, owners *owners) (*receipt.Receipt, error) {
	kind, _, err := scope.Parse(w.pr.scope)
	if err != nil {
		return prev, nil
	}
	switch kind {
	case scope.KindBranch:
		return w.finishOwnHandOver(ctx, prev, owners)
	case scope.KindPR:
	default:
		return prev, nil
	}
	byScope := map[string]*receipt.Receipt{}
	for _, s := range stored {
		byScope[s.Scope] = s.Receipt
	}
	for _, from := range w.predecessors(stored, destroying) {
		rec := byScope[from]
		if rec == nil || len(rec.Ledger) == 0 {
			continue
		}
		succ, err := w.inherit(ctx, from, rec, destroying)
		if err != nil {
			return nil, err
		}
		if succ != nil {
			prev = succ
		}
	}
	return prev, nil
}

// predecessors are the scopes a PR scope may inherit from: its head
// branch's (unless destroying), then every scope in transit to it.
func (w *scopeWriter) predecessors(stored []receipt.Stored, destroying bool) []string {
	me := w.pr.scope
	var cands []string
	if b := w.pr.ctx.Git.Branch; !destroying && b != "" {
		if bs := scope.BranchScope(b); scope.Validate(bs) == nil {
			cands = append(cands, bs)
		}
	}
	for _, s := range stored {
		if s.Scope != me && inTransit(s.Receipt) && s.Receipt.SupersededBy == me && !slices.Contains(cands, s.Scope) {
			cands = append(cands, s.Scope)
		}
	}
	return cands
}

// inherit hands the ledger of from (whose receipt is rec) over to this PR
// scope, returning this scope's receipt after it; nil (and a warning) when
// a fresh inheritance is skipped.
func (w *scopeWriter) inherit(ctx context.Context, from string, rec *receipt.Receipt, destroying bool) (*receipt.Receipt, error) {
	me, branch := w.pr.scope, w.pr.ctx.Git.Branch
	pending := rec.SupersededBy == me
	switch {
	case pending:
	case rec.SupersededBy != "":
		w.notes.warn(errs.SUCCESSION, "scope %s is being handed over to %s: its resources are not inherited here", from, rec.SupersededBy)
		return nil, nil
	case rec.Branch != "" && rec.Branch != branch:
		w.notes.warn(errs.SUCCESSION, "scope %s belongs to branch %q, not %q: its resources are not inherited here", from, rec.Branch, branch)
		return nil, nil
	}
	// A hand-over writes this scope's receipt: a deferred lease is
	// taken first.
	if err := w.lease.keeper.Ensure(); err != nil {
		return nil, err
	}
	o := w.st.o
	fk, err := w.st.acquire(ctx, w.st.target(from), w.st.owner, o.Wait || pending, nil)
	if err != nil {
		if !pending && errs.CodeOf(err) == errs.LOCK_HELD {
			w.notes.warn(errs.LOCK_HELD, "scope %s has %d resource(s) to hand over to %s, but a run holds its lease: not inherited this time (re-run, or pass --wait)", from, len(rec.Ledger), me)
			return nil, nil
		}
		return nil, err
	}
	out, err := w.st.handOver(ctx, handOverIn{from: from, to: me, fromK: fk, toK: w.lease.keeper,
		reopen: o.Reopen && !destroying, intoClosed: destroying, branch: branch})
	w.lease.st.release(ctx, fk, func(x Warning) { w.notes.warn(x.Code, "%s", x.Message) })
	if err != nil {
		if c := errs.CodeOf(err); !pending && (c == errs.OWNED_BY_OTHER_SCOPE || c == errs.SCOPE_COLLISION) {
			w.notes.warn(c, "not inherited: %s", errs.Coded(err).Message)
			return nil, nil
		}
		return nil, err
	}
	for _, x := range out.warnings {
		w.notes.warn(x.Code, "%s", x.Message)
	}
	return out.succ, nil
}

// finishOwnHandOver finishes a hand-over in transit from this (branch)
// scope, whose lease the run holds; the successor's lease is tried once,
// never waited for.
func (w *scopeWriter) finishOwnHandOver(ctx context.Context, prev *receipt.Receipt, owners *owners) (*receipt.Receipt, error) {
	if !inTransit(prev) {
		return prev, nil
	}
	to := prev.SupersededBy
	if err := w.lease.keeper.Ensure(); err != nil {
		return nil, err
	}
	// Never waits, LockWait or not: this run holds the branch lease, and a
	// run of the pull request may be waiting for it while holding this one.
	st := *w.st
	st.o.LockWait = 0
	tk, err := st.acquire(ctx, st.target(to), st.owner, false, nil)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeOf(err), "scope %s is being handed over to %s, whose lease is held: nothing was done", w.pr.scope, to).
			WithHint("Re-run when the run on %s has finished; applying %s finishes the hand-over too.", to, to)
	}
	defer st.release(ctx, tk, func(x Warning) { w.notes.warn(x.Code, "%s", x.Message) })
	out, err := st.handOver(ctx, handOverIn{from: w.pr.scope, to: to, fromK: w.lease.keeper, toK: tk})
	if err != nil {
		return nil, err
	}
	// The run's List was read before the move: what it handed over is the
	// successor's now, foreign here.
	for _, en := range out.moved {
		owners.set(en.Ref().Identity(), to)
	}
	w.notes.warn(errs.SUCCESSION, "finished handing %d resource(s) of scope %s over to %s (a succession had stopped part-way)", len(out.moved), w.pr.scope, to)
	return out.pred, nil
}

// closedError is SCOPE_CLOSED for a scope with tombstone t.
func closedError(env, sc string, t *receipt.Tombstone) error {
	return errs.New(errs.SCOPE_CLOSED, "scope %s/%s was closed by %s at %s%s", env, sc, t.By, t.At.UTC().Format(time.RFC3339), headOf(t)).
		With("closed", t)
}

func headOf(t *receipt.Tombstone) string {
	if t == nil || t.HeadSHA == "" {
		return ""
	}
	return " (head " + short(t.HeadSHA) + ")"
}
