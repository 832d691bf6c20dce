package costs_test

import (
	"strings"
	"testing"
)

// TestSteadyApplyCosts counts what a steady-state apply (nothing changed)
// and a plan cost at the git server and at the providers, and what a
// create costs at the provider.
func TestSteadyApplyCosts(t *testing.T) {
	w := newWorld(t, plan20)
	first := w.measure("apply", "--pr", "1")
	steady := w.measure("apply", "--pr", "1")
	plan := w.measure("plan", "--pr", "1")
	t.Logf("first apply: git %d, provider %d, commits %d", first.git, first.provider, first.commits)
	t.Logf("steady apply: git %d, provider %d, commits %d\ngit: %s\nprovider:\n%s", steady.git, steady.provider, steady.commits,
		strings.Join(steady.gitLog, "\n  "), strings.Join(steady.provLog, "\n"))
	t.Logf("plan: git %d, provider %d", plan.git, plan.provider)
	// The floors of issue 11: a steady apply is one fetch and one
	// conditional push (over HTTP: New's advertisement, the packfile
	// request, the push's advertisement and the push) and one commit; a
	// plan is one fetch.
	if steady.git > 4 || steady.commits > 1 {
		t.Errorf("steady apply: %d git requests and %d commits, want at most 4 and 1:\n  %s", steady.git, steady.commits, strings.Join(steady.gitLog, "\n  "))
	}
	if plan.git > 2 || plan.commits != 0 {
		t.Errorf("plan: %d git requests and %d commits, want at most 2 and none:\n  %s", plan.git, plan.commits, strings.Join(plan.gitLog, "\n  "))
	}
}
