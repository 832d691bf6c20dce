package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// TestManualStep: a step a person does is a todo in plan, keeps apply
// partial until apply --confirm <line> (verified first) records who did
// it (--approved-by; never "unknown": without a confirmer it is USAGE),
// is unchanged afterwards, is a todo again when its instructions change,
// and cannot be recreated; destroy shows its undo and waits on it the same
// way until destroy --confirm <line>.
func TestManualStep(t *testing.T) {
	var done atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !done.Load() {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("domain verified"))
	}))
	t.Cleanup(srv.Close)
	plan := func(instructions string) string {
		return `version: 1
changes:
  - id: dns
    adapter: manual
    op: step
    title: Verify the preview domain
    instructions: "` + instructions + `"
    undo: Remove the TXT record.
    vars: { DOMAIN: "${ctx.scope}.example.dev" }
    verify: { url: "` + srv.URL + `/check", contains: verified }
  - id: after
    adapter: manual
    op: step
    title: Announce it
    instructions: Post in the channel.
    depends_on: [dns]
`
	}
	vars := map[string]string{"SPONSON_ACTOR": "octocat"}
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": plan("Add the TXT record in the **DNS console**.")})

	doc := oneDocument(t, runCLI(t, env, "plan", "--json", "--pr", "5", "--receipts", "local"))
	line := doc["lines"].([]any)[0].(map[string]any)
	todo, _ := line["todo"].(map[string]any)
	if line["status"] != "create" || todo == nil || todo["title"] != "Verify the preview domain" ||
		todo["instructions"] != "Add the TXT record in the **DNS console**." || todo["vars"].(map[string]any)["DOMAIN"] != "pr-5.example.dev" ||
		!strings.Contains(todo["verify"].(string), "/check") {
		t.Fatalf("plan line = %v", line)
	}

	// Not confirmed: the run is partial, both steps wait, and the result
	// lists what to do.
	r := runCLI(t, env, "apply", "--json", "--pr", "5", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	doc = oneDocument(t, r)
	rc := doc["receipt"].(map[string]any)
	lines := rc["lines"].(map[string]any)
	if rc["status"] != "partial" || lines["dns"].(map[string]any)["status"] != "waiting" || lines["after"].(map[string]any)["status"] != "waiting" {
		t.Fatalf("unconfirmed apply: %v", rc)
	}
	if todos, _ := doc["todos"].([]any); len(todos) != 1 || todos[0].(map[string]any)["line"] != "dns" {
		t.Errorf("todos = %v", doc["todos"])
	}

	// Confirmed but the check says no: STEP_NOT_DONE, nothing recorded.
	r = runCLI(t, env, "apply", "--json", "--pr", "5", "--receipts", "local", "--confirm", "dns", "--approved-by", "octocat")
	if r.code != 1 || !strings.Contains(r.out, "STEP_NOT_DONE") {
		t.Fatalf("unverified confirm: exit %d\n%s%s", r.code, r.out, r.err)
	}

	done.Store(true)
	// An actor variable names nobody: with no approver and no git
	// identity, the confirm is refused before anything runs.
	r = runCLI(t, env, "apply", "--json", "--pr", "5", "--receipts", "local", "--confirm", "dns")
	if r.code != 2 || !strings.Contains(r.out, `"USAGE"`) || !strings.Contains(r.out, "--approved-by") {
		t.Fatalf("confirm with nobody to record: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = runCLI(t, env, "apply", "--json", "--pr", "5", "--receipts", "local", "--confirm", "dns", "--approved-by", "octocat")
	if r.code != 0 {
		t.Fatalf("confirm: exit %d\n%s%s", r.code, r.out, r.err)
	}
	rc = oneDocument(t, r)["receipt"].(map[string]any)
	var entry map[string]any
	for _, e := range rc["ledger"].([]any) {
		if e.(map[string]any)["key"] == "step:dns" {
			entry = e.(map[string]any)
		}
	}
	if entry == nil || entry["outputs"].(map[string]any)["confirmed_by"] != "octocat" || entry["outputs"].(map[string]any)["confirmed_at"] == "" {
		t.Fatalf("the ledger does not record who confirmed it: %v", rc["ledger"])
	}
	if rc["lines"].(map[string]any)["dns"].(map[string]any)["status"] != "created" || rc["lines"].(map[string]any)["after"].(map[string]any)["status"] != "waiting" {
		t.Errorf("lines after confirm: %v", rc["lines"])
	}

	// Done stays done; a changed step is a todo again.
	doc = oneDocument(t, runCLI(t, env, "plan", "--json", "--pr", "5", "--receipts", "local"))
	if l := doc["lines"].([]any)[0].(map[string]any); l["status"] != "unchanged" || l["todo"] != nil {
		t.Errorf("confirmed step in plan: %v", l)
	}
	if err := os.WriteFile(filepath.Join(env.Dir, "release.plan.yaml"), []byte(plan("Add the CNAME record instead.")), 0o644); err != nil {
		t.Fatal(err)
	}
	doc = oneDocument(t, runCLI(t, env, "plan", "--json", "--pr", "5", "--receipts", "local"))
	if l := doc["lines"].([]any)[0].(map[string]any); l["status"] != "create" || l["todo"] == nil {
		t.Errorf("a changed step is not a todo again: %v", l)
	}
	if r := runCLI(t, env, "apply", "--json", "--pr", "5", "--receipts", "local"); r.code != 0 || !strings.Contains(r.out, `"partial"`) {
		t.Errorf("apply of a changed step: exit %d\n%s", r.code, r.out)
	}

	// Destroy shows the confirmed step's undo and waits on it: partial,
	// the step kept, until its undo is confirmed.
	r = runCLI(t, env, "destroy", "--json", "--pr", "5", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("destroy: exit %d\n%s", r.code, r.out)
	}
	doc = oneDocument(t, r)
	rc = doc["receipt"].(map[string]any)
	if l := rc["ledger"].([]any); len(l) != 1 || rc["status"] != "partial" || rc["destroyed"] != false ||
		rc["lines"].(map[string]any)["dns"].(map[string]any)["status"] != "waiting" {
		t.Errorf("destroy did not wait on the undo: %v", rc)
	}
	if todos, _ := doc["todos"].([]any); len(todos) != 1 || todos[0].(map[string]any)["undo"] != "Remove the TXT record." ||
		todos[0].(map[string]any)["confirmed_by"] != "octocat" {
		t.Errorf("destroy does not say how to undo the step: %v", doc["todos"])
	}
	if r := runCLI(t, env, "destroy", "--json", "--pr", "5", "--receipts", "local", "--confirm", "after", "--approved-by", "octocat"); r.code != 2 || !strings.Contains(r.out, `"USAGE"`) {
		t.Errorf("confirming the undo of a step never done: exit %d\n%s", r.code, r.out)
	}
	r = runCLI(t, env, "destroy", "--json", "--pr", "5", "--receipts", "local", "--confirm", "dns", "--approved-by", "octocat")
	if r.code != 0 {
		t.Fatalf("destroy --confirm: exit %d\n%s", r.code, r.out)
	}
	doc = oneDocument(t, r)
	rc = doc["receipt"].(map[string]any)
	dns := rc["lines"].(map[string]any)["dns"].(map[string]any)
	if l := rc["ledger"].([]any); len(l) != 0 || rc["status"] != "complete" || rc["destroyed"] != true || dns["status"] != "destroyed" ||
		dns["outputs"].(map[string]any)["undone_by"] != "octocat" {
		t.Errorf("the confirmed undo: %v", rc)
	}
	if todos, _ := doc["todos"].([]any); len(todos) != 0 {
		t.Errorf("todos after the undo was confirmed: %v", todos)
	}

	// Refusals before anything runs.
	for _, args := range [][]string{{"--confirm", "nope"}, {"--recreate", "dns"}} {
		r := runCLI(t, testEnv(t, vars, map[string]string{"release.plan.yaml": plan("x")}), append([]string{"apply", "--json", "--pr", "5", "--receipts", "local"}, args...)...)
		if r.code != 2 || !strings.Contains(r.out, "USAGE") {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.out)
		}
	}
}

// TestConfirmedStepIsNeverRolledBack: a run that confirms a step and then
// fails rolls back what it created at providers, never the step a person
// did.
func TestConfirmedStepIsNeverRolledBack(t *testing.T) {
	cloud := sim.New(sim.Options{Seed: 4})
	cloud.CheckDescriptions(t)
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	vars := map[string]string{"SPONSON_ACTOR": "octocat"}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	plan := `version: 1
providers:
  http:
    api: { base_url_env: ` + sim.HTTPURLVar + `, auth: { bearer_env: ` + sim.HTTPTokenVar + ` } }
changes:
  - id: step
    adapter: manual
    op: step
    title: Enable billing
    instructions: Click **Enable** in the billing console.
  - id: made
    adapter: http
    op: resource
    api: api
    create: { path: /things }
    fields: { name: "thing-${ctx.scope}" }
    depends_on: [step]
  - id: bad
    adapter: http
    op: resource
    api: api
    create: { path: /widgets }
    fields: { name: "widget-${ctx.scope}" }
    depends_on: [made]
`
	cloud.MustAddRule(sim.Rule{Kind: sim.KindFail, Provider: "http", Method: "POST", Path: "/widgets", Status: 400, Count: 1})
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": plan})
	r := runCLI(t, env, "apply", "--json", "--pr", "6", "--receipts", "local", "--confirm", "step", "--approved-by", "octocat")
	if r.code != 1 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	rc := oneDocument(t, r)["receipt"].(map[string]any)
	lines := rc["lines"].(map[string]any)
	if lines["made"].(map[string]any)["status"] != "rolled_back" {
		t.Errorf("the thing was not rolled back: %v", lines)
	}
	var keys []string
	for _, e := range rc["ledger"].([]any) {
		keys = append(keys, e.(map[string]any)["key"].(string))
	}
	if len(keys) != 1 || keys[0] != "step:step" {
		t.Errorf("ledger after rollback = %v, want only the confirmed step", keys)
	}
	for _, o := range cloud.State().HTTP {
		t.Errorf("left at the provider: %s/%s", o.Collection, o.ID)
	}
}
