package engine

import (
	"context"
	"fmt"
	"sort"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
)

// secretUse is where a secret reference is first used in a plan.
type secretUse struct {
	line string
	pos  errs.Pos
}

// resolvedSecrets are the values of a plan's secrets, read once by the
// preflight, with the warnings their registration with the redactor gave.
type resolvedSecrets struct {
	values   map[string]string
	warnings []Warning
}

// preflight is prepare followed by every other check that needs no
// provider and no store: every secret the active lines use is resolved
// (an unset or empty env:// variable, a file:// path outside the working
// tree, a FIFO, an unreadable or empty file all refuse the run) and its
// value registered with the redactor. The refusals of prepare and of the
// secrets come back together, one errs.List, so a run is refused once
// with everything that is wrong, before the first lease, read or write.
// On success pr.resolved holds the values the run will use.
//
// With formOnly, nothing of the run's secrets is needed: credentials are
// not looked up and each reference is checked by its form only (a file://
// path outside the working tree is still refused); pr.resolved stays nil.
func (e *Engine) preflight(ctx context.Context, p *plan.Plan, c scope.Ctx, o Options, formOnly bool) (*prepared, error) {
	pr, err := e.prepareAll(p, c, o, !formOnly)
	if pr == nil {
		return nil, err
	}
	list := errs.List(errs.Flatten(err))
	var (
		rs  *resolvedSecrets
		bad errs.List
	)
	if formOnly {
		bad = e.validateAll(pr)
	} else {
		rs, bad = e.resolveAll(ctx, pr)
		bad = append(bad, refuseStructural(pr, rs)...)
	}
	if err := ctx.Err(); err != nil {
		return nil, errs.Wrap(err, errs.INTERRUPTED, "the run was interrupted while its secrets were read; nothing was written")
	}
	list = append(list, bad...)
	if err := list.Err(); err != nil {
		return nil, err
	}
	pr.resolved = rs
	return pr, nil
}

// resolveAll resolves every secret of pr, each once, registering each
// value with the redactor before anything else can print it (I1). Each
// reference that does not resolve is one error, placed where the plan
// first uses it.
func (e *Engine) resolveAll(ctx context.Context, pr *prepared) (*resolvedSecrets, errs.List) {
	rs := &resolvedSecrets{values: map[string]string{}}
	var list errs.List
	for _, ref := range pr.secretRefs {
		if e.Secrets == nil {
			list = append(list, e.secretError(pr, ref, errs.New(errs.SECRET_UNRESOLVED, "secret %s: no secret resolver is configured", ref)))
			continue
		}
		v, err := e.Secrets.Resolve(ctx, ref)
		if err != nil {
			list = append(list, e.secretError(pr, ref, err))
			continue
		}
		for _, w := range e.redactor().Register(v, ref) {
			rs.warnings = append(rs.warnings, Warning{Code: w.Code, Message: w.Message})
		}
		rs.values[ref] = v
	}
	return rs, list
}

// validateAll checks every secret of pr by its form, reading nothing.
func (e *Engine) validateAll(pr *prepared) errs.List {
	var list errs.List
	for _, ref := range pr.secretRefs {
		if e.Secrets == nil {
			continue
		}
		if err := e.Secrets.Validate(ref); err != nil {
			list = append(list, e.secretError(pr, ref, err))
		}
	}
	return list
}

// secretError is the resolver's error about ref, coded, redacted and
// placed at the reference's first use, naming the line.
func (e *Engine) secretError(pr *prepared, ref string, err error) *errs.Error {
	x := errs.Coded(e.redactor().Error(err))
	use := pr.secretAt[ref]
	if x.Pos.IsZero() {
		x.Pos = use.pos
	}
	if use.line != "" {
		x = x.With("line", use.line)
	}
	return x
}

// Check runs every check plan and apply run before they touch the store
// or a provider, for p in env with the scope of c, and nothing else: the
// same preflight apply runs, so whatever Check accepts also plans and
// starts to apply. It opens no store and calls no provider; it reads the
// environment (credentials, env:// secrets) and the file:// secrets, as
// a run does, and registers their values with the redactor. The errors
// are the refusals, together, as an errs.List.
func (e *Engine) Check(p *plan.Plan, c scope.Ctx, env string) error {
	_, err := e.preflight(context.Background(), p, c, Options{Env: env}, false)
	return err
}

// CheckForm is Check without the run's secrets, for a check that runs
// where they are not given (a CI step of pull requests from forks):
// credentials are not looked up and secrets are not resolved, but every
// reference is checked by its form, file:// confinement included.
func (e *Engine) CheckForm(p *plan.Plan, c scope.Ctx, env string) error {
	_, err := e.preflight(context.Background(), p, c, Options{Env: env}, true)
	return err
}

// structural is one name the run records as it is (see redactHeader in
// recorder.go): what it is, for messages that must not print it, the line
// it belongs to, if any, and its text.
type structural struct {
	what, line, text string
}

