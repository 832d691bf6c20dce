package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// runFlags are the flags of plan, apply and destroy.
type runFlags struct {
	approvedBy  string
	wait        bool
	waitTimeout time.Duration
	lockWait    time.Duration
	reconcile   bool
	parallelism int
	reopen      bool
	destroy     bool
	close       bool
	confirm     []string
	recreate    []string
}

func (f *runFlags) bind(cmd *cobra.Command, apply bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.approvedBy, "approved-by", "", "who approved a run that may write production (default SPONSON_APPROVED_BY)")
	fl.IntVar(&f.parallelism, "parallelism", 0, "how many independent lines run at once (plan: are read at once); 0: 4 for apply and destroy, 16 for plan")
	if !apply {
		return
	}
	fl.BoolVar(&f.wait, "wait", false, "wait for a held lease and for external outputs instead of ending partial")
	fl.DurationVar(&f.waitTimeout, "wait-timeout", 10*time.Minute, "how long --wait waits")
	fl.DurationVar(&f.lockWait, "lock-wait", 0, "without --wait, still wait up to this long for a lease another run holds (default SPONSON_LOCK_WAIT; 0 fails at once with LOCK_HELD)")
	fl.BoolVar(&f.reopen, "reopen", false, "apply to a scope whose pull request was closed")
}

func (a *app) planCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Read live state and print what apply would do (writes nothing)",
		Long: `Reads live state for every line of this environment, prints the diff, drift and refusals,
and writes nothing anywhere: not to providers, not to the receipt store. It takes no lease, and
says so when an apply holds the scope. Exits 1 when a line is in error or blocked.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, p, eng, err := a.setupRun(true)
			if err != nil {
				return err
			}
			res, err := eng.Plan(a.ctx, p, c, a.runOptions(f, c, receipt.OpPlan))
			if res != nil {
				a.setResult(res, res.Warnings, func(w io.Writer) {
					report.WriteText(w, report.FromPlan(res, err, a.links(c)), a.textOptions(err))
				})
			}
			return err
		},
	}
	f.bind(cmd, false)
	return cmd
}

func (a *app) applyCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Apply the plan to the scope and write its receipt",
		Long: `Applies the lines of this environment in dependency order under the scope's lease, records
every resource before it is created, rolls back what this run created if a line fails, and writes
the receipt. A line waiting for an external output (a deploy's URL) ends the run partial (exit 0);
the next apply finishes it, or --wait waits. --destroy destroys the scope instead.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.destroy {
				return a.runDestroy(f)
			}
			c, p, eng, err := a.setupRun(true)
			if err != nil {
				return err
			}
			res, err := eng.Apply(a.ctx, p, c, a.runOptions(f, c, receipt.OpApply))
			if res != nil {
				a.setResult(res, res.Warnings, func(w io.Writer) {
					report.WriteText(w, report.FromRun("apply", res, err, p, a.links(c)), a.textOptions(err))
				})
			}
			return err
		},
	}
	f.bind(cmd, true)
	cmd.Flags().BoolVar(&f.reconcile, "reconcile", false, "accept resources changed outside Sponson")
	cmd.Flags().StringSliceVar(&f.confirm, "confirm", nil, "a manual step someone has done: verify it and record who (repeatable, or comma-separated lines)")
	cmd.Flags().StringSliceVar(&f.recreate, "recreate", nil, "delete what this scope created for the line and create it again in this run, with the lines that use its once-only outputs (a new password), so they get the new value (repeatable)")
	cmd.Flags().BoolVar(&f.destroy, "destroy", false, "destroy the scope (same as sponson destroy)")
	cmd.Flags().BoolVar(&f.close, "close", false, "with --destroy: leave a tombstone (see sponson destroy --close)")
	return cmd
}

