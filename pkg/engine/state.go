package engine

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
)

// inspector is the lines of one plan or apply as they are read and
// judged: the prepared plan, the secrets, the outputs known so far and
// what each line did. It owns the outputs, behind its own lock (an apply
// runs lines at once); each lineState belongs to the goroutine running
// its line. The ledger being judged (and, for apply, changed) and the
// warnings are parts of their own, with their own locks, which the
// inspector shares with the run that holds it.
type inspector struct {
	e     *Engine
	pr    *prepared
	o     Options
	apply bool // hand secret values to ops (plan never does)

	led    *ledger
	notes  *notes
	owners *owners // who else manages what, read on demand (owners.go)
	// reads is what the lines read of shared parent objects this run (one
	// read per parent object, not per line); an identity is dropped
	// before a line is inspected again under its lease and after every
	// write of it.
	reads *adapter.ReadCache

	secrets   map[string]string // ref → value; set before any line runs
	secretErr map[string]error  // ref → SECRET_UNRESOLVED
	lines     []*lineState
	byID      map[string]*lineState

	mu      sync.Mutex
	outputs map[string]map[string]any
}

// lineState is what one line did in this run.
type lineState struct {
	pl      *pline
	status  string
	err     error
	req     adapter.Request
	live    *adapter.Live
	diffs   []adapter.ResourceDiff
	verdict map[string]verdict // by key
	inputs  []Input
	pending []pendingRef
	parent  string
	drift   []Drift
	// apply
	created  []string                     // keys this run created for the line, in order
	intents  []string                     // keys this run recorded as intents for the line
	priorBy  map[string]receipt.CreatedBy // what each intended key was before ("" when new)
	ran      bool                         // applied or found unchanged: its declared keys are known and current
	resKeys  []string                     // keys the line manages after the run
	touched  bool                         // a provider write was attempted for the line
	outcome  string                       // apply status before rollback
	rollback []string                     // keys rollback could not remove
	pk       *LeaseKeeper                 // the parent lease, while the line writes under it
	todo     *adapter.Todo                // a manual step not confirmed yet
	heading  atomic.Bool                  // counted on its way to its first write (recorder.arrive)
	byIntent bool                         // its first write is a create: the scope lease comes with its intents
}

type pendingRef struct {
	line, output string
	waitingFor   string // an event name, or "apply"
	external     bool
}

func (p pendingRef) ref() string { return p.line + "." + p.output }

func newInspector(e *Engine, pr *prepared, o Options, apply bool, led *ledger, n *notes) *inspector {
	r := &inspector{e: e, pr: pr, o: o, apply: apply, led: led, notes: n,
		secrets: map[string]string{}, secretErr: map[string]error{},
		owners: newOwners(pr.scope, n), outputs: map[string]map[string]any{}, byID: map[string]*lineState{},
		reads: adapter.NewReadCache()}
	for _, pl := range pr.lines {
		ls := &lineState{pl: pl}
		r.lines = append(r.lines, ls)
		r.byID[pl.id] = ls
	}
	return r
}

// resolveSecrets resolves every secret the plan references and registers
// each value with the redactor before anything else happens, so no output
// can ever show one (I1). A secret that cannot be resolved blocks the lines
// that use it (SECRET_UNRESOLVED), not the run.
func (r *inspector) resolveSecrets(ctx context.Context) {
	if rs := r.pr.resolved; rs != nil {
		// The preflight resolved (and registered) every one already.
		for ref, v := range rs.values {
			r.secrets[ref] = v
		}
		r.notes.add(rs.warnings...)
		return
	}
	for _, ref := range r.pr.secretRefs {
		if r.e.Secrets == nil {
			r.secretErr[ref] = errs.New(errs.SECRET_UNRESOLVED, "secret %s: no secret resolver is configured", ref)
			continue
		}
		v, err := r.e.Secrets.Resolve(ctx, ref)
		if err != nil {
			r.secretErr[ref] = err
			continue
		}
		for _, w := range r.e.redactor().Register(v, ref) {
			r.notes.add(Warning{Code: w.Code, Message: w.Message})
		}
		r.secrets[ref] = v
	}
}

