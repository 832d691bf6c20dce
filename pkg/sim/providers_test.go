package sim

import (
	"context"
	"net/http"
	"testing"
)

// Each provider beyond the first set refuses a missing or wrong credential
// in its own scheme, and accepts the right one (C1, F1, L1, N1, P1).
func TestNewProvidersAuthSchemes(t *testing.T) {
	tc := newCloud(t, Options{})
	tk := tc.c.Tokens()
	tc.c.Console.SeedPlanetScaleDatabase("org", "db")
	tc.c.Console.SeedCloudflarePagesProject(CloudflarePagesProject{Account: "acct", Name: "web"})
	tc.c.Console.SeedLaunchDarklyFlag(LaunchDarklyFlag{Project: "p", Key: "f", Variations: []LaunchDarklyVariation{{Value: true}, {Value: false}},
		Environments: map[string]*LaunchDarklyEnv{"preview": {}}})
	site := tc.c.Console.SeedNetlifySite(NetlifySite{Name: "s"})
	for _, c := range []struct {
		path, good, bad string
		denied          int
	}{
		{"/clerk/v1/redirect_urls", "Bearer " + tk.Clerk, "Bearer sk_test_wrong", 401},
		{"/planetscale/organizations/org/databases/db/branches/main", tk.PlanetScaleID + ":" + tk.PlanetScale, "Bearer " + tk.PlanetScale, 401},
		{"/launchdarkly/api/v2/flags/p/f", tk.LaunchDarkly, "Bearer " + tk.LaunchDarkly, 401},
		{"/cloudflare/accounts/acct/pages/projects/web", "Bearer " + tk.Cloudflare, "Bearer wrong", 403},
		{"/netlify/sites/" + site, "Bearer " + tk.Netlify, "Bearer wrong", 401},
	} {
		tc.raw(context.Background(), "GET", c.path, c.good, nil, nil).want(t, http.StatusOK)
		tc.raw(context.Background(), "GET", c.path, c.bad, nil, nil).want(t, c.denied)
	}
	if n := len(tc.c.Writes()); n != 0 {
		t.Errorf("reads logged as writes: %d", n)
	}
}

// LaunchDarkly takes only semantic patches (L3) and moves a key between
// variations (L4); an environment with approvals refuses (L5).
func TestLaunchDarklySemanticPatch(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.sendsForbidden()
	tk := tc.c.Tokens()
	tc.c.Console.SeedLaunchDarklyFlag(LaunchDarklyFlag{Project: "p", Key: "f", Variations: []LaunchDarklyVariation{{ID: "v-on", Value: true}, {ID: "v-off", Value: false}},
		Environments: map[string]*LaunchDarklyEnv{"preview": {}, "prod": {ApprovalRequired: true}}})
	semantic := http.Header{"Content-Type": {"application/json; domain-model=launchdarkly.semanticpatch"}}
	add := func(env, variation string) map[string]any {
		return map[string]any{"environmentKey": env, "instructions": []any{map[string]any{"kind": "addTargets", "contextKind": "user", "values": []string{"k"}, "variationId": variation}}}
	}
	ctx := context.Background()
	tc.raw(ctx, "PATCH", "/launchdarkly/api/v2/flags/p/f", tk.LaunchDarkly, add("preview", "v-on"), nil).want(t, http.StatusBadRequest)
	tc.raw(ctx, "PATCH", "/launchdarkly/api/v2/flags/p/f", tk.LaunchDarkly, add("preview", "v-on"), semantic).want(t, http.StatusOK)
	tc.raw(ctx, "PATCH", "/launchdarkly/api/v2/flags/p/f", tk.LaunchDarkly, add("preview", "v-off"), semantic).want(t, http.StatusOK)
	env := tc.c.State().LaunchDarkly[0].Environments["preview"]
	if len(env.Targets) != 1 || env.Targets[0].Variation != 1 || env.Targets[0].Values[0] != "k" {
		t.Errorf("targets = %+v, want k on the second variation only", env.Targets)
	}
	tc.raw(ctx, "PATCH", "/launchdarkly/api/v2/flags/p/f", tk.LaunchDarkly, add("prod", "v-on"), semantic).want(t, http.StatusMethodNotAllowed)
}

// A PlanetScale branch is ready only after it has been looked at (P5), and
// a password's secret is answered once (P6).
func TestPlanetScaleReadinessAndOnceSecret(t *testing.T) {
	tc := newCloud(t, Options{})
	tk := tc.c.Tokens()
	auth := tk.PlanetScaleID + ":" + tk.PlanetScale
	tc.c.Console.SeedPlanetScaleDatabase("org", "db")
	ctx := context.Background()
	base := "/planetscale/organizations/org/databases/db/branches"
	b := tc.raw(ctx, "POST", base, auth, map[string]any{"name": "dev", "parent_branch": "main"}, nil).want(t, http.StatusCreated).obj(t)
	if b["ready"] != false {
		t.Fatalf("a new branch is ready at once: %v", b)
	}
	tc.raw(ctx, "POST", base+"/dev/passwords", auth, map[string]any{"name": "pw"}, nil).want(t, http.StatusUnprocessableEntity)
	tc.raw(ctx, "GET", base+"/dev", auth, nil, nil).want(t, http.StatusOK)
	if got := tc.raw(ctx, "GET", base+"/dev", auth, nil, nil).want(t, http.StatusOK).obj(t); got["ready"] != true {
		t.Fatalf("branch after two reads: %v", got)
	}
	pw := tc.raw(ctx, "POST", base+"/dev/passwords", auth, map[string]any{"name": "pw", "role": "reader"}, nil).want(t, http.StatusCreated).obj(t)
	if pw["plain_text"] == nil || pw["plain_text"] == "" {
		t.Fatalf("the create does not answer the secret: %v", pw)
	}
	list := tc.raw(ctx, "GET", base+"/dev/passwords", auth, nil, nil).want(t, http.StatusOK).obj(t)
	for _, p := range list["data"].([]any) {
		// plain_text is a required, nullable field of the password
		// schema: null everywhere but in the create's answer.
		if v, ok := p.(map[string]any)["plain_text"]; !ok || v != nil {
			t.Errorf("the listing answers a secret: %v", p)
		}
	}
}
