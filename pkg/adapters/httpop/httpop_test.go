package httpop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/httpop"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

type world struct {
	*simtest.World
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{World: simtest.New(t, sim.Options{Seed: 5})}
	return w
}

// provider is providers.http as the engine passes it: every api.
var provider = adapter.Provider{
	"api":   map[string]any{"base_url_env": sim.HTTPURLVar, "auth": map[string]any{"bearer_env": sim.HTTPTokenVar}},
	"other": map[string]any{"base_url": "https://other.example.dev"},
}

func thing(name string) adapter.Request {
	return adapter.Request{Line: "thing", Provider: provider, Params: map[string]any{
		"api":     "api",
		"create":  map[string]any{"method": "POST", "path": "/things"},
		"fields":  map[string]any{"name": name, "tags": []any{"a", "b"}, "size": int64(3)},
		"outputs": map[string]any{"slug": "/name"},
	}}
}

func (w *world) resourceCase(t *testing.T) adaptertest.Case {
	return adaptertest.Case{
		Op:                 httpop.NewResource(w.With(nil), w.Client),
		Request:            thing("t-pr-7"),
		Other:              thing("t-pr-8"),
		World:              adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[sim.HTTPTokenVar], "wrong-token-123"}},
		Unauthorized:       httpop.NewResource(w.With(map[string]string{sim.HTTPTokenVar: "wrong-token-123"}), w.Client),
		NoCredential:       httpop.NewResource(w.With(map[string]string{sim.HTTPTokenVar: ""}), w.Client),
		CredentialVar:      sim.HTTPTokenVar,
		LookupWithoutValue: true,
	}
}

func TestResourceConformance(t *testing.T) {
	w := newWorld(t)
	// An object of the same collection that the line does not manage.
	if _, err := w.Cloud.Console.SeedHTTPObject("things", map[string]any{"name": "seeded"}); err != nil {
		t.Fatal(err)
	}
	adaptertest.Run(t, w.resourceCase(t))
	if n := len(w.Cloud.State().HTTP); n != 1 {
		t.Errorf("%d objects left, want only the seeded one", n)
	}
}

func item(shape, listPath, it string, extra map[string]any) adapter.Request {
	p := map[string]any{"api": "api", "parent": map[string]any{"path": "/settings/app"}, "list_path": listPath, "shape": shape, "item": it}
	for k, v := range extra {
		p[k] = v
	}
	return adapter.Request{Line: "item", Provider: provider, Params: p}
}

func TestListItemConformance(t *testing.T) {
	for _, c := range []struct {
		shape, path string
		extra       map[string]any
	}{
		{httpop.ShapeArray, "/redirects", nil},
		{httpop.ShapeDelimited, "/origins", nil},
		{httpop.ShapeDelimited, "/hosts", map[string]any{"delimiter": ";"}},
		{httpop.ShapeMap, "/headers", map[string]any{"value": "on"}},
		{httpop.ShapeArray, "/nested/list", nil},
	} {
		t.Run(c.shape+c.path, func(t *testing.T) {
			w := newWorld(t)
			seed := map[string]any{"id": "app", "redirects": []any{"https://seed.example.dev"}, "origins": "https://a.example.dev, https://b.example.dev",
				"hosts": "a.example.dev;b.example.dev", "headers": map[string]any{"x-seed": "1"}}
			if _, err := w.Cloud.Console.SeedHTTPObject("settings", seed); err != nil {
				t.Fatal(err)
			}
			adaptertest.Run(t, adaptertest.Case{
				Op:            httpop.NewListItem(w.With(nil), w.Client),
				Request:       item(c.shape, c.path, "https://pr-7.example.dev", c.extra),
				Other:         item(c.shape, c.path, "https://pr-8.example.dev", c.extra),
				World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[sim.HTTPTokenVar], "wrong-token-123"}},
				Unauthorized:  httpop.NewListItem(w.With(map[string]string{sim.HTTPTokenVar: "wrong-token-123"}), w.Client),
				NoCredential:  httpop.NewListItem(w.With(map[string]string{sim.HTTPTokenVar: ""}), w.Client),
				CredentialVar: sim.HTTPTokenVar,
			})
			got := w.Cloud.State().HTTP[0].Fields
			for _, k := range []string{"redirects", "headers"} {
				if !adapter.Equal(got[k], seed[k]) {
					t.Errorf("%s after the suite = %v, want %v", k, got[k], seed[k])
				}
			}
		})
	}
}

