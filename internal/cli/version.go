package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/version"
)

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of sponson",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.versionResult()
			return nil
		},
	}
}

// versionResult is the answer of `sponson version` and `sponson --version`:
// the one version every program of this build reports (internal/version).
func (a *app) versionResult() {
	b := version.Get()
	a.result = map[string]any{"version": b}
	a.text = func(w io.Writer) { fmt.Fprintf(w, "sponson %s\n", b) }
}
