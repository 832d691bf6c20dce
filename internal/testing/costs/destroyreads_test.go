package costs_test

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// TestDestroyReadsOnce (issue 25): for every op that deletes at a
// provider, a destroy reads each resource at most once before it deletes
// it: the ledger's id, and an op whose resources carry their scope's mark
// (vercel.env) checks the mark on the same read its delete decides on.
// Each case applies its lines for one pull request, then destroys them
// and counts the provider requests: reads (GET) at most one per resource,
// and the deletes there. vercel.deploy (nothing to delete) and manual.step
// (a person undoes it) send no request on destroy and are not here;
// http.recipe destroys through http.resource and http.list_item.
func TestDestroyReadsOnce(t *testing.T) {
	t.Parallel()
	http := "  http:\n    sim:\n      base_url_env: " + sim.HTTPURLVar + "\n      auth: { bearer_env: " + sim.HTTPTokenVar + " }\n"
	cases := []struct {
		op        string
		providers string // the providers block; $APP is the demo HTTP object
		lines     string
		resources int    // resources the lines make, each read at most once
		site      string // a read, once per resource, of what is not the resource
	}{
		{"vercel.env", "  vercel: { project: $VERCEL }\n",
			"  - { id: env, adapter: vercel, op: env, target: preview, branch: feature, values: { API_URL: \"https://${ctx.scope}.example.dev\" } }\n", 1, ""},
		{"neon.branch", "  neon: { project: $NEON }\n",
			"  - { id: db, adapter: neon, op: branch, name: \"sponson/${ctx.env}/${ctx.scope}\", parent: main }\n", 1, ""},
		{"http.resource", http,
			"  - { id: flag, adapter: http, op: resource, api: sim, create: { path: /flags }, fields: { name: \"flag-${ctx.scope}\", on: true } }\n", 1, ""},
		{"http.list_item", http,
			"  - { id: cb, adapter: http, op: list_item, api: sim, parent: { path: /apps/$APP }, list_path: /callbacks, item: \"https://${ctx.scope}.example.dev/cb\" }\n", 1, ""},
		{"auth0.callback", "  auth0: { domain: acme.eu.auth0.com, client: $AUTH0 }\n",
			"  - { id: login, adapter: auth0, op: callback, url: \"https://${ctx.scope}.example.dev/cb\" }\n", 1, ""},
		{"supabase.auth_redirect", "  supabase: { project: $SUPABASE }\n",
			"  - { id: redir, adapter: supabase, op: auth_redirect, url: \"https://${ctx.scope}.example.dev/cb\" }\n", 1, ""},
		{"supabase.branch", "  supabase: { project: $SUPABASE }\n",
			"  - { id: sbdb, adapter: supabase, op: branch }\n", 1, ""},
		{"netlify.env", "  netlify: { site: $NETLIFY }\n",
			"  - { id: nenv, adapter: netlify, op: env, values: { API_URL: \"https://${ctx.scope}.example.dev\" } }\n", 1,
			// The site, read for its account when the block names none
			// (providers.netlify.account): not the variable.
			"GET /netlify/sites/"},
		{"cloudflare.pages_env", "  cloudflare: { account: $CFACCOUNT, project: $CFPROJECT }\n",
			"  - { id: pages, adapter: cloudflare, op: pages_env, vars: { API_URL: \"https://${ctx.scope}.example.dev\" } }\n", 1, ""},
		{"clerk.redirect_allow", "  clerk: {}\n",
			"  - { id: sso, adapter: clerk, op: redirect_allow, url: \"https://${ctx.scope}.example.dev/sso-callback\" }\n", 1, ""},
		{"launchdarkly.flag_target", "  launchdarkly: { project: $LDPROJECT, environment: preview }\n",
			"  - { id: flag, adapter: launchdarkly, op: flag_target, flag: $LDFLAG }\n", 1, ""},
		{"planetscale.branch+password", "  planetscale: { organization: $PSORG, database: $PSDB }\n",
			"  - { id: psdb, adapter: planetscale, op: branch }\n  - { id: pspw, adapter: planetscale, op: password, branch: { from: psdb.name }, role: readwriter }\n", 2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, func(string) string { return "version: 1\n" })
			d := w.cloud.Console.SeedDemo()
			src := "version: 1\nproviders:\n" + tc.providers + "changes:\n" + tc.lines
			src = strings.NewReplacer("$VERCEL", d.VercelProject, "$NEON", d.NeonProject, "$APP", d.HTTPApp, "$AUTH0", d.Auth0Client,
				"$SUPABASE", d.SupabaseRef, "$NETLIFY", d.NetlifySite, "$CFACCOUNT", d.CloudflareAccount, "$CFPROJECT", d.CloudflareProject,
				"$LDPROJECT", d.LaunchDarklyProj, "$LDFLAG", d.LaunchDarklyFlag, "$PSORG", d.PlanetScaleOrg, "$PSDB", d.PlanetScaleDB).Replace(src)
			w.writePlan(src)
			w.run("apply", "--pr", "3")
			c := w.measure("destroy", "--pr", "3")
			reads, writes, site := 0, 0, 0
			for _, r := range c.provLog {
				switch {
				case tc.site != "" && strings.HasPrefix(r, tc.site):
					site++
				case strings.HasPrefix(r, "GET "):
					reads++
				default:
					writes++
				}
			}
			if writes < tc.resources {
				t.Fatalf("destroy sent %d writes for %d resources: it deleted nothing?\n%s", writes, tc.resources, strings.Join(c.provLog, "\n"))
			}
			if reads > tc.resources {
				t.Errorf("destroy read %d times before deleting %d resources, want at most one read each:\n%s", reads, tc.resources, strings.Join(c.provLog, "\n"))
			}
			if site > tc.resources {
				t.Errorf("destroy read %s %d times for %d resources, want at most once each:\n%s", tc.site, site, tc.resources, strings.Join(c.provLog, "\n"))
			}
			t.Logf("%s: %d reads, %d writes:\n%s", tc.op, reads, writes, strings.Join(c.provLog, "\n"))
		})
	}
}