// structuralNames are the names pr's run will record before any output is
// known: the env, the scope, the branch, the repository, every line id,
// every string of the lines' provider blocks and literal parameters (the
// ledger's keys are made of these), and the parent identities the ops can
// tell from them.
func structuralNames(pr *prepared) []structural {
	out := []structural{
		{what: "the environment's name", text: pr.env},
		{what: "the scope's name", text: pr.scope},
		{what: "the branch's name", text: pr.run.Branch},
		{what: "the repository's name", text: pr.run.Repo},
	}
	for _, pl := range pr.lines {
		out = append(out, structural{what: "a line id", line: pl.id, text: pl.id})
		walkStrings(map[string]any(pl.provider), "providers."+pl.spec.Adapter, func(path, s string) {
			out = append(out, structural{what: "the provider block's " + path, line: pl.id, text: s})
		})
		walkStrings(pl.params, "with", func(path, s string) {
			out = append(out, structural{what: "the literal parameter " + path, line: pl.id, text: s})
		})
		if id := parentOf(pl); id != "" {
			out = append(out, structural{what: "the identity of the parent object the line locks", line: pl.id, text: id})
		}
	}
	return out
}

// parentOf is the identity of the shared object pl's op locks (LockOn),
// when the op can tell it from the line's literal parameters and its
// provider block, as most do (a list, an application); "" when it
// cannot before the run resolves the line. LockOn is pure; one that
// does not expect unresolved parameters gives nothing here.
func parentOf(pl *pline) (id string) {
	lk, ok := pl.op.(adapter.ParentLocker)
	if !ok {
		return ""
	}
	defer func() {
		if recover() != nil {
			id = ""
		}
	}()
	return lk.LockOn(pl.params, pl.provider)
}

// walkStrings calls f with every string leaf of v and its dotted path;
// markers (pending outputs, secrets, keep) are not literals.
func walkStrings(v any, path string, f func(path, s string)) {
	switch x := v.(type) {
	case string:
		f(path, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkStrings(x[k], path+"."+k, f)
		}
	case []any:
		for i, e := range x {
			walkStrings(e, fmt.Sprintf("%s[%d]", path, i), f)
		}
	}
}

// refuseStructural refuses every resolved secret whose value is, or
// occurs in (in any form the redactor masks), a name the run records as
// it is. Names are structure, never masked (a masked scope files the
// receipt under "***"; a masked key loses the resource it names), so such
// a secret would reach receipts and logs in clear. The refusal comes with
// the preflight's others, before the first lease, read or write. A value
// too short or too common to be masked (SHORT_SECRET) masks nothing and is
// not refused. The messages name what collides, never its text.
func refuseStructural(pr *prepared, rs *resolvedSecrets) errs.List {
	if rs == nil || len(rs.values) == 0 {
		return nil
	}
	names := structuralNames(pr)
	var list errs.List
	for _, ref := range pr.secretRefs {
		v, ok := rs.values[ref]
		if !ok {
			continue
		}
		one := redact.New()
		if ws := one.Register(v, ref); len(ws) > 0 || one.Len() == 0 {
			continue
		}
		for _, n := range names {
			if n.text == "" || one.String(n.text) == n.text {
				continue
			}
			x := errs.New(errs.SECRET_IN_STRUCTURE, "the secret %s is, or occurs in, %s, which Sponson records as it is in receipts, file names and output; nothing was written", ref, n.what).
				WithHint("Give %s a value of its own (and rotate it), or rename what it collides with; a value that is public in the plan or the event is not a secret.", ref).
				With("secret", ref)
			if n.line != "" {
				x = x.With("line", n.line)
			}
			if use := pr.secretAt[ref]; !use.pos.IsZero() {
				x.Pos = use.pos
			}
			list = append(list, x)
			break
		}
	}
	return list
}

// refuseSecretKeys refuses a line, before its first write, whose
// resources' keys hold a value the run's redactor masks. Such a key is
// made of what the preflight could not see: an output of an earlier line
// (a callback's URL built from a deployment's), a secret registered as
// the run went. Keys are structure, stored and printed as they are
// (refuseStructural), so the line is refused rather than recorded with a
// secret in its key or with a masked key that names nothing. The message
// shows the key masked.
func refuseSecretKeys(rd *redact.Redactor, ls *lineState) error {
	for _, d := range ls.diffs {
		if red := rd.String(d.Key); red != d.Key {
			return errs.New(errs.SECRET_IN_STRUCTURE, "line %q would record the resource %s, whose key holds a secret's value (from an earlier line's output or the plan's secrets); nothing of the line was written", ls.pl.id, red).
				WithHint("Give the secret a value of its own (and rotate it): a value that reaches a resource's key, such as a URL built from a deployment, is public, not a secret.").
				With("line", ls.pl.id)
		}
	}
	return nil
}
