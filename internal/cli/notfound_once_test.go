package cli_test

import (
	"strings"
	"testing"
)

// A wrong provider id is said once (issue reproducer): `sponson plan`
// against the fake cloud with a Vercel project that does not exist prints
// the provider's 404 as the line's error, not also as a warning that
// repeats its code; under --json it is one error, no warning.
func TestWrongProviderIDIsPrintedOnce(t *testing.T) {
	_, vars := exampleCloud(t)
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": `version: 1
providers:
  vercel: { project: prj_doesnotexist, team: team_9 }
changes:
  - id: env
    adapter: vercel
    op: env
    target: preview
    branch: "*"
    values:
      SCOPE: "${ctx.scope}"
`})
	checkout(t, env.Dir)
	r := runCLI(t, env, "plan", "--pr", "1", "--receipts", "local")
	all := r.out + r.err
	if r.code == 0 || !strings.Contains(all, "PROVIDER_NOT_FOUND") {
		t.Fatalf("plan: exit %d, no PROVIDER_NOT_FOUND:\n%s", r.code, all)
	}
	// The plan's table names the code and points at the error; the 404
	// itself is printed once.
	if n := strings.Count(all, "404"); n != 1 {
		t.Errorf("the 404 is printed %d times, want once:\n%s", n, all)
	}
	doc := oneDocument(t, runCLI(t, env, "plan", "--pr", "1", "--receipts", "local", "--json"))
	for _, w := range doc["warnings"].([]any) {
		if w.(map[string]any)["code"] == "PROVIDER_NOT_FOUND" {
			t.Errorf("the 404 is repeated as a warning: %v", w)
		}
	}
}
