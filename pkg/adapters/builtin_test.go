package adapters_test

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters"
)

func registry() *adapter.Registry {
	return adapters.Registry(func(string) (string, bool) { return "", false }, nil)
}

func TestRegistryHoldsTheBuiltinOps(t *testing.T) {
	var got []string
	for _, s := range registry().Specs() {
		got = append(got, s.Name())
	}
	for _, want := range []string{"auth0.callback", "http.list_item", "http.resource", "neon.branch", "supabase.auth_redirect", "vercel.env"} {
		if !slices.Contains(got, want) {
			t.Errorf("registry lacks %s (has %v)", want, got)
		}
	}
}

// TestSpecsAgreeWithTheOps checks what a Spec says against what the op is:
// a list op locks its parent, an op with external outputs can await them,
// every provider op names its credential and base-URL variables.
func TestSpecsAgreeWithTheOps(t *testing.T) {
	for _, op := range registry().Ops() {
		s := op.Spec()
		t.Run(s.Name(), func(t *testing.T) {
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			if _, locks := op.(adapter.ParentLocker); locks != s.ListItem {
				t.Errorf("ParentLocker %v, ListItem %v", locks, s.ListItem)
			}
			external := slices.ContainsFunc(s.Outputs, func(o adapter.OutputSpec) bool { return o.When == adapter.External })
			if _, awaits := op.(adapter.Awaiter); external && !awaits {
				t.Error("declares external outputs but is no Awaiter")
			}
			if s.Key == "" {
				t.Error("no key form")
			}
			if s.Adapter != "http" && !s.Manual && (len(s.Credentials) == 0 || s.BaseURLVar == "" || s.BaseURL == "") {
				t.Errorf("credentials %v, base URL %s (%s): a provider op names both", s.Credentials, s.BaseURLVar, s.BaseURL)
			}
			if !s.Manual && len(s.Sources) == 0 {
				t.Error("no documentation sources")
			}
		})
	}
}

// TestParsersTakeTheDeclaredParams: every op refuses a parameter its Spec
// does not declare and does not refuse one it declares as unknown.
func TestParsersTakeTheDeclaredParams(t *testing.T) {
	for _, op := range registry().Ops() {
		s := op.Spec()
		d, ok := op.(adapter.Defaulter)
		if !ok {
			continue
		}
		t.Run(s.Name(), func(t *testing.T) {
			_, err := d.Defaults(map[string]any{"no_such_parameter": "x"}, adapter.Provider{}, adapter.RunCtx{Env: "preview", Scope: "pr-1"})
			if err == nil || !containsAll(err, "no_such_parameter") {
				t.Errorf("an undeclared parameter: %v", err)
			}
			for _, p := range s.Params {
				_, err := d.Defaults(map[string]any{p.Name: adapter.Marker{Kind: adapter.Pending, Ref: "a.b"}}, adapter.Provider{}, adapter.RunCtx{Env: "preview", Scope: "pr-1"})
				if err != nil && containsAll(err, "has no parameter") {
					t.Errorf("declared parameter %s refused as unknown: %v", p.Name, err)
				}
			}
		})
	}
}

func containsAll(err error, subs ...string) bool {
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			return false
		}
	}
	return true
}

// TestGeneratedFilesAreUpToDate fails when docs/adapters.md or the schema's
// op rules differ from the registry.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	docs, err := os.ReadFile("../../docs/adapters.md")
	if err != nil || !bytes.Equal(docs, adapters.Docs()) {
		t.Errorf("docs/adapters.md is out of date (%v): run go generate ./pkg/adapters", err)
	}
	sch, err := os.ReadFile("../../schema/release.plan.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := adapters.Schema(sch)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sch, want) {
		t.Error("schema/release.plan.schema.json is out of date: run go generate ./pkg/adapters")
	}
	for _, s := range registry().Specs() {
		if !bytes.Contains(docs, []byte("## "+s.Name()+"\n")) || !bytes.Contains(sch, []byte(`"const": "`+s.Op+`"`)) {
			t.Errorf("%s is missing from the generated files", s.Name())
		}
	}
}
