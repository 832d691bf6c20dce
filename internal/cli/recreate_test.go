package cli_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// TestApplyRecreate: --recreate deletes what this scope created for the
// line and creates it again in the same run, so the new once-only value
// reaches the line that uses it; a line it does not name is left as it
// was.
func TestApplyRecreate(t *testing.T) {
	cloud := sim.New(sim.Options{Seed: 9})
	cloud.CheckDescriptions(t)
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	vars := map[string]string{}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	plan := `version: 1
providers:
  http:
    api: { base_url_env: ` + sim.HTTPURLVar + `, auth: { bearer_env: ` + sim.HTTPTokenVar + ` } }
changes:
  - id: key
    adapter: http
    op: resource
    api: api
    create: { path: /keys }
    fields: { name: "key-${ctx.scope}" }
  - id: app
    adapter: http
    op: resource
    api: api
    create: { path: /apps }
    fields: { name: "app-${ctx.scope}", key_id: { from: key.id } }
`
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": plan})
	idOf := func(rc map[string]any, key string) string {
		for _, e := range rc["ledger"].([]any) {
			if e := e.(map[string]any); strings.Contains(e["key"].(string), key) {
				id, _ := e["id"].(string)
				return id
			}
		}
		return ""
	}
	r := runCLI(t, env, "apply", "--json", "--pr", "9", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	rc := oneDocument(t, r)["receipt"].(map[string]any)
	oldKey, appID := idOf(rc, "name=key-pr-9"), idOf(rc, "name=app-pr-9")

	r = runCLI(t, env, "apply", "--json", "--pr", "9", "--receipts", "local", "--recreate", "key")
	if r.code != 0 {
		t.Fatalf("apply --recreate: exit %d\n%s%s", r.code, r.out, r.err)
	}
	rc = oneDocument(t, r)["receipt"].(map[string]any)
	newKey := idOf(rc, "name=key-pr-9")
	if newKey == "" || newKey == oldKey {
		t.Fatalf("key not recreated: %q → %q", oldKey, newKey)
	}
	lines := rc["lines"].(map[string]any)
	if lines["key"].(map[string]any)["status"] != "created" || lines["app"].(map[string]any)["status"] != "updated" {
		t.Errorf("lines = %v", lines)
	}
	if idOf(rc, "name=app-pr-9") != appID {
		t.Error("the app was recreated too; only the named line is")
	}
	var keys, apps []map[string]any
	for _, o := range cloud.State().HTTP {
		switch o.Collection {
		case "keys":
			keys = append(keys, o.Fields)
		case "apps":
			apps = append(apps, o.Fields)
		}
	}
	if len(keys) != 1 || keys[0]["id"] != newKey {
		t.Errorf("keys at the provider: %v (want only %s)", keys, newKey)
	}
	if len(apps) != 1 || apps[0]["key_id"] != newKey {
		t.Errorf("the app does not use the new key: %v", apps)
	}
}
