package httpop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/httpop"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

// recipeWorld is the fake cloud's generic API standing in for a
// provider: its shape follows the provider's conventions, and every
// recipe's base-URL and credential variables point at it.
func recipeWorld(t *testing.T, shapes map[string]sim.HTTPShape) (*world, *httpop.RecipeOp, func(map[string]string) *httpop.RecipeOp) {
	t.Helper()
	w := newWorld(t)
	for p, s := range shapes {
		w.Cloud.Console.SetHTTPShape(p, s)
	}
	base, tok := w.Env[sim.HTTPURLVar], w.Env[sim.HTTPTokenVar]
	for _, s := range httpop.NewRecipe(nil, nil).Spec().Recipes {
		w.Env[s.BaseURLVar] = base + sim.HTTPPrefixes[s.BaseURLVar]
		for _, c := range s.Credentials {
			w.Env[c] = tok
		}
	}
	// Unleash tokens are the whole Authorization value.
	w.Env["UNLEASH_API_TOKEN"] = "Bearer " + tok
	mk := func(changes map[string]string) *httpop.RecipeOp {
		env := w.With(changes)
		return httpop.NewRecipe(httpop.NewResource(env, w.Client), httpop.NewListItem(env, w.Client))
	}
	return w, mk(nil), mk
}

func recipeReq(params map[string]any) adapter.Request {
	return adapter.Request{Line: "r", Params: params, Provider: adapter.Provider{}, Run: adapter.RunCtx{Env: "preview", Scope: "pr-7"}}
}

func TestRecipesConform(t *testing.T) {
	cases := []recipeCase{
		{"posthog.release_condition",
			map[string]any{"project": int64(1), "flag": int64(12), "properties": []any{map[string]any{"key": "$host", "value": []any{"pr-7.example.dev"}, "operator": "exact", "type": "person"}}},
			map[string]any{"project": int64(1), "flag": int64(12), "properties": []any{map[string]any{"key": "email", "value": "a@example.dev", "operator": "exact", "type": "person"}}, "rollout_percentage": int64(50)},
			"POSTHOG_PERSONAL_API_KEY", func(t *testing.T, w *world) {
				// The flag exists with one condition and variants that
				// nothing of Sponson's may lose.
				if _, err := w.Cloud.Console.SeedHTTPObject("api/projects/1/feature_flags", map[string]any{"id": "12", "key": "new-checkout",
					"filters": map[string]any{"groups": []any{map[string]any{"properties": []any{}, "rollout_percentage": 10}},
						"multivariate": map[string]any{"variants": []any{map[string]any{"key": "a", "rollout_percentage": 100}}}}}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					for _, o := range w.Cloud.State().HTTP {
						f := o.Fields["filters"].(map[string]any)
						if len(f["groups"].([]any)) != 1 || f["multivariate"] == nil {
							t.Errorf("the flag's own filters were not kept: %v", f)
						}
					}
				})
			}},
		{"cloudflare.dns_cname",
			map[string]any{"zone": "z1", "name": "pr-7.example.com", "content": "pr-7.pages.dev"},
			map[string]any{"zone": "z1", "name": "pr-8.example.com", "content": "pr-8.pages.dev", "proxied": true, "ttl": int64(300)},
			"CLOUDFLARE_API_TOKEN", nil},
		{"github.repo_webhook",
			map[string]any{"owner": "acme", "repo": "shop", "url": "https://pr-7.example.dev/hook", "events": []any{"push", "pull_request"}},
			map[string]any{"owner": "acme", "repo": "shop", "url": "https://pr-8.example.dev/hook"},
			"GITHUB_TOKEN", nil},
		{"sentry.release",
			map[string]any{"organization": "acme", "version": "shop@1.2.3", "projects": []any{"web"}, "ref": "abc123"},
			map[string]any{"organization": "acme", "version": "shop@1.2.4", "projects": []any{"web"}},
			"SENTRY_AUTH_TOKEN", nil},
		{"resend.webhook",
			map[string]any{"endpoint": "https://pr-7.example.dev/resend", "events": []any{"email.sent"}},
			map[string]any{"endpoint": "https://pr-8.example.dev/resend", "events": []any{"email.bounced"}},
			"RESEND_API_KEY", nil},
		{"svix.endpoint",
			map[string]any{"app": "app_1", "url": "https://pr-7.example.dev/svix", "filter_types": []any{"user.created"}},
			map[string]any{"app": "app_1", "uid": "other", "url": "https://pr-8.example.dev/svix", "disabled": true},
			"SVIX_AUTH_TOKEN", nil},
		{"turso.database_branch",
			map[string]any{"organization": "acme", "parent": "shop"},
			map[string]any{"organization": "acme", "name": "shop-pr-8", "parent": "shop", "group": "eu"},
			"TURSO_API_TOKEN", nil},
		{"unleash.flag_strategy",
			map[string]any{"feature": "new-checkout", "environment": "development"},
			map[string]any{"feature": "new-checkout", "environment": "development", "title": "other",
				"constraints": []any{map[string]any{"contextName": "userId", "operator": "IN", "values": []any{"42"}}}},
			"UNLEASH_API_TOKEN", nil},
	}
	// As for http.resource: Lookup has the key, not the fields the line
	// controls (a list entry is its key).
	runRecipeCases(t, cases, func(recipe string) bool { return !strings.HasPrefix(recipe, "posthog.") })
}

