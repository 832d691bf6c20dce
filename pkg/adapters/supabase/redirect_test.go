package supabase_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/adapters/supabase"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

type world struct {
	*simtest.World
	ref string
}

func newWorld(t *testing.T, seed string) *world {
	t.Helper()
	w := &world{World: simtest.New(t, sim.Options{Seed: 3})}
	ref, err := w.Cloud.Console.SeedSupabaseProject(sim.SupabaseProject{Name: "app", Auth: sim.SupabaseAuthConfig{SiteURL: "https://app.example.dev", URIAllowList: seed}})
	if err != nil {
		t.Fatal(err)
	}
	w.ref = ref
	return w
}

func (w *world) op() *supabase.RedirectOp { return supabase.NewRedirect(w.With(nil), w.Client) }

func (w *world) request(u string) adapter.Request {
	return adapter.Request{Line: "redirect", Params: map[string]any{"url": u}, Provider: adapter.Provider{"project": w.ref}}
}

func (w *world) allowList() string { return w.Cloud.State().Supabase[0].Auth.URIAllowList }

func TestConformance(t *testing.T) {
	w := newWorld(t, "https://app.example.dev/cb, http://localhost:3000/**")
	adaptertest.Run(t, adaptertest.Case{
		Op:            w.op(),
		Request:       w.request("https://pr-7.example.dev/auth/callback"),
		Other:         w.request("https://pr-8.example.dev/auth/callback"),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[supabase.TokenVar], "sbp_wrong_token_123"}},
		Unauthorized:  supabase.NewRedirect(w.With(map[string]string{supabase.TokenVar: "sbp_wrong_token_123"}), w.Client),
		NoCredential:  supabase.NewRedirect(w.With(map[string]string{supabase.TokenVar: ""}), w.Client),
		CredentialVar: supabase.TokenVar,
	})
	// Entries that were there before are kept, in order.
	if got := w.allowList(); got != "https://app.example.dev/cb,http://localhost:3000/**" && got != "https://app.example.dev/cb, http://localhost:3000/**" {
		t.Errorf("allow-list after the suite = %q", got)
	}
}

func TestParams(t *testing.T) {
	op := supabase.NewRedirect(nil, nil)
	p := adapter.Provider{"project": "abcdefghijklmnopqrst"}
	got, err := op.Defaults(map[string]any{"url": "https://x/cb"}, p, adapter.RunCtx{})
	if err != nil || got["project"] != "abcdefghijklmnopqrst" {
		t.Errorf("defaults = %v, %v", got, err)
	}
	if id := op.LockOn(got, p); id != "supabase:abcdefghijklmnopqrst:auth-uri-allow-list" {
		t.Errorf("LockOn = %q", id)
	}
	if id := op.LockOn(map[string]any{"url": "https://x", "project": "zzzzzzzzzzzzzzzzzzzz"}, p); id != "supabase:zzzzzzzzzzzzzzzzzzzz:auth-uri-allow-list" {
		t.Errorf("LockOn with a project parameter = %q", id)
	}
	if _, err := op.Defaults(map[string]any{"url": adapter.Marker{Kind: adapter.Pending, Ref: "env.preview_url"}}, p, adapter.RunCtx{}); err != nil {
		t.Errorf("pending url: %v", err)
	}
	for _, c := range []struct {
		params map[string]any
		p      adapter.Provider
		name   string
	}{
		{map[string]any{"url": "https://a/cb,https://b/cb"}, p, "comma"},
		{map[string]any{"url": " "}, p, "url"},
		{map[string]any{}, p, "url"},
		{map[string]any{"url": "https://x"}, adapter.Provider{}, "project"},
		{map[string]any{"url": "https://x", "list": "x"}, p, "list"},
	} {
		if _, err := op.Defaults(c.params, c.p, adapter.RunCtx{}); errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), c.name) {
			t.Errorf("Defaults(%v) = %v, want PARAM_INVALID about %s", c.params, err, c.name)
		}
	}
	for _, k := range []string{"redirect:abc:https://x/cb?a=b:c", "redirect:p:u"} {
		if _, _, ok := supabase.ParseKey(k); !ok {
			t.Errorf("ParseKey(%s) failed", k)
		}
	}
	if proj, u, _ := supabase.ParseKey(supabase.Key("abc", "https://x:8443/cb")); proj != "abc" || u != "https://x:8443/cb" {
		t.Errorf("round trip = %s %s", proj, u)
	}
}

func TestOnlyTheEntryChanges(t *testing.T) {
	w := newWorld(t, "https://a.example.dev,https://b.example.dev")
	op := w.op()
	ctx := context.Background()
	req := w.request("https://pr-1.example.dev")
	if _, err := op.Apply(ctx, req, nil, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := w.allowList(); got != "https://a.example.dev,https://b.example.dev,https://pr-1.example.dev" {
		t.Errorf("after apply: %q", got)
	}
	// A console edit removes it: the next read sees it missing.
	if _, err := w.Cloud.Drift(sim.Drift{Provider: sim.ProviderSupabase, Action: sim.DriftRemove, Project: w.ref, Value: "https://pr-1.example.dev"}); err != nil {
		t.Fatal(err)
	}
	live, _ := op.Read(ctx, req)
	if d, _ := op.Diff(live, req); d[0].Action != adapter.Create {
		t.Errorf("after a console removal: %+v", d)
	}
	if _, err := op.Apply(ctx, req, nil, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := op.Destroy(ctx, req.Provider, adapter.RunCtx{}, adapter.Resource{Key: supabase.Key(w.ref, "https://pr-1.example.dev")}); err != nil {
		t.Fatal(err)
	}
	if got := w.allowList(); got != "https://a.example.dev,https://b.example.dev" {
		t.Errorf("after destroy: %q", got)
	}
}

func TestRateLimited(t *testing.T) {
	w := newWorld(t, "")
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindRateLimit, Provider: "supabase", Count: 2})
	if _, err := w.op().Apply(context.Background(), w.request("https://x.example.dev"), nil, func(...string) error { return nil }); err != nil {
		t.Fatalf("through 429: %v", err)
	}
	if got := w.allowList(); got != "https://x.example.dev" {
		t.Errorf("allow-list = %q", got)
	}
}
