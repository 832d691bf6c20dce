package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/scope"
)

// ValidateOptions are `sponson validate`'s.
type ValidateOptions struct {
	f     *Factory
	Scope ScopeOptions
	Plan  PlanFile
	// NoCredentials checks the names and forms of credentials and
	// secrets, not their values.
	NoCredentials bool
}

func newCmdValidate(f *Factory, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the plan file without touching anything",
		Long: `Parses and checks the plan file: every key, value form, reference, cycle, environment
filter and secret literal, and every adapter, op and output against the catalogue. When the scope
of a run can be derived here (from flags, SPONSON_CTX_*, GitHub or the local checkout), it also
resolves every ${ctx.*} and prints the order in which the lines would run. With --env, only that
environment is checked; otherwise every environment of the plan. It runs every check plan
runs before it reads anything (each op's parameters, recipes, the credentials each line needs,
every secret resolving: env:// set, file:// inside the working tree or SPONSON_SECRET_DIRS and a
regular file), so a plan that validates also plans. Run it where the run's credentials are set;
with --no-credentials (a CI step that is given no provider secrets) everything else is checked.`,
		Example: `  sponson validate
  sponson validate --plan examples/preview-stack.release.plan.yaml --env preview
  sponson validate --pr 12 --branch feat/login --sha 0123456789abcdef0123456789abcdef01234567
  sponson validate --no-credentials --json`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, validateRun),
	}
	addPlanFlag(cmd, &opts.Plan)
	addScopeFlags(cmd, &opts.Scope)
	cmd.Flags().BoolVar(&opts.NoCredentials, "no-credentials", false,
		"check without the run's credentials and secrets: their names and forms are checked (file:// confinement included), not their values")
	return cmd
}

// envOrder is the run order of one environment.
type envOrder struct {
	Env   string      `json:"env"`
	Lines []orderLine `json:"lines"`
}

type orderLine struct {
	ID       string            `json:"id"`
	Adapter  string            `json:"adapter"`
	Op       string            `json:"op"`
	After    []string          `json:"after"`
	Resolved map[string]string `json:"resolved,omitempty"` // parameters with ${ctx.*}, as they resolve
}

func validateRun(opts *ValidateOptions) error {
	f := opts.f
	// The scope is optional here: validate must work on a laptop with no
	// pull request. A scope asked for explicitly must be derivable.
	ctx, ctxErr := opts.Scope.compute(f)
	var ctxp *scope.Ctx
	var note string
	switch {
	case ctxErr == nil:
		ctxp = &ctx
		f.answer.warn(ctx.Warnings()...)
	case errs.CodeOf(ctxErr) == errs.USAGE && !opts.Scope.given("pr") && !opts.Scope.given("branch"):
		note = "no scope can be derived here, so ${ctx.*} values were checked by name only; pass --pr N or --branch NAME to resolve them"
	default:
		return ctxErr
	}

	p, err := opts.Plan.load(f)
	if err != nil {
		return err
	}
	f.answer.warn(p.Warnings...)
	var problems errs.List
	eng := f.checker()
	checkErr := p.Check(eng.Catalog())
	problems = append(problems, errs.Flatten(checkErr)...)

	var orders []envOrder
	for _, env := range opts.envs(p) {
		lines, err := p.Select(env)
		if err != nil {
			problems = append(problems, errs.Flatten(err)...)
			continue
		}
		if checkErr == nil {
			// The engine's own static checks, as plan runs them: op
			// parameters, recipes, credentials present.
			problems = append(problems, engineCheck(eng, p, ctxp, env, opts.NoCredentials)...)
		}
		o, errl := runOrder(env, lines, ctxp)
		problems = append(problems, errl...)
		orders = append(orders, o)
	}
	if err := problems.Err(); err != nil {
		return dedupe(err)
	}

	result := map[string]any{"file": p.File, "plan": p.Summary(), "order": orders, "ctx": ctxp}
	if note != "" {
		result["note"] = note
	}
	f.answer.set(result, func(w io.Writer) { writeValid(w, p, ctxp, note, orders) })
	return nil
}

// envs are the environments validate checks: --env or SPONSON_CTX_ENV,
// else every environment of the plan.
func (opts *ValidateOptions) envs(p *plan.Plan) []string {
	if opts.Scope.given("env") {
		return []string{opts.Scope.Env}
	}
	if env := opts.f.Env.Getenv("SPONSON_CTX_ENV"); env != "" {
		return []string{env}
	}
	return p.Environments
}

