package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// TestRecipesWithSecretsAndKeeps runs the recipes that need more than a
// bearer token through the CLI against the fake cloud shaped as their
// targets: the once-only and sensitive outputs (a Resend API key's token,
// a Postmark server's token) never reach a receipt or the output; destroy
// removes what Sponson made and leaves what the lines keep (a Honeycomb
// marker, a Sentry deploy); a wrong setting is refused at its line and
// column before any request.
func TestRecipesWithSecretsAndKeeps(t *testing.T) {
	cloud := sim.New(sim.Options{Seed: 3})
	cloud.CheckDescriptions(t)
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	for _, r := range []string{"resend.api_key", "postmark.server", "postmark_server.webhook", "honeycomb.marker", "sentry.deploy", "statsig.gate_rule"} {
		cloud.Console.UseHTTPTarget(r)
	}
	if _, err := cloud.Console.SeedHTTPObject("console/v1/gates", map[string]any{"id": "checkout", "rules": []any{}}); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	base, tok := vars[sim.HTTPURLVar], vars[sim.HTTPTokenVar]
	for _, v := range []string{"RESEND", "HONEYCOMB", "SENTRY", "STATSIG"} {
		vars[v+"_API_URL"] = base
	}
	vars["POSTMARK_API_URL"] = base + sim.HTTPPrefixes["POSTMARK_API_URL"]
	for _, v := range []string{"RESEND_API_KEY", "POSTMARK_ACCOUNT_TOKEN", "POSTMARK_SERVER_TOKEN", "HONEYCOMB_API_KEY", "SENTRY_AUTH_TOKEN", "STATSIG_CONSOLE_API_KEY"} {
		vars[v] = tok
	}
	cloud.Console.SetHTTPShape("vault/keys", sim.HTTPShape{Generated: map[string]string{"secret": "token"}})
	plan := `version: 1
providers:
  http:
    vault: {base_url_env: SIM_HTTP_URL, auth: {bearer_env: SIM_HTTP_TOKEN}}
changes:
  - id: plain
    adapter: http
    op: resource
    api: vault
    create: {path: /vault/keys}
    fields: {name: "key-${ctx.scope}"}
    outputs: {api_key: {path: /secret, sensitive: true, once: true}, name: /name}
  - id: key
    adapter: http
    recipe: resend.api_key
  - id: server
    adapter: http
    recipe: postmark.server
  - id: hook
    adapter: http
    recipe: postmark_server.webhook
    url: "https://${ctx.scope}.example.dev/postmark"
  - id: marker
    adapter: http
    recipe: honeycomb.marker
    dataset: shop
  - id: deploy
    adapter: http
    recipe: sentry.deploy
    organization: acme
    version: "shop@1.0.0"
    environment: preview
  - id: rule
    adapter: http
    recipe: statsig.gate_rule
    gate: checkout
    conditions: [{type: url, operator: any, targetValue: ["https://${ctx.scope}.example.dev"]}]
`
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": plan})
	r := runCLI(t, env, "apply", "--json", "--pr", "7", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	rc, _ := json.Marshal(oneDocument(t, r)["receipt"])
	var secrets []string
	for _, o := range cloud.State().HTTP {
		if s, ok := o.Fields["secret"].(string); ok {
			secrets = append(secrets, s)
		}
		if s, ok := o.Fields["token"].(string); ok {
			secrets = append(secrets, s)
		}
		if l, ok := o.Fields["ApiTokens"].([]any); ok {
			secrets = append(secrets, l[0].(string))
		}
	}
	if len(secrets) != 3 {
		t.Fatalf("tokens made: %v", secrets)
	}
	for _, s := range secrets {
		if strings.Contains(string(rc), s) || strings.Contains(r.out, s) || strings.Contains(r.err, s) {
			t.Errorf("a sensitive output reached the receipt or the output: %s", s)
		}
	}
	made := len(cloud.State().HTTP)

	r = runCLI(t, env, "destroy", "--json", "--pr", "7", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("destroy: exit %d\n%s%s", r.code, r.out, r.err)
	}
	var left []string
	for _, o := range cloud.State().HTTP {
		left = append(left, o.Collection)
	}
	// Left: the gate (seeded; its rule removed), the marker and the deploy.
	sort.Strings(left)
	want := "1/markers/shop|console/v1/gates|organizations/acme/releases/shop@1.0.0/deploys"
	if strings.Join(left, "|") != want || made != 7 {
		t.Errorf("after destroy %v (of %d), want %s", left, made, want)
	}
	for _, o := range cloud.State().HTTP {
		if rules, ok := o.Fields["rules"].([]any); ok && len(rules) != 0 {
			t.Errorf("the gate keeps the rule: %v", rules)
		}
	}

	bad := strings.Replace(plan, "    dataset: shop\n", "    dataset: shop\n    destroy: forget\n", 1)
	env = testEnv(t, vars, map[string]string{"release.plan.yaml": bad})
	writes := len(cloud.Writes())
	r = runCLI(t, env, "plan", "--pr", "7", "--receipts", "local")
	if r.code == 0 || !strings.Contains(r.err, "release.plan.yaml:27:5: PARAM_INVALID") || !strings.Contains(r.err, "destroy") {
		t.Errorf("a wrong destroy: exit %d\n%s", r.code, r.err)
	}
	if len(cloud.Writes()) != writes {
		t.Error("a refused plan wrote")
	}
}