// recipeCase is one recipe run through the adapter conformance suite:
// two lines' requests, the credential its API block names and what its
// target must hold first.
type recipeCase struct {
	recipe     string
	req, other map[string]any
	credential string
	seed       func(t *testing.T, w *world)
}

// runRecipeCases runs each case through adaptertest against the fake
// cloud's stand-in of the recipe's target; lookupWithoutValue says whether
// a recipe's Lookup returns its key alone.
func runRecipeCases(t *testing.T, cases []recipeCase, lookupWithoutValue func(recipe string) bool) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.recipe, func(t *testing.T) {
			w, op, mk := recipeWorld(t, nil)
			w.Cloud.Console.UseHTTPTarget(c.recipe)
			if c.seed != nil {
				c.seed(t, w)
			}
			with := func(m map[string]any) map[string]any {
				out := map[string]any{"recipe": c.recipe}
				for k, v := range m {
					out[k] = v
				}
				return out
			}
			adaptertest.Run(t, adaptertest.Case{
				Op:                 op,
				Request:            recipeReq(with(c.req)),
				Other:              recipeReq(with(c.other)),
				World:              adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[sim.HTTPTokenVar], "wrong-token-123"}},
				Unauthorized:       mk(map[string]string{c.credential: "wrong-token-123"}),
				NoCredential:       mk(map[string]string{c.credential: ""}),
				CredentialVar:      c.credential,
				LookupWithoutValue: lookupWithoutValue(c.recipe),
			})
		})
	}
}

// TestRecipeExpansion: the expansion is the provider's documented request,
// under the recipe's API block, and the recipe's name is nowhere in it.
func TestRecipeExpansion(t *testing.T) {
	op := httpop.NewRecipe(nil, nil)
	run := adapter.RunCtx{Env: "preview", Scope: "pr-7"}
	x, err := op.Expand(map[string]any{"recipe": "github.repo_webhook", "owner": "acme", "repo": "shop", "url": adapter.Marker{Kind: adapter.Pending, Ref: "web.url"}},
		adapter.Provider{"github": map[string]any{"base_url": "https://ghe.example.com/api/v3"}}, run)
	if err != nil {
		t.Fatal(err)
	}
	create := x.Params["create"].(map[string]any)
	if x.Op != "resource" || create["path"] != "/repos/acme/shop/hooks" || create["body"].(map[string]any)["name"] != "web" {
		t.Errorf("expansion = %+v", x)
	}
	if strings.Join(x.Credentials, ",") != "GITHUB_TOKEN" || x.BaseURLVar != "" {
		t.Errorf("with a base_url of the plan's, the line's variables are the token only: %v %q", x.Credentials, x.BaseURLVar)
	}
	if d, _ := op.Expand(map[string]any{"recipe": "unleash.flag_strategy", "feature": "f", "environment": "e"}, nil, run); strings.Join(d.Credentials, ",") != "UNLEASH_API_TOKEN" || d.BaseURLVar != "UNLEASH_API_URL" {
		t.Errorf("the expansion does not name the recipe's variables: %v %q", d.Credentials, d.BaseURLVar)
	}
	block := x.Provider["github"].(map[string]any)
	if block["base_url"] != "https://ghe.example.com/api/v3" || block["base_url_env"] != nil || block["auth"] == nil {
		t.Errorf("a providers.http.github base_url overrides the default endpoint and keeps the credential: %v", block)
	}
	if strings.Contains(strings.ToLower(sprint(x.Params)+sprint(x.Provider)), "recipe") {
		t.Errorf("the expansion mentions the recipe: %v %v", x.Params, x.Provider)
	}
	if got := op.LineOutputs(map[string]any{"recipe": "resend.webhook"}); strings.Join(got, ",") != "id,signing_secret" {
		t.Errorf("LineOutputs = %v", got)
	}
	r, _ := op.Expand(map[string]any{"recipe": "resend.webhook", "endpoint": "https://x", "events": []any{"a"}}, nil, run)
	if !r.Outputs[1].Sensitive || r.Outputs[1].Name != "signing_secret" {
		t.Errorf("signing_secret is not sensitive: %+v", r.Outputs)
	}
}