// runOrder is the run order of env's lines, each with the parameters
// ${ctx.*} changed when the scope is known.
func runOrder(env string, lines []*plan.Line, ctxp *scope.Ctx) (envOrder, errs.List) {
	var problems errs.List
	o := envOrder{Env: env, Lines: []orderLine{}}
	for _, ln := range lines {
		ol := orderLine{ID: ln.ID, Adapter: ln.Adapter, Op: ln.Op, After: ln.Deps()}
		if ol.After == nil {
			ol.After = []string{}
		}
		if ctxp != nil {
			vars := ctxp.Vars()
			vars["env"] = &env
			resolved, err := ln.Interpolate(vars)
			if err != nil {
				problems = append(problems, errs.Flatten(err)...)
			} else {
				ol.Resolved = interpolated(ln.Params, resolved.Params)
			}
		}
		o.Lines = append(o.Lines, ol)
	}
	return o, problems
}

// writeValid is validate's text answer.
func writeValid(w io.Writer, p *plan.Plan, ctxp *scope.Ctx, note string, orders []envOrder) {
	fmt.Fprintf(w, "%s: valid (format %d, %s, environments %s)\n", p.File, p.Version, report.Count(len(p.Lines), "line"), strings.Join(p.Environments, ", "))
	if ctxp != nil {
		fmt.Fprintf(w, "scope %s", ctxp.Scope)
		if ctxp.Git.Branch != "" {
			fmt.Fprintf(w, ", branch %s", ctxp.Git.Branch)
		}
		if ctxp.Git.ShortSHA != "" {
			fmt.Fprintf(w, ", commit %s", ctxp.Git.ShortSHA)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "note: %s\n", note)
	}
	for _, o := range orders {
		if len(o.Lines) == 0 {
			fmt.Fprintf(w, "\n%s: no lines (each line names other environments)\n", o.Env)
			continue
		}
		fmt.Fprintf(w, "\n%s: %s in run order\n", o.Env, report.Count(len(o.Lines), "line"))
		for i, l := range o.Lines {
			fmt.Fprintf(w, "  %d. %-12s %s.%s", i+1, l.ID, l.Adapter, l.Op)
			if len(l.After) > 0 {
				fmt.Fprintf(w, "  after %s", strings.Join(l.After, ", "))
			}
			fmt.Fprintln(w)
			for _, k := range slices.Sorted(maps.Keys(l.Resolved)) {
				fmt.Fprintf(w, "       %s = %s\n", k, l.Resolved[k])
			}
		}
	}
}

// engineCheck runs the engine's checks for env, as plan and apply run
// them before anything is read, and returns the refusals: a missing
// credential or a secret that does not resolve is one, as it is for
// plan (with formOnly, only their names and forms are checked). Without a scope, ${ctx.*} resolves to stand-in values (their
// names were checked by the plan).
func engineCheck(eng *engine.Engine, p *plan.Plan, ctxp *scope.Ctx, env string, formOnly bool) errs.List {
	c := validateCtx()
	if ctxp != nil {
		c = *ctxp
	}
	c.Env = env
	if formOnly {
		return errs.Flatten(eng.CheckForm(p, c, env))
	}
	return errs.Flatten(eng.Check(p, c, env))
}

// validateCtx is the stand-in context validate checks with when no scope
// can be derived: every ${ctx.*} has a value of its usual shape.
func validateCtx() scope.Ctx {
	n := 1
	c := scope.Ctx{Scope: "pr-1", Repo: "owner/repo"}
	c.PR.Number = &n
	c.Git.Branch, c.Git.SHA, c.Git.ShortSHA = "validate", strings.Repeat("0", 40), "0000000"
	return c
}

// interpolated lists the string parameters that ${ctx.*} changed, by path.
func interpolated(before, after *plan.Value) map[string]string {
	was := map[string]string{}
	before.Walk(func(path string, v *plan.Value) error {
		if v.Kind == plan.KindString {
			was[path] = v.Str
		}
		return nil
	})
	out := map[string]string{}
	after.Walk(func(path string, v *plan.Value) error {
		if v.Kind == plan.KindString && was[path] != v.Str {
			out[path] = v.Str
		}
		return nil
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// dedupe drops errors reported twice (the same code at the same place, as
// when a line is refused in two environments).
func dedupe(err error) error {
	seen := map[string]bool{}
	var out errs.List
	for _, e := range errs.Flatten(err) {
		k := e.Error()
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out.Err()
}
