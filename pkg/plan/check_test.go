package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

// fakeCatalog is the built-in adapters' ops and outputs as the design lists
// them. http.resource has id plus the outputs its line declares.
type fakeCatalog struct{}

var fakeOps = map[string]map[string][]string{
	"neon":     {"branch": {"branch_id", "host", "connection_string"}},
	"vercel":   {"env": {"preview_url", "deployment_id"}, "deploy": {"preview_url", "deployment_id"}},
	"auth0":    {"callback": {"url"}},
	"supabase": {"auth_redirect": {"url"}, "branch": {"project_ref", "api_url", "db_host", "connection_string"}},
	"http":     {"resource": {"id"}, "list_item": {}, "recipe": {"id", "hostname", "signing_secret"}},
	"manual":   {"step": {"confirmed_by", "confirmed_at", "title", "undo"}},
	// The newer providers, as far as the examples use them.
	"netlify":      {"env": {"preview_url", "deploy_id", "deploy_preview_url"}},
	"cloudflare":   {"pages_env": {}},
	"clerk":        {"redirect_allow": {"url"}},
	"planetscale":  {"branch": {"name", "id"}, "password": {"id", "username", "host", "role", "password", "connection_string"}},
	"launchdarkly": {"flag_target": {"key", "variation"}},
}

func (fakeCatalog) Adapters() []string {
	return []string{"auth0", "clerk", "cloudflare", "http", "launchdarkly", "neon", "netlify", "planetscale", "supabase", "vercel"}
}

func (fakeCatalog) Ops(adapter string) []string {
	ops, ok := fakeOps[adapter]
	if !ok {
		return nil
	}
	var out []string
	for op := range ops {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

func (fakeCatalog) Outputs(adapter, op string) []string { return fakeOps[adapter][op] }

func (c fakeCatalog) OutputsOf(adapter, op string, params *plan.Value) []string {
	outs := slices.Clone(c.Outputs(adapter, op))
	if declared := params.Get("outputs"); adapter == "http" && op == "resource" && declared != nil {
		for _, f := range declared.Fields {
			outs = append(outs, f.Key)
		}
	}
	return outs
}

// staticCatalog implements only Catalog, not LineOutputs.
type staticCatalog struct{ c fakeCatalog }

func (s staticCatalog) Adapters() []string                  { return s.c.Adapters() }
func (s staticCatalog) Ops(adapter string) []string         { return s.c.Ops(adapter) }
func (s staticCatalog) Outputs(adapter, op string) []string { return s.c.Outputs(adapter, op) }

var (
	_ plan.Catalog     = fakeCatalog{}
	_ plan.LineOutputs = fakeCatalog{}
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		cat  plan.Catalog
		src  string
		want []errAt
		msg  string
	}{
		{"valid", fakeCatalog{}, base +
			"  - {id: db, adapter: neon, op: branch}\n  - {id: env, adapter: vercel, op: env, values: {U: {from: db.connection_string}}}\n" +
			"  - {id: cb, adapter: auth0, op: callback, url: {from: env.preview_url}}\n", nil, ""},
		{"unknown adapter", fakeCatalog{}, base + "  - {id: db, adapter: neonn, op: branch}\n",
			[]errAt{{errs.ADAPTER_UNKNOWN, 3, 23}}, `adapter "neonn", which does not exist; the adapters are: auth0, clerk, cloudflare, http, launchdarkly, neon, netlify, planetscale, supabase, vercel`},
		{"unknown op", fakeCatalog{}, base + "  - {id: db, adapter: neon, op: database}\n",
			[]errAt{{errs.OP_UNKNOWN, 3, 33}}, `adapter neon has no op "database"; its ops are: branch`},
		{"unknown output", fakeCatalog{}, base + "  - {id: db, adapter: neon, op: branch}\n  - {id: env, adapter: vercel, op: env, values: {U: {from: db.url}}}\n",
			[]errAt{{errs.REF_OUTPUT_UNKNOWN, 4, 60}}, `line "db" (neon.branch) has no output "url"; its outputs are: branch_id, host, connection_string`},
		{"output of a list op", fakeCatalog{}, base + "  - {id: a, adapter: http, op: list_item}\n  - {id: b, adapter: auth0, op: callback, url: {from: a.id}}\n",
			[]errAt{{errs.REF_OUTPUT_UNKNOWN, 4, 55}}, "its outputs are: (none)"},
		{"declared output", fakeCatalog{}, base + "  - {id: a, adapter: http, op: resource, outputs: {slug: /slug}}\n  - {id: b, adapter: auth0, op: callback, url: {from: a.slug}}\n",
			nil, ""},
		{"declared output without LineOutputs", staticCatalog{}, base + "  - {id: a, adapter: http, op: resource, outputs: {slug: /slug}}\n  - {id: b, adapter: auth0, op: callback, url: {from: a.slug}}\n",
			[]errAt{{errs.REF_OUTPUT_UNKNOWN, 4, 55}}, "its outputs are: id"},
		{"from a line with an unknown adapter is not judged twice", fakeCatalog{}, base + "  - {id: a, adapter: nope, op: x}\n  - {id: b, adapter: auth0, op: callback, url: {from: a.url}}\n",
			[]errAt{{errs.ADAPTER_UNKNOWN, 3, 22}}, ""},
		{"environment_url", fakeCatalog{}, "version: 1\nenvironment_url: {from: env.preview_url}\nchanges:\n  - {id: env, adapter: vercel, op: env}\n", nil, ""},
		{"environment_url unknown output", fakeCatalog{}, "version: 1\nenvironment_url: {from: env.url}\nchanges:\n  - {id: env, adapter: vercel, op: env}\n",
			[]errAt{{errs.REF_OUTPUT_UNKNOWN, 2, 25}}, `environment_url: line "env" (vercel.env) has no output "url"; its outputs are: preview_url, deployment_id`},
		{"unknown provider", fakeCatalog{}, "version: 1\nproviders:\n  vercell: {project: p}\nchanges:\n  - {id: a, adapter: http, op: list_item}\n",
			[]errAt{{errs.ADAPTER_UNKNOWN, 3, 3}}, `providers names adapter "vercell"`},
		{"every error at once", fakeCatalog{}, base + "  - {id: a, adapter: nope, op: x}\n  - {id: b, adapter: neon, op: nope}\n  - {id: c, adapter: neon, op: branch, x: {from: c2.nope}}\n  - {id: c2, adapter: neon, op: branch}\n",
			[]errAt{{errs.ADAPTER_UNKNOWN, 3, 22}, {errs.OP_UNKNOWN, 4, 32}, {errs.REF_OUTPUT_UNKNOWN, 5, 50}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.Parse("p.yaml", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			err = p.Check(c.cat)
			if g := got(err); !slices.Equal(g, c.want) {
				t.Errorf("errors:\n got  %v\n want %v%s", g, c.want, carets(c.src, err))
			}
			if c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)) {
				t.Errorf("%v does not say %q", err, c.msg)
			}
		})
	}
}

func TestCheckOutputsDetail(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte(base+"  - {id: db, adapter: neon, op: branch}\n  - {id: e, adapter: vercel, op: env, v: {from: db.nope}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := errs.Coded(p.Check(fakeCatalog{}))
	if outs, _ := e.Details["outputs"].([]string); !slices.Equal(outs, []string{"branch_id", "host", "connection_string"}) {
		t.Errorf("details %v", e.Details)
	}
}
