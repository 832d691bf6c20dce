package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// Plan reads live state and says what apply would do. It writes nothing,
// anywhere (I4): no provider write, no store write, no lease; it reads the
// scope's lease only to say when an apply is running.
//
// Errors: a refusal of prepare (exit 2) with a nil result; a store error
// (RECEIPT_CORRUPT, RECEIPT_VERSION, STORE_*) with a nil result; and, when
// any line is error or blocked, the result together with that line's error
// (exit 1). Secrets are resolved and registered with the redactor, never
// handed to an op.
func (e *Engine) Plan(ctx context.Context, p *plan.Plan, c scope.Ctx, o Options) (*PlanResult, error) {
	ctx, st, err := e.begin(ctx, c, o, "")
	if err != nil {
		return nil, err
	}
	pr, err := e.prepare(p, c, st.o)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	n := &notes{e: e}
	led := &ledger{}
	pn := &planner{st: st, in: newInspector(e, pr, st.o, false, led, n), led: led, notes: n}
	pn.in.resolveSecrets(ctx)
	res := &PlanResult{Env: pr.env, Scope: pr.scope, Lines: []PlanLine{}, Drift: []Drift{}, Warnings: []Warning{},
		ApprovalRequired: pr.production, PlanHash: pr.planHash}
	if err := pn.read(ctx, res); err != nil {
		return nil, err
	}
	pn.inspectAll(ctx)
	res.Drift = append(res.Drift, pn.lineDrift()...)
	res.Drift = append(res.Drift, pn.orphans()...)
	res.Drift = append(res.Drift, pn.unmanaged(ctx)...)
	failed := pn.lineResults(res)
	res.Warnings = append(res.Warnings, n.all()...)
	out, rerr := redactTyped(e, res)
	if rerr != nil {
		return nil, rerr
	}
	if failed != nil {
		return out, e.redactor().Error(runError(failed, "plan"))
	}
	return out, nil
}

// planner is one plan: the lines' inspection over the scope's stored
// ledger, which it only reads, and the warnings.
type planner struct {
	st    *start
	in    *inspector
	led   *ledger
	notes *notes
}

// read reads the scope (its lease, to say an apply is running, its
// receipt and the environment) and starts the ledger from it.
func (p *planner) read(ctx context.Context, res *PlanResult) error {
	e, pr := p.in.e, p.in.pr
	target := receipt.ScopeTarget(pr.env, pr.scope)
	var l *receipt.Lease
	// The scope, its lease and (or, later, on demand) the environment in
	// one read, when the store can.
	view, err := p.st.view(ctx, pr)
	if err != nil {
		return e.redactor().Error(err)
	} else if view != nil {
		l = view.Lease
	} else if l, err = e.Store.Lease(ctx, target); err != nil {
		return e.redactor().Error(err)
	}
	if l != nil && !l.Expired(e.now()) {
		res.Lock = lockInfo(*l, e.now())
		p.notes.warn(errs.APPLY_RUNNING, "an %s is running on %s (run %s, since %s): this plan may be out of date when it finishes",
			cmp.Or(string(l.Operation), "operation"), target, l.Holder, l.AcquiredAt.UTC().Format("15:04"))
	}
	prev, _, stored, err := p.st.readScope(ctx, pr, view, nil)
	if err != nil {
		return err
	}
	stored = readable(stored, pr.scope, p.notes)
	p.in.owners.load(stored)
	if view != nil {
		p.in.owners.later(view.Rest, view.Named)
	}
	if prev != nil {
		p.led.reset(prev.Ledger, prev.HashKey)
		if prev.Closed != nil && !p.in.o.Reopen {
			p.notes.warn(errs.SCOPE_CLOSED, "scope %s was closed by %s at %s; apply refuses it unless reopened", target, prev.Closed.By, prev.Closed.At.UTC().Format("2006-01-02 15:04"))
		}
	}
	p.previewSuccession(stored)
	return nil
}