func (a *app) destroyCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Destroy what the scope created, from its ledger",
		Long: `Walks the scope's ledger (not the plan) in reverse creation order and destroys what Sponson
created, with the provider settings recorded for each resource; adopted resources are forgotten,
never destroyed. The final receipt has an empty ledger and destroyed: true.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runDestroy(f) },
	}
	f.bind(cmd, true)
	cmd.Flags().BoolVar(&f.close, "close", false, "leave a tombstone: the pull request closed, and apply refuses the scope unless --reopen")
	return cmd
}

func (a *app) runDestroy(f runFlags) error {
	c, _, eng, err := a.setupRun(false)
	if err != nil {
		return err
	}
	a.command = "destroy"
	o := a.runOptions(f, c, receipt.OpDestroy)
	if f.close {
		o.Close = &receipt.Tombstone{By: a.actor(), At: time.Now().UTC(), HeadSHA: c.Git.SHA}
	}
	res, err := eng.Destroy(a.ctx, c, o)
	if res != nil {
		a.setResult(res, res.Warnings, func(w io.Writer) {
			report.WriteText(w, report.FromRun("destroy", res, err, nil, a.links(c)), a.textOptions(err))
		})
	}
	return err
}

func (a *app) receiptCommand() *cobra.Command {
	var history bool
	var limit int
	cmd := &cobra.Command{
		Use:   "receipt [--history]",
		Short: "Print the scope's receipt and ledger (or its history of runs)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.computeCtx()
			if err != nil {
				return err
			}
			st, err := a.openStore(a.planReceipts())
			if err != nil {
				return err
			}
			if history {
				return a.history(st, c, limit)
			}
			r, version, err := st.Read(a.ctx, c.Env, c.Scope)
			if err != nil {
				return err
			}
			if r == nil {
				a.result = map[string]any{"env": c.Env, "scope": c.Scope, "receipt": nil}
				a.text = func(w io.Writer) { fmt.Fprintf(w, "no receipt for %s/%s in the %s store\n", c.Env, c.Scope, st.Kind) }
				return nil
			}
			res := &engine.RunResult{Env: c.Env, Scope: c.Scope, Receipt: r, Warnings: r.Warnings}
			if a.env.OnResult != nil {
				a.env.OnResult(res)
			}
			a.result = map[string]any{"env": c.Env, "scope": c.Scope, "receipt": r, "version": version}
			a.text = func(w io.Writer) {
				o := a.textOptions(nil)
				report.WriteText(w, report.FromRun("receipt", res, nil, nil, a.links(c)), o)
				if len(r.Ledger) > 0 {
					fmt.Fprintln(w, "\nresources:")
					report.WriteLedger(w, r.Ledger, o)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&history, "history", false, "list the scope's runs and unlocks, oldest first")
	cmd.Flags().IntVar(&limit, "limit", 50, "with --history: the latest runs to list (0: all); only those are read")
	return cmd
}

// history lists a scope's runs (one per run that wrote a receipt) and
// force-releases, from the store's history (a git branch's commits).
func (a *app) history(st *wire.Store, c scope.Ctx, limit int) error {
	target := receipt.ScopeTarget(c.Env, c.Scope)
	var (
		events []receipt.Event
		more   bool
		err    error
	)
	if hp, ok := st.Store.(receipt.HistoryPager); ok {
		events, more, err = hp.RecentHistory(a.ctx, target, limit)
	} else if events, err = st.History(a.ctx, target); err == nil && limit > 0 && len(events) > limit {
		events, more = events[len(events)-limit:], true
	}
	if err != nil {
		return err
	}
	if events == nil {
		events = []receipt.Event{}
	}
	a.result = map[string]any{"env": c.Env, "scope": c.Scope, "history": events, "more": more, "store": st}
	a.text = func(w io.Writer) {
		if !st.Capabilities().History {
			fmt.Fprintf(w, "the %s store keeps no history\n", st.Kind)
			return
		}
		fmt.Fprintf(w, "history of %s (%d %s)\n", target, len(events), map[bool]string{true: "entry", false: "entries"}[len(events) == 1])
		if more {
			fmt.Fprintf(w, "  (the latest %d; older ones: --limit 0)\n", limit)
		}
		// Fixed widths: every operation and status fits, so runs of any
		// history line up the same way.
		p := report.Painter{Color: a.textOptions(nil).Color}
		for _, e := range events {
			at := p.Paint(report.Dim, e.At.UTC().Format("2006-01-02 15:04:05Z"))
			switch e.Operation {
			case receipt.OpUnlock:
				fmt.Fprintf(w, "  %s  %s     by %s: %s\n", at, p.Paint(report.Yellow, "unlock"), e.By, report.Clean(e.Reason, 200))
			default:
				fmt.Fprintf(w, "  %s  %-10s %s run %s\n", at, e.Operation, p.Paint(report.StatusStyle(string(e.Status)), fmt.Sprintf("%-9s", e.Status)), e.RunID)
			}
		}
	}
	return nil
}

func (a *app) receiptsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "receipts",
		Short: "Manage stored receipts",
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError(cmd, "receipts needs a subcommand")
		},
	}
	var adopt, replace bool
	var f runFlags
	push := &cobra.Command{
		Use:   "push <file> [--adopt-missing | --replace]",
		Short: "Store a receipt that a run could not write",
		Long: `When a run's final receipt write fails after it touched providers, the receipt is saved to
