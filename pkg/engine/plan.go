package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
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
	ctx = e.events(ctx)
	if err := e.check(); err != nil {
		return nil, err
	}
	pr, err := e.prepare(p, c, o)
	if err != nil {
		return nil, e.redactor().Error(err)
	}
	r := newRun(e, pr, o, false)
	r.resolveSecrets(ctx)
	res := &PlanResult{Env: pr.env, Scope: pr.scope, Lines: []PlanLine{}, Drift: []Drift{}, Warnings: []Warning{},
		ApprovalRequired: pr.production}

	target := receipt.ScopeTarget(pr.env, pr.scope)
	var (
		view *receipt.View
		l    *receipt.Lease
	)
	// The scope, its lease and (or, later, on demand) the environment in
	// one read, when the store can.
	if view, err = e.view(ctx, pr); err != nil {
		return nil, e.redactor().Error(err)
	} else if view != nil {
		l = view.Lease
	} else if l, err = e.Store.Lease(ctx, target); err != nil {
		return nil, e.redactor().Error(err)
	}
	if l != nil && !l.Expired(e.now()) {
		res.Lock = lockInfo(*l, e.now())
		r.warn(errs.APPLY_RUNNING, "an %s is running on %s (run %s, since %s): this plan may be out of date when it finishes",
			firstOf(string(l.Operation), "operation"), target, l.Holder, l.AcquiredAt.UTC().Format("15:04"))
	}
	var prev *receipt.Receipt
	if view != nil {
		prev = view.Receipt
	} else if prev, _, err = e.Store.Read(ctx, pr.env, pr.scope); err != nil {
		return nil, e.redactor().Error(err)
	}
	if prev != nil {
		// Another branch's resources are not this branch's to show.
		if err := scope.CheckCollision(pr.scope, prev.Branch, pr.ctx.Git.Branch); err != nil {
			return nil, err
		}
	}
	var stored []receipt.Stored
	if view != nil {
		stored = storedOf(view, pr.env, pr.scope)
	} else if stored, err = e.Store.List(ctx, pr.env); err != nil {
		return nil, e.redactor().Error(err)
	}
	stored = r.readable(stored)
	r.loadForeign(stored)
	if view != nil {
		r.foreignLater(view.Rest, view.Named)
	}
	if prev != nil {
		r.ledger, r.hashKey = prev.Ledger, prev.HashKey
		if prev.Closed != nil && !o.Reopen {
			r.warn(errs.SCOPE_CLOSED, "scope %s was closed by %s at %s; apply refuses it unless reopened", target, prev.Closed.By, prev.Closed.At.UTC().Format("2006-01-02 15:04"))
		}
	}
	r.previewSuccession(stored)

	r.inspectAll(ctx)
	res.Drift = append(res.Drift, r.lineDrift()...)
	res.Drift = append(res.Drift, r.orphans()...)
	res.Drift = append(res.Drift, r.unmanaged(ctx)...)

	var failed error
	for _, ls := range r.lines {
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
	res.Warnings = append(res.Warnings, r.warnings...)
	out, rerr := redactTyped(e, res)
	if rerr != nil {
		return nil, rerr
	}
	if failed != nil {
		return out, e.redactor().Error(runError(failed, "plan"))
	}
	return out, nil
}

func lockInfo(l receipt.Lease, now time.Time) *LockInfo {
	return &LockInfo{Held: !l.Expired(now), Holder: l.Holder, Operation: string(l.Operation), Since: l.AcquiredAt,
		ExpiresAt: l.ExpiresAt, Expired: l.Expired(now), Owner: l.Owner}
}

// lineDrift is the drift the lines' judgements found.
func (r *run) lineDrift() []Drift {
	var out []Drift
	for _, ls := range r.lines {
		out = append(out, ls.drift...)
	}
	return out
}

