package cli

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/schema"
)

// SchemaOptions are `sponson schema`'s.
type SchemaOptions struct {
	f *Factory
}

func newCmdSchema(f *Factory, runF func(*SchemaOptions) error) *cobra.Command {
	opts := &SchemaOptions{f: f}
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON schema of release.plan.yaml",
		Long: `Prints the JSON schema (draft 2020-12) of the plan file, for editors:
  sponson schema > release.plan.schema.json
and, on the plan's first line:
  # yaml-language-server: $schema=release.plan.schema.json`,
		Example: "  sponson schema > release.plan.schema.json\n  sponson schema --json",
		Args:    exactArgs(0),
		RunE:    runWith(opts, runF, schemaRun),
	}
}

func schemaRun(opts *SchemaOptions) error {
	opts.f.answer.set(map[string]any{"schema": json.RawMessage(schema.JSON)}, func(w io.Writer) { w.Write(schema.JSON) })
	return nil
}
