package cli_test

import (
	"strings"
	"testing"
)

// Every missing secret is reported in the same run as the missing
// credentials, each at its reference: one refusal says all that is to be
// set, in text and in the JSON document's errors.
func TestMissingSecretsAndCredentialsAreReportedTogether(t *testing.T) {
	env := testEnv(t, map[string]string{}, map[string]string{"release.plan.yaml": `version: 1
providers:
  vercel: { project: prj_123 }
changes:
  - id: env
    adapter: vercel
    op: env
    target: preview
    branch: "*"
    values:
      A: { secret: "env://MISSING_A" }
      B: { secret: "env://MISSING_B" }
  - id: dev
    adapter: vercel
    op: env
    target: development
    values:
      C: { secret: "env://MISSING_C" }
`})
	want := []string{
		`release.plan.yaml:7:9: CREDENTIAL_MISSING: line "env" (vercel.env) needs the credential VERCEL_TOKEN`,
		`release.plan.yaml:11:20: SECRET_UNRESOLVED: secret env://MISSING_A`,
		`release.plan.yaml:12:20: SECRET_UNRESOLVED: secret env://MISSING_B`,
		`release.plan.yaml:18:20: SECRET_UNRESOLVED: secret env://MISSING_C`,
	}
	for _, cmd := range []string{"validate", "plan", "apply"} {
		r := runCLI(t, env, cmd, "--pr", "1", "--receipts", "local")
		if r.code == 0 {
			t.Fatalf("%s: exit 0\n%s", cmd, r.out)
		}
		for _, w := range want {
			if !strings.Contains(r.err, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd, w, r.err)
			}
		}
		r = runCLI(t, env, cmd, "--pr", "1", "--receipts", "local", "--json")
		doc := oneDocument(t, r)
		list, _ := doc["errors"].([]any)
		codes := map[string]int{}
		for _, e := range list {
			code, _ := e.(map[string]any)["code"].(string)
			codes[code]++
		}
		if codes["SECRET_UNRESOLVED"] != 3 || codes["CREDENTIAL_MISSING"] < 1 {
			t.Errorf("%s --json: errors by code %v, want 3 SECRET_UNRESOLVED and the CREDENTIAL_MISSING", cmd, codes)
		}
	}
}
