package costs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// TestSteadyApplyCosts counts what a steady-state apply (nothing changed)
// and a plan cost at the git server and at the providers, and what a
// create costs at the provider.
func TestSteadyApplyCosts(t *testing.T) {
	t.Parallel()
	w := newWorld(t, plan20)
	first := w.measure("apply", "--pr", "1")
	steady := w.measure("apply", "--pr", "1")
	plan := w.measure("plan", "--pr", "1")
	t.Logf("first apply: git %d, provider %d, commits %d", first.git, first.provider, first.commits)
	t.Logf("steady apply: git %d, provider %d, commits %d\ngit: %s\nprovider:\n%s", steady.git, steady.provider, steady.commits,
		strings.Join(steady.gitLog, "\n  "), strings.Join(steady.provLog, "\n"))
	t.Logf("plan: git %d, provider %d", plan.git, plan.provider)
	// About one connection per line running at once (4), each a handshake
	// on a real network; the provider client keeps them (its
	// TestIdleConnectionsAreKept asserts it where the timing is its own).
	t.Logf("connections to the providers: steady apply %d, plan %d", steady.conns, plan.conns)
	// The floors of issue 11: a steady apply is one fetch and one
	// conditional push (over HTTP: New's advertisement, the packfile
	// request, the push's advertisement and the push) and one commit; a
	// plan is one fetch. In protocol v2 (docs/adr/0014) a read is an
	// ls-refs of its own branches and then the packfile request: one
	// request more than v0, whose advertisement carried every ref.
	if steady.git > 5 || steady.commits > 1 {
		t.Errorf("steady apply: %d git requests and %d commits, want at most 5 and 1:\n  %s", steady.git, steady.commits, strings.Join(steady.gitLog, "\n  "))
	}
	// Providers, at the floor: one read per resource, by the ledger's id
	// (16), and one of the shared parent object for its four entries.
	for what, c := range map[string]cost{"steady apply": steady, "plan": plan} {
		if c.provider > resources+1 {
			t.Errorf("%s: %d provider requests, want at most %d:\n%s", what, c.provider, resources+1, strings.Join(c.provLog, "\n"))
		}
	}
	if plan.git > 3 || plan.commits != 0 {
		t.Errorf("plan: %d git requests and %d commits, want at most 3 and none:\n  %s", plan.git, plan.commits, strings.Join(plan.gitLog, "\n  "))
	}
}

// TestCreateCosts: creating one http.resource object is its read (the
// name is looked up once, and not found) and the create request, whose
// answer is the object; reading it back by the ledger's id afterwards is
// one request.
func TestCreateCosts(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(string) string {
		return "version: 1\nproviders:\n  http:\n    sim:\n      base_url_env: " + sim.HTTPURLVar + "\n      auth: { bearer_env: " + sim.HTTPTokenVar + " }\n" +
			"changes:\n  - { id: flag, adapter: http, op: resource, api: sim, create: { path: /flags }, fields: { name: \"flag-${ctx.scope}\", on: true } }\n"
	})
	create := w.measure("apply", "--pr", "1")
	if create.provider > 2 {
		t.Errorf("one create: %d provider requests, want at most 2:\n%s", create.provider, strings.Join(create.provLog, "\n"))
	}
	steady := w.measure("apply", "--pr", "1")
	if steady.provider != 1 {
		t.Errorf("reading it back: %d provider requests, want 1 (by the ledger's id):\n%s", steady.provider, strings.Join(steady.provLog, "\n"))
	}
}

// independentPlan is n independent http.resource lines, r0..r(n-1).
func independentPlan(n int) func(string) string {
	return func(string) string {
		var s strings.Builder
		s.WriteString("version: 1\nproviders:\n  http:\n    sim:\n      base_url_env: " + sim.HTTPURLVar + "\n      auth: { bearer_env: " + sim.HTTPTokenVar + " }\nchanges:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&s, "  - { id: r%d, adapter: http, op: resource, api: sim, create: { path: /flags }, fields: { name: \"r%d-${ctx.scope}\" } }\n", i, i)
		}
		return s.String()
	}
}

// TestIndependentCreatesCosts: an apply from nothing of 12 independent
// lines, all at once, writes two commits — the lease with every line's
// intent, then the final receipt with the release — in New's exchange
// (whose listing shows the scope has no branch: nothing to fetch), one
// packfile of the environment (for the owners of what it creates) and two
// pushes; and two provider requests a line. In protocol v2 (docs/adr/0014)
// each of the two reads (the scope's, then the environment's) is an
// ls-refs of its branches before its packfile: two requests more.
func TestIndependentCreatesCosts(t *testing.T) {
	t.Parallel()
	w := newWorld(t, independentPlan(12))
	w.run("apply", "--pr", "1") // another scope in the environment
	c := w.measure("apply", "--pr", "2", "--parallelism", "12")
	if c.commits != 2 {
		t.Errorf("12 independent creates: %d commits, want 2:\n  %s", c.commits, strings.Join(c.gitLog, "\n  "))
	}
	if c.git > 8 {
		t.Errorf("12 independent creates: %d git requests, want at most 8 (New's exchange, two ls-refs, the environment's packfile once, two pushes):\n  %s", c.git, strings.Join(c.gitLog, "\n  "))
	}
	if c.provider > 24 {
		t.Errorf("12 independent creates: %d provider requests, want at most 24:\n%s", c.provider, strings.Join(c.provLog, "\n"))
	}
}
