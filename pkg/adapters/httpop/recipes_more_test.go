package httpop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/sim"
)

func seed(coll string, fields map[string]any) func(t *testing.T, w *world) {
	return func(t *testing.T, w *world) {
		t.Helper()
		if _, err := w.Cloud.Console.SeedHTTPObject(coll, fields); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMoreRecipesConform runs the conformance suite for the recipes that
// need basic or header auth, extra headers, offset or Link paging, objects
// read from their listing and once-only sensitive outputs, each against the
// generic API shaped as its target (sim.HTTPTargets), requests checked
// against the target's description where there is one (Resend's).
func TestMoreRecipesConform(t *testing.T) {
	rule := func(v string) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{"type": "user_id", "operator": "any", "targetValue": []any{v}}}}
	}
	cases := []recipeCase{
		{"configcat.targeting_rule",
			map[string]any{"environment": "env1", "setting": int64(42), "attribute": "Email", "comparison_value": "pr-7@example.dev", "value": true},
			map[string]any{"environment": "env1", "setting": int64(42), "attribute": "Country", "comparator": "contains", "comparison_value": "NL", "value": false},
			"CONFIGCAT_API_PASS", seed("v1/environments/env1/settings/42", map[string]any{"id": "value", "value": false, "rolloutRules": []any{}, "rolloutPercentageItems": []any{}})},
		{"growthbook.force_rule",
			map[string]any{"feature": "new-checkout", "environment": "dev", "value": "true", "condition": `{"id": "pr-7"}`},
			map[string]any{"feature": "new-checkout", "environment": "dev", "value": "false"},
			"GROWTHBOOK_API_KEY", seed("api/v1/features", map[string]any{"id": "new-checkout", "environments": map[string]any{"dev": map[string]any{"enabled": true, "rules": []any{}}}})},
		{"honeycomb.marker",
			map[string]any{"dataset": "shop", "url": "https://pr-7.example.dev", "destroy": "delete"},
			map[string]any{"dataset": "shop", "message": "other", "destroy": "delete"},
			"HONEYCOMB_API_KEY", nil},
		{"postmark.server", map[string]any{}, map[string]any{"name": "other", "color": "Red", "track_opens": true}, "POSTMARK_ACCOUNT_TOKEN", nil},
		{"postmark_server.webhook",
			map[string]any{"url": "https://pr-7.example.dev/pm"},
			map[string]any{"url": "https://pr-8.example.dev/pm", "triggers": map[string]any{"Bounce": map[string]any{"Enabled": true}}},
			"POSTMARK_SERVER_TOKEN", nil},
		{"resend.api_key", map[string]any{}, map[string]any{"name": "other", "permission": "full_access"}, "RESEND_API_KEY", nil},
		{"sendgrid.event_webhook",
			map[string]any{"url": "https://pr-7.example.dev/sg"},
			map[string]any{"url": "https://pr-8.example.dev/sg", "events": []any{"open", "click"}, "enabled": false},
			"SENDGRID_API_KEY", nil},
		{"sendgrid.parse_setting",
			map[string]any{"hostname": "pr-7.parse.example.dev", "url": "https://pr-7.example.dev/in"},
			map[string]any{"hostname": "pr-8.parse.example.dev", "url": "https://pr-8.example.dev/in", "spam_check": true},
			"SENDGRID_API_KEY", nil},
		{"split.targeting_rule",
			map[string]any{"workspace": "ws1", "flag": "new-checkout", "environment": "env1", "treatment": "on",
				"matchers": []any{map[string]any{"type": "IN_LIST_STRING", "attribute": "host", "strings": []any{"pr-7.example.dev"}}}},
			map[string]any{"workspace": "ws1", "flag": "new-checkout", "environment": "env1", "treatment": "off",
				"matchers": []any{map[string]any{"type": "IN_LIST_STRING", "attribute": "host", "strings": []any{"pr-8.example.dev"}}}},
			"SPLIT_ADMIN_API_KEY", seed("internal/api/v2/splits/ws/ws1/new-checkout/environments", map[string]any{"id": "env1", "treatments": []any{map[string]any{"name": "on"}, map[string]any{"name": "off"}}, "defaultTreatment": "off", "rules": []any{}})},
		{"statsig.gate_rule",
			map[string]any{"gate": "a_gate", "conditions": rule("pr-7")["conditions"]},
			map[string]any{"gate": "a_gate", "name": "other", "conditions": rule("pr-8")["conditions"], "pass_percentage": int64(10)},
			"STATSIG_CONSOLE_API_KEY", seed("console/v1/gates", map[string]any{"id": "a_gate", "name": "A Gate", "rules": []any{}})},
	}
	runRecipeCases(t, cases, func(recipe string) bool {
		return strings.HasSuffix(recipe, ".marker") || !strings.Contains(recipe, "rule")
	})
}

