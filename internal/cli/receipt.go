package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// ReceiptOptions are `sponson receipt`'s.
type ReceiptOptions struct {
	f       *Factory
	Scope   ScopeOptions
	Plan    PlanFile
	Store   StoreOptions
	History bool
	Limit   int
}

func newCmdReceipt(f *Factory, runF func(*ReceiptOptions) error) *cobra.Command {
	opts := &ReceiptOptions{f: f}
	cmd := &cobra.Command{
		Use:   "receipt [--history]",
		Short: "Print the scope's receipt and ledger (or its history of runs)",
		Example: `  sponson receipt --pr 12
  sponson receipt --pr 12 --history --limit 10
  sponson receipt --branch main --env production --json`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, receiptRun),
	}
	addPlanFlag(cmd, &opts.Plan)
	addScopeFlags(cmd, &opts.Scope)
	addStoreFlags(cmd, &opts.Store)
	cmd.Flags().BoolVar(&opts.History, "history", false, "list the scope's runs and unlocks, oldest first")
	cmd.Flags().IntVar(&opts.Limit, "limit", 50, "with --history: the latest runs to list (0: all); only those are read")
	return cmd
}

func receiptRun(opts *ReceiptOptions) error {
	f := opts.f
	c, err := opts.Scope.compute(f)
	if err != nil {
		return err
	}
	st, err := opts.Store.open(f, opts.Plan.receipts(f))
	if err != nil {
		return err
	}
	if opts.History {
		return history(f, st, c, opts.Limit)
	}
	r, version, err := st.Read(f.Context, c.Env, c.Scope)
	if err != nil {
		return err
	}
	if r == nil {
		f.answer.set(map[string]any{"env": c.Env, "scope": c.Scope, "receipt": nil}, func(w io.Writer) {
			fmt.Fprintf(w, "no receipt for %s/%s in the %s store\n", c.Env, c.Scope, st.Kind)
		})
		return nil
	}
	res := &engine.RunResult{Env: c.Env, Scope: c.Scope, Receipt: r, Warnings: r.Warnings}
	if f.Env.OnResult != nil {
		f.Env.OnResult(res)
	}
	f.answer.set(map[string]any{"env": c.Env, "scope": c.Scope, "receipt": r, "version": version}, func(w io.Writer) {
		o := f.textOptions(nil)
		report.WriteText(w, report.FromRun("receipt", res, nil, nil, f.links(c)), o)
		if len(r.Ledger) > 0 {
			fmt.Fprintln(w, "\nresources:")
			report.WriteLedger(w, r.Ledger, o)
		}
	})
	return nil
}

// history lists a scope's runs (one per run that wrote a receipt) and
// force-releases, from the store's history (a git branch's commits).
func history(f *Factory, st *wire.Store, c scope.Ctx, limit int) error {
	target := receipt.ScopeTarget(c.Env, c.Scope)
	var (
		events []receipt.Event
		more   bool
		err    error
	)
	if hp, ok := st.Store.(receipt.HistoryPager); ok {
		events, more, err = hp.RecentHistory(f.Context, target, limit)
	} else if events, err = st.History(f.Context, target); err == nil && limit > 0 && len(events) > limit {
		events, more = events[len(events)-limit:], true
	}
	if err != nil {
		return err
	}
	if events == nil {
		events = []receipt.Event{}
	}
	color := f.textOptions(nil).Color
	f.answer.set(map[string]any{"env": c.Env, "scope": c.Scope, "history": events, "more": more, "store": st}, func(w io.Writer) {
		writeHistory(w, st, target, events, more, limit, color)
	})
	return nil
}

