package cli

import (
	"cmp"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// PlanOptions are `sponson plan`'s.
type PlanOptions struct {
	f     *Factory
	Scope ScopeOptions
	Plan  PlanFile
	Store StoreOptions
	Run   RunFlags
	// DetailedExitcode is --detailed-exitcode: exit 0 when nothing would
	// change, 2 when something would, 1 on any error (terraform plan's).
	DetailedExitcode bool
}

func newCmdPlan(f *Factory, runF func(*PlanOptions) error) *cobra.Command {
	opts := &PlanOptions{f: f}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Read live state and print what apply would do (writes nothing)",
		Long: `Reads live state for every line of this environment, prints the diff, drift and refusals,
and writes nothing anywhere: not to providers, not to the receipt store. It takes no lease, and
says so when an apply holds the scope. Exits 1 when a line is in error or blocked.

With --detailed-exitcode the exit code says whether anything would change, as terraform plan's
does: 0 nothing would, 2 something would (a line creates or updates, or a missing resource
would be recreated), 1 any error: a failed or blocked line (changed drift), a refused plan, a
lease; codes 1, 2 and 3 all become 1, so 2 means only "changes".`,
		Example: `  sponson plan --pr 12
  sponson plan --pr 12 --detailed-exitcode || [ $? -eq 2 ]
  sponson plan --branch main --env production --json
  sponson plan --plan examples/preview-stack.release.plan.yaml --receipts local`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, planRun),
	}
	addPlanFlag(cmd, &opts.Plan)
	addScopeFlags(cmd, &opts.Scope)
	addStoreFlags(cmd, &opts.Store)
	addRunFlags(cmd, &opts.Run, false)
	cmd.Flags().BoolVar(&opts.DetailedExitcode, "detailed-exitcode", false, "exit 0 when nothing would change, 2 when something would, 1 on any error (as terraform plan -detailed-exitcode)")
	return cmd
}

func planRun(opts *PlanOptions) error {
	f := opts.f
	changes := false
	if opts.DetailedExitcode {
		f.answer.exit = func(code int) int { return detailedExit(code, changes) }
	}
	c, p, eng, err := f.setupRun(&opts.Scope, &opts.Plan, &opts.Store, true)
	if err != nil {
		return err
	}
	res, err := eng.Plan(f.Context, p, c, f.runOptions(opts.Run, c, receipt.OpPlan))
	if res != nil {
		f.setResult(res, res.Warnings, func(w io.Writer) {
			report.WriteText(w, report.FromPlan(res, err, f.links(c)), f.textOptions(err))
		})
		changes = planChanges(res)
		if opts.DetailedExitcode {
			f.answer.result["changes"] = changes
		}
	}
	return err
}

// planChanges says whether applying res would change anything: a line
// would create or update, or a missing resource would be recreated. (A
// changed one blocks its line until apply --reconcile: an error, exit 1.)
func planChanges(res *engine.PlanResult) bool {
	for _, l := range res.Lines {
		if l.Status == engine.PlanCreate || l.Status == engine.PlanUpdate {
			return true
		}
	}
	for _, d := range res.Drift {
		if d.Kind == engine.DriftMissing {
			return true
		}
	}
	return false
}

// detailedExit is plan --detailed-exitcode's exit code, from the one the
// error gives (ADR 0001's table) and whether the plan has changes: any
// error is 1, so 2 says only that something would change.
func detailedExit(code int, changes bool) int {
	switch {
	case code != 0:
		return 1
	case changes:
		return 2
	}
	return 0
}

// ApplyOptions are `sponson apply`'s.
type ApplyOptions struct {
	f         *Factory
	Scope     ScopeOptions
	Plan      PlanFile
	Store     StoreOptions
	Run       RunFlags
	Reconcile bool
	Confirm   []string
	Recreate  []string
	Destroy   bool // --destroy: destroy the scope instead
	Close     bool // with --destroy: leave a tombstone
}

