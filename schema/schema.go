// Package schema holds the JSON schema of release.plan.yaml (format version
// 1), for editors (`# yaml-language-server: $schema=...`) and for
// `sponson schema`.
//
// The schema and pkg/plan's parser agree on every example and on a set of
// plans tested in pkg/plan, with one deliberate difference: the schema
// rejects unknown top-level keys, which the parser only warns about. It
// checks less than the parser (credential formats, references between
// lines, ${ctx.*} names), never more.
package schema

import (
	"bytes"
	_ "embed"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON is the schema document, release.plan.schema.json.
//
//go:embed release.plan.schema.json
var JSON []byte

// ID is the schema's $id.
const ID = "https://sponson.dev/schema/release.plan.schema.json"

// Compile compiles the schema with a draft 2020-12 validator, for tests and
// tools that validate plan files (converted to JSON) against it.
func Compile() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ID, doc); err != nil {
		return nil, err
	}
	return c.Compile(ID)
}