.sponson/unsaved/<env>/<scope>/<run>.json and the run names this command. Without a flag it shows
the difference between the stored ledger and the saved one and writes nothing. --adopt-missing adds
the entries the stored ledger lacks (never removing anything); --replace writes the saved receipt
whole. Both take the scope's lease. Divergent receipts are never merged silently.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode := engine.PushShow
			switch {
			case adopt && replace:
				return errs.New(errs.USAGE, "--adopt-missing and --replace exclude each other")
			case adopt:
				mode = engine.PushAdoptMissing
			case replace:
				mode = engine.PushReplace
			}
			st, err := a.openStore(a.planReceipts())
			if err != nil {
				return err
			}
			eng, err := a.engine(st)
			if err != nil {
				return err
			}
			o := a.runOptions(f, scope.Ctx{}, receipt.OpPush)
			path, err := a.unsavedPath(st, args[0])
			if err != nil {
				return err
			}
			res, err := eng.PushUnsaved(a.ctx, path, mode, o)
			if res != nil {
				a.result = jsonFields(res)
				a.text = func(w io.Writer) { engine.RenderPush(w, res) }
			}
			return err
		},
	}
	push.Flags().BoolVar(&adopt, "adopt-missing", false, "add the entries the stored ledger lacks")
	push.Flags().BoolVar(&replace, "replace", false, "write the saved receipt whole")
	f.bind(push, false)
	cmd.AddCommand(push)
	return cmd
}

// setupRun derives the context, loads the plan (optional for destroy) and
// builds the engine on the chosen store.
func (a *app) setupRun(needPlan bool) (scope.Ctx, *plan.Plan, *engine.Engine, error) {
	c, err := a.computeCtx()
	if err != nil {
		return scope.Ctx{}, nil, nil, err
	}
	a.warnings = append(a.warnings, c.Warnings()...)
	var p *plan.Plan
	receipts := ""
	if needPlan {
		if p, err = a.loadPlan(); err != nil {
			return c, nil, nil, err
		}
		a.warnings = append(a.warnings, p.Warnings...)
		receipts = p.Receipts
		// Every static refusal (exit 2) before the store is opened: the
		// engine's checks need no store, provider or network.
		pre := a.checker()
		if err := pre.Check(p, c, c.Env); err != nil {
			return c, nil, nil, err
		}
	} else {
		receipts = a.planReceipts()
	}
	st, err := a.openStore(receipts)
	if err != nil {
		return c, nil, nil, err
	}
	eng, err := a.engine(st)
	return c, p, eng, err
}

// checker is the engine that runs a command's static checks: the run's
// ops, credentials and secret sources, no store.
func (a *app) checker() *engine.Engine {
	return &engine.Engine{Ops: a.ops(nil), LookupEnv: a.env.LookupEnv, Redactor: a.redactor,
		Secrets: wire.Secrets(a.env.LookupEnv, a.env.ReadFile, a.env.Dir)}
}

// planReceipts is the plan's receipts: setting when a plan file is there
// and parses; commands that do not need the plan still honour it.
func (a *app) planReceipts() string {
	src, err := a.readFile(a.g.plan)
	if err != nil {
		return ""
	}
	p, err := plan.ParseContext(a.ctx, a.g.plan, src)
	if err != nil {
		return ""
	}
	return p.Receipts
}