func newCmdApply(f *Factory, runF func(*ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Apply the plan to the scope and write its receipt",
		Long: `Applies the lines of this environment in dependency order under the scope's lease, records
every resource before it is created, rolls back what this run created if a line fails, and writes
the receipt. A line waiting for an external output (a deploy's URL) ends the run partial (exit 0);
the next apply finishes it, or --wait waits. --destroy destroys the scope instead.`,
		Example: `  sponson apply --pr 12
  sponson apply --pr 12 --wait --wait-timeout 15m
  sponson apply --branch main --env production --approved-by alice
  sponson apply --pr 12 --confirm dns --recreate db`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, applyRun),
	}
	addPlanFlag(cmd, &opts.Plan)
	addScopeFlags(cmd, &opts.Scope)
	addStoreFlags(cmd, &opts.Store)
	addRunFlags(cmd, &opts.Run, true)
	fl := cmd.Flags()
	fl.BoolVar(&opts.Reconcile, "reconcile", false, "accept resources changed outside Sponson")
	fl.StringSliceVar(&opts.Confirm, "confirm", nil, "a manual step someone has done (with --destroy: its undo): verify it and record who, --approved-by else the git identity (repeatable, or comma-separated lines)")
	fl.StringSliceVar(&opts.Recreate, "recreate", nil, "delete what this scope created for the line and create it again in this run, with the lines that use its once-only outputs (a new password), so they get the new value (repeatable)")
	fl.BoolVar(&opts.Destroy, "destroy", false, "destroy the scope (same as sponson destroy)")
	fl.BoolVar(&opts.Close, "close", false, "with --destroy: leave a tombstone (see sponson destroy --close)")
	return cmd
}

func applyRun(opts *ApplyOptions) error {
	f := opts.f
	if opts.Destroy {
		return destroyRun(&DestroyOptions{f: f, Scope: opts.Scope, Plan: opts.Plan, Store: opts.Store, Run: opts.Run, Close: opts.Close,
			reconcile: opts.Reconcile, confirm: opts.Confirm, recreate: opts.Recreate})
	}
	c, p, eng, err := f.setupRun(&opts.Scope, &opts.Plan, &opts.Store, true)
	if err != nil {
		return err
	}
	o := f.runOptions(opts.Run, c, receipt.OpApply)
	o.Reconcile, o.Confirm, o.Recreate = opts.Reconcile, opts.Confirm, opts.Recreate
	o.ConfirmedBy = f.confirmedBy(o)
	res, err := eng.Apply(f.Context, p, c, o)
	if res != nil {
		f.setResult(res, res.Warnings, func(w io.Writer) {
			report.WriteText(w, report.FromRun("apply", res, err, p, f.links(c)), f.textOptions(err))
		})
	}
	return err
}

// DestroyOptions are `sponson destroy`'s (and `sponson apply --destroy`'s).
type DestroyOptions struct {
	f     *Factory
	Scope ScopeOptions
	Plan  PlanFile
	Store StoreOptions
	Run   RunFlags
	Close bool
	// Confirm names manual steps whose undo someone has done.
	Confirm []string
	// apply --destroy passes its own flags on, as they were given.
	reconcile         bool
	confirm, recreate []string
}

func newCmdDestroy(f *Factory, runF func(*DestroyOptions) error) *cobra.Command {
	opts := &DestroyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Destroy what the scope created, from its ledger",
		Long: `Walks the scope's ledger (not the plan) in reverse creation order and destroys what Sponson
created, with the provider settings recorded for each resource; adopted resources are forgotten,
never destroyed. The final receipt has an empty ledger and destroyed: true. A manual step is
not Sponson's to undo: destroy shows its undo and ends partial, keeping the step, until
--confirm <line> records who undid it (--approved-by, else the checkout's git identity).`,
		Example: `  sponson destroy --pr 12
  sponson destroy --pr 12 --close
  sponson destroy --pr 12 --confirm dns --approved-by alice
  sponson destroy --branch feat/login --json`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, destroyRun),
	}
	addPlanFlag(cmd, &opts.Plan)
	addScopeFlags(cmd, &opts.Scope)
	addStoreFlags(cmd, &opts.Store)
	addRunFlags(cmd, &opts.Run, true)
	cmd.Flags().BoolVar(&opts.Close, "close", false, "leave a tombstone: the pull request closed, and apply refuses the scope unless --reopen")
	cmd.Flags().StringSliceVar(&opts.Confirm, "confirm", nil, "a manual step whose undo someone has done: record who and let it go (repeatable, or comma-separated lines)")
	return cmd
}