// readable drops the scopes List could not read from stored, warning about
// each one by its branch: a damaged or hostile receipt of another scope
// blocks only that scope (its own runs fail RECEIPT_CORRUPT), never this
// one (me); the error's message names the branch or file. Its resources
// are unknown here, so the warning says so.
func readable(stored []receipt.Stored, me string, n *notes) []receipt.Stored {
	out := stored[:0:0]
	for _, s := range stored {
		if s.Err != nil {
			if s.Scope != me {
				n.warn(errs.CodeOf(s.Err), "scope %s/%s is skipped, what it manages is unknown to this run: %s",
					s.Env, s.Scope, errs.Coded(s.Err).Message)
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// output returns a known output of a line.
func (r *inspector) output(line, name string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.outputs[line][name]
	return v, ok && v != nil
}

// learn records outputs of a line (merging), registering sensitive ones
// with the redactor first.
func (r *inspector) learn(pl *pline, outs map[string]any) {
	if len(outs) == 0 {
		return
	}
	for name, v := range outs {
		if spec, ok := pl.outputs[name]; ok && spec.Sensitive {
			if s, ok := v.(string); ok {
				for _, w := range r.e.redactor().Register(s, "output "+pl.id+"."+name) {
					r.notes.warn(w.Code, "%s", w.Message)
				}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.outputs[pl.id]
	if m == nil {
		m = map[string]any{}
		r.outputs[pl.id] = m
	}
	for k, v := range outs {
		m[k] = v
	}
}

// resolve returns the line's parameters with every value form replaced by
// what is known now: an output that exists, a secret's value (apply only),
// else the marker. It also returns the references still pending and the
// first secret that could not be resolved.
func (r *inspector) resolve(pl *pline) (map[string]any, []pendingRef, error) {
	return r.resolveWith(pl, r.apply)
}

// resolveWith is resolve, handing secret values in place of their markers
// when withSecrets.
func (r *inspector) resolveWith(pl *pline, withSecrets bool) (map[string]any, []pendingRef, error) {
	var pend []pendingRef
	var secErr error
	seen := map[string]bool{}
	var walk func(v any) any
	walk = func(v any) any {
		if m, ok := adapter.MarkerOf(v); ok {
			switch m.Kind {
			case adapter.Pending:
				line, out, _ := strings.Cut(m.Ref, ".")
				if val, ok := r.output(line, out); ok {
					return val
				}
				if r.onceGone(line, out) {
					// Answered only by the create, which an earlier run
					// made: what that run wrote stays.
					return adapter.Marker{Kind: adapter.Keep}
				}
				if !seen[m.Ref] {
					seen[m.Ref] = true
					pend = append(pend, r.pendingOf(line, out))
				}
			case adapter.Secret:
				if err := r.secretErr[m.Ref]; err != nil {
					if secErr == nil {
						secErr = err
					}
				} else if withSecrets {
					return r.secrets[m.Ref]
				}
			}
			return m
		}
		switch t := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, x := range t {
				out[k] = walk(x)
			}
			return out
		case []any:
			out := make([]any, len(t))
			for i, x := range t {
				out[i] = walk(x)
			}
			return out
		}
		return v
	}
	params := walk(pl.params).(map[string]any)
	return params, pend, secErr
}

// onceGone reports whether line's output out is a once-only output
// (OutputSpec.Once) that will not come: the line's resource exists (its
// other outputs are known this run) but was not created by this run.
func (r *inspector) onceGone(line, out string) bool {
	src := r.pr.byID[line]
	if src == nil || !src.outputs[out].Once {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	known := r.outputs[line]
	if len(known) == 0 {
		return false
	}
	v, ok := known[out]
	return !ok || v == nil
}

func (r *inspector) pendingOf(line, out string) pendingRef {
	p := pendingRef{line: line, output: out, waitingFor: "apply"}
	if src := r.pr.byID[line]; src != nil {
		if spec, ok := src.outputs[out]; ok && spec.When == adapter.External {
			p.external = true
			p.waitingFor = cmp.Or(spec.Event, "event")
		}
	}
	return p
}

// inputsOf lists the line's parameter leaves with their states. Values of
// secrets and sensitive outputs are never included.
func (r *inspector) inputsOf(pl *pline) []Input {
	var out []Input
	_ = pl.line.Params.Walk(func(path string, v *plan.Value) error {
		switch v.Kind {
		case plan.KindMap, plan.KindList:
			return nil
		case plan.KindFrom:
			in := Input{Path: path, Ref: v.From.String()}
			src := r.pr.byID[v.From.Line]
			sensitive := src != nil && src.outputs[v.From.Output].Sensitive
			val, ok := r.output(v.From.Line, v.From.Output)
			switch {
			case !ok && r.onceGone(v.From.Line, v.From.Output):
				// What an earlier run wrote from it stays (resolve
				// keeps it): nothing is pending.
				in.State = StateKept
			case !ok:
				in.State = StatePending
				in.WaitingFor = r.pendingOf(v.From.Line, v.From.Output).waitingFor
			case sensitive:
				in.State = StateSecret
			default:
				in.State, in.Value = StateResolved, val
			}
			out = append(out, in)
		case plan.KindSecret:
			out = append(out, Input{Path: path, State: StateSecret, Ref: v.Secret})
		case plan.KindKeep:
			out = append(out, Input{Path: path, State: StateKept})
		default:
			val, _ := v.Plain(nil)
			out = append(out, Input{Path: path, State: StateLiteral, Value: val})
		}
		return nil
	})
	return out
}

// inspect reads the line's live state, diffs it and judges it against the
// ledger, setting ls.status to a plan status. It never writes.
func (r *inspector) inspect(ctx context.Context, ls *lineState) {
	pl := ls.pl
	ls.status, ls.err, ls.live, ls.diffs, ls.drift, ls.todo = "", nil, nil, nil, nil, nil
	ls.verdict = map[string]verdict{}
	params, pend, secErr := r.resolve(pl)
	ls.pending = pend
	ls.inputs = r.inputsOf(pl)
	if secErr != nil {
		ls.status, ls.err = PlanBlocked, secErr
		return
	}
	ls.req = adapter.Request{Line: pl.id, Params: params, Provider: pl.provider, Run: r.pr.run, IDs: r.led.knownIDs(pl)}
	ls.parent = ""
	if lk, ok := pl.op.(adapter.ParentLocker); ok {
		id := lk.LockOn(params, pl.provider)
		if id != "" && r.e.redactor().String(id) != id {
			ls.status, ls.err = PlanError, errs.New(errs.INTERNAL, "op %s names a parent object that contains a secret; identities are written to receipts and messages", pl.spec.Name())
			return
		}
		ls.parent = id
	}
	live, err := pl.op.Read(adapter.WithReadCache(ctx, r.reads, ls.parent), ls.req)
	if err != nil {
		r.readFailed(ls, err)
		return
	}
	if live == nil {
		live = &adapter.Live{}
	}
	ls.live = live
	for _, res := range live.Resources {
		r.learnSensitive(pl, res.Outputs)
	}
	r.learnSensitive(pl, live.Outputs)
	diffs, err := pl.op.Diff(live, ls.req)
	if err != nil {
		if !r.onceNothingToKeep(ls, err) {
			r.readFailed(ls, err)
		}
		return
	}
	if pl.spec.Manual {
		r.inspectStep(ls, diffs)
		return
	}
	if !r.apply {
		diffs = r.secretsUnchanged(ls, live, diffs)
	}
	ls.diffs = diffs
	var block *errs.Error
	hasCreate, hasUpdate := false, false
	for _, d := range diffs {
		v := r.judgeDiff(ctx, ls, d)
		ls.verdict[d.Key] = v
		if v.Drift != "" {
			ls.drift = append(ls.drift, Drift{Kind: v.Drift, Line: pl.id, Key: d.Key, Message: v.Message})
		}
		if v.Block != "" && block == nil {
			block = errs.New(v.Block, "line %q, resource %s: %s", pl.id, d.Key, v.Message).With("key", d.Key)
		}
		switch d.Action {
		case adapter.Create:
			hasCreate = true
		case adapter.Update, adapter.Replace:
			hasUpdate = true
		}
	}
	if stale := r.onceStale(ls); stale != nil {
		block = stale // before drift: --reconcile would write the stale value back
	}
	switch {
	case block != nil:
		ls.status, ls.err = PlanBlocked, block
	case len(pend) > 0:
		ls.status = PlanPending
	case hasCreate:
		ls.status = PlanCreate
	case hasUpdate:
		ls.status = PlanUpdate
	default:
		ls.status = PlanUnchanged
	}
}

// inspectStep judges a manual step against the ledger, where its state
// is: recorded with the same value, it is unchanged (done); otherwise it is
// a todo, created once someone confirms it.
func (r *inspector) inspectStep(ls *lineState, diffs []adapter.ResourceDiff) {
	pl := ls.pl
	if len(diffs) != 1 {
		ls.status, ls.err = PlanError, errs.New(errs.INTERNAL, "manual step %q: %d diffs, want one", pl.id, len(diffs))
		return
	}
	d := diffs[0]
	if _, en := r.led.entry(pl.ref(d.Key)); en != nil && d.Desired != nil && en.Hash == r.led.hash(d.Desired) {
		res := adapter.Resource{Key: d.Key, Value: d.Desired, Outputs: cloneMap(en.Outputs)}
		ls.live = &adapter.Live{Resources: []adapter.Resource{res}, Outputs: cloneMap(en.Outputs)}
		ls.diffs = []adapter.ResourceDiff{{Key: d.Key, Action: adapter.Unchanged, Desired: d.Desired}}
		ls.status = PlanUnchanged
		return
	}
	ls.diffs = diffs
	if st, ok := pl.op.(adapter.Stepper); ok {
		t := st.Todo(ls.req)
		ls.todo = &t
	}
	ls.status = PlanCreate
	if len(ls.pending) > 0 {
		ls.status = PlanPending
	}
}

// readFailed is a failed read or diff: pending when the op could not work
// with inputs not known yet, else an error.
func (r *inspector) readFailed(ls *lineState, err error) {
	if len(ls.pending) > 0 {
		ls.status = PlanPending
		return
	}
	ls.status, ls.err = PlanError, r.e.redactor().Error(err)
}

func (r *inspector) learnSensitive(pl *pline, outs map[string]any) {
	for name, v := range outs {
		if spec, ok := pl.outputs[name]; ok && spec.Sensitive {
			if s, ok := v.(string); ok {
				for _, w := range r.e.redactor().Register(s, "output "+pl.id+"."+name) {
					r.notes.warn(w.Code, "%s", w.Message)
				}
			}
		}
	}
}

// ref is the ledger identity of a key of the line.
func (pl *pline) ref(key string) receipt.ResourceRef {
	return receipt.ResourceRef{Adapter: pl.spec.Adapter, Op: pl.spec.Op, Provider: map[string]any(pl.provider), Key: key}
}

func (r *inspector) judgeDiff(ctx context.Context, ls *lineState, d adapter.ResourceDiff) verdict {
	ref := ls.pl.ref(d.Key)
	_, en := r.led.entry(ref)
	lv := ls.live.Resource(d.Key)
	in := judgeIn{Entry: en, Live: lv, Action: d.Action, Keep: ls.pl.keep, Reconcile: r.o.Reconcile}
	// Who else manages it matters only when this ledger does not hold it:
	// always before apply creates, adopts or relies on anything; in plan,
	// for what exists (an absent resource is shown as a create, which
	// apply judges again with the other scopes read).
	if en == nil && (r.apply || lv != nil) {
		name, err := r.owners.owner(ctx, ref.Identity())
		if err != nil {
			return ownersError(err)
		}
		in.Foreign = name
	}
	if lv != nil {
		in.LiveHash = r.led.hash(lv.Value)
	}
	return judge(in)
}

// publicOutputs drops the sensitive outputs of a line.
func (pl *pline) publicOutputs(outs map[string]any) map[string]any {
	if len(outs) == 0 {
		return nil
	}
	m := make(map[string]any, len(outs))
	for k, v := range outs {
		if pl.outputs[k].Sensitive {
			continue
		}
		m[k] = v
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// outputStates renders a line's outputs for results and receipts: every
// declared output as {state, value}, the value null unless resolved.
func (r *inspector) outputStates(pl *pline) map[string]any {
	r.mu.Lock()
	known := r.outputs[pl.id]
	r.mu.Unlock()
	out := map[string]any{}
	for _, spec := range pl.spec.Outputs {
		v, ok := known[spec.Name]
		st := map[string]any{"state": StateResolved, "value": v}
		switch {
		case !ok || v == nil:
			st["state"], st["value"] = StatePending, nil
			st["waiting_for"] = "apply"
			if spec.When == adapter.External {
				st["waiting_for"] = cmp.Or(spec.Event, "event")
			}
		case spec.Sensitive:
			st["state"], st["value"] = StateSecret, nil
		}
		out[spec.Name] = st
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// diffsOf renders a line's diffs for display: markers become states,
// secrets and sensitive values are null beside StateSecret.
func (ls *lineState) diffsOf() []Diff {
	secretRef := func(path string) (string, bool) {
		for _, in := range ls.inputs {
			if in.State != StateSecret {
				continue
			}
			p := in.Path
			if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(p, path+".") || strings.HasSuffix(path, "."+p) {
				return in.Ref, true
			}
		}
		return "", false
	}
	out := make([]Diff, 0, len(ls.diffs))
	for _, d := range ls.diffs {
		x := Diff{Key: d.Key, Action: string(d.Action), Fields: []FieldDiff{}}
		for _, f := range d.Fields {
			fd := FieldDiff{Path: f.Path}
			fd.Before, fd.BeforeState, _ = displayValue(f.Before)
			fd.After, fd.AfterState, fd.AfterRef = displayValue(f.After)
			if ref, ok := secretRef(f.Path); ok {
				// Both sides hidden: what is live was written from the
				// secret too, whether or not the adapter read it.
				if f.Before != nil || d.Action != adapter.Create {
					fd.Before, fd.BeforeState = nil, StateSecret
				}
				fd.After, fd.AfterState, fd.AfterRef = nil, StateSecret, ref
			}
			x.Fields = append(x.Fields, fd)
		}
		out = append(out, x)
	}
	return out
}

// displayValue turns a marker into (nil, its state, its reference) and
// nested markers into {"state": ..., "value": null}.
func displayValue(v any) (any, string, string) {
	if m, ok := adapter.MarkerOf(v); ok {
		return nil, markerState(m.Kind), m.Ref
	}
	if !adapter.HasMarker(v) {
		return v, "", ""
	}
	var walk func(any) any
	walk = func(v any) any {
		if m, ok := adapter.MarkerOf(v); ok {
			return map[string]any{"state": markerState(m.Kind), "value": nil}
		}
		switch t := v.(type) {
		case map[string]any:
			o := make(map[string]any, len(t))
			for k, x := range t {
				o[k] = walk(x)
			}
			return o
		case []any:
			o := make([]any, len(t))
			for i, x := range t {
				o[i] = walk(x)
			}
			return o
		}
		return v
	}
	return walk(v), "", ""
}

func markerState(k adapter.MarkerKind) string {
	switch k {
	case adapter.Pending:
		return StatePending
	case adapter.Secret:
		return StateSecret
	}
	return StateKept
}

// declared are the keys the line's diffs declare.
func (ls *lineState) declared() []string {
	keys := make([]string, 0, len(ls.diffs))
	for _, d := range ls.diffs {
		keys = append(keys, d.Key)
	}
	return keys
}

// secretsUnchanged settles, for plan, the resources whose diff holds a
// secret marker: plan sends no secret to a provider, but without the value
// a diff cannot tell a secret that is already written from one that
// changed, and every line with a secret would show "update" forever. Diff
// is pure and runs in this process, so plan asks it once more with the
// values; a resource it then finds unchanged is shown unchanged. Any other
// diff keeps its markers, so what is displayed and returned as JSON still
// holds states, never values.
func (r *inspector) secretsUnchanged(ls *lineState, live *adapter.Live, diffs []adapter.ResourceDiff) []adapter.ResourceDiff {
	if !adapter.HasMarker(ls.req.Params, adapter.Secret) {
		return diffs
	}
	params, _, err := r.resolveWith(ls.pl, true)
	if err != nil || adapter.HasMarker(params, adapter.Secret) {
		return diffs
	}
	req := ls.req
	req.Params = params
	valued, err := ls.pl.op.Diff(live, req)
	if err != nil {
		return diffs
	}
	same := map[string]adapter.ResourceDiff{}
	for _, d := range valued {
		if d.Action == adapter.Unchanged {
			same[d.Key] = d
		}
	}
	out := slices.Clone(diffs)
	for i, d := range out {
		if v, ok := same[d.Key]; ok && d.Action != adapter.Unchanged {
			out[i] = v
		}
	}
	return out
}
