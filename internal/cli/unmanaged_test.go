package cli_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/sim"
)

// unmanagedPlan has one line of every op that lists for unmanaged drift
// besides the env ops: a Neon branch (its default name), an Auth0
// callback, a Supabase redirect, a Clerk redirect URL and an http list
// entry, each naming the scope.
const unmanagedPlan = `version: 1
providers:
  neon:     { project: proj-snowy-meadow-421 }
  auth0:    { domain: acme.eu.auth0.com, client: q8XbT2nYv0pLwE4r }
  supabase: { project: abcdefghijklmnopqrst }
  clerk:    {}
  http:
    cdn:
      base_url_env: CDN_API_URL
      auth: { bearer_env: CDN_API_TOKEN }
changes:
  - id: db
    adapter: neon
    op: branch
  - id: login
    adapter: auth0
    op: callback
    url: https://${ctx.scope}.preview.acme.dev/api/auth/callback
  - id: redirect
    adapter: supabase
    op: auth_redirect
    url: https://${ctx.scope}.preview.acme.dev/**
  - id: signin
    adapter: clerk
    op: redirect_allow
    url: https://${ctx.scope}.preview.acme.dev/sso-callback
  - id: cors
    adapter: http
    op: list_item
    api: cdn
    parent: { path: /v2/buckets/assets/cors }
    list_path: /allowed_origins
    item: https://${ctx.scope}.preview.acme.dev
`

// unmanagedKeys plans scope pr-<pr> and returns the keys of its unmanaged
// drift, by line.
func unmanagedKeys(t *testing.T, run func(args ...string) run, pr string) map[string][]string {
	t.Helper()
	r := run("plan", "--json", "--pr", pr, "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("plan pr-%s: exit %d\n%s%s", pr, r.code, r.out, r.err)
	}
	out := map[string][]string{}
	drift, _ := oneDocument(t, r)["drift"].([]any)
	for _, d := range drift {
		d := d.(map[string]any)
		if d["kind"] == "unmanaged" {
			line, _ := d["line"].(string)
			out[line] = append(out[line], d["key"].(string))
		}
	}
	for _, ks := range out {
		slices.Sort(ks)
	}
	return out
}