func defaults(t *testing.T, op adapter.Op, req adapter.Request) adapter.Request {
	t.Helper()
	p, err := op.(adapter.Defaulter).Defaults(req.Params, req.Provider, req.Run)
	if err != nil {
		t.Fatal(err)
	}
	req.Params = p
	return req
}

func TestResourceUpdateKeepAndOutputs(t *testing.T) {
	w := newWorld(t)
	op := httpop.NewResource(w.With(nil), w.Client)
	ctx := context.Background()
	res, err := op.Apply(ctx, thing("t-1"), nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["id"] != res.Resources[0].ID || res.Outputs["slug"] != "t-1" || res.Resources[0].Key != "api:/things?name=t-1" {
		t.Errorf("result = %+v", res)
	}
	changed := thing("t-1")
	changed.Params["fields"] = map[string]any{"name": "t-1", "tags": []any{"c"}, "size": adapter.Marker{Kind: adapter.Keep}}
	live, _ := op.Read(ctx, changed)
	d, _ := op.Diff(live, changed)
	if d[0].Action != adapter.Update || len(d[0].Fields) != 1 || d[0].Fields[0].Path != "fields.tags" {
		t.Fatalf("diff = %+v", d)
	}
	before := w.Writes()
	res, err = op.Apply(ctx, changed, live, func(...string) error { t.Error("an update intends"); return nil })
	if err != nil || len(res.Created) != 0 || w.Writes() != before+1 {
		t.Fatalf("update: %+v, %v, %d writes", res, err, w.Writes()-before)
	}
	v := res.Resources[0].Value.(map[string]any)
	if !adapter.Equal(v["tags"], []any{"c"}) || !adapter.Equal(v["size"], 3) {
		t.Errorf("after update: %v", v)
	}
	live, _ = op.Read(ctx, changed)
	if d, _ := op.Diff(live, changed); d[0].Action != adapter.Unchanged {
		t.Errorf("after update: %+v", d)
	}
	pending := thing("t-1")
	pending.Params["fields"] = map[string]any{"name": "t-1", "tags": adapter.Marker{Kind: adapter.Secret, Ref: "env://X"}}
	if _, err := op.Apply(ctx, pending, nil, func(...string) error { return nil }); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("apply with a secret marker: %v", err)
	}
}

func TestResourceFixedPath(t *testing.T) {
	w := newWorld(t)
	op := httpop.NewResource(w.With(nil), w.Client)
	ctx := context.Background()
	req := adapter.Request{Provider: provider, Params: map[string]any{
		"api": "api", "create": map[string]any{"path": "/settings", "body": map[string]any{"id": "main", "theme": "dark"}},
		"read": map[string]any{"path": "/settings/main"}, "fields": map[string]any{"theme": "dark"},
	}}
	req = defaults(t, op, req)
	res, err := op.Apply(ctx, req, nil, func(...string) error { return nil })
	if err != nil || res.Resources[0].Key != "api:/settings/main" || res.Resources[0].ID != "main" {
		t.Fatalf("fixed path: %+v, %v", res, err)
	}
	got, err := op.Lookup(ctx, provider, adapter.RunCtx{}, "api:/settings/main")
	if err != nil || got == nil || got.ID != "main" {
		t.Errorf("Lookup = %+v, %v", got, err)
	}
	if err := op.Destroy(ctx, provider, adapter.RunCtx{}, res.Resources[0]); err != nil {
		t.Fatal(err)
	}
	if got, _ := op.Lookup(ctx, provider, adapter.RunCtx{}, "api:/settings/main"); got != nil {
		t.Error("destroyed object still found")
	}
}

