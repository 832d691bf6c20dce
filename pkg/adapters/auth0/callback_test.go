package auth0_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/auth0"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

type world struct {
	*simtest.World
	id string
}

func newWorld(t *testing.T, lists map[string][]string) *world {
	t.Helper()
	w := &world{World: simtest.New(t, sim.Options{Seed: 4})}
	w.id = w.Cloud.Console.SeedAuth0Client(sim.Auth0Client{Name: "web", Lists: lists})
	return w
}

func (w *world) op() *auth0.CallbackOp { return auth0.NewCallback(w.With(nil), w.Client) }
func (w *world) provider() adapter.Provider {
	return adapter.Provider{"domain": "example.eu.auth0.com", "client": w.id}
}

func (w *world) request(params map[string]any) adapter.Request {
	return adapter.Request{Line: "login", Params: params, Provider: w.provider()}
}

func (w *world) list(name string) []string { return w.Cloud.State().Auth0[0].Lists[name] }

func TestConformance(t *testing.T) {
	seeded := map[string][]string{"callbacks": {"https://app.example.dev/callback"}, "web_origins": {"https://app.example.dev"}}
	w := newWorld(t, seeded)
	adaptertest.Run(t, adaptertest.Case{
		Op:            w.op(),
		Request:       w.request(map[string]any{"url": "https://pr-7.example.dev/callback"}),
		Other:         w.request(map[string]any{"url": "https://pr-7.example.dev/callback", "list": "allowed_logout_urls"}),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[auth0.TokenVar], "wrong-token-123"}},
		Unauthorized:  auth0.NewCallback(w.With(map[string]string{auth0.TokenVar: "wrong-token-123"}), w.Client),
		NoCredential:  auth0.NewCallback(w.With(map[string]string{auth0.TokenVar: ""}), w.Client),
		CredentialVar: auth0.TokenVar,
	})
	if got := w.list("callbacks"); !slices.Equal(got, seeded["callbacks"]) {
		t.Errorf("callbacks after the suite = %v", got)
	}
	if got := w.list("web_origins"); !slices.Equal(got, seeded["web_origins"]) {
		t.Errorf("web_origins after the suite = %v", got)
	}
}

func TestParams(t *testing.T) {
	op := auth0.NewCallback(nil, nil)
	p := adapter.Provider{"domain": "https://example.eu.auth0.com/", "client": "AbCd123"}
	got, err := op.Defaults(map[string]any{"url": "https://x/cb"}, p, adapter.RunCtx{})
	if err != nil || got["list"] != "callbacks" {
		t.Errorf("defaults = %v, %v", got, err)
	}
	if id := op.LockOn(got, p); id != "auth0:example.eu.auth0.com:client:AbCd123" {
		t.Errorf("LockOn = %q", id)
	}
	for _, c := range []struct {
		params map[string]any
		p      adapter.Provider
		name   string
	}{
		{map[string]any{"url": "https://x", "list": "grants"}, p, "list"},
		{map[string]any{}, p, "url"},
		{map[string]any{"url": "https://x"}, adapter.Provider{"client": "c"}, "domain"},
		{map[string]any{"url": "https://x"}, adapter.Provider{"domain": "d.auth0.com"}, "client"},
	} {
		if _, err := op.Defaults(c.params, c.p, adapter.RunCtx{}); errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), c.name) {
			t.Errorf("Defaults(%v) = %v, want PARAM_INVALID about %s", c.params, err, c.name)
		}
	}
	if l, u, ok := auth0.ParseKey(auth0.Key("web_origins", "https://x:1/a")); !ok || l != "web_origins" || u != "https://x:1/a" {
		t.Errorf("ParseKey round trip = %s %s %v", l, u, ok)
	}
	if _, _, ok := auth0.ParseKey("grants:https://x"); ok {
		t.Error("ParseKey accepted an unknown list")
	}
}

func TestEveryList(t *testing.T) {
	w := newWorld(t, nil)
	op := w.op()
	ctx := context.Background()
	for _, l := range auth0.Lists {
		req := w.request(map[string]any{"url": "https://pr-1.example.dev", "list": l})
		res, err := op.Apply(ctx, req, nil, func(...string) error { return nil })
		if err != nil || len(res.Created) != 1 || res.Created[0] != l+":https://pr-1.example.dev" {
			t.Fatalf("%s: %+v, %v", l, res, err)
		}
		if got := w.list(l); !slices.Equal(got, []string{"https://pr-1.example.dev"}) {
			t.Errorf("%s = %v", l, got)
		}
	}
}

func TestUnknownClient(t *testing.T) {
	w := newWorld(t, nil)
	req := adapter.Request{Params: map[string]any{"url": "https://x.example.dev"}, Provider: adapter.Provider{"domain": "example.eu.auth0.com", "client": "nope"}}
	if _, err := w.op().Read(context.Background(), req); errs.CodeOf(err) != errs.PROVIDER_NOT_FOUND {
		t.Errorf("unknown client: %v", err)
	}
}

func TestRateLimited(t *testing.T) {
	w := newWorld(t, nil)
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindRateLimit, Provider: "auth0", Count: 3})
	if _, err := w.op().Apply(context.Background(), w.request(map[string]any{"url": "https://x.example.dev"}), nil, func(...string) error { return nil }); err != nil {
		t.Fatalf("through 429: %v", err)
	}
	if got := w.list("callbacks"); !slices.Equal(got, []string{"https://x.example.dev"}) {
		t.Errorf("callbacks = %v", got)
	}
}

// Without the engine's parent lock, two read-modify-writes interleaved lose
// an entry (the control case of I9): the op itself does not pretend to be
// atomic, which is why it names its parent with LockOn.
func TestInterleavedWritersLoseWithoutTheLock(t *testing.T) {
	w := newWorld(t, nil)
	op := w.op()
	ctx := context.Background()
	hold := w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindHold, Provider: "auth0", Method: "PATCH", Count: 1})
	done := make(chan error, 1)
	go func() {
		_, err := op.Apply(ctx, w.request(map[string]any{"url": "https://pr-1.example.dev"}), nil, func(...string) error { return nil })
		done <- err
	}()
	if err := w.Cloud.WaitHeld(ctx, hold, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Apply(ctx, w.request(map[string]any{"url": "https://pr-2.example.dev"}), nil, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	w.Cloud.Release(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := w.list("callbacks"); len(got) != 1 {
		t.Errorf("callbacks = %v: the interleaving should have lost one entry", got)
	}
}
