package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// Destroy removes what the scope created, walking its LEDGER (not a plan)
// newest first with the provider block recorded on each entry: entries
// Sponson created are destroyed (already gone is success), adopted ones
// forgotten, intents located first (Lookup) and destroyed if found;
// entries with a parent are destroyed under that parent's lease. When
// every entry is gone the receipt has an empty ledger and destroyed: true;
// entries whose destroy failed stay (DESTROY_FAILED), as do intents that
// cannot be located (INTENT_UNRESOLVED). o.Close leaves a tombstone.
//
// Errors: ENV_NOT_APPROVED (exit 2) for production without an approver;
// LOCK_HELD (exit 3) / WAIT_TIMEOUT; RECEIPT_CORRUPT, RECEIPT_VERSION,
// STORE_* with a nil result; DESTROY_FAILED or INTENT_UNRESOLVED with the
// result; LOCK_LOST (exit 3) when the lease was lost part-way. Refusals
// of single entries (LEDGER_UNPROVEN, LEDGER_IMPLAUSIBLE, ENV_NOT_APPROVED,
// OWNED_BY_OTHER_SCOPE, RESOURCE_UNMARKED: the resource does not carry the
// scope's mark, adapter.Marked) leave the entry and let the rest go on.
func (e *Engine) Destroy(ctx context.Context, c scope.Ctx, o Options) (*RunResult, error) {
	ctx = e.events(ctx)
	if err := e.check(); err != nil {
		return nil, err
	}
	env := firstOf(o.Env, c.Env, "preview")
	c.Env = env
	if c.Scope == "" {
		return nil, errs.New(errs.USAGE, "no scope to destroy").WithHint("Give the scope with --pr or --branch.")
	}
	if err := scope.Validate(c.Scope); err != nil {
		return nil, err
	}
	if env == "production" && o.ApprovedBy == "" {
		return nil, errs.New(errs.ENV_NOT_APPROVED, "destroying scope %s of production needs a named approver", c.Scope)
	}
	owner, err := e.owner(o, receipt.OpDestroy)
	if err != nil {
		return nil, err
	}
	keeper, err := AcquireLease(ctx, e.leaseConfig(o, o.Wait), receipt.ScopeTarget(env, c.Scope), owner)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	var res *RunResult
	defer func() {
		if rerr := keeper.Release(context.WithoutCancel(ctx)); rerr != nil && res != nil {
			res.Warnings = append(res.Warnings, Warning{Code: errs.CodeOf(rerr), Message: e.redactor().String(errs.Coded(rerr).Message)})
		}
	}()
	res, err = e.destroyLocked(ctx, c, o, owner, keeper)
	return res, err
}