// engine builds the run (internal/wire) on the store: the built-in
// adapters (or Env.Ops), the secret sources, this command's redactor, the
// lease TTL and lock wait from the environment, progress on stderr and the
// local checkout's ancestry.
func (a *app) engine(st *wire.Store) (*engine.Engine, error) {
	var lockWait time.Duration
	if d, err := time.ParseDuration(a.env.Getenv("SPONSON_LOCK_WAIT")); err == nil && d > 0 {
		lockWait = d
	}
	run, err := wire.Build(st, wire.Config{
		Identity:  a.identity(),
		LookupEnv: a.env.LookupEnv,
		ReadFile:  a.env.ReadFile,
		Dir:       a.env.Dir,
		Ops:       a.env.Ops,
		Redactor:  a.redactor,
		LockWait:  lockWait,
		Events:    a.progress.Sink,
		Hooks:     wire.Hooks{Ancestry: wire.LocalAncestry(a.env.Dir)},
		Clock:     clock.System{},
	})
	if err != nil {
		return nil, err
	}
	a.run = run
	return run.Engine, nil
}

// ops is the registry of runnable ops: Env.Ops when a test injects one,
// else the built-in adapters.
func (a *app) ops(client *httpclient.Client) *adapter.Registry {
	if a.env.Ops != nil {
		return a.env.Ops
	}
	return adapters.Registry(a.env.LookupEnv, client)
}

// runOptions are the engine options of this command: the run's owner and
// defaults (wire.Run.Options), then the flags.
func (a *app) runOptions(f runFlags, c scope.Ctx, op receipt.Operation) engine.Options {
	o := engine.Options{Owner: a.owner(op)}
	if a.run != nil {
		o = a.run.Options(op)
	}
	approver := f.approvedBy
	if approver == "" {
		approver = a.env.Getenv("SPONSON_APPROVED_BY")
	}
	if f.lockWait > 0 {
		o.LockWait = f.lockWait
	}
	o.Env, o.ApprovedBy, o.Reconcile, o.Wait, o.WaitTimeout = c.Env, approver, f.reconcile, f.wait, f.waitTimeout
	o.Parallelism, o.Reopen = f.parallelism, f.reopen
	o.Confirm, o.Recreate = f.confirm, f.recreate
	return o
}

// setResult makes an engine result the command's answer: its fields in the
// envelope, its warnings beside the command's own.
func (a *app) setResult(res any, ws []engine.Warning, text func(io.Writer)) {
	if a.env.OnResult != nil {
		a.env.OnResult(res)
	}
	a.result = jsonFields(res)
	delete(a.result, "warnings")
	for _, w := range ws {
		e := errs.New(w.Code, "%s", w.Message)
		a.warnings = append(a.warnings, e)
		a.inText[e] = true // the text report lists it
	}
	a.text = text
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

// unsavedPath is the file of an unsaved receipt: the argument itself, or,
// for a store's side ref (sponson-receipts/_unsaved/...), a copy of it in
// the local unsaved folder.
func (a *app) unsavedPath(st *wire.Store, arg string) (string, error) {
	name := strings.TrimPrefix(arg, "refs/heads/")
	if !strings.HasPrefix(name, "sponson-receipts/_unsaved/") {
		return a.env.Path(arg), nil
	}
	rs, ok := st.Store.(engine.UnsavedRefs)
	if !ok {
		return "", errs.New(errs.USAGE, "%s names a ref of the git-branch store, but receipts are in the %s store", arg, st.Kind).
			WithHint("Pass --receipts-remote with the repository that holds the ref.")
	}
	r, err := rs.LoadUnsaved(a.ctx, name)
	if err != nil {
		return "", err
	}
	return receipt.SaveUnsaved(a.env.Path(receipt.DefaultUnsavedDir), r)
}

// links are what the report knows of where the run is, for its text.
func (a *app) links(c scope.Ctx) report.Links {
	l := report.Links{Server: a.env.Getenv("GITHUB_SERVER_URL"), Repo: c.Repo, SHA: c.Git.SHA}
	if c.PR.Number != nil {
		l.PR = *c.PR.Number
	}
	return l
}
