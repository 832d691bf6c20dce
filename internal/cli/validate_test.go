package cli_test

import (
	"os"
	"strings"
	"testing"
)

// An op whose outputs depend on the line (http.resource: id plus its
// outputs:) is checked with the line's own outputs.
func TestValidatePerLineOutputs(t *testing.T) {
	src, err := os.ReadFile("testdata/http-outputs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t, map[string]string{}, map[string]string{"release.plan.yaml": string(src)})
	r := runCLI(t, env, "validate")
	if r.code != 2 {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
	want := `release.plan.yaml:20:55: REF_OUTPUT_UNKNOWN: line "app" (http.resource) has no output "nope"; its outputs are: id, slug`
	if !strings.Contains(r.err, want) {
		t.Errorf("stderr lacks\n%s\ngot\n%s", want, r.err)
	}
	if strings.Contains(r.err, `"slug"`) {
		t.Errorf("a declared output was refused:\n%s", r.err)
	}
}

// callbackLine is a plan's providers and changes after its version line:
// one Auth0 callback line, whose next key would be line 9 of the file.
const callbackLine = `providers:
  auth0: { domain: x.eu.auth0.com, client: AbCd123 }
changes:
  - id: cb
    adapter: auth0
    op: callback
    url: https://${ctx.scope}.x.dev/cb
`

// An op's refusal of a parameter points at the parameter, not at the
// line's first key: a typo (parnet:, enviroments:) and a bad value
// (url: [1]) alike, in validate and plan.
func TestParamErrorsPointAtTheParameter(t *testing.T) {
	for _, c := range []struct{ bad, want string }{
		{"    parnet: main", `release.plan.yaml:9:5: PARAM_INVALID: auth0.callback has no parameter parnet`},
		{"    enviroments: [preview]", `release.plan.yaml:9:5: PARAM_INVALID: auth0.callback has no parameter enviroments`},
		{"    list: [1]", `release.plan.yaml:9:5: PARAM_INVALID: auth0.callback parameter list must be a string`},
	} {
		src := "version: 1\n" + callbackLine + c.bad + "\n"
		env := testEnv(t, map[string]string{"AUTH0_MANAGEMENT_TOKEN": "t"}, map[string]string{"release.plan.yaml": src})
		for _, cmd := range []string{"validate", "plan"} {
			r := runCLI(t, env, cmd, "--pr", "1", "--receipts", "local")
			if r.code != 2 || !strings.Contains(r.err, c.want) {
				t.Errorf("%s with %q: exit %d, want 2 and\n%s\ngot\n%s", cmd, c.bad, r.code, c.want, r.err)
			}
		}
	}
}

// validate's summary counts in words and says why an environment has no
// lines, instead of "0 line(s) in run order".
func TestValidateSummaryWords(t *testing.T) {
	src := "version: 1\nenvironments: [preview, production]\n" + callbackLine + "    environments: [preview]\n"
	env := testEnv(t, map[string]string{"AUTH0_MANAGEMENT_TOKEN": "tok-123456"}, map[string]string{"release.plan.yaml": src})
	r := runCLI(t, env, "validate", "--pr", "1")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
	for _, want := range []string{"(format 1, 1 line, environments preview, production)", "preview: 1 line in run order", "production: no lines (each line names other environments)"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
}

// validate refuses what plan refuses before it reads anything: a
// credential or an env:// secret that is not set, a file:// secret
// outside the working tree (also with --no-credentials, which checks
// only forms), all reported at once; with them set and the secret
// inside the tree, both pass.
func TestValidateRefusesWhatPlanRefuses(t *testing.T) {
	plan := "version: 1\nproviders:\n  vercel: { project: shop }\n" + strings.TrimPrefix(callbackLine, "providers:\n") + `  - id: app
    adapter: vercel
    op: env
    branch: feat
    environments: [preview]
    values:
      API_KEY: { secret: "env://STRIPE_KEY" }
      HOST: { secret: "file:///etc/hostname" }
`
	env := testEnv(t, map[string]string{}, map[string]string{"release.plan.yaml": plan})
	want := []string{
		`CREDENTIAL_MISSING: line "cb" (auth0.callback) needs the credential AUTH0_MANAGEMENT_TOKEN`,
		`CREDENTIAL_MISSING: line "app" (vercel.env) needs the credential VERCEL_TOKEN`,
		`SECRET_UNRESOLVED: secret env://STRIPE_KEY: the environment variable STRIPE_KEY is not set`,
		`SECRET_UNRESOLVED: secret file:///etc/hostname: /etc/hostname is outside the repository's working tree`,
	}
	for _, cmd := range []string{"validate", "plan"} {
		r := runCLI(t, env, cmd, "--pr", "1", "--receipts", "local")
		if r.code == 0 {
			t.Fatalf("%s: exit 0\n%s", cmd, r.out)
		}
		for _, w := range want {
			if !strings.Contains(r.err, w) {
				t.Errorf("%s: stderr lacks\n%s\ngot\n%s", cmd, w, r.err)
			}
		}
	}
	r := runCLI(t, env, "validate", "--no-credentials", "--pr", "1")
	if r.code == 0 || !strings.Contains(r.err, want[3]) || strings.Contains(r.err, "CREDENTIAL_MISSING") || strings.Contains(r.err, "STRIPE_KEY") {
		t.Errorf("validate --no-credentials: exit %d, want a refusal of only the file outside the tree\n%s", r.code, r.err)
	}

	fixed := strings.Replace(plan, "file:///etc/hostname", "file://host.txt", 1)
	env = testEnv(t, map[string]string{"AUTH0_MANAGEMENT_TOKEN": "tok-auth0-123456", "VERCEL_TOKEN": "tok-vercel-123456", "STRIPE_KEY": "sk-stripe-123456"},
		map[string]string{"release.plan.yaml": fixed, "host.txt": "db.internal\n"})
	if r := runCLI(t, env, "validate", "--pr", "1"); r.code != 0 {
		t.Errorf("validate with everything set: exit %d\n%s", r.code, r.err)
	}
}

// A misspelt key of a provider block is named where it is written, with
// the closest setting, before the setting it misses is reported.
func TestValidateNamesAnUnknownProviderSetting(t *testing.T) {
	env := testEnv(t, map[string]string{}, map[string]string{"release.plan.yaml": `version: 1
providers:
  neon:
    projet: proj_abc
  vercel: { project: prj_123, teem: team_9 }
  clerk: { instance: x }
changes:
  - id: db
    adapter: neon
    op: branch
`})
	r := runCLI(t, env, "validate", "--no-credentials")
	if r.code != 2 {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
	for _, want := range []string{
		`release.plan.yaml:4:5: PARAM_INVALID: providers.neon has no setting "projet"; neon takes project, database, role`,
		`Did you mean "project"?`,
		`release.plan.yaml:5:31: PARAM_INVALID: providers.vercel has no setting "teem"; vercel takes project, team`,
		`Did you mean "team"?`,
		`release.plan.yaml:6:12: PARAM_INVALID: providers.clerk has no setting "instance"; clerk takes no settings`,
	} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr lacks\n%s\ngot\n%s", want, r.err)
		}
	}
	if strings.Contains(r.err, "is required") {
		t.Errorf("the missing setting is reported, not the typo:\n%s", r.err)
	}
}