// orphans are the ledger entries we created that no line declares now: the
// entry's line is gone, or it ran and no longer declares the key. Lines
// that could not be inspected are given the benefit of the doubt.
func (r *run) orphans() []Drift {
	var out []Drift
	for _, en := range r.ledger {
		if en.CreatedBy == receipt.CreatedByAdopted {
			continue
		}
		if ls := r.byID[en.Line]; ls != nil && (ls.diffs == nil || declares(ls, en)) {
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
func (r *run) unmanaged(ctx context.Context) []Drift {
	type candidate struct {
		line, key, id, msg string
	}
	var found []candidate
	hinted := map[string]bool{}
	own := r.ledger.ByIdentity()
	declared := map[string]bool{}
	for _, ls := range r.lines {
		for _, k := range ls.declared() {
			declared[ls.pl.ref(k).Identity()] = true
		}
	}
	seen := map[string]bool{}
	// A resource already at a key a line declares, which no scope manages
	// (made in a console): apply adopts it, never destroying it, only when
	// it already equals the plan. A reviewer must see that before apply.
	for _, ls := range r.lines {
		if ls.live == nil {
			continue
		}
		for _, res := range ls.live.Resources {
			id := ls.pl.ref(res.Key).Identity()
			if _, mine := own[id]; mine || !declared[id] || seen[id] {
				continue
			}
			seen[id] = true
			found = append(found, candidate{ls.pl.id, res.Key, id,
				"already exists where this line would create it and no scope manages it; apply adopts it (never destroying it) if it equals the plan, else refuses"})
		}
	}
	for _, ls := range r.lines {
		sl, ok := ls.pl.op.(adapter.ScopeLister)
		if !ok || ls.req.Params == nil || len(ls.pending) > 0 || ls.live == nil {
			// A line waiting on another's output has no scope to list yet;
			// a line whose read failed (no live state) says why in its own
			// error (a wrong provider id answers the listing with the same
			// 404). A line blocked by drift was read, and lists as any other.
			continue
		}
		listed, err := sl.ListScope(adapter.WithReadCache(ctx, r.reads, ls.parent), ls.req)
		if err != nil {
			code := errs.CodeOf(err)
			// The warning carries the code; its text does not repeat it.
			text := strings.TrimPrefix(r.e.redactor().Error(err).Error(), string(code)+": ")
			r.warn(code, "line %q: could not list what exists for unmanaged drift: %s", ls.pl.id, text)
			continue
		}
		keys := ls.declared()
		for _, res := range listed {
			id := ls.pl.ref(res.Key).Identity()
			if _, mine := own[id]; mine || declared[id] || seen[id] {
				continue
			}
			seen[id] = true
			for _, k := range keys {
				if sc := adapter.OtherScope(k, r.pr.scope, res.Key); sc != "" {
					hinted[sc] = true
					break
				}
			}
			found = append(found, candidate{ls.pl.id, res.Key, id,
				"exists where this line could own it and no scope manages it; Sponson leaves it alone"})
		}
	}
	if len(found) == 0 {
		return nil
	}
	if len(hinted) > 0 {
		scopes := make([]string, 0, len(hinted))
		for sc := range hinted {
			scopes = append(scopes, sc)
		}
		sort.Strings(scopes)
		r.readScopes(ctx, scopes)
	}
	// foreign reads the whole environment only for what no scope read so
	// far owns; when it cannot be read, nothing is called unmanaged.
	warned := false
	foreign := func(id string) bool {
		if name, ok := r.owners.knownOwner(id); ok {
			return name != ""
		}
		name, err := r.foreignOwner(ctx, id)
		if err != nil && !warned {
			warned = true
			r.warn(errs.CodeOf(err), "unmanaged drift is not reported: %s", errs.Coded(err).Message)
		}
		return err != nil || name != ""
	}
	var out []Drift
	for _, c := range found {
		if foreign(c.id) {
			continue
		}
		out = append(out, Drift{Kind: DriftUnmanaged, Line: c.line, Key: c.key, Message: c.msg})
	}
	return out
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
func (r *run) inspectAll(ctx context.Context) {
	n := len(r.lines)
	par := r.o.readParallelism()
	index := make(map[string]int, n)
	for i, ls := range r.lines {
		index[ls.pl.id] = i
	}
	started := make([]bool, n)
	finished := make([]bool, n)
	ready := func(i int) bool {
		for _, d := range r.lines[i].pl.deps {
			if j, ok := index[d]; ok && !finished[j] {
				return false
			}
		}
		return true
	}
	warnFrom := r.warningCount()
	done := make(chan int)
	running, left := 0, n
	for left > 0 {
		for i := 0; i < n && running < par; i++ {
			if started[i] || !ready(i) {
				continue
			}
			started[i] = true
			running++
			go func(ls *lineState) {
				r.inspectLine(ctx, ls)
				done <- i
			}(r.lines[i])
		}
		if running == 0 {
			break // unreachable: prepare refuses cycles
		}
		finished[<-done] = true
		running--
		left--
	}
	if par > 1 {
		r.mu.Lock()
		ws := r.warnings[warnFrom:]
		sort.SliceStable(ws, func(i, j int) bool {
			if ws[i].Code != ws[j].Code {
				return ws[i].Code < ws[j].Code
			}
			return ws[i].Message < ws[j].Message
		})
		r.mu.Unlock()
	}
}

// inspectLine inspects one line for plan and learns its outputs, external
// ones included when they have arrived (lookExternal).
func (r *run) inspectLine(ctx context.Context, ls *lineState) {
	r.inspect(ctx, ls)
	if ls.live == nil {
		return
	}
	r.learn(ls.pl, ls.live.Outputs)
	r.lookExternal(ctx, ls)
}

// lookExternal asks a line that has nothing to change, once and
// read-only (adapter.Awaiter), for the external outputs another line
// uses and Read did not return: after a complete apply the deployment has
// happened, and the lines using its URL are shown as they are, not as
// pending. A line that changes is left alone: apply's write starts a new
// event, whose outputs are not known before it. An event that failed, or
// a look that fails, leaves the outputs pending with a warning; apply
// says what it does then.
func (r *run) lookExternal(ctx context.Context, ls *lineState) {
	if ls.status != PlanUnchanged {
		return
	}
	aw, ok := ls.pl.op.(adapter.Awaiter)
	if !ok {
		return
	}
	var wanted []string
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
		r.warn(errs.CodeOf(err), "line %q: %s is not known: %v", ls.pl.id, wanted[0], r.e.redactor().Error(err))
		return
	}
	r.learn(ls.pl, outs)
}