func (e *Engine) destroyLocked(ctx context.Context, c scope.Ctx, o Options, owner receipt.Owner, keeper *LeaseKeeper) (*RunResult, error) {
	prev, _, err := e.Store.Read(ctx, c.Env, c.Scope)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	if prev != nil {
		// Never destroy what another branch, collapsing to the same scope,
		// created.
		if err := scope.CheckCollision(c.Scope, prev.Branch, c.Git.Branch); err != nil {
			return nil, err
		}
	}
	pr := &prepared{env: c.Env, scope: c.Scope, ctx: c, run: runCtx(c), byID: map[string]*pline{}}
	a := &destroyer{scopeRun: newScopeRun(e, pr, o, keeper, owner, "")}
	a.noteTakeover()
	// Hand-overs in transit to or from this scope are finished first, so
	// destroying it can never take the other scope's resources, nor leave
	// in transit what it should destroy.
	//
	// The other scopes' ledgers are read too: destroy never deletes what
	// another scope manages, whatever this scope's ledger claims.
	stored, err := e.Store.List(ctx, c.Env)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	stored = a.readable(stored)
	if prev, err = a.succeed(ctx, prev, stored, true); err != nil {
		return nil, e.redactor().Error(err)
	}
	others := otherClaims(stored, c.Scope)
	// What Sponson itself recorded creating, per scope (receipt.Provenance):
	// an entry only a hand edit added is never destroyed, and a claim only
	// a hand edit made never stops a destroy. A store that keeps no record
	// proves nothing (unknown is unproven).
	pv, _ := e.Store.(receipt.Provenance)
	sg, _ := e.Store.(receipt.Signing)
	signs := sg != nil && sg.Signs()
	proofs := &provenance{pv: pv, env: c.Env, ids: map[string]map[string]bool{}, errs: map[string]error{}}
	var recorded map[string]bool
	if prev != nil {
		ids, err := proofs.of(ctx, c.Scope)
		if err != nil {
			return nil, e.redactor().Error(err)
		}
		recorded = ids
	}
	a.rec.w = a.startReceipt(prev)
	a.rec.w.Operation = receipt.OpDestroy
	a.hashKey = a.rec.w.HashKey
	a.ledger = slices.Clone(a.rec.w.Ledger)

	type lineOut struct {
		keys      []string // destroyed, or failing to be
		forgotten []string // adopted: let go of, left in place
		status    string
		err       error
	}
	lines := map[string]*lineOut{}
	note := func(en receipt.LedgerEntry, status string, err error) {
		id := firstOf(en.Line, en.Key)
		lo := lines[id]
		if lo == nil {
			lo = &lineOut{status: status}
			lines[id] = lo
			a.order = append(a.order, id)
		}
		if status == LineForgotten {
			lo.forgotten = append(lo.forgotten, en.Key)
			return
		}
		lo.keys = append(lo.keys, en.Key)
		switch {
		case err != nil && lo.err == nil:
			lo.status, lo.err = LineDestroyFailed, err
		case lo.err == nil && status == LineDestroyed:
			lo.status = LineDestroyed
		}
	}
	var failed []string
	var firstErr error
	failedCodes := map[string]errs.Code{} // key → why it is left
	fail := func(en receipt.LedgerEntry, err error) {
		note(en, LineDestroyFailed, err)
		failed = append(failed, en.Key)
		failedCodes[en.Key] = errs.CodeOf(err)
		if firstErr == nil {
			firstErr = err
		}
	}
	var walk receipt.Ledger
	if prev != nil {
		walk = prev.Ledger
	}
	for i := len(walk) - 1; i >= 0 && a.lostErr() == nil; i-- {
		en := walk[i]
		ref := en.Ref()
		if ctx.Err() != nil {
			fail(en, errs.Wrap(ctx.Err(), errs.INTERRUPTED, "destroy of %s was interrupted", en.Key))
			continue
		}
		if en.CreatedBy == receipt.CreatedByAdopted {
			a.removeEntry(ref)
			note(en, LineForgotten, nil)
			continue
		}
		if other := proofs.claimant(ctx, others[ref.Identity()], ref.Identity()); other != "" {
			// Two ledgers claim one resource, and the other's claim is
			// Sponson's own record: deleting it would take it from the
			// scope that manages it (I5); the entry is reported and left
			// alone.
			fail(en, errs.New(errs.OWNED_BY_OTHER_SCOPE, "the ledger of %s/%s claims %s (%s.%s), which scope %s manages; destroy leaves it alone",
				c.Env, c.Scope, en.Key, en.Adapter, en.Op, other).With("key", en.Key).With("owner", other).With("branch", branchOf(c.Env, c.Scope)).
				WithHint("Only a hand edit of a receipt makes two scopes claim one resource: inspect the history of %s/%s and remove the entry from the receipt that should not have it.", c.Env, c.Scope))
			continue
		}
		if !recorded[ref.Identity()] {
			why := "no receipt Sponson wrote for this scope recorded creating it"
			if proofs.unknown[c.Scope] {
				why = "the store holds no receipt Sponson wrote for this scope (a branch made or rewritten by hand, or a store that keeps no record)"
			}
			if signs {
				why = "no receipt write of this scope under a valid signature (" + receipt.ReceiptKeyVar + ") recorded creating it (a write made before the key was set, under another key, or by hand)"
			}
			unproven := errs.New(errs.LEDGER_UNPROVEN, "the ledger of %s/%s (%s) claims Sponson created %s (%s.%s), but %s; destroy leaves it alone",
				c.Env, c.Scope, branchOf(c.Env, c.Scope), en.Key, en.Adapter, en.Op, why).With("key", en.Key).With("branch", branchOf(c.Env, c.Scope))
			if signs {
				// Signing refuses with the same code: the fact is the
				// same (the store does not prove Sponson created it),
				// and every caller already reports it per entry and goes
				// on; the detail and the hint say what differs.
				unproven = unproven.With("proof", "signature").
					WithHint("Only receipt writes under a valid MAC of %s (or %s) count: an entry recorded before the key was set, under another key, or by a forged commit is left. Inspect the branch's history; to let go of an entry you trust, destroy the scope once with the key that signed it, or delete the resource by hand.", receipt.ReceiptKeyVar, receipt.PreviousReceiptKeyVar)
			}
			fail(en, unproven)
			continue
		}
		op, ok := e.Ops.Lookup(en.Adapter, en.Op)
		if !ok {
			fail(en, errs.New(errs.DESTROY_FAILED, "%s: op %s.%s is not available in this Sponson", en.Key, en.Adapter, en.Op))
			continue
		}
		if err := a.mayDestroy(op, en, o.ApprovedBy); err != nil {
			fail(en, err)
			continue
		}
		if en.CreatedBy == receipt.CreatedByIntent {
			found, err := op.Lookup(ctx, adapter.Provider(en.Provider), pr.run, en.Key)
			if err != nil {
				fail(en, errs.Wrap(e.redactor().Error(err), errs.INTENT_UNRESOLVED, "%s (%s.%s) may have been created and cannot be located", en.Key, en.Adapter, en.Op).With("key", en.Key))
				continue
			}
			if found == nil {
				a.removeEntry(ref)
				note(en, LineDestroyed, nil)
				continue
			}
			a.setID(ref, found.ID)
		}
		if err := a.checkMark(ctx, op, ref, prev); err != nil {
			fail(en, err)
			continue
		}
		if err := a.destroyEntry(ctx, op, ref, true); err != nil {
			code := errs.DESTROY_FAILED
			if errs.CodeOf(err) == errs.LOCK_LOST && a.lostErr() != nil {
				code = errs.LOCK_LOST
			}
			fail(en, errs.Wrap(e.redactor().Error(err), code, "destroy %s (%s.%s)", en.Key, en.Adapter, en.Op).With("key", en.Key))
			continue
		}
		note(en, LineDestroyed, nil)
		if _, manual := op.(adapter.Stepper); manual {
			// Sponson cannot undo what a person did: it says how.
			a.undoStep(en)
		}
	}

	status := receipt.StatusComplete
	if len(failed) > 0 || a.lostErr() != nil {
		status = receipt.StatusFailed
	}
	now := e.now()
	a.rec.w.Status, a.rec.w.FinishedAt = status, now
	a.rec.w.Ledger = slices.Clone(a.ledger)
	if a.rec.w.Ledger == nil {
		a.rec.w.Ledger = receipt.Ledger{}
	}
	a.rec.w.Destroyed = len(a.rec.w.Ledger) == 0
	switch {
	case o.Close != nil:
		a.rec.w.Closed = o.Close
	case prev != nil:
		a.rec.w.Closed = prev.Closed // destroying a closed scope again keeps its tombstone
	}
	a.rec.w.Lines = map[string]receipt.LineResult{}
	for id, lo := range lines {
		lr := receipt.LineResult{Status: lo.status, Resources: lo.keys, Forgotten: lo.forgotten}
		if lo.err != nil {
			le := lineError(lo.err)
			lr.ErrorCode, lr.Error = le.Code, le.Message
		}
		a.rec.w.Lines[id] = lr
	}
	a.rec.w.History = appendHistory(a.rec.w.History, receipt.HistoryEntry{SHA: c.Git.SHA, At: now, RunID: owner.RunID, Status: status})
	a.rec.w.Warnings = slices.Clone(a.warnings)
	if prev == nil && o.Close == nil {
		// Nothing was ever recorded here: nothing to write.
		red, err := a.rec.redacted(a.rec.w)
		if err != nil {
			return nil, err
		}
		return &RunResult{Env: c.Env, Scope: c.Scope, Receipt: red, Order: []string{}, Warnings: []Warning{}}, nil
	}
	var runErr error
	switch {
	case a.lostErr() != nil:
		runErr = a.lostErr()
	case firstErr != nil:
		code := errs.DESTROY_FAILED
		if c := errs.CodeOf(firstErr); c == errs.INTENT_UNRESOLVED || c == errs.INTERRUPTED || c == errs.OWNED_BY_OTHER_SCOPE || c == errs.LEDGER_UNPROVEN ||
			c == errs.LEDGER_IMPLAUSIBLE || c == errs.ENV_NOT_APPROVED || c == errs.RESOURCE_UNMARKED {
			code = errs.CodeOf(firstErr)
		}
		msg := fmt.Sprintf("destroy of %s/%s left %d resource(s): %s", c.Env, c.Scope, len(failed), strings.Join(failed, ", "))
		switch code {
		case errs.LEDGER_IMPLAUSIBLE, errs.ENV_NOT_APPROVED, errs.RESOURCE_UNMARKED:
			// Refusals by rule: the first says why, so an unattended
			// teardown's report does.
			msg += "; " + errs.Coded(firstErr).Message
		}
		runErr = errs.Wrap(firstErr, code, "%s", msg).With("resources", failed).With("codes", failedCodes)
	}
	return a.result(runErr, a.order, a.undo)
}

