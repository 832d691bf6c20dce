package engine

import (
	"context"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
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