// What a line would own in another scope, made by hand (or left by a run
// whose receipt is lost), is unmanaged drift for every op that lists: a
// Neon branch under sponson/preview/, an Auth0 callback, a Supabase
// redirect, an http list entry. What another scope's receipt holds is not,
// nor the rest of a shared list or project (production URLs, main, a
// colleague's branch). Plan touches none of it; a line in that scope
// adopts it, and destroying the scope leaves it.
func TestUnmanagedDriftOfListsAndBranches(t *testing.T) {
	cloud, vars := exampleCloud(t)
	delete(vars, "SPONSON_CTX_SHA")
	vars["CDN_API_URL"], vars["CDN_API_TOKEN"] = vars[sim.HTTPURLVar], vars[sim.HTTPTokenVar]
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": unmanagedPlan})
	checkout(t, env.Dir)
	run := func(args ...string) run { return runCLI(t, env, args...) }

	// Another scope applies: its entries are its own, never unmanaged.
	if r := run("apply", "--json", "--pr", "2", "--receipts", "local"); r.code != 0 {
		t.Fatalf("apply pr-2: exit %d\n%s%s", r.code, r.out, r.err)
	}
	// By hand: what pr-99 and a person would make, and what is nobody's
	// business (main's production URL, a colleague's branch).
	for _, d := range []sim.Drift{
		{Provider: sim.ProviderNeon, Action: sim.DriftAdd, Project: "proj-snowy-meadow-421", Value: "sponson/preview/pr-99"},
		{Provider: sim.ProviderNeon, Action: sim.DriftAdd, Project: "proj-snowy-meadow-421", Value: "sponson/preview/by-hand"},
		{Provider: sim.ProviderNeon, Action: sim.DriftAdd, Project: "proj-snowy-meadow-421", Value: "sponson/production/main"},
		{Provider: sim.ProviderNeon, Action: sim.DriftAdd, Project: "proj-snowy-meadow-421", Value: "dev-alice"},
		{Provider: sim.ProviderAuth0, Action: sim.DriftAdd, Project: "q8XbT2nYv0pLwE4r", Value: "https://pr-99.preview.acme.dev/api/auth/callback"},
		{Provider: sim.ProviderAuth0, Action: sim.DriftAdd, Project: "q8XbT2nYv0pLwE4r", Value: "https://app.acme.dev/api/auth/callback"},
		{Provider: sim.ProviderSupabase, Action: sim.DriftAdd, Project: "abcdefghijklmnopqrst", Value: "https://pr-99.preview.acme.dev/**"},
		{Provider: sim.ProviderSupabase, Action: sim.DriftAdd, Project: "abcdefghijklmnopqrst", Value: "https://app.acme.dev/**"},
		{Provider: sim.ProviderHTTP, Action: sim.DriftAdd, Project: "v2/buckets/assets", ID: "cors", Field: "allowed_origins", Value: "https://pr-99.preview.acme.dev"},
	} {
		if _, err := cloud.Drift(d); err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
	}

	cloud.Console.SeedClerkRedirectURL("https://pr-99.preview.acme.dev/sso-callback")
	cloud.Console.SeedClerkRedirectURL("https://app.acme.dev/sso-callback")

	cloud.ResetWrites()
	got := unmanagedKeys(t, run, "1")
	want := map[string][]string{
		"db":       {"branch:sponson/preview/by-hand", "branch:sponson/preview/pr-99"},
		"login":    {"callbacks:https://pr-99.preview.acme.dev/api/auth/callback"},
		"redirect": {"redirect:abcdefghijklmnopqrst:https://pr-99.preview.acme.dev/**"},
		"signin":   {"redirect_url:https://pr-99.preview.acme.dev/sso-callback"},
		"cors":     {"cdn:/v2/buckets/assets/cors#/allowed_origins=https://pr-99.preview.acme.dev"},
	}
	for line, keys := range want {
		if !slices.Equal(got[line], keys) {
			t.Errorf("line %s: unmanaged %q, want %q", line, got[line], keys)
		}
	}
	for line, keys := range got {
		if want[line] == nil {
			t.Errorf("line %s: unmanaged %q, want none", line, keys)
		}
	}
	if n := len(cloud.Writes()); n != 0 {
		t.Errorf("plan wrote %d times", n)
	}

	// Scope pr-99 declares them: its apply adopts them (they equal the
	// plan), and its destroy leaves them.
	r := run("apply", "--json", "--pr", "99", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply pr-99: exit %d\n%s%s", r.code, r.out, r.err)
	}
	for _, l := range oneDocument(t, r)["receipt"].(map[string]any)["ledger"].([]any) {
		l := l.(map[string]any)
		if l["created_by"] != "adopted" {
			t.Errorf("pr-99 ledger: %v %v, want adopted", l["key"], l["created_by"])
		}
	}
	if got := unmanagedKeys(t, run, "1"); !slices.Equal(got["db"], []string{"branch:sponson/preview/by-hand"}) || len(got) != 1 {
		t.Errorf("after pr-99 adopted its own: unmanaged %v, want only the branch made by hand", got)
	}
	if r := run("destroy", "--json", "--pr", "99", "--receipts", "local"); r.code != 0 {
		t.Fatalf("destroy pr-99: exit %d\n%s%s", r.code, r.out, r.err)
	}
	st := cloud.State()
	sp, _ := st.SupabaseProject("abcdefghijklmnopqrst")
	if !strings.Contains(strings.Join(entryValues(sp.Entries), ","), "https://pr-99.preview.acme.dev/**") {
		t.Errorf("destroying pr-99 removed the redirect it adopted: %v", sp.Entries)
	}
}

func entryValues(es []sim.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Value)
	}
	return out
}