// readScope is the scope's receipt and the environment's receipts, from
// view when the store gave one, else read; the receipt is refused by check
// (nil: none), then when it records another branch (SCOPE_COLLISION),
// before the environment is read. Store errors are redacted.
func (st *start) readScope(ctx context.Context, pr *prepared, view *receipt.View, check func(*receipt.Receipt) error) (*receipt.Receipt, receipt.Version, []receipt.Stored, error) {
	var (
		prev   *receipt.Receipt
		at     receipt.Version
		stored []receipt.Stored
		err    error
	)
	if view != nil {
		prev, at = view.Receipt, view.Version
	} else if prev, at, err = st.e.Store.Read(ctx, pr.env, pr.scope); err != nil {
		return nil, "", nil, st.e.redactor().Error(err)
	}
	if check != nil {
		if err := check(prev); err != nil {
			return nil, "", nil, err
		}
	}
	if prev != nil {
		// Another branch's resources are not this branch's.
		if err := scope.CheckCollision(pr.scope, prev.Branch, pr.ctx.Git.Branch); err != nil {
			return nil, "", nil, err
		}
	}
	// One List(env) gives the other scopes' ledgers (foreign resources) and
	// the scopes this one succeeds; a View may leave the other scopes to
	// be read when a line first needs them (owners.go).
	if view != nil {
		stored = storedOf(view, pr.env, pr.scope)
	} else if stored, err = st.e.Store.List(ctx, pr.env); err != nil {
		return nil, "", nil, st.e.redactor().Error(err)
	}
	return prev, at, stored, nil
}

// lineResults puts the plan's lines into res, returning the first error
// of a line that is error or blocked.
func (p *planner) lineResults(res *PlanResult) error {
	var failed error
	for _, ls := range p.in.lines {
		pl := PlanLine{ID: ls.pl.id, Adapter: ls.pl.spec.Adapter, Op: ls.pl.spec.Op, Status: ls.status,
			Diffs: ls.diffsOf(), Inputs: ls.inputs, WaitingOn: []string{}, WaitingFor: []string{},
			Error: lineError(ls.err), Parent: ls.parent, Todo: ls.todo, Recipe: ls.pl.recipe}
		if pl.Inputs == nil {
			pl.Inputs = []Input{}
		}
		for _, p := range ls.pending {
			pl.WaitingOn = append(pl.WaitingOn, p.ref())
			pl.WaitingFor = append(pl.WaitingFor, p.waitingFor)
		}
		if (ls.status == PlanError || ls.status == PlanBlocked) && failed == nil {
			failed = ls.err
		}
		res.Lines = append(res.Lines, pl)
	}
	return failed
}

// previewSuccession is succession as plan sees it, writing nothing: the
// ledgers an apply of this PR scope would inherit (its head branch's scope,
// and any hand-over in transit to it) are judged as this scope's, with a
// warning, so plan says what apply will do. Hashes recorded under another
// hash key are dropped, as handOver does.
func (p *planner) previewSuccession(stored []receipt.Stored) {
	pr := p.in.pr
	if k, _, err := scope.Parse(pr.scope); err != nil || k != scope.KindPR {
		return
	}
	me, head := pr.scope, pr.ctx.Git.Branch
	from := ""
	if head != "" {
		from = scope.BranchScope(head)
	}
	ledger, key := p.led.snapshot(), p.led.hashKey
	have := ledger.ByIdentity()
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
		key = cmp.Or(key, rec.HashKey)
		for _, en := range rec.Ledger {
			id := en.Ref().Identity()
			p.in.owners.set(id, "")
			if _, ok := have[id]; ok {
				continue
			}
			if rec.HashKey != key {
				en.Hash = ""
			}
			ledger = append(ledger, en)
			have[id] = len(ledger) - 1
		}
		p.notes.warn(errs.SUCCESSION, "apply will inherit %d resource(s) from scope %s (succession)", len(rec.Ledger), s.Scope)
	}
	p.led.reset(ledger, key)
}

func lockInfo(l receipt.Lease, now time.Time) *LockInfo {
	return &LockInfo{Held: !l.Expired(now), Holder: l.Holder, Operation: string(l.Operation), Since: l.AcquiredAt,
		ExpiresAt: l.ExpiresAt, Expired: l.Expired(now), Owner: l.Owner}
}

// lineDrift is the drift the lines' judgements found.
func (p *planner) lineDrift() []Drift {
	var out []Drift
	for _, ls := range p.in.lines {
		out = append(out, ls.drift...)
	}
	return out
}