// TestSentryDeployIsKept: a deploy is created once, found again on its
// Link-paged listing (past the first page), never reported created (so
// destroy and rollback leave it), and a second apply writes nothing.
func TestSentryDeployIsKept(t *testing.T) {
	w, op, _ := recipeWorld(t, nil)
	w.Cloud.Console.UseHTTPTarget("sentry.deploy")
	coll := "organizations/acme/releases/shop@1.2.3/deploys"
	for _, env := range []string{"staging", "qa"} {
		if _, err := w.Cloud.Console.SeedHTTPObject(coll, map[string]any{"environment": env, "name": "earlier"}); err != nil {
			t.Fatal(err)
		}
	}
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindPageSize, Provider: sim.ProviderHTTP, Path: "/" + coll, PageSize: 1})
	req := recipeReq(map[string]any{"recipe": "sentry.deploy", "organization": "acme", "version": "shop@1.2.3", "environment": "preview", "url": "https://pr-7.example.dev"})
	ctx := context.Background()
	res, err := op.Apply(ctx, req, nil, func(keys ...string) error {
		t.Errorf("intended %v: a kept deploy is never Sponson's to delete", keys)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 0 || len(res.Resources) != 1 || res.Resources[0].ID == "" {
		t.Fatalf("result = %+v, want one resource, none created", res)
	}
	before := len(w.Cloud.Writes())
	live, err := op.Read(ctx, req)
	if err != nil || len(live.Resources) != 1 || live.Resources[0].ID != res.Resources[0].ID {
		t.Fatalf("the deploy on the third page is not found: %+v %v", live, err)
	}
	if _, err := op.Apply(ctx, req, live, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := len(w.Cloud.Writes()) - before; n != 0 {
		t.Errorf("the second apply wrote %d times", n)
	}
	if n := len(w.Cloud.State().HTTP); n != 3 {
		t.Errorf("%d deploys, want the 2 seeded and 1 made", n)
	}
}

// TestResendAPIKeyTokenIsSensitiveAndOnce: the token is an output of the
// create (read back from the listing, which never holds it), declared
// sensitive and once-only.
func TestResendAPIKeyTokenIsSensitiveAndOnce(t *testing.T) {
	w, op, _ := recipeWorld(t, nil)
	w.Cloud.Console.UseHTTPTarget("resend.api_key")
	req := recipeReq(map[string]any{"recipe": "resend.api_key"})
	res, err := op.Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := res.Outputs["token"].(string)
	if !strings.HasPrefix(tok, "tok_") {
		t.Errorf("token output = %v", res.Outputs)
	}
	live, err := op.Read(context.Background(), req)
	if err != nil || live.Outputs["token"] != nil {
		t.Errorf("a read answers the token: %v %v", live, err)
	}
	x, err := op.Expand(req.Params, nil, req.Run)
	if err != nil {
		t.Fatal(err)
	}
	var spec adapter.OutputSpec
	for _, o := range x.Outputs {
		if o.Name == "token" {
			spec = o
		}
	}
	if !spec.Sensitive || !spec.Once {
		t.Errorf("token is %+v, want sensitive and once", spec)
	}
}
