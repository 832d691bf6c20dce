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
}
