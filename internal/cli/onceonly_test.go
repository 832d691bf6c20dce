package cli_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

const onceOnlyPlan = `version: 1
providers:
  netlify:     { site: 3f1c2a9e-7b4d-4e61-9a0f-2c8d5e6b7a10 }
  planetscale: { organization: acme, database: shop }
changes:
  - id: db
    adapter: planetscale
    op: branch
    parent: main
  - id: dbpass
    adapter: planetscale
    op: password
    branch: { from: db.name }
    role: readwriter
  - id: env
    adapter: netlify
    op: env
    context: deploy-preview
    values:
      DATABASE_URL: { from: dbpass.connection_string }
      DATABASE_PASSWORD: { from: dbpass.password }
      PUBLIC_SCOPE: ${ctx.scope}
`

// TestRecreateOnceOnlyUser: --recreate of a line that uses a once-only
// output (a PlanetScale password) of a line it does not recreate is
// refused before anything is deleted, naming the line to recreate; a copy
// of the value changed in the provider's console no longer matches its
// fingerprint and is refused the same way by plan and apply; with the
// producer recreated, its users are written again with the new value in
// the same run.
func TestRecreateOnceOnlyUser(t *testing.T) {
	t.Parallel()
	cloud := sim.New(sim.Options{Seed: 11})
	if err := cloud.Console.SeedExamples(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	vars := map[string]string{}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": onceOnlyPlan})
	values := func() map[string]string {
		out := map[string]string{}
		for _, s := range cloud.State().Netlify {
			for _, v := range s.Env {
				for _, x := range v.Values {
					if x.Context == "deploy-preview" {
						out[v.Key] = x.Value
					}
				}
			}
		}
		return out
	}
	// fingerprints are the once-only fingerprints of dbpass's entry.
	fingerprints := func(r run) map[string]any {
		t.Helper()
		for _, e := range oneDocument(t, r)["receipt"].(map[string]any)["ledger"].([]any) {
			if e := e.(map[string]any); e["line"] == "dbpass" {
				fp, _ := e["fingerprints"].(map[string]any)
				return fp
			}
		}
		t.Fatalf("no ledger entry of dbpass:\n%s", r.out)
		return nil
	}
	r := runCLI(t, env, "apply", "--json", "--pr", "4", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	before := values()
	if len(before) != 3 || before["DATABASE_PASSWORD"] == "" {
		t.Fatalf("values after apply: %v", before)
	}
	fp1 := fingerprints(r)
	for _, name := range []string{"password", "connection_string"} {
		if h, _ := fp1[name].(string); !strings.HasPrefix(h, "hmac-sha256:") {
			t.Errorf("fingerprint of %s: %v", name, fp1)
		}
	}
	if strings.Contains(r.out, before["DATABASE_PASSWORD"]) {
		t.Errorf("the password is in the output")
	}
	writes := len(cloud.Writes())

	r = runCLI(t, env, "apply", "--pr", "4", "--receipts", "local", "--recreate", "env")
	if r.code != 2 || !strings.Contains(r.err, "OUTPUT_UNAVAILABLE") || !strings.Contains(r.err, "--recreate dbpass") {
		t.Errorf("--recreate env: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if len(cloud.Writes()) != writes {
		t.Errorf("the refused run wrote to the provider: %v", cloud.Writes()[writes:])
	}
	if after := values(); len(after) != 3 {
		t.Errorf("values after the refusal: %v", after)
	}

	// Someone types another password into the console: the fingerprint in
	// the receipt matches none of env's values any more, and only a new
	// password mends it. plan and apply say so, and apply writes nothing
	// (--reconcile would otherwise write the typed value back).
	if _, err := cloud.Drift(sim.Drift{Provider: sim.ProviderNetlify, Action: sim.DriftChange, Project: "3f1c2a9e-7b4d-4e61-9a0f-2c8d5e6b7a10",
		Key: "DATABASE_PASSWORD", Target: "deploy-preview", Value: "typed-by-hand"}); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "plan", "--pr", "4", "--receipts", "local")
	if !strings.Contains(r.out+r.err, "OUTPUT_UNAVAILABLE") || !strings.Contains(r.out+r.err, "--recreate dbpass") {
		t.Errorf("plan after the console edit: exit %d\n%s%s", r.code, r.out, r.err)
	}
	writes = len(cloud.Writes())
	r = runCLI(t, env, "apply", "--pr", "4", "--receipts", "local", "--reconcile")
	if r.code == 0 || !strings.Contains(r.out+r.err, "OUTPUT_UNAVAILABLE") || len(cloud.Writes()) != writes {
		t.Errorf("apply --reconcile after the console edit: exit %d, %d writes\n%s%s", r.code, len(cloud.Writes())-writes, r.out, r.err)
	}
	if v := values()["DATABASE_PASSWORD"]; v != "typed-by-hand" {
		t.Errorf("the refused apply changed the value to %q", v)
	}

	r = runCLI(t, env, "apply", "--json", "--pr", "4", "--receipts", "local", "--recreate", "dbpass")
	if r.code != 0 {
		t.Fatalf("--recreate dbpass: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if fp2 := fingerprints(r); fp2["password"] == nil || fp2["password"] == fp1["password"] {
		t.Errorf("fingerprints after --recreate dbpass: %v (before %v)", fp2, fp1)
	}
	if strings.Contains(r.out, before["DATABASE_PASSWORD"]) {
		t.Errorf("a password is in the output")
	}
	after := values()
	if len(after) != 3 || after["DATABASE_PASSWORD"] == "" || after["DATABASE_PASSWORD"] == before["DATABASE_PASSWORD"] || after["DATABASE_PASSWORD"] == "typed-by-hand" ||
		after["DATABASE_URL"] == before["DATABASE_URL"] || after["PUBLIC_SCOPE"] != "pr-4" {
		t.Errorf("the preview's values after --recreate dbpass: %v (before %v)", after, before)
	}
}