// orphans are the ledger entries we created that no line declares now: the
// entry's line is gone, or it ran and no longer declares the key. Lines
// that could not be inspected are given the benefit of the doubt.
func (p *planner) orphans() []Drift {
	var out []Drift
	for _, en := range p.led.snapshot() {
		if en.CreatedBy == receipt.CreatedByAdopted {
			continue
		}
		if ls := p.in.byID[en.Line]; ls != nil && (ls.diffs == nil || declares(ls, en)) {
			continue
		}
		out = append(out, Drift{Kind: DriftOrphan, Line: en.Line, Key: en.Key,
			Message: fmt.Sprintf("created by Sponson (%s.%s); no line declares it now: it is destroyed with the scope", en.Adapter, en.Op)})
	}
	return out
}

func declares(ls *lineState, en receipt.LedgerEntry) bool {
	id := en.Ref().Identity()
	for _, k := range ls.declared() {
		if ls.pl.ref(k).Identity() == id {
			return true
		}
	}
	return false
}

// unmanaged lists, for every line whose op can list its scope, what exists
// where the line could own it and nobody manages: not in this ledger, not
// in another scope's (foreign resources are never unmanaged), not declared.
//
// What a listing finds in another scope's place (its key is the line's
// with the scope's name in place of this one's: adapter.OtherScope) is
// first looked up in that scope's receipt alone, all such scopes in one
// read; the whole environment is read only for what is still unowned
// then, so a plan of a steady scope costs the scopes it meets, not every
// scope of the environment.
func (p *planner) unmanaged(ctx context.Context) []Drift {
	f := &unmanagedScan{own: p.led.snapshot().ByIdentity(), declared: map[string]bool{}, seen: map[string]bool{}, hinted: map[string]bool{}}
	for _, ls := range p.in.lines {
		for _, k := range ls.declared() {
			f.declared[ls.pl.ref(k).Identity()] = true
		}
	}
	f.atDeclared(p.in.lines)
	for _, ls := range p.in.lines {
		p.listed(ctx, f, ls)
	}
	if len(f.found) == 0 {
		return nil
	}
	if len(f.hinted) > 0 {
		p.in.owners.readScopes(ctx, slices.Sorted(maps.Keys(f.hinted)))
	}
	// foreign reads the whole environment only for what no scope read so
	// far owns; when it cannot be read, nothing is called unmanaged.
	warned := false
	foreign := func(id string) bool {
		if name, ok := p.in.owners.knownOwner(id); ok {
			return name != ""
		}
		name, err := p.in.owners.owner(ctx, id)
		if err != nil && !warned {
			warned = true
			p.notes.warn(errs.CodeOf(err), "unmanaged drift is not reported: %s", errs.Coded(err).Message)
		}
		return err != nil || name != ""
	}
	var out []Drift
	for _, c := range f.found {
		if foreign(c.id) {
			continue
		}
		out = append(out, Drift{Kind: DriftUnmanaged, Line: c.line, Key: c.key, Message: c.msg})
	}
	return out
}

// unmanagedScan is what unmanaged found so far: the candidates, and the
// other scopes whose places they are in.
type unmanagedScan struct {
	own            map[string]int
	declared, seen map[string]bool
	hinted         map[string]bool
	found          []unmanagedCandidate
}

type unmanagedCandidate struct {
	line, key, id, msg string
}

// atDeclared finds what already exists at a key a line declares, which
// no scope manages (made in a console): apply adopts it, never destroying
// it, only when it already equals the plan. A reviewer must see that
// before apply.
func (f *unmanagedScan) atDeclared(lines []*lineState) {
	for _, ls := range lines {
		if ls.live == nil {
			continue
		}
		for _, res := range ls.live.Resources {
			id := ls.pl.ref(res.Key).Identity()
			if _, mine := f.own[id]; mine || !f.declared[id] || f.seen[id] {
				continue
			}
			f.seen[id] = true
			f.found = append(f.found, unmanagedCandidate{ls.pl.id, res.Key, id,
				"already exists where this line would create it and no scope manages it; apply adopts it (never destroying it) if it equals the plan, else refuses"})
		}
	}
}

