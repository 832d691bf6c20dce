// Command adapterdocs writes docs/adapters.md and the op rules of the plan's
// JSON schema from the registry of ops (`go generate ./pkg/adapters` runs
// it):
//
//	go run ./cmd/adapterdocs -docs docs/adapters.md -schema schema/release.plan.schema.json
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sponson/apply/pkg/adapters"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./cmd/adapterdocs [-docs docs/adapters.md] [-schema schema/release.plan.schema.json]")
		flag.PrintDefaults()
	}
	docs := flag.String("docs", "docs/adapters.md", "the Markdown file to write")
	schema := flag.String("schema", "schema/release.plan.schema.json", "the JSON schema to update")
	flag.Parse()
	if err := run(*docs, *schema); err != nil {
		fmt.Fprintln(os.Stderr, "adapterdocs:", err)
		os.Exit(1)
	}
}

func run(docs, schema string) error {
	if err := os.WriteFile(docs, adapters.Docs(), 0o644); err != nil {
		return err
	}
	base, err := os.ReadFile(schema)
	if err != nil {
		return err
	}
	out, err := adapters.Schema(base)
	if err != nil {
		return err
	}
	return os.WriteFile(schema, out, 0o644)
}
