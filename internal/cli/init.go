package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/initplan"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
)

// InitOptions are `sponson init`'s.
type InitOptions struct {
	f     *Factory
	Scope ScopeOptions
	Plan  PlanFile
	Store StoreOptions
	// Adopt are the keys of the unmanaged resources to adopt; none: every
	// one plan reports.
	Adopt []string
}

func newCmdInit(f *Factory, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Detect the repository's stack and write a starter plan, or adopt unmanaged resources",
		Long: `Reads the repository: dependency manifests (package.json, go.mod, requirements.txt,
pyproject.toml), provider files (vercel.json, .vercel/project.json, netlify.toml,
supabase/config.toml, wrangler.toml), ORMs (a Prisma schema, a Drizzle config), the names (never the
values) of the variables in .env files and CI configuration, and provider ids in the environment
(VERCEL_PROJECT_ID, NEON_PROJECT_ID, ...). Without a plan it writes a starter release.plan.yaml for
the providers an op manages, which validates, with a placeholder marked FILL IN for each value it
could not find. With a plan it plans the scope and appends a line adopting each unmanaged
resource it reports ({keep: true} for values it does not control), or only the one --adopt names;
running it again adds nothing. Either way it adds .sponson/ to .gitignore once, and reports what it
found, the services no op manages (with what to use instead) and the placeholders left to fill.`,
		Example: `  sponson init
  sponson init --json
  sponson init --pr 12 --receipts local
  sponson init --pr 12 --adopt branch:sponson/preview/pr-9`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, initRun),
	}
	addPlanFlag(cmd, &opts.Plan)
	addScopeFlags(cmd, &opts.Scope)
	addStoreFlags(cmd, &opts.Store)
	cmd.Flags().StringArrayVar(&opts.Adopt, "adopt", nil, "adopt only the unmanaged resource of this key (as plan reports it); repeatable")
	return cmd
}

// initResult is init's answer.
type initResult struct {
	Detected *initplan.Detection `json:"detected"`
	Plan     initPlan            `json:"plan"`
	Adopted  []initAdopted       `json:"adopted"`
	// Gitignore is true when .sponson/ was added to .gitignore.
	Gitignore bool     `json:"gitignore_changed"`
	Notes     []string `json:"notes"`
}

type initPlan struct {
	File         string                 `json:"file"`
	Written      bool                   `json:"written"` // a starter plan was written
	Lines        []string               `json:"lines"`
	Placeholders []initplan.Placeholder `json:"placeholders"`
}

type initAdopted struct {
	ID   string `json:"id"`
	Line string `json:"line"`
	Key  string `json:"key"`
	New  bool   `json:"new"` // false: the plan had the line already
}

func initRun(opts *InitOptions) error {
	f := opts.f
	res := &initResult{Adopted: []initAdopted{}, Notes: []string{}}
	res.Detected = initplan.Detect(os.DirFS(cmpDir(f.Env.Dir)), f.Env.LookupEnv)
	res.Plan = initPlan{File: opts.Plan.Path, Lines: []string{}, Placeholders: []initplan.Placeholder{}}
	path := f.Env.Path(opts.Plan.Path)
	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		if len(opts.Adopt) > 0 {
			return errs.New(errs.USAGE, "--adopt needs a plan, and there is none at %s", opts.Plan.Path).
				WithHint("Run `sponson init` without --adopt to write a starter plan first.")
		}
		if err := opts.writeStarter(res, path); err != nil {
			return err
		}
	case err != nil:
		return errs.Wrap(err, errs.PLAN_PARSE, "cannot read the plan file %s", opts.Plan.Path)
	default:
		if err := opts.adopt(res, path); err != nil {
			return err
		}
	}
	gitignore := f.Env.Path(".gitignore")
	old, err := os.ReadFile(gitignore)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errs.Wrap(err, errs.FILE_UNWRITABLE, "cannot read %s", gitignore)
	}
	if next, changed := initplan.Ignore(old); changed {
		if err := initplan.WriteFile(gitignore, next, false); err != nil {
			return err
		}
		res.Gitignore = true
	}
	f.answer.set(jsonFields(res), func(w io.Writer) { writeInit(w, res) })
	return nil
}

