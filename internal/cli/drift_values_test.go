package cli_test

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// Drift of a variable shows both sides when the plan gives its value, and
// hides both when the value is a secret: what is live was written from it.
func TestDriftShowsKnownValuesAndHidesSecrets(t *testing.T) {
	cloud, vars := exampleCloud(t)
	delete(vars, "SPONSON_CTX_SHA")
	vars["MY_KEY"] = "s3cr3t-from-the-environment"
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": `version: 1
providers:
  vercel: { project: prj_123, team: team_9 }
changes:
  - id: env
    adapter: vercel
    op: env
    target: preview
    branch: "*"
    values:
      SCOPE: "${ctx.scope}"
      KEY: { secret: "env://MY_KEY" }
`})
	checkout(t, env.Dir)
	if r := runCLI(t, env, "apply", "--pr", "1", "--receipts", "local"); r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	for key, value := range map[string]string{"SCOPE": "by-hand", "KEY": "pasted-in-the-console"} {
		if _, err := cloud.Drift(sim.Drift{Provider: sim.ProviderVercel, Action: sim.DriftChange, Project: "prj_123", Key: key, Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, env, "plan", "--pr", "1", "--receipts", "local")
	for _, want := range []string{`values.SCOPE: "by-hand" → "pr-1"`, `values.KEY: (secret) → (secret ← env://MY_KEY)`} {
		if !strings.Contains(r.out, want) {
			t.Errorf("plan does not show %q:\n%s%s", want, r.out, r.err)
		}
	}
	for _, never := range []string{"pasted-in-the-console", "s3cr3t-from-the-environment", "(hidden)"} {
		if strings.Contains(r.out+r.err, never) {
			t.Errorf("plan shows %q:\n%s%s", never, r.out, r.err)
		}
	}
}
