package clerk_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/clerk"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

func request(u string) adapter.Request {
	return adapter.Request{Line: "redirect", Params: map[string]any{"url": u}, Provider: adapter.Provider{}}
}

func TestConformance(t *testing.T) {
	w := simtest.New(t, sim.Options{Seed: 5})
	w.Cloud.Console.SeedClerkRedirectURL("https://app.example.dev/sso-callback")
	adaptertest.Run(t, adaptertest.Case{
		Op:            clerk.NewRedirect(w.With(nil), w.Client),
		Request:       request("https://pr-7.example.dev/sso-callback"),
		Other:         request("myapp://pr-8/callback"),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[clerk.TokenVar], "sk_test_wrong"}},
		Unauthorized:  clerk.NewRedirect(w.With(map[string]string{clerk.TokenVar: "sk_test_wrong"}), w.Client),
		NoCredential:  clerk.NewRedirect(w.With(map[string]string{clerk.TokenVar: ""}), w.Client),
		CredentialVar: clerk.TokenVar,
	})
	st := w.Cloud.State().Clerk
	if len(st) != 1 || st[0].Origin != sim.OriginSeed {
		t.Errorf("after the suite the instance holds %+v, want only the seeded URL", st)
	}
}

// An URL that is already allowed is taken over: no write, not created.
func TestExistingURLTakenOver(t *testing.T) {
	w := simtest.New(t, sim.Options{Seed: 6})
	id := w.Cloud.Console.SeedClerkRedirectURL("https://pr-7.example.dev/cb")
	op := clerk.NewRedirect(w.With(nil), w.Client)
	req := request("https://pr-7.example.dev/cb")
	res, err := op.Apply(context.Background(), req, nil, func(...string) error { t.Fatal("intend called for an existing URL"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 0 || len(res.Resources) != 1 || res.Resources[0].ID != id || w.Writes() != 0 {
		t.Errorf("result %+v with %d writes; want the seeded object taken over without writes", res, w.Writes())
	}
}

// The listing is paged: a URL on a later page is found.
func TestPagedListing(t *testing.T) {
	w := simtest.New(t, sim.Options{Seed: 7})
	for i := range 7 {
		w.Cloud.Console.SeedClerkRedirectURL(fmt.Sprintf("https://seed-%d.example.dev/cb", i))
	}
	if _, err := w.Cloud.AddRule(sim.Rule{Kind: sim.KindPageSize, Provider: sim.ProviderClerk, Method: "GET", Path: "/v1/redirect_urls", PageSize: 2}); err != nil {
		t.Fatal(err)
	}
	op := clerk.NewRedirect(w.With(nil), w.Client)
	live, err := op.Read(context.Background(), request("https://seed-6.example.dev/cb"))
	if err != nil || len(live.Resources) != 1 {
		t.Fatalf("read through pages = %+v, %v", live, err)
	}
}

// A create Clerk refuses because the URL appeared meanwhile is taken over,
// never claimed as created nor duplicated.
func TestRefusedCreateTakenOver(t *testing.T) {
	w := simtest.New(t, sim.Options{Seed: 8})
	op := clerk.NewRedirect(w.With(nil), w.Client)
	req := request("https://race.example.dev/cb")
	var seeded string
	res, err := op.Apply(context.Background(), req, nil, func(...string) error {
		seeded = w.Cloud.Console.SeedClerkRedirectURL("https://race.example.dev/cb")
		return nil
	})
	if err != nil || len(res.Created) != 0 || len(res.Resources) != 1 || res.Resources[0].ID != seeded {
		t.Fatalf("apply = %+v, %v; want the other writer's URL taken over, not created", res, err)
	}
	if n := len(w.Cloud.State().Clerk); n != 1 {
		t.Errorf("%d URLs, want 1 (never duplicated)", n)
	}
}

func TestParams(t *testing.T) {
	op := clerk.NewRedirect(nil, nil)
	for _, u := range []string{"", "example.com/cb", "http://example.com/cb", "https://a b"} {
		if _, err := op.Defaults(map[string]any{"url": u}, nil, adapter.RunCtx{}); errs.CodeOf(err) != errs.PARAM_INVALID {
			t.Errorf("url %q: err = %v, want PARAM_INVALID", u, err)
		}
	}
	for _, u := range []string{"https://x.dev/cb", "myapp://cb", "http://localhost:3000/cb"} {
		if _, err := op.Defaults(map[string]any{"url": u}, nil, adapter.RunCtx{}); err != nil {
			t.Errorf("url %q: %v", u, err)
		}
	}
}

// The description documents the list's answer as a bare array, paginated
// or not; an API that answers so (ignoring paginated) is read whole in one
// request, and the URL on it is found.
func TestBareArrayListing(t *testing.T) {
	var gets int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/redirect_urls" {
			http.NotFound(w, r)
			return
		}
		gets++
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"object":"redirect_url","id":"ru_1","url":"https://a.example.dev/cb","created_at":1,"updated_at":1},`+
			`{"object":"redirect_url","id":"ru_2","url":"https://b.example.dev/cb","created_at":2,"updated_at":2}]`)
	}))
	t.Cleanup(srv.Close)
	env := func(k string) (string, bool) {
		return map[string]string{clerk.TokenVar: "sk_test_x", clerk.URLVar: srv.URL}[k], k == clerk.TokenVar || k == clerk.URLVar
	}
	op := clerk.NewRedirect(env, httpclient.New(httpclient.Config{}))
	live, err := op.Read(context.Background(), request("https://b.example.dev/cb"))
	if err != nil || live == nil || len(live.Resources) != 1 || live.Resources[0].ID != "ru_2" {
		t.Fatalf("read = %+v, %v; want ru_2", live, err)
	}
	if gets != 1 {
		t.Errorf("%d list requests, want 1 (a bare array is the whole list)", gets)
	}
}