func cmpDir(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// writeStarter renders the starter plan, checks it as validate would
// (refusing to write a plan that would not validate), and writes it.
func (opts *InitOptions) writeStarter(res *initResult, path string) error {
	f := opts.f
	s := initplan.RenderStarter(res.Detected)
	p, err := plan.ParseContext(f.Context, opts.Plan.Path, s.Plan)
	if err == nil {
		eng := f.checker()
		if err = p.Check(eng.Catalog()); err == nil {
			err = eng.CheckForm(p, validateCtx(), "preview")
		}
	}
	if err != nil {
		return errs.Wrap(err, errs.INTERNAL, "the starter plan does not validate").
			WithHint("This is a bug in Sponson: report it with the output of `sponson init --json`.")
	}
	if err := initplan.WriteFile(path, s.Plan, true); err != nil {
		return err
	}
	res.Plan.Written, res.Plan.Lines, res.Plan.Placeholders = true, s.Lines, s.Placeholders
	res.Notes = append(res.Notes, s.Notes...)
	return nil
}

// adopt plans the scope and appends a line for each unmanaged resource
// (or each --adopt names). Without a scope it only says how to give one.
func (opts *InitOptions) adopt(res *initResult, path string) error {
	f := opts.f
	if _, err := opts.Scope.compute(f); err != nil {
		if len(opts.Adopt) > 0 || errs.CodeOf(err) != errs.USAGE || opts.Scope.given("pr") || opts.Scope.given("branch") {
			return err
		}
		res.Notes = append(res.Notes, "a plan exists and no scope can be derived here, so nothing was looked for to adopt: pass --pr N or --branch NAME")
		return nil
	}
	c, p, eng, err := f.setupRun(&opts.Scope, &opts.Plan, &opts.Store, true)
	if err != nil {
		return err
	}
	for _, l := range p.Lines {
		res.Plan.Lines = append(res.Plan.Lines, l.ID)
	}
	pr, err := eng.Plan(f.Context, p, c, f.runOptions(RunFlags{}, c, receipt.OpPlan))
	if err != nil {
		return err
	}
	unmanaged := unmanagedDrift(pr)
	if err := checkAdoptKeys(opts.Adopt, unmanaged); err != nil {
		return err
	}
	declared := declaredKeys(pr)
	var as []initplan.Adoption
	for _, d := range unmanaged {
		if len(opts.Adopt) > 0 && !slices.Contains(opts.Adopt, d.Key) {
			continue
		}
		if declared[d.Line][d.Key] && d.Line != initplan.AdoptionID(d.Key) {
			// Already exists where the line would create it: the line
			// declares it, and apply adopts it when it equals the plan.
			res.Notes = append(res.Notes, fmt.Sprintf("%s already exists where line %s would create it: apply adopts it if it equals the plan (write { keep: true } for a value you do not control)", d.Key, d.Line))
			continue
		}
		a, err := initplan.Adopt(p.Line(d.Line), d.Key, c.Env)
		if err != nil {
			return err
		}
		as = append(as, a)
	}
	src, err := f.readFile(opts.Plan.Path)
	if err != nil {
		return errs.Wrap(err, errs.PLAN_PARSE, "cannot read the plan file %s", opts.Plan.Path)
	}
	out, added, err := initplan.Append(opts.Plan.Path, src, as)
	if err != nil {
		return err
	}
	if len(added) > 0 {
		if _, err := plan.ParseContext(f.Context, opts.Plan.Path, out); err != nil {
			return errs.Wrap(err, errs.INTERNAL, "the plan with its adoption lines does not parse").
				WithHint("This is a bug in Sponson: report it with the output of `sponson plan --json`.")
		}
		if err := initplan.WriteFile(path, out, false); err != nil {
			return err
		}
	}
	for _, a := range as {
		res.Adopted = append(res.Adopted, initAdopted{ID: a.ID, Line: a.Line, Key: a.Key, New: slices.Contains(added, a.ID)})
		if slices.Contains(added, a.ID) {
			res.Plan.Lines = append(res.Plan.Lines, a.ID)
		}
	}
	return nil
}

// unmanagedDrift is the plan's unmanaged drift, once per key, in its order.
func unmanagedDrift(pr *engine.PlanResult) []engine.Drift {
	var out []engine.Drift
	seen := map[string]bool{}
	for _, d := range pr.Drift {
		if d.Kind == engine.DriftUnmanaged && !seen[d.Key] {
			seen[d.Key] = true
			out = append(out, d)
		}
	}
	return out
}

// declaredKeys are the keys each line declares (its diffs, unchanged ones
// included), by line.
func declaredKeys(pr *engine.PlanResult) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, l := range pr.Lines {
		out[l.ID] = map[string]bool{}
		for _, d := range l.Diffs {
			out[l.ID][d.Key] = true
		}
	}
	return out
}

