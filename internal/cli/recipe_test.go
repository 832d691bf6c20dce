package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// TestRecipesPlanApplyDestroy runs recipe lines through the CLI against
// the fake cloud's generic API: plan shows them, apply creates them, the
// ledger records the expanded http.resource request (never the recipe),
// a second apply writes nothing and destroy removes them.
func TestRecipesPlanApplyDestroy(t *testing.T) {
	cloud := sim.New(sim.Options{Seed: 3})
	cloud.CheckDescriptions(t)
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	cloud.Console.SetHTTPShape("repos/*/*/hooks", sim.HTTPShape{BareList: true, NumericID: true})
	cloud.Console.SetHTTPShape("organizations/*/releases", sim.HTTPShape{IDField: "version"})
	vars := map[string]string{}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	vars["GITHUB_API_URL"], vars["GITHUB_TOKEN"] = vars[sim.HTTPURLVar], vars[sim.HTTPTokenVar]
	vars["SENTRY_API_URL"], vars["SENTRY_AUTH_TOKEN"] = vars[sim.HTTPURLVar], vars[sim.HTTPTokenVar]
	plan := `version: 1
changes:
  - id: hook
    adapter: http
    recipe: github.repo_webhook
    owner: acme
    repo: shop
    url: "https://${ctx.scope}.example.dev/hook"
    events: [push, pull_request]
  - id: release
    adapter: http
    op: recipe
    recipe: sentry.release
    organization: acme
    version: "shop@${ctx.git.short_sha}"
    projects: [web]
    ref: { from: hook.id }
`
	vars["SPONSON_CTX_SHA"] = "0123456789abcdef0123456789abcdef01234567"
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": plan})

	r := runCLI(t, env, "plan", "--json", "--pr", "7", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", r.code, r.out, r.err)
	}
	doc := oneDocument(t, r)
	for _, l := range doc["lines"].([]any) {
		l := l.(map[string]any)
		if l["status"] != "create" && l["status"] != "pending" {
			t.Errorf("plan line %v: %v", l["id"], l["status"])
		}
		if l["op"] != "resource" || !strings.HasPrefix(l["recipe"].(string), map[any]string{"hook": "github.", "release": "sentry."}[l["id"]]) {
			t.Errorf("plan line %v runs as %v from recipe %v", l["id"], l["op"], l["recipe"])
		}
	}
	if n := len(cloud.Writes()); n != 0 {
		t.Fatalf("plan wrote %d times", n)
	}

	r = runCLI(t, env, "apply", "--json", "--pr", "7", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	rc := oneDocument(t, r)["receipt"].(map[string]any)
	ledger, _ := json.Marshal(rc["ledger"])
	if strings.Contains(string(ledger), "recipe") || strings.Contains(string(ledger), "repo_webhook") {
		t.Errorf("the ledger records the recipe, not its expansion:\n%s", ledger)
	}
	var ops []string
	for _, e := range rc["ledger"].([]any) {
		e := e.(map[string]any)
		ops = append(ops, e["op"].(string)+" "+e["key"].(string))
		if _, ok := e["provider"].(map[string]any)["github"]; !ok && strings.HasPrefix(e["key"].(string), "github:") {
			t.Errorf("entry %v lacks the expanded provider block", e)
		}
	}
	want := []string{"resource github:/repos/acme/shop/hooks?%2Fconfig%2Furl=https%3A%2F%2Fpr-7.example.dev%2Fhook",
		"resource sentry:/organizations/acme/releases/shop@0123456/"}
	if strings.Join(ops, "|") != strings.Join(want, "|") {
		t.Errorf("ledger = %v\nwant %v", ops, want)
	}
	created := len(cloud.Writes())
	if created != 2 {
		t.Errorf("apply wrote %d times, want 2 creates", created)
	}

	r = runCLI(t, env, "apply", "--json", "--pr", "7", "--receipts", "local")
	if r.code != 0 || len(cloud.Writes()) != created {
		t.Fatalf("second apply: exit %d, %d new writes\n%s%s", r.code, len(cloud.Writes())-created, r.out, r.err)
	}

	r = runCLI(t, env, "destroy", "--json", "--pr", "7", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("destroy: exit %d\n%s%s", r.code, r.out, r.err)
	}
	var left []string
	for _, o := range cloud.State().HTTP {
		left = append(left, o.Collection+"/"+o.ID)
	}
	if len(left) != 0 {
		t.Errorf("destroy left %v", left)
	}
}
