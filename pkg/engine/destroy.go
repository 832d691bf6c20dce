package engine

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
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
func (e *Engine) Destroy(ctx context.Context, c scope.Ctx, o Options) (res *RunResult, err error) {
	ctx, st, err := e.begin(ctx, c, o, receipt.OpDestroy)
	if err != nil {
		return nil, err
	}
	c.Env = st.env
	if c.Scope == "" {
		return nil, errs.New(errs.USAGE, "no scope to destroy").WithHint("Give the scope with --pr or --branch.")
	}
	if err := scope.Validate(c.Scope); err != nil {
		return nil, err
	}
	if err := checkConfirmer(o); err != nil {
		return nil, err
	}
	if plan.Production(st.env) && o.ApprovedBy == "" {
		return nil, errs.New(errs.ENV_NOT_APPROVED, "destroying scope %s of production needs a named approver", c.Scope)
	}
	keeper, err := st.acquire(ctx, st.target(c.Scope), st.owner, o.Wait, nil)
	if err != nil {
		return nil, err
	}
	defer st.release(ctx, keeper, func(w Warning) {
		if res != nil {
			res.Warnings = append(res.Warnings, w)
		}
	})
	return st.destroyLocked(ctx, c, keeper)
}

// destroyLocked is Destroy under the scope lease keeper.
func (st *start) destroyLocked(ctx context.Context, c scope.Ctx, keeper *LeaseKeeper) (*RunResult, error) {
	e := st.e
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
	d := &destroyer{w: newScopeWriter(st, pr, keeper, ""), lines: map[string]*lineOut{}, failedCodes: map[string]errs.Code{}}
	d.w.lease.noteTakeover()
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
	stored = readable(stored, c.Scope, d.w.notes)
	if prev, err = d.w.succeed(ctx, prev, stored, true, newOwners(c.Scope, d.w.notes)); err != nil {
		return nil, e.redactor().Error(err)
	}
	d.prev, d.others = prev, otherClaims(stored, c.Scope)
	if err := d.checkUndos(); err != nil {
		return nil, err
	}
	// What Sponson itself recorded creating, per scope (receipt.Provenance):
	// an entry only a hand edit added is never destroyed, and a claim only
	// a hand edit made never stops a destroy. A store that keeps no record
	// proves nothing (unknown is unproven).
	pv, _ := e.Store.(receipt.Provenance)
	sg, _ := e.Store.(receipt.Signing)
	d.signs = sg != nil && sg.Signs()
	d.proofs = &provenance{pv: pv, env: c.Env, ids: map[string]map[string]bool{}, errs: map[string]error{}}
	if prev != nil {
		if d.recorded, err = d.proofs.of(ctx, c.Scope); err != nil {
			return nil, e.redactor().Error(err)
		}
	}
	d.w.startReceipt(prev, receipt.OpDestroy)
	d.walk(ctx)
	return d.finish()
}

// destroyer is one destroy: the walk of the scope's ledger, newest
// first, under the scope lease, and what became of each entry.
type destroyer struct {
	w        *scopeWriter
	prev     *receipt.Receipt   // the scope's receipt after the hand-overs
	others   map[string][]claim // the other scopes' claims, by identity
	proofs   *provenance        // what the store proves Sponson recorded
	recorded map[string]bool    // identities this scope's record proves
	signs    bool               // the store signs receipt writes

	lines       map[string]*lineOut  // what became of each line's entries
	order       []string             // the line ids in the order they were walked
	undo        []adapter.Todo       // the manual steps waiting on their undo, with how
	waiting     int                  // manual steps whose undo nobody confirmed yet
	failed      []string             // the keys left
	failedCodes map[string]errs.Code // key → why it is left
	firstErr    error
}

// lineOut is what destroy did with one line's entries.
type lineOut struct {
	keys      []string       // destroyed, or failing to be
	forgotten []string       // adopted: let go of, left in place
	outputs   map[string]any // a manual step's undo: who confirmed it, when
	status    string
	err       error
}