// checkAdoptKeys refuses an --adopt key plan did not report as unmanaged.
func checkAdoptKeys(keys []string, unmanaged []engine.Drift) error {
	for _, k := range keys {
		if !slices.ContainsFunc(unmanaged, func(d engine.Drift) bool { return d.Key == k }) {
			var have []string
			for _, d := range unmanaged {
				have = append(have, d.Key)
			}
			known := "plan reports no unmanaged resource in this scope"
			if len(have) > 0 {
				known = "the unmanaged keys are: " + strings.Join(have, ", ")
			}
			return errs.New(errs.USAGE, "--adopt %s: no unmanaged resource has this key; %s", k, known).
				WithHint("Run `sponson plan` for the scope and copy a key of its unmanaged drift.")
		}
	}
	return nil
}

// writeInit is init's text: what was found, what no op manages, what was
// written and what is left to fill.
func writeInit(w io.Writer, r *initResult) {
	d := r.Detected
	if len(d.Findings) == 0 {
		fmt.Fprintln(w, "found: nothing Sponson knows (no manifest, provider file, ORM or variable of a provider)")
	} else {
		fmt.Fprintln(w, "found:")
		for _, fd := range d.Findings {
			fmt.Fprintf(w, "  %-16s %s\n", fd.Title, fd.Source)
		}
	}
	if len(d.Providers) > 0 {
		fmt.Fprintf(w, "managed by an op: %s\n", strings.Join(d.Providers, ", "))
	}
	if len(d.Unmanaged) > 0 {
		fmt.Fprintln(w, "no op manages:")
		for _, u := range d.Unmanaged {
			fmt.Fprintf(w, "  %s: %s\n", u.Title, u.Pointer)
		}
	}
	if len(d.EnvNames) > 0 {
		fmt.Fprintf(w, "variables named in .env files: %s\n", strings.Join(d.EnvNames, ", "))
	}
	switch {
	case r.Plan.Written:
		fmt.Fprintf(w, "wrote %s: lines %s\n", r.Plan.File, strings.Join(r.Plan.Lines, ", "))
	default:
		fmt.Fprintf(w, "%s exists: left as it was but for adoption lines\n", r.Plan.File)
	}
	for _, a := range r.Adopted {
		verb := "adopted"
		if !a.New {
			verb = "already adopted"
		}
		fmt.Fprintf(w, "%s %s as line %s (unmanaged drift of %s)\n", verb, a.Key, a.ID, a.Line)
	}
	if len(r.Plan.Placeholders) > 0 {
		fmt.Fprintln(w, "fill in:")
		for _, p := range r.Plan.Placeholders {
			fmt.Fprintf(w, "  %s: %s\n", p.Path, p.What)
		}
	}
	if r.Gitignore {
		fmt.Fprintln(w, "added .sponson/ to .gitignore")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	switch {
	case r.Plan.Written && len(r.Plan.Placeholders) > 0:
		fmt.Fprintln(w, "next: fill in the placeholders, then `sponson validate`")
	case r.Plan.Written || len(r.Adopted) > 0:
		fmt.Fprintln(w, "next: `sponson validate`, then `sponson plan`")
	}
}
