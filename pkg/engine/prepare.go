package engine

import (
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/scope"
	"strings"
)

// prepared is a plan made ready for one run: every decision that needs no
// I/O is taken, every refusal (exit 2) is found.
type prepared struct {
	env, scope string
	ctx        scope.Ctx
	run        adapter.RunCtx
	lines      []*pline // in run order
	byID       map[string]*pline
	secretRefs []string // distinct, in order of first use
	// secretAt is where each secret is first used: the line and the
	// position of its reference, for the preflight's errors.
	secretAt map[string]secretUse
	// resolved holds the secrets the preflight resolved and registered
	// (nil when none ran, as for plan): the run uses these values, read
	// once, not a second reading that could differ.
	resolved   *resolvedSecrets
	production bool   // the run may write production: approval needed
	planHash   string // plan.Hash of the plan prepared ("" for destroy)
}

// pline is one line of a prepared plan.
type pline struct {
	id       string
	line     *plan.Line // interpolated
	op       adapter.Op
	spec     adapter.Spec
	provider adapter.Provider
	// params are the line's parameters after interpolation and op defaults,
	// with every value form as a marker: Pending{"line.output"},
	// Secret{"env://X"}, Keep. Resolution replaces them per inspection.
	params  map[string]any
	deps    []string
	outputs map[string]adapter.OutputSpec
	keep    bool // a {keep: true} somewhere: the line adopts what is live
	// recipe is the recipe a line was expanded from (http.recipe), for
	// display only: the ledger records the expansion.
	recipe string
}

// prepare checks and readies p for env (o.Env, else c.Env, else preview) and
// the scope of c. Every error is a refusal before anything is read:
// ENV_UNKNOWN, REF_FILTERED, ADAPTER_UNKNOWN, OP_UNKNOWN, NOT_IMPLEMENTED,
// REF_OUTPUT_UNKNOWN, CTX_NULL, PARAM_INVALID, USAGE (no scope), returned
// together as an errs.List where several are found.
func (e *Engine) prepare(p *plan.Plan, c scope.Ctx, o Options) (*prepared, error) {
	pr, err := e.prepareAll(p, c, o, true)
	if err != nil {
		return nil, err
	}
	return pr, nil
}

// prepareAll is prepare that also returns what it prepared when the
// refusals are of single lines (so the preflight can add its own to the
// same list); pr is nil when the plan as a whole is refused. Credentials
// are looked up only when withCredentials.
func (e *Engine) prepareAll(p *plan.Plan, c scope.Ctx, o Options, withCredentials bool) (*prepared, error) {
	if p == nil {
		return nil, errs.New(errs.INTERNAL, "engine: nil plan")
	}
	env := envFor(o, c)
	c.Env = env
	if c.Scope == "" {
		return nil, errs.New(errs.USAGE, "no scope: the run's context names none").
			WithHint("Give the scope with --pr or --branch.")
	}
	if err := scope.Validate(c.Scope); err != nil {
		return nil, err
	}
	if err := p.Check(e.Catalog()); err != nil {
		return nil, err
	}
	lines, err := p.Select(env)
	if err != nil {
		return nil, err
	}
	pr := &prepared{env: env, scope: c.Scope, ctx: c, run: runCtx(c), byID: map[string]*pline{}, secretAt: map[string]secretUse{}, planHash: p.Hash()}
	pr.production = plan.Production(env)
	b := &lineBuilder{e: e, p: p, pr: pr, vars: c.Vars(), seenSecret: map[string]bool{}}
	var list errs.List
	for _, ln := range lines {
		pl, bad := b.line(ln)
		if len(bad) > 0 {
			list = append(list, bad...)
			continue
		}
		pr.lines = append(pr.lines, pl)
		pr.byID[pl.id] = pl
	}
	list = append(list, pr.checkNamed(o)...)
	if withCredentials {
		list = append(list, e.credentials(pr)...)
	}
	return pr, list.Err()
}

// lineBuilder readies the lines of one plan for a run (prepareAll).
type lineBuilder struct {
	e          *Engine
	p          *plan.Plan
	pr         *prepared
	vars       map[string]*string
	seenSecret map[string]bool
}

