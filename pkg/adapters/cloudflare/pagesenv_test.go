package cloudflare_test

import (
	"context"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/cloudflare"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

var block = adapter.Provider{"account": "023e105f4ecef8ad9ca31a8372d0c353", "project": "web"}

func newWorld(t *testing.T) *simtest.World {
	w := simtest.New(t, sim.Options{Seed: 19})
	w.Cloud.Console.SeedCloudflarePagesProject(sim.CloudflarePagesProject{Account: "023e105f4ecef8ad9ca31a8372d0c353", Name: "web",
		Env: map[string]map[string]sim.CloudflareVar{
			"preview":    {"NODE_VERSION": {Type: "plain_text", Value: "20"}},
			"production": {"API_KEY": {Type: "secret_text", Value: "seeded-secret"}},
		}})
	return w
}

func req(target string, vars, secrets map[string]any) adapter.Request {
	p := map[string]any{"target": target}
	if vars != nil {
		p["vars"] = vars
	}
	if secrets != nil {
		p["secrets"] = secrets
	}
	return adapter.Request{Line: "pages", Params: p, Provider: block, Run: adapter.RunCtx{Env: "preview", Scope: "pr-7"}}
}

func TestConformance(t *testing.T) {
	w := newWorld(t)
	adaptertest.Run(t, adaptertest.Case{
		Op:            cloudflare.NewPagesEnv(w.With(nil), w.Client),
		Request:       req("preview", map[string]any{"API_URL": "https://pr-7.example.dev"}, map[string]any{"DB_PASSWORD": "s3cr3t-pr7"}),
		Other:         req("preview", map[string]any{"OTHER_URL": "https://pr-8.example.dev"}, nil),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[cloudflare.TokenVar], "cf-wrong", "s3cr3t-pr7"}},
		Unauthorized:  cloudflare.NewPagesEnv(w.With(map[string]string{cloudflare.TokenVar: "cf-wrong"}), w.Client),
		NoCredential:  cloudflare.NewPagesEnv(w.With(map[string]string{cloudflare.TokenVar: ""}), w.Client),
		CredentialVar: cloudflare.TokenVar,
	})
	p := w.Cloud.State().Cloudflare[0]
	if len(p.Env["preview"]) != 1 || p.Env["preview"]["NODE_VERSION"].Value != "20" || len(p.Env["production"]) != 1 {
		t.Errorf("variables after the suite = %+v, want the seeded ones only", p.Env)
	}
}

func intendOK(...string) error { return nil }

// Secrets are compared by presence; rewrite_secrets rotates them.
func TestSecretsByPresence(t *testing.T) {
	w := newWorld(t)
	op := cloudflare.NewPagesEnv(w.With(nil), w.Client)
	ctx := context.Background()
	r := req("production", nil, map[string]any{"API_KEY": "a-new-value"})
	live, err := op.Read(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	diffs, _ := op.Diff(live, r)
	if diffs[0].Action != adapter.Unchanged {
		t.Fatalf("an existing secret: %+v, want unchanged", diffs)
	}
	if _, err := op.Apply(ctx, r, live, intendOK); err != nil || w.Writes() != 0 {
		t.Fatalf("apply of a present secret: %v, %d writes", err, w.Writes())
	}
	r.Params["rewrite_secrets"] = true
	diffs, _ = op.Diff(live, r)
	if diffs[0].Action != adapter.Update {
		t.Fatalf("rewrite_secrets: %+v, want update", diffs)
	}
	if _, err := op.Apply(ctx, r, live, intendOK); err != nil {
		t.Fatal(err)
	}
	if got := w.Cloud.State().Cloudflare[0].Env["production"]["API_KEY"]; got.Value != "a-new-value" || got.Type != "secret_text" {
		t.Errorf("rotated secret = %+v", got)
	}
	if got := op.WritesEnvironment(r.Params, block, adapter.RunCtx{}); got != "production" {
		t.Errorf("WritesEnvironment = %q", got)
	}
	if id := op.LockOn(r.Params, block); id != "cloudflare:023e105f4ecef8ad9ca31a8372d0c353:pages:web:production" {
		t.Errorf("LockOn = %q", id)
	}
}

func TestParams(t *testing.T) {
	op := cloudflare.NewPagesEnv(nil, nil)
	for _, bad := range []map[string]any{
		{"target": "staging", "vars": map[string]any{"A": "1"}},
		{"target": "preview"},
		{"target": "preview", "vars": map[string]any{"A": "1"}, "secrets": map[string]any{"A": "2"}},
		{"target": "preview", "vars": map[string]any{"A": "1"}, "rewrite_secrets": "yes"},
	} {
		if _, err := op.Defaults(bad, block, adapter.RunCtx{}); errs.CodeOf(err) != errs.PARAM_INVALID {
			t.Errorf("%v: %v, want PARAM_INVALID", bad, err)
		}
	}
	d, err := op.Defaults(map[string]any{"vars": map[string]any{"A": 1}}, block, adapter.RunCtx{Env: "preview"})
	if err != nil || d["target"] != "preview" {
		t.Errorf("defaults = %v, %v", d, err)
	}
}

// A Pages project deleted in the dashboard took its variables with it:
// Cloudflare answers 404 for the project, and destroying (or looking up)
// a variable of it is success, not an error that blocks the scope's
// teardown forever.
func TestProjectGoneIsGone(t *testing.T) {
	w := newWorld(t)
	op := cloudflare.NewPagesEnv(w.With(nil), w.Client)
	gone := adapter.Provider{"account": "023e105f4ecef8ad9ca31a8372d0c353", "project": "deleted-meanwhile"}
	w.ParentGone(t, op, gone, adapter.Resource{Key: cloudflare.Key("preview", "API_URL")})
}
