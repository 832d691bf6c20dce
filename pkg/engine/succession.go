package engine

import (
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
	ctx = e.events(ctx)
	if err := e.check(); err != nil {
		return nil, err
	}
	env = firstOf(env, o.Env, "preview")
	if k, _, err := scope.Parse(from); err != nil || k != scope.KindBranch {
		return nil, errs.New(errs.USAGE, "succession moves a branch- scope's ledger; %q is not one", from)
	}
	if k, _, err := scope.Parse(to); err != nil || k != scope.KindPR {
		return nil, errs.New(errs.USAGE, "succession moves a ledger into a pr- scope; %q is not one", to)
	}
	owner, err := e.owner(o, receipt.OpSuccession)
	if err != nil {
		return nil, err
	}
	res := &SuccessionResult{Env: env, From: from, To: to, Moved: []string{}, Warnings: []Warning{}}
	release := func(k *LeaseKeeper) {
		if rerr := k.Release(context.WithoutCancel(ctx)); rerr != nil {
			res.Warnings = append(res.Warnings, Warning{Code: errs.CodeOf(rerr), Message: e.redactor().String(errs.Coded(rerr).Message)})
		}
	}
	toK, err := AcquireLease(ctx, e.leaseConfig(o, o.Wait), receipt.ScopeTarget(env, to), owner)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	defer release(toK)
	fromK, err := AcquireLease(ctx, e.leaseConfig(o, o.Wait), receipt.ScopeTarget(env, from), owner)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	defer release(fromK)
	out, err := e.handOver(ctx, handOverIn{env: env, from: from, to: to, fromK: fromK, toK: toK, owner: owner, reopen: o.Reopen})
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
	env, from, to string
	fromK, toK    *LeaseKeeper
	owner         receipt.Owner
	reopen        bool   // a closed successor is reopened (its tombstone cleared)
	intoClosed    bool   // a closed successor keeps its tombstone (Destroy, which then destroys it all)
	branch        string // the successor's head branch, "" when not known
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
func (e *Engine) handOver(ctx context.Context, in handOverIn) (handOverOut, error) {
	var out handOverOut
	pred, _, err := e.Store.Read(ctx, in.env, in.from)
	if err != nil {
		return out, err
	}
	succ, _, err := e.Store.Read(ctx, in.env, in.to)
	if err != nil {
		return out, err
	}
	out.pred, out.succ = pred, succ
	if pred == nil || len(pred.Ledger) == 0 {
		return out, nil
	}
	switch pred.SupersededBy {
	case "":
	case in.to:
		out.repaired = true
	default:
		return out, errs.New(errs.OWNED_BY_OTHER_SCOPE, "scope %s is being handed over to %s, which owns its %d resource(s); it cannot be handed over to %s",
			in.from, pred.SupersededBy, len(pred.Ledger), in.to).
			WithHint("Apply %s (or run succession into it) to finish that hand-over first.", pred.SupersededBy)
	}
	branch := in.branch
	if branch == "" && succ != nil {
		branch = succ.Branch
	}
	if pred.Branch != "" && branch != "" && pred.Branch != branch {
		return out, errs.New(errs.SCOPE_COLLISION, "scope %s belongs to branch %q, but %s is the pull request of branch %q", in.from, pred.Branch, in.to, branch).
			With("recorded_branch", pred.Branch).With("branch", branch)
	}
	if succ != nil && succ.Closed != nil && !in.reopen && !in.intoClosed {
		return out, closedError(in.env, in.to, succ.Closed)
	}
	for _, k := range []*LeaseKeeper{in.toK, in.fromK} {
		if err := k.Check(); err != nil {
			return out, err
		}
	}

	now := e.now()
	moved := slices.Clone(pred.Ledger)
	n := len(moved)
	stamp := func(r *receipt.Receipt, k *LeaseKeeper, msg string) {
		r.RunID, r.Operation, r.Status, r.Stale = in.owner.RunID, receipt.OpSuccession, receipt.StatusComplete, false
		r.Lines = map[string]receipt.LineResult{}
		r.Warnings = []Warning{{Message: msg}}
		r.LockPreempted = k.Preempted()
		r.StartedAt, r.FinishedAt = now, now
	}

	newSucc := &receipt.Receipt{Version: receipt.FormatVersion, Env: in.env, Scope: in.to, Ledger: receipt.Ledger{}}
	if succ != nil {
		if newSucc, err = succ.Clone(); err != nil {
			return out, err
		}
	}
	stamp(newSucc, in.toK, sprintf("inherited %d resource(s) from scope %s (succession)", n, in.from))
	if newSucc.Branch == "" {
		newSucc.Branch = firstOf(branch, pred.Branch)
	}
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
	for _, en := range moved {
		if _, ok := have[en.Ref().Identity()]; ok {
			continue
		}
		if rehash {
			en.Hash = ""
		}
		newSucc.Ledger = append(newSucc.Ledger, en)
	}
	newSucc.Destroyed = newSucc.Destroyed && len(newSucc.Ledger) == 0

	newPred, err := pred.Clone()
	if err != nil {
		return out, err
	}
	stamp(newPred, in.fromK, sprintf("handed %d resource(s) over to scope %s (succession)", n, in.to))
	newPred.Ledger, newPred.SupersededBy = receipt.Ledger{}, in.to

	// Each scope's receipt goes through the recorder of its lease.
	toRec, fromRec := newRecorder(e, in.toK, "", nil), newRecorder(e, in.fromK, "", nil)
	if newSucc, err = toRec.redacted(newSucc); err != nil {
		return out, err
	}
	if newPred, err = fromRec.redacted(newPred); err != nil {
		return out, err
	}
	if e.Store.Capabilities().AtomicMulti {
		err = e.Store.WriteMany(ctx, []receipt.Write{{Receipt: newSucc, Lease: in.toK.Lease()}, {Receipt: newPred, Lease: in.fromK.Lease()}})
	} else {
		err = writeInOrder(ctx, pred, newSucc, newPred, in, toRec, fromRec)
	}
	if err != nil {
		return out, err
	}
	out.pred, out.succ, out.moved = newPred, newSucc, moved
	out.warnings = []Warning{{Message: sprintf("scope %s inherited %d resource(s) from scope %s; %s's receipt says superseded_by: %s", in.to, n, in.from, in.from, in.to)}}
	return out, nil
}

// writeInOrder is the hand-over on a store without atomic multi-writes:
// mark the predecessor in transit (unless an earlier call did), write the
// successor with the entries, then empty the predecessor.
func writeInOrder(ctx context.Context, pred, newSucc, newPred *receipt.Receipt, in handOverIn, toRec, fromRec *recorder) error {
	if pred.SupersededBy == "" {
		mark, err := pred.Clone()
		if err != nil {
			return err
		}
		mark.SupersededBy = in.to
		mark.RunID, mark.Operation, mark.Status, mark.Stale = in.owner.RunID, receipt.OpSuccession, receipt.StatusComplete, false
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
func (a *scopeRun) succeed(ctx context.Context, prev *receipt.Receipt, stored []receipt.Stored, destroying bool) (*receipt.Receipt, error) {
	kind, _, err := scope.Parse(a.pr.scope)
	if err != nil {
		return prev, nil
	}
	switch kind {
	case scope.KindBranch:
		return a.finishOwnHandOver(ctx, prev)
	case scope.KindPR:
	default:
		return prev, nil
	}
	me := a.pr.scope
	byScope := map[string]*receipt.Receipt{}
	for _, s := range stored {
		byScope[s.Scope] = s.Receipt
	}
	var cands []string
	if b := a.pr.ctx.Git.Branch; !destroying && b != "" {
		if bs := scope.BranchScope(b); scope.Validate(bs) == nil {
			cands = append(cands, bs)
		}
	}
	for _, s := range stored {
		if s.Scope != me && s.Receipt != nil && s.Receipt.SupersededBy == me && len(s.Receipt.Ledger) > 0 && !slices.Contains(cands, s.Scope) {
			cands = append(cands, s.Scope)
		}
	}
	for _, from := range cands {
		rec := byScope[from]
		if rec == nil || len(rec.Ledger) == 0 {
			continue
		}
		pending := rec.SupersededBy == me
		if !pending {
			switch {
			case rec.SupersededBy != "":
				a.warn(errs.SUCCESSION, "scope %s is being handed over to %s: its resources are not inherited here", from, rec.SupersededBy)
				continue
			case rec.Branch != "" && rec.Branch != a.pr.ctx.Git.Branch:
				a.warn(errs.SUCCESSION, "scope %s belongs to branch %q, not %q: its resources are not inherited here", from, rec.Branch, a.pr.ctx.Git.Branch)
				continue
			}
		}
		// A hand-over writes this scope's receipt: a deferred lease is
		// taken first.
		if err := a.keeper.Ensure(); err != nil {
			return nil, err
		}
		fk, err := AcquireLease(ctx, a.e.leaseConfig(a.o, a.o.Wait || pending), receipt.ScopeTarget(a.pr.env, from), a.owner)
		if err != nil {
			if !pending && errs.CodeOf(err) == errs.LOCK_HELD {
				a.warn(errs.LOCK_HELD, "scope %s has %d resource(s) to hand over to %s, but a run holds its lease: not inherited this time (re-run, or pass --wait)", from, len(rec.Ledger), me)
				continue
			}
			return nil, err
		}
		out, err := a.e.handOver(ctx, handOverIn{env: a.pr.env, from: from, to: me, fromK: fk, toK: a.keeper, owner: a.owner,
			reopen: a.o.Reopen && !destroying, intoClosed: destroying, branch: a.pr.ctx.Git.Branch})
		if rerr := fk.Release(context.WithoutCancel(ctx)); rerr != nil {
			a.warn(errs.CodeOf(rerr), "%s", errs.Coded(rerr).Message)
		}
		if err != nil {
			if c := errs.CodeOf(err); !pending && (c == errs.OWNED_BY_OTHER_SCOPE || c == errs.SCOPE_COLLISION) {
				a.warn(c, "not inherited: %s", errs.Coded(err).Message)
				continue
			}
			return nil, err
		}
		for _, w := range out.warnings {
			a.warn(w.Code, "%s", w.Message)
		}
		prev = out.succ
	}
	return prev, nil
}

// finishOwnHandOver finishes a hand-over in transit from this (branch)
// scope, whose lease the run holds; the successor's lease is tried once,
// never waited for.
func (a *scopeRun) finishOwnHandOver(ctx context.Context, prev *receipt.Receipt) (*receipt.Receipt, error) {
	if !inTransit(prev) {
		return prev, nil
	}
	to := prev.SupersededBy
	if err := a.keeper.Ensure(); err != nil {
		return nil, err
	}
	// Never waits, LockWait or not: this run holds the branch lease, and a
	// run of the pull request may be waiting for it while holding this one.
	cfg := a.e.leaseConfig(a.o, false)
	cfg.Wait = false
	tk, err := AcquireLease(ctx, cfg, receipt.ScopeTarget(a.pr.env, to), a.owner)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeOf(err), "scope %s is being handed over to %s, whose lease is held: nothing was done", a.pr.scope, to).
			WithHint("Re-run when the run on %s has finished; applying %s finishes the hand-over too.", to, to)
	}
	defer func() {
		if rerr := tk.Release(context.WithoutCancel(ctx)); rerr != nil {
			a.warn(errs.CodeOf(rerr), "%s", errs.Coded(rerr).Message)
		}
	}()
	out, err := a.e.handOver(ctx, handOverIn{env: a.pr.env, from: a.pr.scope, to: to, fromK: a.keeper, toK: tk, owner: a.owner})
	if err != nil {
		return nil, err
	}
	// The run's List was read before the move: what it handed over is the
	// successor's now, foreign here.
	for _, en := range out.moved {
		a.setOwner(en.Ref().Identity(), to)
	}
	a.warn(errs.SUCCESSION, "finished handing %d resource(s) of scope %s over to %s (a succession had stopped part-way)", len(out.moved), a.pr.scope, to)
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

// previewSuccession is succession as plan sees it, writing nothing: the
// ledgers an apply of this PR scope would inherit (its head branch's scope,
// and any hand-over in transit to it) are judged as this scope's, with a
// warning, so plan says what apply will do. Hashes recorded under another
// hash key are dropped, as handOver does.
func (r *run) previewSuccession(stored []receipt.Stored) {
	if k, _, err := scope.Parse(r.pr.scope); err != nil || k != scope.KindPR {
		return
	}
	me, head := r.pr.scope, r.pr.ctx.Git.Branch
	from := ""
	if head != "" {
		from = scope.BranchScope(head)
	}
	have := r.ledger.ByIdentity()
	ledger := slices.Clone(r.ledger)
	for _, s := range stored {
		rec := s.Receipt
		if s.Scope == me || rec == nil || len(rec.Ledger) == 0 {
			continue
		}
		pending := rec.SupersededBy == me
		fresh := s.Scope == from && rec.SupersededBy == "" && (rec.Branch == "" || rec.Branch == head)
		if !pending && !fresh {
			continue
		}
		if r.hashKey == "" {
			r.hashKey = rec.HashKey
		}
		for _, en := range rec.Ledger {
			id := en.Ref().Identity()
			r.setOwner(id, "")
			if _, ok := have[id]; ok {
				continue
			}
			if rec.HashKey != r.hashKey {
				en.Hash = ""
			}
			ledger = append(ledger, en)
			have[id] = len(ledger) - 1
		}
		r.warn(errs.SUCCESSION, "apply will inherit %d resource(s) from scope %s (succession)", len(rec.Ledger), s.Scope)
	}
	r.ledger = ledger
}
