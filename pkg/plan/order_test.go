package plan_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

func ids(lines []*plan.Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.ID
	}
	return out
}

func TestSelectOrder(t *testing.T) {
	cases := []struct {
		name  string
		lines string
		env   string
		want  []string
	}{
		{"file order without dependencies", "  - {id: c, adapter: x, op: y}\n  - {id: a, adapter: x, op: y}\n  - {id: b, adapter: x, op: y}\n",
			"preview", []string{"c", "a", "b"}},
		{"a dependency moves a line after it", "  - {id: login, adapter: x, op: y, url: {from: env.url}}\n  - {id: env, adapter: x, op: y, db: {from: db.url}}\n  - {id: db, adapter: x, op: y}\n",
			"preview", []string{"db", "env", "login"}},
		{"ties broken by file order", "  - {id: d, adapter: x, op: y, depends_on: [a]}\n  - {id: c, adapter: x, op: y}\n  - {id: b, adapter: x, op: y, depends_on: [a]}\n  - {id: a, adapter: x, op: y}\n",
			"preview", []string{"c", "a", "d", "b"}},
		{"a from deep in a list orders", "  - {id: b, adapter: x, op: y, l: [1, {m: [{from: a.o}]}]}\n  - {id: a, adapter: x, op: y}\n",
			"preview", []string{"a", "b"}},
		{"filtered lines are left out", "  - {id: a, adapter: x, op: y, environments: [production]}\n  - {id: b, adapter: x, op: y}\n  - {id: c, adapter: x, op: y, environments: [preview]}\n",
			"preview", []string{"b", "c"}},
		{"diamond", "  - {id: top, adapter: x, op: y, depends_on: [left, right]}\n  - {id: right, adapter: x, op: y, depends_on: [root]}\n  - {id: left, adapter: x, op: y, depends_on: [root]}\n  - {id: root, adapter: x, op: y}\n",
			"production", []string{"root", "right", "left", "top"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.Parse("p.yaml", []byte(base+c.lines))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := p.Select(c.env)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(lines); !slices.Equal(g, c.want) {
				t.Errorf("order %v, want %v", g, c.want)
			}
		})
	}
}

func TestSelectRefuses(t *testing.T) {
	cases := []struct {
		name string
		src  string
		env  string
		want []errAt
		msg  string
		hint string
	}{
		{"unknown environment, default list", base + "  - {id: a, adapter: x, op: y}\n", "staging",
			[]errAt{{errs.ENV_UNKNOWN, 0, 0}}, `"staging" is not one of the plan's: preview, production`, ""},
		{"unknown environment, declared list", "version: 1\nenvironments: [preview, qa]\nchanges:\n  - {id: a, adapter: x, op: y}\n", "production",
			[]errAt{{errs.ENV_UNKNOWN, 2, 15}}, "preview, qa", ""},
		{"from a filtered line", base + "  - {id: db, adapter: x, op: y, environments: [preview]}\n  - {id: env, adapter: x, op: y, u: {from: db.url}}\n", "production",
			[]errAt{{errs.REF_FILTERED, 4, 44}}, `line "env" (from db.url) needs line "db", which does not run in production (its environments: preview)`,
			`Add production to the environments of line "db" (line 3), or give line "env" environments without production`},
		{"depends_on a filtered line", base + "  - {id: db, adapter: x, op: y, environments: [preview]}\n  - {id: env, adapter: x, op: y, depends_on: [db], environments: [preview, production]}\n", "production",
			[]errAt{{errs.REF_FILTERED, 4, 47}}, "depends_on db", `or remove production from the environments of line "env"`},
		{"every filtered reference", base + "  - {id: a, adapter: x, op: y, environments: [preview]}\n  - {id: b, adapter: x, op: y, p: {from: a.x}, q: {from: a.y}}\n", "production",
			[]errAt{{errs.REF_FILTERED, 4, 42}, {errs.REF_FILTERED, 4, 58}}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.Parse("p.yaml", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Select(c.env)
			if g := got(err); !slices.Equal(g, c.want) {
				t.Errorf("errors:\n got  %v\n want %v%s", g, c.want, carets(c.src, err))
			}
			e := errs.Coded(err)
			if e == nil {
				return
			}
			if e.File != "p.yaml" {
				t.Errorf("no file in %v", e)
			}
			if !strings.Contains(e.Message, c.msg) {
				t.Errorf("message %q does not say %q", e.Message, c.msg)
			}
			if !strings.Contains(e.HintText(), c.hint) {
				t.Errorf("hint %q does not say %q", e.HintText(), c.hint)
			}
		})
	}
}

func TestSelectOfALineFilteredOutThatNobodyNeeds(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte(base+"  - {id: a, adapter: x, op: y, environments: [production]}\n  - {id: b, adapter: x, op: y, depends_on: [a], environments: [production]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := p.Select("preview")
	if err != nil || len(lines) != 0 {
		t.Errorf("Select(preview) = %v, %v", ids(lines), err)
	}
}

func TestSelectLargeChain(t *testing.T) {
	// A long chain, written backwards: ordering and cycle detection are not
	// recursive, and stay fast.
	var b strings.Builder
	b.WriteString(base)
	const n = 2000
	for i := n; i > 0; i-- {
		b.WriteString("  - {id: l" + itoa(i) + ", adapter: x, op: y")
		if i > 1 {
			b.WriteString(", p: {from: l" + itoa(i-1) + ".o}")
		}
		b.WriteString("}\n")
	}
	p, err := plan.Parse("p.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := p.Select("preview")
	if err != nil {
		t.Fatal(err)
	}
	if lines[0].ID != "l1" || lines[n-1].ID != "l"+itoa(n) {
		t.Errorf("first %s last %s", lines[0].ID, lines[n-1].ID)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