// note records what became of entry en.
func (d *destroyer) note(en receipt.LedgerEntry, status string, err error) {
	id := cmp.Or(en.Line, en.Key)
	lo := d.lines[id]
	if lo == nil {
		lo = &lineOut{status: status}
		d.lines[id] = lo
		d.order = append(d.order, id)
	}
	if status == LineForgotten {
		lo.forgotten = append(lo.forgotten, en.Key)
		return
	}
	lo.keys = append(lo.keys, en.Key)
	switch {
	case err != nil && lo.err == nil:
		lo.status, lo.err = LineDestroyFailed, err
	case lo.err == nil && (status == LineDestroyed || status == LineWaiting):
		lo.status = status
	}
}

// fail records that entry en is left, and why.
func (d *destroyer) fail(en receipt.LedgerEntry, err error) {
	d.note(en, LineDestroyFailed, err)
	d.failed = append(d.failed, en.Key)
	d.failedCodes[en.Key] = errs.CodeOf(err)
	if d.firstErr == nil {
		d.firstErr = err
	}
}

// walk destroys the ledger's entries, newest first, until the lease is
// lost.
func (d *destroyer) walk(ctx context.Context) {
	if d.prev == nil {
		return
	}
	for i := len(d.prev.Ledger) - 1; i >= 0 && d.w.lease.lostErr() == nil; i-- {
		en := d.prev.Ledger[i]
		if ctx.Err() != nil {
			d.fail(en, errs.Wrap(ctx.Err(), errs.INTERRUPTED, "destroy of %s was interrupted", en.Key))
			continue
		}
		if en.CreatedBy == receipt.CreatedByAdopted {
			d.w.led.remove(en.Ref())
			d.note(en, LineForgotten, nil)
			continue
		}
		if err := d.refusal(ctx, en); err != nil {
			d.fail(en, err)
			continue
		}
		d.destroy(ctx, en)
	}
}

// refusal is why destroy leaves en alone before any provider call: another
// scope's proven claim (OWNED_BY_OTHER_SCOPE), no proof that Sponson
// created it (LEDGER_UNPROVEN), nil when it may go on.
func (d *destroyer) refusal(ctx context.Context, en receipt.LedgerEntry) error {
	env, sc := d.w.pr.env, d.w.pr.scope
	id := en.Ref().Identity()
	if other := d.proofs.claimant(ctx, d.others[id], id); other != "" {
		// Two ledgers claim one resource, and the other's claim is
		// Sponson's own record: deleting it would take it from the
		// scope that manages it (I5); the entry is reported and left
		// alone.
		return errs.New(errs.OWNED_BY_OTHER_SCOPE, "the ledger of %s/%s claims %s (%s.%s), which scope %s manages; destroy leaves it alone",
			env, sc, en.Key, en.Adapter, en.Op, other).With("key", en.Key).With("owner", other).With("branch", branchOf(env, sc)).
			WithHint("Only a hand edit of a receipt makes two scopes claim one resource: inspect the history of %s/%s and remove the entry from the receipt that should not have it.", env, sc)
	}
	if d.recorded[id] {
		return nil
	}
	why := "no receipt Sponson wrote for this scope recorded creating it"
	if d.proofs.unknown[sc] {
		why = "the store holds no receipt Sponson wrote for this scope (a branch made or rewritten by hand, or a store that keeps no record)"
	}
	if d.signs {
		why = "no receipt write of this scope under a valid signature (" + receipt.ReceiptKeyVar + ") recorded creating it (a write made before the key was set, under another key, or by hand)"
	}
	unproven := errs.New(errs.LEDGER_UNPROVEN, "the ledger of %s/%s (%s) claims Sponson created %s (%s.%s), but %s; destroy leaves it alone",
		env, sc, branchOf(env, sc), en.Key, en.Adapter, en.Op, why).With("key", en.Key).With("branch", branchOf(env, sc))
	if d.signs {
		// Signing refuses with the same code: the fact is the
		// same (the store does not prove Sponson created it),
		// and every caller already reports it per entry and goes
		// on; the detail and the hint say what differs.
		unproven = unproven.With("proof", "signature").
			WithHint("Only receipt writes under a valid MAC of %s (or %s) count: an entry recorded before the key was set, under another key, or by a forged commit is left. Inspect the branch's history; to let go of an entry you trust, destroy the scope once with the key that signed it, or delete the resource by hand.", receipt.ReceiptKeyVar, receipt.PreviousReceiptKeyVar)
	}
	return unproven
}