// line readies one line: its op, interpolation, provider block and
// parameters (a recipe expanded, op defaults applied), or the refusals.
func (b *lineBuilder) line(ln *plan.Line) (*pline, errs.List) {
	op, ok := b.e.Ops.Lookup(ln.Adapter, ln.Op)
	if !ok {
		return nil, errs.List{errs.At(ln.OpPos, errs.NOT_IMPLEMENTED,
			"op %s.%s is not registered in this Sponson", ln.Adapter, ln.Op)}
	}
	il, err := ln.Interpolate(b.vars)
	if err != nil {
		return nil, errs.Flatten(err)
	}
	provider, err := providerBlock(b.p, ln.Adapter)
	if err != nil {
		return nil, errs.Flatten(err)
	}
	pl := &pline{id: ln.ID, line: il, op: op, spec: op.Spec(), provider: provider, deps: ln.Deps()}
	pl.indexOutputs()
	params, err := il.PlainParams(func(_ string, v *plan.Value) (any, error) { return b.marker(ln, pl, v), nil })
	if err != nil {
		return nil, errs.Flatten(err)
	}
	if x, ok := op.(adapter.Expander); ok {
		var bad errs.List
		if params, provider, bad = b.expand(ln, pl, x, params, provider); len(bad) > 0 {
			return nil, bad
		}
		op = pl.op
	}
	if d, ok := op.(adapter.Defaulter); ok {
		if params, err = d.Defaults(params, provider, b.pr.run); err != nil {
			return nil, b.refused(ln, err)
		}
	}
	pl.params = params
	if pw, ok := op.(adapter.ProductionWriter); ok && plan.Production(pw.WritesEnvironment(params, provider, b.pr.run)) {
		b.pr.production = true
	}
	return pl, nil
}

// indexOutputs indexes the line's outputs by name from its spec.
func (pl *pline) indexOutputs() {
	pl.outputs = map[string]adapter.OutputSpec{}
	for _, os := range pl.spec.Outputs {
		pl.outputs[os.Name] = os
	}
}

// marker is the parameter value form v as a marker: Pending for an
// output of another line, Secret (noting the reference's first use), else
// Keep.
func (b *lineBuilder) marker(ln *plan.Line, pl *pline, v *plan.Value) any {
	switch v.Kind {
	case plan.KindFrom:
		return adapter.Marker{Kind: adapter.Pending, Ref: v.From.String()}
	case plan.KindSecret:
		if !b.seenSecret[v.Secret] {
			b.seenSecret[v.Secret] = true
			b.pr.secretRefs = append(b.pr.secretRefs, v.Secret)
			b.pr.secretAt[v.Secret] = secretUse{line: ln.ID, pos: v.Pos}
		}
		return adapter.Marker{Kind: adapter.Secret, Ref: v.Secret}
	default:
		pl.keep = true
		return adapter.Marker{Kind: adapter.Keep}
	}
}

// expand makes a recipe line its expansion: from here on plan, apply, the
// ledger and destroy see only the expanded op, parameters and provider
// block (pl is changed in place).
func (b *lineBuilder) expand(ln *plan.Line, pl *pline, x adapter.Expander, params map[string]any, provider adapter.Provider) (map[string]any, adapter.Provider, errs.List) {
	exp, err := x.Expand(params, provider, b.pr.run)
	var op adapter.Op
	if err == nil {
		var found bool
		if op, found = b.e.Ops.Lookup(ln.Adapter, exp.Op); !found {
			err = errs.New(errs.INTERNAL, "line %q expands to %s.%s, which is not registered", ln.ID, ln.Adapter, exp.Op)
		}
	}
	if err != nil {
		var list errs.List
		for _, x := range errs.Flatten(err) {
			x = b.e.redactor().Error(x).(*errs.Error)
			if x.Pos.IsZero() {
				x.Pos = paramPos(ln, x)
			}
			list = append(list, x)
		}
		return nil, nil, list
	}
	pl.recipe, _ = params["recipe"].(string)
	pl.op, pl.spec, pl.provider = op, op.Spec(), exp.Provider
	if exp.Outputs != nil {
		pl.spec.Outputs = exp.Outputs
	}
	if exp.Credentials != nil {
		pl.spec.Credentials, pl.spec.BaseURLVar = exp.Credentials, exp.BaseURLVar
	}
	pl.indexOutputs()
	return exp.Params, exp.Provider, nil
}

// refused are an op's refusals of a line's parameters (Defaults), each
// placed at the parameter it names and coded PARAM_INVALID.
func (b *lineBuilder) refused(ln *plan.Line, err error) errs.List {
	var list errs.List
	for _, x := range errs.Flatten(err) {
		x = b.e.redactor().Error(x).(*errs.Error)
		if x.Pos.IsZero() {
			x.Pos = paramPos(ln, x)
		}
		if x.Code != errs.PARAM_INVALID && x.Code != errs.INTERNAL {
			x = errs.Wrap(x, errs.PARAM_INVALID, "line %q: parameters refused", ln.ID)
			x.Pos = ln.Pos
		}
		list = append(list, x)
	}
	return list
}

