package cli

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sponson/apply/pkg/errs"
)

// newCmdRoot is `sponson`: --json for every command, --version, help, and
// the commands.
func newCmdRoot(f *Factory) *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use:   "sponson",
		Short: "Plan, apply and destroy the side effects that ship beside a pull request",
		Long: `Sponson reads release.plan.yaml and plans, applies and destroys its lines per scope
(pr-<n>, branch-<name>, main), keeping receipts so nothing is forgotten or lost.`,
		Example: `  sponson validate
  sponson plan --pr 12
  sponson apply --pr 12 --wait
  sponson help apply`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			f.cmd = cmd
			f.answer.command = cmd.Name()
			if cmd.Parent() != nil && cmd.Parent().Parent() != nil {
				f.answer.command = cmd.Parent().Name() + " " + cmd.Name()
			}
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if showVersion {
				// `sponson --version`, as `sponson version`.
				f.answer.command = "version"
				return versionRun(&VersionOptions{f: f})
			}
			if len(args) > 0 {
				return errs.New(errs.USAGE, "unknown command %q", args[0])
			}
			if f.bare {
				// `sponson` alone: help, as gh and kubectl answer.
				f.answer.command = "help"
				f.helpResult(cmd)
				return nil
			}
			return usageError(cmd, "no command given")
		},
	}
	root.PersistentFlags().BoolVar(&f.JSON, "json", f.JSON, "answer with exactly one JSON document on stdout")
	root.Flags().BoolVar(&showVersion, "version", false, "print the version (as `sponson version`)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return errs.New(errs.USAGE, "%s", err.Error()).WithHint("Run `%s --help` for its flags.", cmd.CommandPath())
	})
	help := &cobra.Command{
		Use:     "help [command]",
		Short:   "Help about any command",
		Example: "  sponson help apply\n  sponson help receipts push",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, _, err := root.Find(args)
			if err != nil || target == nil {
				return errs.New(errs.USAGE, "unknown help topic %q", strings.Join(args, " "))
			}
			f.helpResult(target)
			return nil
		},
	}
	withTraits(help, traitReadOnly)
	acceptUnread(help)
	root.SetHelpCommand(help)
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		// --help on any command: in JSON mode the envelope carries the text.
		f.answer.command = "help"
		f.helpResult(cmd)
	})

	root.AddCommand(
		withTraits(newCmdVersion(f, nil), traitReadOnly),
		withTraits(newCmdValidate(f, nil), traitReadOnly),
		withTraits(newCmdScope(f, nil), traitReadOnly),
		withTraits(newCmdLocks(f, nil), traitReadOnly),
		withTraits(newCmdUnlock(f, nil), traitWritesReceipts),
		withTraits(newCmdSchema(f, nil), traitReadOnly),
		newCmdSim(f, nil),
		withTraits(newCmdPlan(f, nil), traitReadOnly),
		withTraits(newCmdApply(f, nil), traitWritesReceipts),
		withTraits(newCmdDestroy(f, nil), traitWritesReceipts),
		withTraits(newCmdReceipt(f, nil), traitReadOnly),
		newCmdReceipts(f),
		withTraits(newCmdDemo(f, nil), traitWritesReceipts),
		newCmdGC(f, nil),
		newCmdInit(f, nil),
		newCmdCompletion(f, nil),
		withTraits(newCmdMCP(f, nil), traitWritesReceipts),
	)
	acceptUnread(root)
	return root
}

// acceptUnread lets every command accept, unread and hidden from its help,
// the scope, plan and store flags it does not take: before the flags were
// grouped per command every command took them all, and a command line
// that worked then (a script passing one set of flags to validate and
// plan, `sponson version --pr 1`) works the same now.
func acceptUnread(cmd *cobra.Command) {
	var unread struct {
		scope ScopeOptions
		plan  PlanFile
		store StoreOptions
	}
	groups := &cobra.Command{}
	addPlanFlag(groups, &unread.plan)
	addScopeFlags(groups, &unread.scope)
	addStoreFlags(groups, &unread.store)
	groups.Flags().VisitAll(func(fl *pflag.Flag) {
		if cmd.Flags().Lookup(fl.Name) == nil {
			hidden := *fl
			hidden.Hidden = true
			cmd.Flags().AddFlag(&hidden)
		}
	})
	for _, sub := range cmd.Commands() {
		acceptUnread(sub)
	}
}

// helpResult makes a command's usage the success output.
func (f *Factory) helpResult(cmd *cobra.Command) {
	usage := cmd.UsageString()
	if cmd.Long != "" {
		usage = cmd.Long + "\n\n" + usage
	} else if cmd.Short != "" {
		usage = cmd.Short + "\n\n" + usage
	}
	f.answer.set(map[string]any{"usage": usage, "topic": cmd.CommandPath()}, func(w io.Writer) { io.WriteString(w, usage) })
}

func usageError(cmd *cobra.Command, format string, args ...any) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	slices.Sort(names)
	return errs.New(errs.USAGE, format, args...).WithHint("Commands: %s. Run `sponson help <command>` for one.", strings.Join(names, ", "))
}

// unknownCommand is the word cobra's "unknown command" error names.
func unknownCommand(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "unknown command \""); ok {
		bad, _, _ := strings.Cut(rest, "\"")
		return bad
	}
	return ""
}

// exactArgs is cobra.ExactArgs with a coded error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return errs.New(errs.USAGE, "%s takes %d argument(s), got %d", cmd.CommandPath(), n, len(args)).WithHint("Usage: %s", cmd.UseLine())
		}
		return nil
	}
}

// commandName is the first word that is not a flag or a flag's value, for
// the envelope of a usage error that cobra rejects before any command runs.
// A flag takes a value when any command's flag of that name does.
func commandName(root *cobra.Command, args []string) string {
	valued := valuedFlags(root)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if valued[a] {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		return a
	}
	return "sponson"
}
