package plan_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/schema"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := schema.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// schemaErr validates a YAML plan against the schema, as an editor would:
// converted to JSON first.
func schemaErr(t *testing.T, sch *jsonschema.Schema, src string) error {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(inst)
}

func TestSchemaAcceptsEveryExample(t *testing.T) {
	sch := compileSchema(t)
	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) < 3 {
		t.Fatalf("%d examples", len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemaErr(t, sch, string(src)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestSchemaAgreesWithParser keeps the two descriptions of the format
// together. The schema is stricter in one way only (unknown top-level keys);
// it checks less in a few (references between lines, ${ctx.*} names,
// credential formats), never more.
func TestSchemaAgreesWithParser(t *testing.T) {
	type verdict int
	const (
		bothAccept verdict = iota
		bothReject
		schemaOnlyRejects // the parser warns UNKNOWN_KEY
		parserOnlyRejects // beyond what a schema can say
	)
	line := "  - {id: a, adapter: x, op: y}\n"
	cases := []struct {
		name string
		src  string
		want verdict
	}{
		{"minimal", base + line, bothAccept},
		{"every top-level key", "version: 1\nenvironments: [preview, qa]\nproviders: {neon: {project: p}, http: {api: {base_url: u, auth: {bearer_env: T}}}}\nreceipts: local\nchanges:\n" + line, bothAccept},
		{"deep parameters", base + "  - {id: a, adapter: x, op: y, a: {b: [1, {c: [true, 2.5, \"${ctx.env}\"]}]}, e: {}, f: []}\n", bothAccept},
		{"every value form", base + line + "  - {id: b, adapter: x, op: y, f: {from: a.url}, s: {secret: \"env://S\"}, k: {keep: true}, l: [{from: a.id}]}\n", bothAccept},
		{"secret-named with a reference", base + "  - {id: a, adapter: x, op: y, values: {STRIPE_KEY: {secret: \"env://K\"}, L_TOKEN: [{keep: true}]}}\n", bothAccept},
		{"key named like a secret without the suffix", base + "  - {id: a, adapter: x, op: y, key: k, token: t}\n", bothAccept},

		{"missing version", "changes:\n" + line, bothReject},
		{"version 2", "version: 2\nchanges:\n" + line, bothReject},
		{"version string", "version: \"1\"\nchanges:\n" + line, bothReject},
		{"missing changes", "version: 1\n", bothReject},
		{"empty changes", "version: 1\nchanges: []\n", bothReject},
		{"bad id", base + "  - {id: Bad, adapter: x, op: y}\n", bothReject},
		{"missing op", base + "  - {id: a, adapter: x}\n", bothReject},
		{"empty adapter", base + "  - {id: a, adapter: \"\", op: y}\n", bothReject},
		{"line not a map", base + "  - a\n", bothReject},
		{"empty environments", "version: 1\nenvironments: []\nchanges:\n" + line, bothReject},
		{"empty line environments", base + "  - {id: a, adapter: x, op: y, environments: []}\n", bothReject},
		{"environment listed twice", "version: 1\nenvironments: [qa, qa]\nchanges:\n" + line, bothReject},
		{"receipts unknown", "version: 1\nreceipts: s3\nchanges:\n" + line, bothReject},
		{"depends_on a string", base + line + "  - {id: b, adapter: x, op: y, depends_on: a}\n", bothReject},
		{"value form with extra key", base + line + "  - {id: b, adapter: x, op: y, u: {from: a.url, x: 1}}\n", bothReject},
		{"keep false", base + "  - {id: a, adapter: x, op: y, v: {keep: false}}\n", bothReject},
		{"from malformed", base + line + "  - {id: b, adapter: x, op: y, u: {from: a}}\n", bothReject},
		{"secret malformed", base + "  - {id: a, adapter: x, op: y, v: {secret: NAME}}\n", bothReject},
		{"null parameter", base + "  - {id: a, adapter: x, op: y, v: null}\n", bothReject},
		{"secret-named literal", base + "  - {id: a, adapter: x, op: y, values: {STRIPE_KEY: abc}}\n", bothReject},
		{"secret-named literal in a list", base + "  - {id: a, adapter: x, op: y, DB_PASSWORD: [{keep: true}, abc]}\n", bothReject},
		{"secret-named number", base + "  - {id: a, adapter: x, op: y, pin_pass: 1234}\n", bothReject},
		{"pasted display text", base + "  - {id: a, adapter: x, op: y, v: \"(pending ← db.url)\"}\n", bothReject},
		{"provider block not a map", "version: 1\nproviders: {neon: p}\nchanges:\n" + line, bothReject},
		{"value form in a provider", "version: 1\nproviders: {http: {api: {t: {secret: \"env://T\"}}}}\nchanges:\n" + line, bothReject},
		{"secret-named provider literal", "version: 1\nproviders: {http: {api: {api_key: k}}}\nchanges:\n" + line, bothReject},

		{"environment_url", "version: 1\nenvironment_url: {from: a.url}\nchanges:\n" + line, bothAccept},
		{"environment_url a string", "version: 1\nenvironment_url: a.url\nchanges:\n" + line, bothReject},
		{"environment_url malformed", "version: 1\nenvironment_url: {from: a}\nchanges:\n" + line, bothReject},
		{"environment_url a secret", "version: 1\nenvironment_url: {secret: \"env://U\"}\nchanges:\n" + line, bothReject},
		{"environment_url of an unknown line", "version: 1\nenvironment_url: {from: b.url}\nchanges:\n" + line, parserOnlyRejects},
		{"unknown top-level key", "version: 1\nowner: platform\nchanges:\n" + line, schemaOnlyRejects},

		{"unknown line", base + "  - {id: a, adapter: x, op: y, depends_on: [b]}\n", parserOnlyRejects},
		{"cycle", base + "  - {id: a, adapter: x, op: y, depends_on: [a]}\n", parserOnlyRejects},
		{"unknown ctx name", base + "  - {id: a, adapter: x, op: y, v: \"${ctx.nope}\"}\n", parserOnlyRejects},
		{"credential format", base + "  - {id: a, adapter: x, op: y, note: " + ghToken + "}\n", parserOnlyRejects},
	}
	sch := compileSchema(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, perr := plan.Parse("p.yaml", []byte(c.src))
			serr := schemaErr(t, sch, c.src)
			switch c.want {
			case bothAccept:
				if perr != nil || serr != nil {
					t.Errorf("parser: %v\nschema: %v", perr, serr)
				}
			case bothReject:
				if perr == nil || serr == nil {
					t.Errorf("want both to reject\nparser: %v\nschema: %v", perr, serr)
				}
			case schemaOnlyRejects:
				if perr != nil || serr == nil {
					t.Fatalf("want the parser to accept and the schema to reject\nparser: %v\nschema: %v", perr, serr)
				}
				if len(p.Warnings) != 1 || p.Warnings[0].Code != errs.UNKNOWN_KEY {
					t.Errorf("want one UNKNOWN_KEY warning, got %v", p.Warnings)
				}
			case parserOnlyRejects:
				if perr == nil || serr != nil {
					t.Errorf("want the parser alone to reject\nparser: %v\nschema: %v", perr, serr)
				}
			}
		})
	}
}