// checkNamed refuses --confirm and --recreate names that are no line of
// the plan, or the wrong kind of line.
func (pr *prepared) checkNamed(o Options) errs.List {
	var list errs.List
	for _, id := range o.Confirm {
		switch pl := pr.byID[id]; {
		case pl == nil:
			list = append(list, errs.New(errs.USAGE, "--confirm names %q, which is no line of this plan in environment %s", id, pr.env))
		case !pl.spec.Manual:
			list = append(list, errs.New(errs.USAGE, "--confirm names %q, a %s line: only manual steps are confirmed", id, pl.spec.Name()).
				WithHint("Confirm a manual.step line; other lines are applied."))
		}
	}
	for _, id := range o.Recreate {
		switch pl := pr.byID[id]; {
		case pl == nil:
			list = append(list, errs.New(errs.USAGE, "--recreate names %q, which is no line of this plan in environment %s", id, pr.env))
		case pl.spec.Manual:
			list = append(list, errs.New(errs.USAGE, "--recreate names %q, a manual step: a step a person did is never undone by Sponson", id).
				WithHint("Change the step's instructions to ask for it again, or confirm it again."))
		}
	}
	return list
}

// credentials checks, with no I/O, that every variable an active line's op
// names in its Spec (Credentials) is set to something that can be a
// credential: missing or malformed, the run is refused before anything is
// read or written (CREDENTIAL_MISSING, exit 2) — not after another line
// has already written to a provider. Nothing is checked without LookupEnv.
func (e *Engine) credentials(pr *prepared) errs.List {
	if e.LookupEnv == nil {
		return nil
	}
	var list errs.List
	seen := map[string]bool{}
	for _, pl := range pr.lines {
		for _, name := range pl.spec.Credentials {
			if seen[name] {
				continue
			}
			seen[name] = true
			v, ok := e.LookupEnv(name)
			var problem string
			switch {
			case !ok || strings.TrimSpace(v) == "":
				problem = "is not set"
			case strings.TrimSpace(v) != v || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
				problem = "is malformed (surrounding whitespace or a control character)"
			default:
				continue
			}
			list = append(list, errs.At(pl.line.OpPos, errs.CREDENTIAL_MISSING,
				"line %q (%s) needs the credential %s, which %s", pl.id, pl.spec.Name(), name, problem).
				With("variable", name).
				WithHint("Set %s to the provider's token in the run's environment (in Actions: env: %s: ${{ secrets.%s }}); nothing was read or written.", name, name, name))
		}
	}
	return list
}

// approve refuses a run that may write production and names no approver
// (ENV_NOT_APPROVED, exit 2).
func (pr *prepared) approve(o Options) error {
	if pr.production && o.ApprovedBy == "" {
		what := "--env " + pr.env
		if !plan.Production(pr.env) {
			what = "a line that writes production"
		}
		return errs.New(errs.ENV_NOT_APPROVED, "environment %s of scope %s may write production (%s) and no approver is named", pr.env, pr.scope, what)
	}
	return nil
}

func runCtx(c scope.Ctx) adapter.RunCtx {
	return adapter.RunCtx{Env: c.Env, Scope: c.Scope, Branch: c.Git.Branch, SHA: c.Git.SHA, Repo: c.Repo, PR: c.PR.Number}
}

func providerBlock(p *plan.Plan, name string) (adapter.Provider, error) {
	v := p.Providers[name]
	if v == nil {
		return adapter.Provider{}, nil
	}
	x, err := v.Plain(nil)
	if err != nil {
		return nil, err
	}
	m, _ := x.(map[string]any)
	return adapter.Provider(m), nil
}

// Catalog is what plans are checked against: the registered ops (the
// registry is the one list of ops; a test's fake ops included), with
// per-line outputs.
func (e *Engine) Catalog() plan.Catalog {
	return lineCatalog{Catalog: e.Ops.Catalog(), ops: e.Ops}
}

type lineCatalog struct {
	*adapter.Catalog
	ops *adapter.Registry
}

// OutputsOf implements plan.LineOutputs: an op whose outputs depend on the
// line is asked with the line's parameters as written.
func (u lineCatalog) OutputsOf(name, op string, params *plan.Value) []string {
	if o, ok := u.ops.Lookup(name, op); ok {
		if lo, ok := o.(adapter.LineOutputser); ok {
			m, _ := params.Data().(map[string]any)
			return lo.LineOutputs(m)
		}
	}
	return u.Outputs(name, op)
}

// paramPos is where in the plan an op's error about line ln belongs: the
// parameter it names (its "param" detail, a dotted path such as
// values.DATABASE_URL, as far as the plan spells it), else the line.
func paramPos(ln *plan.Line, x *errs.Error) errs.Pos {
	name, _ := x.Details["param"].(string)
	if name == "" || ln.Params == nil {
		return ln.Pos
	}
	pos, v := ln.Pos, ln.Params
	for _, seg := range strings.Split(name, ".") {
		found := false
		if v != nil && v.Kind == plan.KindMap {
			for _, f := range v.Fields {
				if f.Key == seg {
					pos, v, found = f.KeyPos, f.Value, true
					break
				}
			}
		}
		if !found {
			break
		}
	}
	return pos
}
