package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
)

// A YAML mistake is reported where it is, in words: a key that does not
// line up with its block, a tab, a quote or bracket never closed.
func TestYAMLErrorsInWords(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		line, col int
		words     string
	}{
		{"key indented under a value", "version: 1\nchanges:\n  - id: db\n    adapter: neon\n     op: branch\n",
			5, 6, "`op` is indented 5 spaces, more than the block it belongs to"},
		{"key between two blocks", "version: 1\nchanges:\n  - id: db\n    adapter: neon\n    op: branch\n  - id: env\n   adapter: vercel\n    op: env\n",
			7, 4, "`adapter` is indented 3 spaces, which lines up with no block above it"},
		{"top-level key indented", "version: 1\n changes:\n  - {id: a, adapter: x, op: y}\n",
			2, 2, "`changes` is indented 1 spaces, more than the block"},
		{"tab", "version: 1\nchanges:\n  - id: db\n    adapter: neon\n    op: branch\n\tname: x\n",
			6, 1, "indented with a tab; YAML indents with spaces only"},
		{"quote never closed", "version: 1\nchanges:\n  - id: cb\n    adapter: auth0\n    op: callback\n    url: \"https://x\n",
			0, 0, "the quoted string opened at line 6, column 10 is never closed"},
		{"brace never closed", "version: 1\nchanges:\n  - id: db\n    adapter: neon\n    op: branch\n    values: { a: 1\n  - id: x\n",
			0, 0, "the { opened at line 6, column 13 is never closed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("release.plan.yaml", []byte(tc.src))
			l := errs.Flatten(err)
			if len(l) == 0 || l[0].Code != errs.PLAN_PARSE {
				t.Fatalf("err = %v", err)
			}
			e := l[0]
			if tc.line > 0 && (e.Line != tc.line || e.Column != tc.col) {
				t.Errorf("at %d:%d, want %d:%d: %s", e.Line, e.Column, tc.line, tc.col, e.Message)
			}
			if !strings.Contains(e.Message, tc.words) || !strings.HasPrefix(e.Message, "invalid YAML: ") {
				t.Errorf("message %q lacks %q", e.Message, tc.words)
			}
		})
	}
}

// The indentation check never finds fault with a plan YAML accepts: every
// example of the repository and every valid plan of the corpus.
func TestMisalignedAcceptsValidPlans(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	srcs := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[f] = string(b)
	}
	for i, src := range validShapes {
		srcs["shape "+string(rune('a'+i))] = src
	}
	if len(srcs) < 3 {
		t.Fatalf("only %d plans to check", len(srcs))
	}
	for name, src := range srcs {
		if _, err := Parse(name, []byte(src)); errs.CodeOf(err) == errs.PLAN_PARSE {
			t.Errorf("%s does not parse, so it proves nothing: %v", name, err)
			continue
		}
		if m := misaligned(strings.Split(src, "\n")); m != nil {
			t.Errorf("%s: a valid plan is misaligned at %d:%d: %s", name, m.line, m.col, m.sentence)
		}
	}
}

// validShapes are plans in every shape YAML allows and plan files use.
var validShapes = []string{
	"version: 1\nchanges:\n  - id: a\n    adapter: x\n    op: y\n    depends_on: [b]\n  - id: b\n    adapter: x\n    op: y\n",
	"# comment\nversion: 1   # trailing\nenvironments:\n  - preview\n  - production\nchanges:\n- id: a\n  adapter: x\n  op: y\n",
	"version: 1\nchanges:\n  - id: a\n    adapter: x\n    op: y\n    body: |\n      line one\n        indented more\n      line: with colon\n    other: >-\n      folded\n  - id: b\n    adapter: x\n    op: y\n",
	"version: 1\nchanges:\n  - {id: a, adapter: x, op: y,\n     values: {A: 1,\n       B: 2}}\n",
	"version: 1\nproviders:\n  neon: { project: p }\n  \"quoted key\": { a: b }\nchanges:\n  - id: a\n    adapter: x\n    op: y\n    text: a plain value\n      continued on the next line\n    list:\n      - - nested\n        - items\n      - key: v\n        other: w\n",
	"version: 1\nchanges:\n  -   id: a\n      adapter: x\n      op: y\n  -\n    id: b\n    adapter: x\n    op: y\n    url: \"https://x.dev/#frag: not a key\"\n    note: 'it''s: fine'\n",
}

// unclosed names the last quote or bracket left open, where it opens.
func TestUnclosed(t *testing.T) {
	cases := []struct {
		name      string
		text      string
		what      string
		line, col int
	}{
		{"all closed", "a: [1, {b: \"x]\"}]\nc: 'it''s'", "", 0, 0},
		{"a flow list", "version: 1\nchanges: [\n", "[", 2, 10},
		{"the innermost bracket", "a: [1, {b: 2\n", "{", 1, 8},
		{"a double quote across lines", "a: \"one\ntwo\n", "quoted string", 1, 4},
		{"an escaped quote does not close", "a: \"x\\\"\n", "quoted string", 1, 4},
		{"a quote inside a word opens nothing", "a: it's [\n", "[", 1, 9},
		{"a comment hides brackets", "a: 1 # [ {\n# {\n", "", 0, 0},
		{"a hash in a quote is no comment", "a: \"# [\" [\n", "[", 1, 10},
		{"a stray closer", "a: ]\nb: [\n", "[", 2, 4},
	}
	for _, tc := range cases {
		what, line, col := unclosed(strings.Split(tc.text, "\n"))
		if what != tc.what || line != tc.line || col != tc.col {
			t.Errorf("%s: %q at %d:%d, want %q at %d:%d", tc.name, what, line, col, tc.what, tc.line, tc.col)
		}
	}
}