func destroyRun(opts *DestroyOptions) error {
	f := opts.f
	c, _, eng, err := f.setupRun(&opts.Scope, &opts.Plan, &opts.Store, false)
	if err != nil {
		return err
	}
	f.answer.command = "destroy"
	o := f.runOptions(opts.Run, c, receipt.OpDestroy)
	o.Reconcile, o.Confirm, o.Recreate = opts.reconcile, append(opts.confirm, opts.Confirm...), opts.recreate
	o.ConfirmedBy = f.confirmedBy(o)
	if opts.Close {
		o.Close = &receipt.Tombstone{By: f.actor(), At: clock.Or(f.Clock).Now().UTC(), HeadSHA: c.Git.SHA}
	}
	res, err := eng.Destroy(f.Context, c, o)
	if res != nil {
		f.setResult(res, res.Warnings, func(w io.Writer) {
			report.WriteText(w, report.FromRun("destroy", res, err, nil, f.links(c)), f.textOptions(err))
		})
	}
	return err
}

// setupRun derives the context, loads the plan (optional for destroy) and
// builds the engine on the chosen store.
func (f *Factory) setupRun(so *ScopeOptions, pf *PlanFile, sto *StoreOptions, needPlan bool) (scope.Ctx, *plan.Plan, *engine.Engine, error) {
	c, err := so.compute(f)
	if err != nil {
		return scope.Ctx{}, nil, nil, err
	}
	f.answer.warn(c.Warnings()...)
	var p *plan.Plan
	receipts := ""
	if needPlan {
		if p, err = pf.load(f); err != nil {
			return c, nil, nil, err
		}
		f.answer.warn(p.Warnings...)
		receipts = p.Receipts
		// Every static refusal (exit 2) before the store is opened: the
		// engine's checks need no store, provider or network.
		if err := f.checker().Check(p, c, c.Env); err != nil {
			return c, nil, nil, err
		}
	} else {
		receipts = pf.receipts(f)
	}
	st, err := sto.open(f, receipts)
	if err != nil {
		return c, nil, nil, err
	}
	eng, err := f.engine(st)
	return c, p, eng, err
}

// runOptions are the engine options of this command: the run's owner and
// defaults (wire.Run.Options), then the flags.
func (f *Factory) runOptions(rf RunFlags, c scope.Ctx, op receipt.Operation) engine.Options {
	o := engine.Options{Owner: f.owner(op)}
	if f.run != nil {
		o = f.run.Options(op)
	}
	approver := cmp.Or(rf.ApprovedBy, f.Env.Getenv("SPONSON_APPROVED_BY"))
	if rf.LockWait > 0 {
		o.LockWait = rf.LockWait
	}
	o.Env, o.ApprovedBy, o.Wait, o.WaitTimeout = c.Env, approver, rf.Wait, rf.WaitTimeout
	o.Parallelism, o.Reopen = rf.Parallelism, rf.Reopen
	return o
}

// confirmedBy is who confirms the manual steps of o.Confirm when no
// approver is named: the checkout's git identity ("" when it has none,
// and the engine refuses the --confirm with USAGE). It reads git config
// only when something is confirmed.
func (f *Factory) confirmedBy(o engine.Options) string {
	if len(o.Confirm) == 0 || o.ApprovedBy != "" {
		return ""
	}
	return scope.GitIdentity(f.Env.Dir, f.Env.Getenv)
}

// jsonFields is a result's JSON object as a map, to merge into the envelope.
func jsonFields(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{"result_error": err.Error()}
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]any{"result_error": err.Error()}
	}
	return m
}

// lineWriter passes each write on at once (the redacting writer otherwise
// holds back a short tail), so progress lines appear while a run waits.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	flush(l.w)
	return n, err
}