func TestResourceLostCreateAnswer(t *testing.T) {
	w := newWorld(t)
	op := httpop.NewResource(w.With(nil), w.Client)
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindDrop, Provider: "http", Method: "POST", Count: 1})
	res, err := op.Apply(context.Background(), thing("t-1"), nil, func(...string) error { return nil })
	if err != nil || len(res.Created) != 1 {
		t.Fatalf("lost answer: %+v, %v", res, err)
	}
	if n := len(w.Cloud.State().HTTP); n != 1 {
		t.Errorf("%d objects, want 1 (a create is never repeated)", n)
	}
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindFail, Provider: "http", Method: "POST", Status: 502, Count: 1})
	if _, err := op.Apply(context.Background(), thing("t-2"), nil, func(...string) error { return nil }); !httpclient.IsAmbiguous(err) {
		t.Errorf("a failed create that did not happen: %v", err)
	}
}

func TestResourceRecreatedOutsideIsNotDestroyed(t *testing.T) {
	w := newWorld(t)
	op := httpop.NewResource(w.With(nil), w.Client)
	ctx := context.Background()
	res, err := op.Apply(ctx, thing("t-1"), nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	r := res.Resources[0]
	if _, err := w.Cloud.Drift(sim.Drift{Provider: sim.ProviderHTTP, Action: sim.DriftRecreate, Project: "things", ID: r.ID}); err != nil {
		t.Fatal(err)
	}
	before := w.Writes()
	if err := op.Destroy(ctx, provider, adapter.RunCtx{}, r); err != nil || w.Writes() != before {
		t.Errorf("destroy of a re-created object: %v, %d writes", err, w.Writes()-before)
	}
}

func TestParams(t *testing.T) {
	w := newWorld(t)
	res := httpop.NewResource(w.With(nil), w.Client)
	li := httpop.NewListItem(w.With(nil), w.Client)
	for _, c := range []struct {
		op     adapter.Op
		params map[string]any
		name   string
	}{
		{res, map[string]any{"create": map[string]any{"path": "/things"}}, "api"},
		{res, map[string]any{"api": "nope", "create": map[string]any{"path": "/things"}}, "nope"},
		{res, map[string]any{"api": "api"}, "create"},
		{res, map[string]any{"api": "api", "create": map[string]any{"path": "https://evil.example/x"}}, "create.path"},
		{res, map[string]any{"api": "api", "create": map[string]any{"path": "/a/../b"}}, "create.path"},
		{res, map[string]any{"api": "api", "create": map[string]any{"path": "/things", "method": "GET"}}, "create.method"},
		{res, map[string]any{"api": "api", "create": map[string]any{"path": "/things"}, "fields": map[string]any{"size": 1}}, "match"},
		{res, map[string]any{"api": "api", "create": map[string]any{"path": "/things"}, "fields": map[string]any{"name": "x"}, "outputs": map[string]any{"id": "/x"}}, "outputs.id"},
		{li, map[string]any{"api": "api", "list_path": "/x", "item": "a"}, "parent"},
		{li, map[string]any{"api": "api", "parent": map[string]any{"path": "/p"}, "item": "a"}, "list_path"},
		{li, map[string]any{"api": "api", "parent": map[string]any{"path": "/p"}, "list_path": "/x", "item": "a", "shape": "set"}, "shape"},
		{li, map[string]any{"api": "api", "parent": map[string]any{"path": "/p"}, "list_path": "/x", "item": "a,b", "shape": "delimited"}, "item"},
		{li, map[string]any{"api": "api", "parent": map[string]any{"path": "/p"}, "list_path": "/x", "item": "a", "value": 1}, "value"},
		{li, map[string]any{"api": "api", "parent": map[string]any{"path": "/p"}, "list_path": "/x", "item": "a", "delimiter": ";"}, "delimiter"},
	} {
		_, err := c.op.(adapter.Defaulter).Defaults(c.params, provider, adapter.RunCtx{})
		if errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s Defaults(%v) = %v, want PARAM_INVALID naming %s", c.op.Spec().Name(), c.params, err, c.name)
		}
	}
	// The api's own block works as the provider too.
	one := adapter.Provider{"base_url": "https://api.example.dev/v1/"}
	req := item("array", "/redirects", "https://x", nil)
	if id := li.LockOn(req.Params, one); id != "http:https://api.example.dev/v1/settings/app" {
		t.Errorf("LockOn with the api block = %q", id)
	}
	if id := li.LockOn(req.Params, provider); !strings.HasPrefix(id, "http:http://127.0.0.1") || !strings.HasSuffix(id, "/http/settings/app") {
		t.Errorf("LockOn with base_url_env = %q", id)
	}
	unset := httpop.NewListItem(w.With(map[string]string{sim.HTTPURLVar: ""}), w.Client)
	if id := unset.LockOn(req.Params, provider); id != "http:$"+sim.HTTPURLVar+"/settings/app" {
		t.Errorf("LockOn with base_url_env unset = %q", id)
	}
	if _, err := unset.Read(context.Background(), req); errs.CodeOf(err) != errs.USAGE || !strings.Contains(err.Error(), sim.HTTPURLVar) {
		t.Errorf("Read with base_url_env unset: %v", err)
	}
	for _, k := range []string{httpop.ListKey("api", "/settings/app", "/redirects", "https://x/cb?a=b#c")} {
		a, p, l, it, ok := httpop.ParseListKey(k)
		if !ok || a != "api" || p != "/settings/app" || l != "/redirects" || it != "https://x/cb?a=b#c" {
			t.Errorf("ParseListKey(%s) = %s %s %s %s %v", k, a, p, l, it, ok)
		}
	}
}