// destroyer is one destroy: the walk of the scope's ledger, newest
// first, under the scope lease.
type destroyer struct {
	*scopeRun
	order []string       // the line ids in the order they were walked
	undo  []adapter.Todo // the manual steps forgotten, with how to undo them
}

// undoStep notes a manual step destroy forgot: its undo, as recorded when
// it was confirmed, becomes a todo of the destroy.
func (a *destroyer) undoStep(en receipt.LedgerEntry) {
	str := func(k string) string { s, _ := en.Outputs[k].(string); return a.e.redactor().String(s) }
	t := adapter.Todo{Line: en.Line, Title: str("title"), Undo: str("undo"), ConfirmedBy: str("confirmed_by"), ConfirmedAt: str("confirmed_at")}
	if t.Undo == "" {
		t.Undo = "The step has no undo instructions: check by hand whether what it did should be reverted."
	}
	a.undo = append(a.undo, t)
}

// mayDestroy is what destroy asks of an entry the store proves, before
// any provider call: that its key is one its op could have made in this
// scope's environment (adapter.KeyJudge: LEDGER_IMPLAUSIBLE), and that
// an entry of production has a named approver (ENV_NOT_APPROVED: the
// bot, the sweep and gc without --approved-by never destroy one). An op
// that says a line may write production (adapter.ProductionWriter) but
// cannot judge a key is taken to write production.
func (a *destroyer) mayDestroy(op adapter.Op, en receipt.LedgerEntry, approvedBy string) error {
	env, sc := a.pr.env, a.pr.scope
	where := branchOf(env, sc)
	production := env == "production"
	kj, judges := op.(adapter.KeyJudge)
	if judges {
		if err := kj.CheckKey(en.Key, adapter.Provider(en.Provider), a.pr.run); err != nil {
			return errs.Wrap(err, errs.LEDGER_IMPLAUSIBLE, "the ledger of %s/%s (%s) names %s (%s.%s), which %s.%s could not have made in a run of %s/%s; destroy leaves it alone",
				env, sc, where, en.Key, en.Adapter, en.Op, en.Adapter, en.Op, env, sc).With("key", en.Key).With("branch", where)
		}
		production = production || kj.KeyEnvironment(en.Key, adapter.Provider(en.Provider), a.pr.run) == "production"
	}
	if production && approvedBy == "" {
		return errs.New(errs.ENV_NOT_APPROVED, "the ledger of %s/%s (%s) holds %s (%s.%s), a resource of production: destroying it needs a named approver, and an unattended teardown (the bot, the sweep, gc without --approved-by) leaves it alone",
			env, sc, where, en.Key, en.Adapter, en.Op).With("key", en.Key).With("branch", where).
			WithHint("Destroy the scope with --approved-by NAME (approved_by in the Action), or `sponson gc --approved-by NAME`.")
	}
	return nil
}

