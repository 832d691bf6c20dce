package github_test

import (
	"strings"
	"testing"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/ghfixtures"
	"github.com/sponson/apply/internal/testing/githubtest"
)

// Every operation's route is the one GitHub's description gives it, so
// the bot's metrics are labelled with GitHub's own templates.
func TestRoutesAreGitHubs(t *testing.T) {
	spec, err := githubtest.LoadSpec(ghfixtures.OpenAPI(t))
	if err != nil {
		t.Fatal(err)
	}
	described := map[string]string{} // operationId -> "METHOD /template"
	for _, line := range spec.Operations() {
		f := strings.Fields(line)
		described[f[2]] = f[0] + " " + f[1]
	}
	for _, op := range github.Operations() {
		r, ok := github.RouteOf(op)
		if !ok {
			t.Fatalf("RouteOf(%q) not found", op)
		}
		if got, want := strings.ToUpper(r.Method)+" "+r.Path, described[op]; got != want {
			t.Errorf("%s: route %q, GitHub's description says %q", op, got, want)
		}
	}
	if _, ok := github.RouteOf(""); ok {
		t.Error(`RouteOf("") found a route`)
	}
}
