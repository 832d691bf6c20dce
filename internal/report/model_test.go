package report

import (
	"slices"
	"testing"

	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
)

// The parts of FromRun, one rule each; the golden files check them together.

func TestLineOrder(t *testing.T) {
	lines := map[string]receipt.LineResult{"db": {}, "env": {}, "cb": {}, "auth": {}}
	cases := []struct {
		name  string
		order []string
		want  []string
	}{
		{"no order: by id", nil, []string{"auth", "cb", "db", "env"}},
		{"the run's order first, then the rest by id", []string{"env", "db"}, []string{"env", "db", "auth", "cb"}},
		{"an ordered line without a result is left out", []string{"gone", "cb"}, []string{"cb", "auth", "db", "env"}},
	}
	for _, tc := range cases {
		if got := lineOrder(tc.order, lines); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestLedgerCount(t *testing.T) {
	ledger := receipt.Ledger{
		{CreatedBy: receipt.CreatedBySponson}, {CreatedBy: receipt.CreatedBySponson, Orphan: true},
		{CreatedBy: receipt.CreatedByAdopted}, {CreatedBy: receipt.CreatedByIntent},
	}
	want := LedgerCount{Resources: 4, Sponson: 2, Adopted: 1, Intents: 1, Orphans: 1}
	if got := ledgerCount(ledger); *got != want {
		t.Errorf("ledgerCount = %+v, want %+v", *got, want)
	}
}

// The plan names a line's op; the ledger names it only when the plan does
// not (a line gone from the plan).
func TestLineOps(t *testing.T) {
	p := &plan.Plan{Lines: []*plan.Line{{ID: "db", Adapter: "neon", Op: "branch"}}}
	ledger := receipt.Ledger{
		{Line: "db", Adapter: "supabase", Op: "branch"},
		{Line: "gone", Adapter: "vercel", Op: "env"},
		{Adapter: "http", Op: "request"}, // no line: names nothing
	}
	got := lineOps(p, ledger)
	want := map[string]string{"db": op("neon", "branch"), "gone": op("vercel", "env")}
	if len(got) != len(want) || got["db"] != want["db"] || got["gone"] != want["gone"] {
		t.Errorf("lineOps = %v, want %v", got, want)
	}
	if got := lineOps(nil, ledger); got["db"] != op("supabase", "branch") {
		t.Errorf("without a plan, db's op = %q, want the ledger's", got["db"])
	}
}