// listed adds what the line's op lists in its scope that no line
// declares and this scope does not manage.
func (p *planner) listed(ctx context.Context, f *unmanagedScan, ls *lineState) {
	sl, ok := ls.pl.op.(adapter.ScopeLister)
	if !ok || ls.req.Params == nil || len(ls.pending) > 0 || ls.live == nil {
		// A line waiting on another's output has no scope to list yet;
		// a line whose read failed (no live state) says why in its own
		// error (a wrong provider id answers the listing with the same
		// 404). A line blocked by drift was read, and lists as any other.
		return
	}
	listed, err := sl.ListScope(adapter.WithReadCache(ctx, p.in.reads, ls.parent), ls.req)
	if err != nil {
		code := errs.CodeOf(err)
		// The warning carries the code; its text does not repeat it.
		text := strings.TrimPrefix(p.in.e.redactor().Error(err).Error(), string(code)+": ")
		p.notes.warn(code, "line %q: could not list what exists for unmanaged drift: %s", ls.pl.id, text)
		return
	}
	keys := ls.declared()
	for _, res := range listed {
		id := ls.pl.ref(res.Key).Identity()
		if _, mine := f.own[id]; mine || f.declared[id] || f.seen[id] {
			continue
		}
		f.seen[id] = true
		for _, k := range keys {
			if sc := adapter.OtherScope(k, p.in.pr.scope, res.Key); sc != "" {
				f.hinted[sc] = true
				break
			}
		}
		f.found = append(f.found, unmanagedCandidate{ls.pl.id, res.Key, id,
			"exists where this line could own it and no scope manages it; Sponson leaves it alone"})
	}
}

// inspectAll inspects the plan's lines in dependency waves, as apply runs
// them (runLines): a line starts once every line it depends on has been
// inspected, at most Options.Parallelism (DefaultPlanParallelism when 0)
// at once, earliest in run order
// first. A 20-line plan against a provider answering in 100–300 ms takes
// about its longest chain of reads, not the sum of them. Results stay in
// run order, whatever the interleaving: each line writes only its own
// lineState, and the warnings raised meanwhile are sorted when lines ran
// at once.
func (p *planner) inspectAll(ctx context.Context) {
	sc := newScheduler(p.in.lines, p.in.o.readParallelism())
	warnFrom := p.notes.count()
	done := make(chan int)
	running := 0
	for {
		for _, i := range sc.next(running) {
			running++
			go func(i int) {
				p.inspectLine(ctx, p.in.lines[i])
				done <- i
			}(i)
		}
		if running == 0 {
			break // every line ran (prepare refuses cycles)
		}
		sc.finish(<-done)
		running--
	}
	if sc.par > 1 {
		p.notes.sortFrom(warnFrom)
	}
}

// inspectLine inspects one line for plan and learns its outputs, external
// ones included when they have arrived (lookExternal).
func (p *planner) inspectLine(ctx context.Context, ls *lineState) {
	p.in.inspect(ctx, ls)
	if ls.live == nil {
		return
	}
	p.in.learn(ls.pl, ls.live.Outputs)
	p.lookExternal(ctx, ls)
}

// lookExternal asks a line that has nothing to change, once and
// read-only (adapter.Awaiter), for the external outputs another line
// uses and Read did not return: after a complete apply the deployment has
// happened, and the lines using its URL are shown as they are, not as
// pending. A line that changes is left alone: apply's write starts a new
// event, whose outputs are not known before it. An event that failed, or
// a look that fails, leaves the outputs pending with a warning; apply
// says what it does then.
func (p *planner) lookExternal(ctx context.Context, ls *lineState) {
	if ls.status != PlanUnchanged {
		return
	}
	aw, ok := ls.pl.op.(adapter.Awaiter)
	if !ok {
		return
	}
	var wanted []string
	r := p.in
	for _, other := range r.lines {
		for _, ref := range other.pl.line.FromRefs() {
			if ref.From.Line != ls.pl.id || slices.Contains(wanted, ref.From.Output) {
				continue
			}
			if ls.pl.outputs[ref.From.Output].When != adapter.External {
				continue
			}
			if _, known := r.output(ls.pl.id, ref.From.Output); !known {
				wanted = append(wanted, ref.From.Output)
			}
		}
	}
	if len(wanted) == 0 {
		return
	}
	outs, err := aw.AwaitExternal(ctx, ls.req, ls.live)
	if err != nil {
		p.notes.warn(errs.CodeOf(err), "line %q: %s is not known: %v", ls.pl.id, wanted[0], r.e.redactor().Error(err))
		return
	}
	r.learn(ls.pl, outs)
}