func TestListItemMapValueAndPut(t *testing.T) {
	w := newWorld(t)
	if _, err := w.Cloud.Console.SeedHTTPObject("settings", map[string]any{"id": "app", "headers": map[string]any{"a": "1"}, "keep": "me"}); err != nil {
		t.Fatal(err)
	}
	op := httpop.NewListItem(w.With(nil), w.Client)
	ctx := context.Background()
	req := item("map", "/headers", "x-pr", map[string]any{"value": "7", "parent": map[string]any{"path": "/settings/app", "update_method": "PUT"}})
	if _, err := op.Apply(ctx, req, nil, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	req.Params["value"] = "8"
	live, _ := op.Read(ctx, req)
	d, _ := op.Diff(live, req)
	if d[0].Action != adapter.Update {
		t.Fatalf("changed map value: %+v", d)
	}
	res, err := op.Apply(ctx, req, live, func(...string) error { t.Error("an update intends"); return nil })
	if err != nil || len(res.Created) != 0 {
		t.Fatalf("update: %+v %v", res, err)
	}
	got := w.Cloud.State().HTTP[0].Fields
	if !adapter.Equal(got["headers"], map[string]any{"a": "1", "x-pr": "8"}) || got["keep"] != "me" {
		t.Errorf("parent after PUT = %v", got)
	}
	missing := item("array", "/redirects", "x", map[string]any{"parent": map[string]any{"path": "/settings/none"}})
	if _, err := op.Apply(ctx, missing, nil, func(...string) error { return nil }); errs.CodeOf(err) != errs.PROVIDER_NOT_FOUND {
		t.Errorf("missing parent: %v", err)
	}
	wrong := item("array", "/keep", "x", nil)
	if _, err := op.Read(ctx, wrong); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("shape mismatch: %v", err)
	}
}
