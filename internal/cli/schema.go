package cli

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/schema"
)

func (a *app) schemaCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON schema of release.plan.yaml",
		Long: `Prints the JSON schema (draft 2020-12) of the plan file, for editors:
  sponson schema > release.plan.schema.json
and, on the plan's first line:
  # yaml-language-server: $schema=release.plan.schema.json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.result = map[string]any{"schema": json.RawMessage(schema.JSON)}
			a.text = func(w io.Writer) { w.Write(schema.JSON) }
			return nil
		},
	}
}
