package plan_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

// FuzzParse: no input panics; a rejection is a sorted errs.List of known,
// non-warning codes, each with the file and a line; an accepted plan keeps
// every promise the engine relies on.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte(full))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := plan.Parse("fuzz.yaml", src)
		if err != nil {
			if p != nil {
				t.Fatal("a plan returned beside an error")
			}
			var l errs.List
			if !errors.As(err, &l) || len(l) == 0 {
				t.Fatalf("rejection is %T %v, want a non-empty errs.List", err, err)
			}
			checkCoded(t, l, "")
			if !slices.IsSortedFunc(l, func(a, b *errs.Error) int { return cmpPos(a.Pos, b.Pos) }) {
				t.Fatalf("errors not sorted: %v", err)
			}
			return
		}
		checkPlan(t, p)
	})
}

func cmpPos(a, b errs.Pos) int {
	if a.Line != b.Line {
		return a.Line - b.Line
	}
	return a.Column - b.Column
}

// checkCoded checks errors leaving the package; only, when set, is the one
// code allowed.
func checkCoded(t *testing.T, l []*errs.Error, only ...errs.Code) {
	t.Helper()
	for _, e := range l {
		switch {
		case !errs.Known(e.Code):
			t.Fatalf("unknown code %q: %v", e.Code, e)
		case errs.Lookup(e.Code).Warning:
			t.Fatalf("a warning code as an error: %v", e)
		case e.File != "fuzz.yaml" || e.Line < 1:
			t.Fatalf("error without file and line: %v", e)
		case only[0] != "" && !slices.Contains(only, e.Code):
			t.Fatalf("unexpected code %s (want %v): %v", e.Code, only, e)
		}
	}
}

func checkPlan(t *testing.T, p *plan.Plan) {
	t.Helper()
	if p.Version != 1 || len(p.Lines) == 0 || len(p.Environments) == 0 {
		t.Fatalf("accepted plan: version %d, %d lines, environments %v", p.Version, len(p.Lines), p.Environments)
	}
	for _, w := range p.Warnings {
		if !errs.Known(w.Code) || !errs.Lookup(w.Code).Warning || w.File != "fuzz.yaml" || w.Line < 1 {
			t.Fatalf("bad warning %v", w)
		}
	}
	seen := map[string]bool{}
	for i, l := range p.Lines {
		if l.Index != i || seen[l.ID] || l.ID == "" || l.Adapter == "" || l.Op == "" || l.Params == nil || l.Pos.Line < 1 {
			t.Fatalf("line %d: %+v", i, l)
		}
		seen[l.ID] = true
		for _, d := range l.Deps() {
			if p.Line(d) == nil {
				t.Fatalf("line %s depends on unknown %s", l.ID, d)
			}
		}
		il, err := l.Interpolate(runVars)
		if err != nil {
			t.Fatalf("Interpolate with every variable: %v", err)
		}
		if _, err := il.PlainParams(func(string, *plan.Value) (any, error) { return "x", nil }); err != nil {
			t.Fatalf("PlainParams: %v", err)
		}
		if _, err := json.Marshal(l.Params); err != nil {
			t.Fatalf("params JSON: %v", err)
		}
	}
	for _, env := range p.Environments {
		lines, err := p.Select(env)
		if err != nil {
			checkCoded(t, errs.Flatten(err), errs.REF_FILTERED)
			continue
		}
		done := map[string]bool{}
		for _, l := range lines {
			if !l.In(env) {
				t.Fatalf("%s selected in %s", l.ID, env)
			}
			for _, d := range l.Deps() {
				if !done[d] {
					t.Fatalf("%s ordered before its dependency %s", l.ID, d)
				}
			}
			done[l.ID] = true
		}
	}
	if err := p.Check(fakeCatalog{}); err != nil {
		checkCoded(t, errs.Flatten(err), errs.ADAPTER_UNKNOWN, errs.OP_UNKNOWN, errs.REF_OUTPUT_UNKNOWN)
	}
	if _, err := json.Marshal(p.Summary()); err != nil {
		t.Fatal(err)
	}
}

// benchPlan is a realistic plan of n lines.
func benchPlan(n int) []byte {
	var b strings.Builder
	b.WriteString("# yaml-language-server: $schema=../schema/release.plan.schema.json\nversion: 1\n")
	b.WriteString("providers:\n  neon: { project: proj_abc }\n  vercel: { project: prj_1, team: team_9 }\n  auth0: { domain: example.eu.auth0.com, client: AbCd123 }\n")
	b.WriteString("changes:\n")
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "  - id: db%d\n    adapter: neon\n    op: branch\n    name: sponson/${ctx.env}/${ctx.scope}/%d\n    parent: main\n    environments: [preview]\n", i, i)
		case 1:
			fmt.Fprintf(&b, "  - id: env%d\n    adapter: vercel\n    op: env\n    target: preview\n    branch: ${ctx.git.branch}\n    values:\n"+
				"      DATABASE_URL: { from: db%d.connection_string }\n      STRIPE_KEY: { secret: \"env://STRIPE_KEY\" }\n      PUBLIC_URL: https://app-${ctx.scope}.example.dev\n      FLAG: \"true\"\n    environments: [preview]\n", i, i-1)
		case 2:
			fmt.Fprintf(&b, "  - id: login%d\n    adapter: auth0\n    op: callback\n    url: { from: env%d.preview_url }\n    environments: [preview]\n", i, i-1)
		default:
			fmt.Fprintf(&b, "  - id: cors%d\n    adapter: http\n    op: list_item\n    parent: { method: GET, path: /v1/buckets/assets }\n    list_path: /cors/origins\n    shape: array\n    item: https://${ctx.scope}.example.dev\n    depends_on: [login%d]\n", i, i-1)
		}
	}
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	src := benchPlan(20)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := plan.Parse("bench.yaml", src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Select("preview"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkYAMLDecode is the YAML library alone on the same plan, so the
// package's own share of BenchmarkParse reads as a ratio between the two.
func BenchmarkYAMLDecode(b *testing.B) {
	src := benchPlan(20)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		var n yaml.Node
		if err := yaml.Unmarshal(src, &n); err != nil {
			b.Fatal(err)
		}
	}
}