// destroy destroys one entry the store proves: its op judges it first
// (mayDestroy, checkMark), an intent is located first.
func (d *destroyer) destroy(ctx context.Context, en receipt.LedgerEntry) {
	e, ref := d.w.st.e, en.Ref()
	op, ok := e.Ops.Lookup(en.Adapter, en.Op)
	if !ok {
		d.fail(en, errs.New(errs.DESTROY_FAILED, "%s: op %s.%s is not available in this Sponson", en.Key, en.Adapter, en.Op))
		return
	}
	if _, manual := op.(adapter.Stepper); manual {
		// Sponson cannot undo what a person did: it says how, and waits.
		d.undoStep(en)
		return
	}
	if err := d.mayDestroy(op, en, d.w.st.o.ApprovedBy); err != nil {
		d.fail(en, err)
		return
	}
	if en.CreatedBy == receipt.CreatedByIntent {
		found, err := op.Lookup(ctx, adapter.Provider(en.Provider), d.w.pr.run, en.Key)
		if err != nil {
			d.fail(en, errs.Wrap(e.redactor().Error(err), errs.INTENT_UNRESOLVED, "%s (%s.%s) may have been created and cannot be located", en.Key, en.Adapter, en.Op).With("key", en.Key))
			return
		}
		if found == nil {
			d.w.led.remove(ref)
			d.note(en, LineDestroyed, nil)
			return
		}
		d.w.led.setID(ref, found.ID)
	}
	if _, marked := op.(adapter.Marked); marked {
		// The mark check and the delete share one read of the resource:
		// a cache of this entry's destroy alone, so nothing read for
		// another entry, or before, is decided on.
		ctx = adapter.WithReadCache(ctx, adapter.NewReadCache(), "destroy "+en.Key)
	}
	if err := d.checkMark(ctx, op, ref, d.prev); err != nil {
		d.fail(en, err)
		return
	}
	if err := d.w.destroyEntry(ctx, op, ref, true); err != nil {
		code := errs.DESTROY_FAILED
		if errs.CodeOf(err) == errs.LOCK_LOST && d.w.lease.lostErr() != nil {
			code = errs.LOCK_LOST
		}
		d.fail(en, errs.Wrap(e.redactor().Error(err), code, "destroy %s (%s.%s)", en.Key, en.Adapter, en.Op).With("key", en.Key))
		return
	}
	d.note(en, LineDestroyed, nil)
}

// finish stamps the final receipt and writes it (nothing is written for
// a scope never recorded and not closed now).
func (d *destroyer) finish() (*RunResult, error) {
	status := receipt.StatusComplete
	switch {
	case len(d.failed) > 0 || d.w.lease.lostErr() != nil:
		status = receipt.StatusFailed
	case d.waiting > 0:
		status = receipt.StatusPartial // undos wait on people (steps.go)
	}
	d.w.stamp(status)
	w, o, pr := d.w.rec.w, d.w.st.o, d.w.pr
	w.Destroyed = len(w.Ledger) == 0
	switch {
	case o.Close != nil:
		w.Closed = o.Close
	case d.prev != nil:
		w.Closed = d.prev.Closed // destroying a closed scope again keeps its tombstone
	}
	w.Lines = map[string]receipt.LineResult{}
	for id, lo := range d.lines {
		lr := receipt.LineResult{Status: lo.status, Resources: lo.keys, Forgotten: lo.forgotten, Outputs: lo.outputs}
		if lo.err != nil {
			le := lineError(lo.err)
			lr.ErrorCode, lr.Error = le.Code, le.Message
		}
		w.Lines[id] = lr
	}
	if d.prev == nil && o.Close == nil {
		// Nothing was ever recorded here: nothing to write.
		red, err := d.w.rec.redacted(w)
		if err != nil {
			return nil, err
		}
		return &RunResult{Env: pr.env, Scope: pr.scope, Receipt: red, Order: []string{}, Warnings: []Warning{}}, nil
	}
	return d.w.result(d.runErr(), d.order, d.undo, nil)
}