// checkMark asks an op whose resources carry their scope's mark
// (adapter.Marked) whether the resource of ref, as the provider has it
// now, carries this scope's, just before it is deleted: one that does not
// (another scope's, a person's) is refused RESOURCE_UNMARKED, naming the
// receipt's branch and the entry; a provider that cannot be read is
// DESTROY_FAILED. The scope's git branch is the one its receipt recorded
// (the run's when it recorded none): a destroy by pull request number
// may run from any checkout. A pull request's scope also accepts the mark
// of its branch's scope (branch-<name>), the only scope that hands over
// to it (succession).
func (a *destroyer) checkMark(ctx context.Context, op adapter.Op, ref receipt.ResourceRef, prev *receipt.Receipt) error {
	mk, ok := op.(adapter.Marked)
	if !ok {
		return nil
	}
	_, en := a.entry(ref)
	if en == nil {
		return nil
	}
	env, sc := a.pr.env, a.pr.scope
	where := branchOf(env, sc)
	run := a.pr.run
	if prev != nil && prev.Branch != "" {
		run.Branch = prev.Branch
	}
	runs := []adapter.RunCtx{run}
	if kind, _, _ := scope.Parse(sc); kind == scope.KindPR && run.Branch != "" {
		// What the branch's own scope made and handed over (succession)
		// carries that scope's mark.
		pred := run
		pred.Scope = scope.BranchScope(run.Branch)
		runs = append(runs, pred)
	}
	var err error
	for _, r := range runs {
		e := mk.CheckMark(ctx, adapter.Provider(en.Provider), r, adapter.Resource{Key: en.Key, ID: en.ID, Outputs: en.Outputs})
		if e == nil || errs.CodeOf(e) != errs.RESOURCE_UNMARKED {
			err = e
			break
		}
		if err == nil {
			err = e
		}
	}
	switch {
	case err == nil:
		return nil
	case errs.CodeOf(err) == errs.RESOURCE_UNMARKED:
		return errs.New(errs.RESOURCE_UNMARKED, "the ledger of %s/%s (%s) names %s (%s.%s), which does not carry the mark of %s/%s at the provider (%s); destroy leaves it alone",
			env, sc, where, en.Key, en.Adapter, en.Op, env, sc, a.e.redactor().String(errs.Coded(err).Message)).With("key", en.Key).With("branch", where)
	default:
		return errs.Wrap(a.e.redactor().Error(err), errs.DESTROY_FAILED, "destroy %s (%s.%s): its mark could not be read", en.Key, en.Adapter, en.Op).With("key", en.Key)
	}
}