// writeHistory is the text of `sponson receipt --history`.
func writeHistory(w io.Writer, st *wire.Store, target receipt.Target, events []receipt.Event, more bool, limit int, color bool) {
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
	p := report.Painter{Color: color}
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

// newCmdReceipts is `sponson receipts`, the group of push.
func newCmdReceipts(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "receipts",
		Short:   "Manage stored receipts",
		Example: "  sponson receipts push .sponson/unsaved/preview/pr-12/RUN.json",
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError(cmd, "receipts needs a subcommand")
		},
	}
	cmd.AddCommand(withTraits(newCmdReceiptsPush(f, nil), traitWritesReceipts))
	return cmd
}

// PushOptions are `sponson receipts push`'s.
type PushOptions struct {
	f            *Factory
	Plan         PlanFile
	Store        StoreOptions
	Run          RunFlags
	File         string
	AdoptMissing bool
	Replace      bool
}

func newCmdReceiptsPush(f *Factory, runF func(*PushOptions) error) *cobra.Command {
	opts := &PushOptions{f: f}
	cmd := &cobra.Command{
		Use:   "push <file> [--adopt-missing | --replace]",
		Short: "Store a receipt that a run could not write",
		Long: `When a run's final receipt write fails after it touched providers, the receipt is saved to
.sponson/unsaved/<env>/<scope>/<run>.json and the run names this command. Without a flag it shows
the difference between the stored ledger and the saved one and writes nothing. --adopt-missing adds
the entries the stored ledger lacks (never removing anything); --replace writes the saved receipt
whole. Both take the scope's lease. Divergent receipts are never merged silently.`,
		Example: `  sponson receipts push .sponson/unsaved/preview/pr-12/RUN.json
  sponson receipts push .sponson/unsaved/preview/pr-12/RUN.json --adopt-missing
  sponson receipts push sponson-receipts/_unsaved/preview/pr-12/RUN --replace`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return pushRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.AdoptMissing, "adopt-missing", false, "add the entries the stored ledger lacks")
	cmd.Flags().BoolVar(&opts.Replace, "replace", false, "write the saved receipt whole")
	addPlanFlag(cmd, &opts.Plan)
	addStoreFlags(cmd, &opts.Store)
	addRunFlags(cmd, &opts.Run, false)
	return cmd
}

func pushRun(opts *PushOptions) error {
	f := opts.f
	mode := engine.PushShow
	switch {
	case opts.AdoptMissing && opts.Replace:
		return errs.New(errs.USAGE, "--adopt-missing and --replace exclude each other")
	case opts.AdoptMissing:
		mode = engine.PushAdoptMissing
	case opts.Replace:
		mode = engine.PushReplace
	}
	st, err := opts.Store.open(f, opts.Plan.receipts(f))
	if err != nil {
		return err
	}
	eng, err := f.engine(st)
	if err != nil {
		return err
	}
	o := f.runOptions(opts.Run, scope.Ctx{}, receipt.OpPush)
	path, err := unsavedPath(f, st, opts.File)
	if err != nil {
		return err
	}
	res, err := eng.PushUnsaved(f.Context, path, mode, o)
	if res != nil {
		f.answer.set(jsonFields(res), func(w io.Writer) { engine.RenderPush(w, res) })
	}
	return err
}

// unsavedPath is the file of an unsaved receipt: the argument itself, or,
// for a store's side ref (sponson-receipts/_unsaved/...), a copy of it in
// the local unsaved folder.
func unsavedPath(f *Factory, st *wire.Store, arg string) (string, error) {
	name := strings.TrimPrefix(arg, "refs/heads/")
	if !strings.HasPrefix(name, "sponson-receipts/_unsaved/") {
		return f.Env.Path(arg), nil
	}
	rs, ok := st.Store.(engine.UnsavedRefs)
	if !ok {
		return "", errs.New(errs.USAGE, "%s names a ref of the git-branch store, but receipts are in the %s store", arg, st.Kind).
			WithHint("Pass --receipts-remote with the repository that holds the ref.")
	}
	r, err := rs.LoadUnsaved(f.Context, name)
	if err != nil {
		return "", err
	}
	return receipt.SaveUnsaved(f.Env.Path(receipt.DefaultUnsavedDir), r)
}