func sprint(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				b.WriteString(k + " ")
				walk(x)
			}
		case adapter.Provider:
			walk(map[string]any(t))
		case []any:
			for _, x := range t {
				walk(x)
			}
		case string:
			b.WriteString(t + " ")
		}
	}
	walk(v)
	return b.String()
}

// TestRecipeRefusals: an unknown recipe, op or parameter, a mistyped one,
// a missing one, or an identity that is not known before the run, is
// PARAM_INVALID before any request.
func TestRecipeRefusals(t *testing.T) {
	w, op, _ := recipeWorld(t, nil)
	run := adapter.RunCtx{Env: "preview", Scope: "pr-7"}
	base := map[string]any{"recipe": "github.repo_webhook", "owner": "acme", "repo": "shop", "url": "https://x/h"}
	cases := map[string]struct {
		change map[string]any
		want   string
	}{
		"unknown provider":     {map[string]any{"recipe": "gitlab.hook"}, "no recipe"},
		"unknown op":           {map[string]any{"recipe": "github.nope"}, "github has no such recipe (it has github.repo_webhook)"},
		"unknown parameter":    {map[string]any{"colour": "red"}, "has no parameter colour"},
		"mistyped parameter":   {map[string]any{"active": "yes"}, "must be a bool"},
		"not in the enum":      {map[string]any{"content_type": "xml"}, "must be one of json, form"},
		"missing parameter":    {map[string]any{"owner": nil}, "owner is required"},
		"identity from a line": {map[string]any{"repo": adapter.Marker{Kind: adapter.Pending, Ref: "a.b"}}, "must be known before the run"},
		"identity secret":      {map[string]any{"owner": adapter.Marker{Kind: adapter.Secret, Ref: "env://X"}}, "must be known before the run"},
	}
	for name, c := range cases {
		params := map[string]any{}
		for k, v := range base {
			params[k] = v
		}
		for k, v := range c.change {
			if v == nil {
				delete(params, k)
			} else {
				params[k] = v
			}
		}
		before := len(w.Cloud.Writes())
		_, err := op.Expand(params, nil, run)
		if !errors.Is(err, errs.PARAM_INVALID) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want PARAM_INVALID with %q", name, err, c.want)
		}
		if _, rerr := op.Read(context.Background(), recipeReq(params)); !errors.Is(rerr, errs.PARAM_INVALID) {
			t.Errorf("%s: Read = %v", name, rerr)
		}
		if len(w.Cloud.Writes()) != before {
			t.Errorf("%s: wrote", name)
		}
	}
}

// TestResendWebhookPastTheFirstPage: Resend pages its webhook list by
// after/has_more and takes no filter; a webhook of the line's endpoint on
// the third page is found, not created again.
func TestResendWebhookPastTheFirstPage(t *testing.T) {
	w, op, _ := recipeWorld(t, nil)
	w.Cloud.Console.UseHTTPTarget("resend.webhook")
	for _, e := range []string{"https://a.example.dev/r", "https://b.example.dev/r", "https://pr-7.example.dev/resend"} {
		if _, err := w.Cloud.Console.SeedHTTPObject("webhooks", map[string]any{"endpoint": e, "events": []any{"email.sent"}}); err != nil {
			t.Fatal(err)
		}
	}
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindPageSize, Provider: sim.ProviderHTTP, Path: "/webhooks", PageSize: 1})
	req := recipeReq(map[string]any{"recipe": "resend.webhook", "endpoint": "https://pr-7.example.dev/resend", "events": []any{"email.sent"}})
	live, err := op.Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Resources) != 1 {
		t.Fatalf("the webhook on the third page is not found: %+v", live)
	}
	if n := len(w.Cloud.State().HTTP); n != 3 {
		t.Errorf("%d webhooks, want the 3 seeded", n)
	}
}
