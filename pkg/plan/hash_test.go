package plan

import (
	"regexp"
	"testing"
)

const hashBase = `version: 1
providers:
  neon: { project: proj_abc }
changes:
  - id: db
    adapter: neon
    op: branch
    parent: main
    environments: [preview]
  - id: env
    adapter: vercel
    op: env
    values:
      A: { from: db.host }
      B: "x"
`

func mustParse(t *testing.T, src string) *Plan {
	t.Helper()
	p, err := Parse("release.plan.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return p
}

// TestHashIgnoresHowThePlanIsWritten: comments, quoting, flow style, key
// order and anchors leave the hash alone; the file name too.
func TestHashIgnoresHowThePlanIsWritten(t *testing.T) {
	want := mustParse(t, hashBase).Hash()
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(want) {
		t.Fatalf("hash %q is not sha256:<64 hex>", want)
	}
	same := map[string]string{
		"comments and blank lines": "# the plan\n" + hashBase + "\n# end\n",
		"key order and quoting": `version: 1
providers: {neon: {project: "proj_abc"}}
changes:
  - op: branch
    adapter: neon
    id: db
    environments: ["preview"]
    parent: 'main'
  - id: env
    op: env
    adapter: vercel
    values: {B: x, A: {from: "db.host"}}
`,
	}
	for name, src := range same {
		p, err := Parse("other.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := p.Hash(); got != want {
			t.Errorf("%s: hash %s, want %s", name, got, want)
		}
	}
}

// TestHashChangesWithContent: every part of what the plan says is in the
// hash.
func TestHashChangesWithContent(t *testing.T) {
	base := mustParse(t, hashBase).Hash()
	edits := map[string]string{
		"a value":      `B: "y"`,
		"a from":       `A: { from: db.branch }`,
		"the provider": `neon: { project: proj_xyz }`,
		"the op":       `op: branch2`,
		"environments": `environments: [preview, staging]`,
	}
	olds := map[string]string{
		"a value":      `B: "x"`,
		"a from":       `A: { from: db.host }`,
		"the provider": `neon: { project: proj_abc }`,
		"the op":       `op: branch`,
		"environments": `environments: [preview]`,
	}
	seen := map[string]string{base: "base"}
	for name, repl := range edits {
		src := regexp.MustCompile(regexp.QuoteMeta(olds[name])).ReplaceAllLiteralString(hashBase, repl)
		if src == hashBase {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		h := mustParse(t, src).Hash()
		if other, dup := seen[h]; dup {
			t.Errorf("%s: hash %s equals that of %s", name, h, other)
		}
		seen[h] = name
	}
	// The order of lines breaks ties in the run order: it is content.
	swapped := `version: 1
providers:
  neon: { project: proj_abc }
changes:
  - id: env
    adapter: vercel
    op: env
    values:
      A: { from: db.host }
      B: "x"
  - id: db
    adapter: neon
    op: branch
    parent: main
    environments: [preview]
`
	if mustParse(t, swapped).Hash() == base {
		t.Error("swapping two lines left the hash unchanged")
	}
	if (*Plan)(nil).Hash() != "" {
		t.Error("a nil plan has a hash")
	}
}

func TestProduction(t *testing.T) {
	for name, want := range map[string]bool{
		"production": true, "prod": true, "prod-eu": true, "Production": true, "PROD_US": true, "preprod": true,
		"preview": false, "staging": false, "main": false, "": false, "dev": false,
	} {
		if got := Production(name); got != want {
			t.Errorf("Production(%q) = %v, want %v", name, got, want)
		}
	}
}