// runErr is the destroy's error: the lease lost, else the first entry
// left, with every key left and why.
func (d *destroyer) runErr() error {
	env, sc := d.w.pr.env, d.w.pr.scope
	switch {
	case d.w.lease.lostErr() != nil:
		return d.w.lease.lostErr()
	case d.firstErr == nil:
		return nil
	}
	code := errs.DESTROY_FAILED
	switch c := errs.CodeOf(d.firstErr); c {
	case errs.INTENT_UNRESOLVED, errs.INTERRUPTED, errs.OWNED_BY_OTHER_SCOPE, errs.LEDGER_UNPROVEN,
		errs.LEDGER_IMPLAUSIBLE, errs.ENV_NOT_APPROVED, errs.RESOURCE_UNMARKED:
		code = c
	}
	msg := fmt.Sprintf("destroy of %s/%s left %d resource(s): %s", env, sc, len(d.failed), strings.Join(d.failed, ", "))
	switch code {
	case errs.LEDGER_IMPLAUSIBLE, errs.ENV_NOT_APPROVED, errs.RESOURCE_UNMARKED:
		// Refusals by rule: the first says why, so an unattended
		// teardown's report does.
		msg += "; " + errs.Coded(d.firstErr).Message
	}
	return errs.Wrap(d.firstErr, code, "%s", msg).With("resources", d.failed).With("codes", d.failedCodes)
}

// mayDestroy is what destroy asks of an entry the store proves, before
// any provider call: that its key is one its op could have made in this
// scope's environment (adapter.KeyJudge: LEDGER_IMPLAUSIBLE), and that
// an entry of production has a named approver (ENV_NOT_APPROVED: the
// bot, the sweep and gc without --approved-by never destroy one). An op
// that says a line may write production (adapter.ProductionWriter) but
// cannot judge a key is taken to write production.
func (d *destroyer) mayDestroy(op adapter.Op, en receipt.LedgerEntry, approvedBy string) error {
	env, sc, run := d.w.pr.env, d.w.pr.scope, d.w.pr.run
	where := branchOf(env, sc)
	production := plan.Production(env)
	kj, judges := op.(adapter.KeyJudge)
	if judges {
		if err := kj.CheckKey(en.Key, adapter.Provider(en.Provider), run); err != nil {
			return errs.Wrap(err, errs.LEDGER_IMPLAUSIBLE, "the ledger of %s/%s (%s) names %s (%s.%s), which %s.%s could not have made in a run of %s/%s; destroy leaves it alone",
				env, sc, where, en.Key, en.Adapter, en.Op, en.Adapter, en.Op, env, sc).With("key", en.Key).With("branch", where)
		}
		production = production || plan.Production(kj.KeyEnvironment(en.Key, adapter.Provider(en.Provider), run))
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
func (d *destroyer) checkMark(ctx context.Context, op adapter.Op, ref receipt.ResourceRef, prev *receipt.Receipt) error {
	mk, ok := op.(adapter.Marked)
	if !ok {
		return nil
	}
	_, en := d.w.led.entry(ref)
	if en == nil {
		return nil
	}
	env, sc := d.w.pr.env, d.w.pr.scope
	where := branchOf(env, sc)
	run := d.w.pr.run
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
			env, sc, where, en.Key, en.Adapter, en.Op, env, sc, d.w.st.e.redactor().String(errs.Coded(err).Message)).With("key", en.Key).With("branch", where)
	default:
		return errs.Wrap(d.w.st.e.redactor().Error(err), errs.DESTROY_FAILED, "destroy %s (%s.%s): its mark could not be read", en.Key, en.Adapter, en.Op).With("key", en.Key)
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