// claim is one other scope's ledger holding a resource: the scope whose
// ledger it is (where its proof is kept) and the scope that manages it
// (the successor, when the ledger is in transit to one).
type claim struct {
	holder, owner string
}

// otherClaims maps the identity of every resource in another scope's
// ledger of the environment to every such claim (all of them: one forged
// claim must not hide the real owner's), leaving out hand-overs in transit
// to me, which succession has just finished.
func otherClaims(stored []receipt.Stored, me string) map[string][]claim {
	out := map[string][]claim{}
	for _, s := range stored {
		if s.Scope == me || s.Receipt == nil || s.Receipt.SupersededBy == me {
			continue
		}
		owner := s.Scope
		if inTransit(s.Receipt) {
			owner = s.Receipt.SupersededBy
		}
		if owner == me {
			continue
		}
		for _, en := range s.Receipt.Ledger {
			id := en.Ref().Identity()
			out[id] = append(out[id], claim{holder: s.Scope, owner: owner})
		}
	}
	return out
}

// provenance is what the store proves Sponson recorded creating, per scope
// of one environment, read once per scope met.
type provenance struct {
	pv      receipt.Provenance // nil: the store keeps no record
	env     string
	ids     map[string]map[string]bool // scope → identities proven (empty when unknown)
	errs    map[string]error
	unknown map[string]bool // scopes with no record at all
}

// of returns what scope's record proves (empty when it has none).
func (p *provenance) of(ctx context.Context, sc string) (map[string]bool, error) {
	if ids, ok := p.ids[sc]; ok {
		return ids, p.errs[sc]
	}
	if p.unknown == nil {
		p.unknown = map[string]bool{}
	}
	var ids map[string]bool
	var err error
	known := false
	if p.pv != nil {
		ids, known, err = p.pv.Recorded(ctx, receipt.ScopeTarget(p.env, sc))
	}
	if err != nil || !known {
		ids = map[string]bool{}
	}
	p.unknown[sc] = err == nil && !known
	p.ids[sc], p.errs[sc] = ids, err
	return ids, err
}

// claimant is the scope that manages the resource id among claims, by a
// claim Sponson's record proves, or whose record could not be read (a
// claim that cannot be weighed stops the destroy); "" when every claim is
// a hand edit's.
func (p *provenance) claimant(ctx context.Context, claims []claim, id string) string {
	for _, cl := range claims {
		ids, err := p.of(ctx, cl.holder)
		if err != nil || ids[id] {
			return cl.owner
		}
	}
	return ""
}

// branchOf names where a scope's receipt lives, as refusals say it: its
// branch on the git store (a directory of the same name on the local
// store).
func branchOf(env, sc string) string {
	return "sponson-receipts/" + receipt.ScopeTarget(env, sc).Key()
}

func (a *destroyer) removeEntry(ref receipt.ResourceRef) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i := a.ledger.Index(ref); i >= 0 {
		a.ledger = slices.Delete(a.ledger, i, i+1)
	}
}

func (a *destroyer) setID(ref receipt.ResourceRef, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i := a.ledger.Index(ref); i >= 0 {
		a.ledger[i].ID = id
	}
}
