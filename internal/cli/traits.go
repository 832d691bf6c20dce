package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A command's traits are annotations on it, read where they matter,
// instead of lists of command names kept by hand.
const (
	// traitWritesReceipts: the command writes to the receipt store, so a
	// receipt written where CI will not see it (LOCAL_RECEIPTS) is said.
	traitWritesReceipts = "sponson/writes-receipts"
	// traitReadOnly: the command writes nothing anywhere, neither to a
	// provider nor to the receipt store.
	traitReadOnly = "sponson/read-only"
)

// withTraits marks cmd with traits and returns it.
func withTraits(cmd *cobra.Command, traits ...string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	for _, t := range traits {
		cmd.Annotations[t] = "true"
	}
	return cmd
}

// hasTrait says whether cmd carries the trait.
func hasTrait(cmd *cobra.Command, trait string) bool {
	return cmd != nil && cmd.Annotations[trait] == "true"
}

// ReadOnly says whether the command of that name ("plan", "receipts
// push", "help") writes nothing anywhere: not to providers, not to the
// receipt store.
func ReadOnly(command string) bool {
	root := newCmdRoot(&Factory{answer: newAnswer()})
	root.InitDefaultHelpCmd()
	c, rest, err := root.Find(strings.Fields(command))
	return err == nil && c != root && len(rest) == 0 && hasTrait(c, traitReadOnly)
}

// valuedFlags are the flags of any command of the tree that take a value.
func valuedFlags(root *cobra.Command) map[string]bool {
	valued := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(fl *pflag.Flag) {
				if fl.NoOptDefVal == "" {
					valued["--"+fl.Name] = true
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return valued
}
