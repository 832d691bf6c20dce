package cli

import (
	"github.com/spf13/cobra"

	"github.com/sponson/apply/pkg/errs"
)

// pending are the commands of the design that this version does not run
// yet. They exist so that `sponson help` shows the whole shape and so a
// script calling one gets a coded refusal (NOT_IMPLEMENTED, exit 2), never a
// silent success.
var pendingCommands = []struct{ use, short string }{
	{"demo", "Run the two-pull-request demo against the embedded fake cloud"},
}

func (a *app) pendingCommand(p struct{ use, short string }) *cobra.Command {
	return &cobra.Command{
		Use:                p.use,
		Short:              p.short + " (not available yet)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errs.New(errs.NOT_IMPLEMENTED, "`sponson %s` is not available in this version", p.use).
				WithHint("Available now: validate, scope, plan, apply, destroy, receipt, receipts, locks, unlock, schema, sim, version. Run `sponson help` for the list.")
		},
	}
}
