package adapters_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/schema"
)

// TestSchemaKnowsTheOpsParameters: the schema generated from the registry
// types each op's parameters (editors complete and check them) and leaves
// unknown adapters to the parser.
func TestSchemaKnowsTheOpsParameters(t *testing.T) {
	sch, err := schema.Compile()
	if err != nil {
		t.Fatal(err)
	}
	head := "version: 1\nchanges:\n"
	cases := []struct {
		name, line string
		ok         bool
	}{
		{"auth0 callback", "  - {id: a, adapter: auth0, op: callback, url: https://x/cb, list: web_origins}", true},
		{"auth0 list from ctx", "  - {id: a, adapter: auth0, op: callback, url: {from: b.url}}", true},
		{"auth0 list not in the enum", "  - {id: a, adapter: auth0, op: callback, url: https://x, list: nope}", false},
		{"auth0 url missing", "  - {id: a, adapter: auth0, op: callback}", false},
		{"vercel values missing", "  - {id: a, adapter: vercel, op: env, target: preview}", false},
		{"vercel target by ctx", "  - {id: a, adapter: vercel, op: env, target: \"${ctx.env}\", values: {A: b}}", true},
		{"neon name a number", "  - {id: a, adapter: neon, op: branch, name: 5}", false},
		{"neon parent kept", "  - {id: a, adapter: neon, op: branch, parent: {keep: true}}", true},
		{"http list_item parent path a list", "  - {id: a, adapter: http, op: list_item, api: x, parent: {path: [1]}, list_path: /l, item: i}", false},
		{"unknown adapter", "  - {id: a, adapter: x, op: y, anything: 1}", true},
		{"recipe without op", "  - {id: a, adapter: http, recipe: github.repo_webhook, owner: o, repo: r, url: https://x}", true},
		{"recipe with op", "  - {id: a, adapter: http, op: recipe, recipe: sentry.release, organization: o, version: v, projects: [web]}", true},
		{"recipe parameter mistyped", "  - {id: a, adapter: http, recipe: github.repo_webhook, owner: o, repo: r, url: https://x, active: yes}", false},
		{"recipe parameter missing", "  - {id: a, adapter: http, recipe: github.repo_webhook, owner: o, url: https://x}", false},
		{"op missing without a recipe", "  - {id: a, adapter: http, api: x}", false},
		{"op missing, recipe on another adapter", "  - {id: a, adapter: neon, recipe: x}", false},
	}
	for _, c := range cases {
		var v any
		if err := yaml.Unmarshal([]byte(head+c.line+"\n"), &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		err = sch.Validate(inst)
		if (err == nil) != c.ok {
			t.Errorf("%s: valid = %v, want %v (%v)", c.name, err == nil, c.ok, err)
		}
	}
}
