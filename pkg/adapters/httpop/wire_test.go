package httpop_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/httpop"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

// recorder keeps every request the client sends, with its body.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var b []byte
	if req.Body != nil {
		b, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	r.mu.Lock()
	r.reqs, r.body = append(r.reqs, req.Clone(req.Context())), append(r.body, string(b))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recorder) writes(method string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for i, q := range r.reqs {
		if q.Method == method {
			out = append(out, i)
		}
	}
	return out
}

// wireWorld is the fake cloud with a client that records its requests,
// and an http.resource over one API block.
func wireWorld(t *testing.T, block map[string]any, env map[string]string) (*world, *recorder, *httpop.ResourceOp, adapter.Provider) {
	t.Helper()
	w := newWorld(t)
	rec := &recorder{}
	client := httpclient.New(httpclient.Config{Transport: rec, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	b := map[string]any{"base_url_env": sim.HTTPURLVar}
	for k, v := range block {
		b[k] = v
	}
	return w, rec, httpop.NewResource(w.With(env), client), adapter.Provider{"api": b}
}

func resourceReq(p adapter.Provider, params map[string]any) adapter.Request {
	out := map[string]any{"api": "api", "create": map[string]any{"path": "/things"}, "fields": map[string]any{"name": "t-pr-7"}}
	for k, v := range params {
		out[k] = v
	}
	return adapter.Request{Line: "thing", Provider: p, Params: out, Run: adapter.RunCtx{Env: "preview", Scope: "pr-7"}}
}

func apply(t *testing.T, op *httpop.ResourceOp, req adapter.Request) (*adapter.Result, error) {
	t.Helper()
	live, err := op.Read(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return op.Apply(context.Background(), req, live, func(...string) error { return nil })
}

// Basic and header credentials reach the API as it expects them, and a
// wrong one is PROVIDER_AUTH naming the variable.
func TestAuthForms(t *testing.T) {
	for name, c := range map[string]struct {
		auth   map[string]any
		header func(h http.Header, tok string) bool
		bad    string
	}{
		"basic": {map[string]any{"username_env": "API_USER", "password_env": sim.HTTPTokenVar},
			func(h http.Header, tok string) bool {
				r := &http.Request{Header: h}
				u, p, ok := r.BasicAuth()
				return ok && u == "me" && p == tok
			}, sim.HTTPTokenVar},
		"header": {map[string]any{"header": "X-Honeycomb-Team", "value_env": sim.HTTPTokenVar},
			func(h http.Header, tok string) bool {
				return h.Get("X-Honeycomb-Team") == tok && h.Get("Authorization") == ""
			}, sim.HTTPTokenVar},
	} {
		t.Run(name, func(t *testing.T) {
			w, rec, op, p := wireWorld(t, map[string]any{"auth": c.auth}, map[string]string{"API_USER": "me"})
			if _, err := apply(t, op, resourceReq(p, nil)); err != nil {
				t.Fatal(err)
			}
			for _, q := range rec.reqs {
				if !c.header(q.Header, w.Env[sim.HTTPTokenVar]) {
					t.Errorf("%s %s carries %v", q.Method, q.URL.Path, q.Header)
				}
			}
			bad := httpop.NewResource(w.With(map[string]string{"API_USER": "me", c.bad: "wrong-token-123"}), w.Client)
			_, err := bad.Read(context.Background(), resourceReq(p, nil))
			if !errors.Is(err, errs.PROVIDER_AUTH) || strings.Contains(err.Error(), "wrong-token-123") {
				t.Errorf("a wrong credential: %v, want PROVIDER_AUTH without the value", err)
			}
			none := httpop.NewResource(w.With(map[string]string{"API_USER": "me", c.bad: ""}), w.Client)
			if _, err := none.Read(context.Background(), resourceReq(p, nil)); !errors.Is(err, errs.PROVIDER_AUTH) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("an unset credential: %v, want PROVIDER_AUTH naming %s", err, c.bad)
			}
		})
	}
}

// Extra headers go with every request; a form body is sent as
// application/x-www-form-urlencoded in bracket notation, and the API reads
// the object it stands for.
func TestHeadersAndFormBody(t *testing.T) {
	w, rec, op, p := wireWorld(t, map[string]any{"auth": map[string]any{"bearer_env": sim.HTTPTokenVar},
		"headers": map[string]any{"Stripe-Version": "2024-06-20"}, "encoding": "form"}, nil)
	fields := map[string]any{"name": "t-pr-7", "metadata": map[string]any{"scope": "pr-7"}, "tags": []any{"a", "b"}}
	res, err := apply(t, op, resourceReq(p, map[string]any{"fields": fields}))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range rec.reqs {
		if q.Header.Get("Stripe-Version") != "2024-06-20" {
			t.Errorf("%s %s lacks the extra header", q.Method, q.URL.Path)
		}
	}
	posts := rec.writes(http.MethodPost)
	if len(posts) != 1 {
		t.Fatalf("%d POSTs, want 1", len(posts))
	}
	q, body := rec.reqs[posts[0]], rec.body[posts[0]]
	if ct := q.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type %q", ct)
	}
	if want := "metadata%5Bscope%5D=pr-7&name=t-pr-7&tags%5B0%5D=a&tags%5B1%5D=b"; body != want {
		t.Errorf("body %q\nwant %q", body, want)
	}
	obj := w.Cloud.State().HTTP[0].Fields
	if !adapter.Equal(obj["metadata"], fields["metadata"]) || !adapter.Equal(obj["tags"], fields["tags"]) || res.Resources[0].ID == "" {
		t.Errorf("the API read %v", obj)
	}
	// Unchanged: nothing is written again.
	n := len(w.Cloud.Writes())
	if _, err := apply(t, op, resourceReq(p, map[string]any{"fields": fields})); err != nil || len(w.Cloud.Writes()) != n {
		t.Errorf("second apply: %v, %d writes", err, len(w.Cloud.Writes())-n)
	}
}

// A create with an idempotency key is retried after a lost answer with
// the same key, and the API answers the object it made: one object, not
// two. Updates carry no key.
func TestIdempotencyKey(t *testing.T) {
	w, rec, op, p := wireWorld(t, map[string]any{"auth": map[string]any{"bearer_env": sim.HTTPTokenVar}, "idempotency_header": "Idempotency-Key"}, nil)
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindDrop, Provider: sim.ProviderHTTP, Method: "POST", Path: "/things", Count: 1})
	req := resourceReq(p, nil)
	if _, err := op.Apply(context.Background(), req, nil, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// Go's transport repeats a request with an Idempotency-Key itself
	// when the connection drops: the cloud sees the create twice.
	if n := simPosts(w); n != 2 {
		t.Fatalf("the cloud received %d creates, want the create and its repeat", n)
	}
	posts := rec.writes(http.MethodPost)
	if k := rec.reqs[posts[0]].Header.Get("Idempotency-Key"); !strings.HasPrefix(k, "sponson-") || len(k) < 40 {
		t.Errorf("key %q", k)
	}
	if n := len(w.Cloud.State().HTTP); n != 1 {
		t.Errorf("%d objects, want 1", n)
	}
	req.Params["fields"] = map[string]any{"name": "t-pr-7", "size": int64(2)}
	req.Params["match"] = map[string]any{"name": "t-pr-7"}
	if _, err := apply(t, op, req); err != nil {
		t.Fatal(err)
	}
	for _, i := range rec.writes(http.MethodPatch) {
		if rec.reqs[i].Header.Get("Idempotency-Key") != "" {
			t.Error("an update carries an idempotency key")
		}
	}
	// Without the setting, a create whose answer is lost is not sent again.
	w2, rec2, op2, p2 := wireWorld(t, map[string]any{"auth": map[string]any{"bearer_env": sim.HTTPTokenVar}}, nil)
	w2.Cloud.MustAddRule(sim.Rule{Kind: sim.KindDrop, Provider: sim.ProviderHTTP, Method: "POST", Path: "/things", Count: 1})
	if _, err := op2.Apply(context.Background(), resourceReq(p2, nil), nil, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := simPosts(w2); n != 1 || len(rec2.writes(http.MethodPost)) != 1 {
		t.Errorf("without a key the create was sent %d times", n)
	}
	if n := len(w2.Cloud.State().HTTP); n != 1 {
		t.Errorf("%d objects, want 1 (found again, not created twice)", n)
	}
}

func simPosts(w *world) int {
	n := 0
	for _, e := range w.Cloud.Writes() {
		if e.Method == http.MethodPost {
			n++
		}
	}
	return n
}

// Each paging finds the object on the third page of one-item pages.
func TestPaging(t *testing.T) {
	for name, c := range map[string]struct {
		shape  sim.HTTPShape
		paging any
		items  string
	}{
		"cursor at a pointer": {sim.HTTPShape{}, map[string]any{"type": "cursor", "next": "/next_cursor", "param": "cursor"}, ""},
		"after":               {sim.HTTPShape{List: "data", AfterPaging: true}, "after", "/data"},
		"link":                {sim.HTTPShape{LinkPaging: true}, "link", ""},
		"offset":              {sim.HTTPShape{List: "Servers", OffsetParam: "offset", SizeParam: "count"}, map[string]any{"type": "offset", "param": "offset", "size_param": "count", "size": int64(1)}, "/Servers"},
	} {
		t.Run(name, func(t *testing.T) {
			block := map[string]any{"auth": map[string]any{"bearer_env": sim.HTTPTokenVar}, "paging": c.paging}
			if c.items != "" {
				block["list_items"] = c.items
			}
			w, rec, op, p := wireWorld(t, block, nil)
			w.Cloud.Console.SetHTTPShape("things", c.shape)
			for _, n := range []string{"a", "b", "t-pr-7", "d"} {
				if _, err := w.Cloud.Console.SeedHTTPObject("things", map[string]any{"name": n}); err != nil {
					t.Fatal(err)
				}
			}
			w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindPageSize, Provider: sim.ProviderHTTP, Path: "/things", PageSize: 1})
			list := map[string]any{"filter": "none"}
			if c.items != "" {
				list["items"] = c.items
			}
			req := resourceReq(p, map[string]any{"list": list, "read": map[string]any{"path": "/things/{id}", "from": "list"}})
			live, err := op.Read(context.Background(), req)
			if err != nil || len(live.Resources) != 1 {
				t.Fatalf("Read = %+v, %v; want the object on the third page", live, err)
			}
			if gets := len(rec.writes(http.MethodGet)); gets != 3 {
				t.Errorf("%d pages read, want 3", gets)
			}
			// By key (Lookup, Destroy) the API block's paging is used.
			got, err := op.Lookup(context.Background(), p, adapter.RunCtx{}, live.Resources[0].Key)
			if err != nil || got == nil || got.ID != live.Resources[0].ID {
				t.Errorf("Lookup = %+v, %v", got, err)
			}
		})
	}
}

// destroy: keep records the object as not created (the ledger adopts it),
// so nothing deletes it; it is never intended.
func TestDestroyKeep(t *testing.T) {
	w, _, op, p := wireWorld(t, map[string]any{"auth": map[string]any{"bearer_env": sim.HTTPTokenVar}}, nil)
	req := resourceReq(p, map[string]any{"destroy": "keep"})
	res, err := op.Apply(context.Background(), req, nil, func(keys ...string) error {
		t.Errorf("intended %v", keys)
		return nil
	})
	if err != nil || len(res.Created) != 0 || len(w.Cloud.State().HTTP) != 1 {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	list := httpop.NewListItem(w.With(nil), w.Client)
	if _, err := w.Cloud.Console.SeedHTTPObject("settings", map[string]any{"id": "app", "tags": []any{}}); err != nil {
		t.Fatal(err)
	}
	lr := adapter.Request{Line: "tag", Provider: p, Params: map[string]any{"api": "api", "parent": map[string]any{"path": "/settings/app"}, "list_path": "/tags", "item": "pr-7", "destroy": "keep"}}
	lres, err := list.Apply(context.Background(), lr, nil, func(keys ...string) error { t.Errorf("intended %v", keys); return nil })
	if err != nil || len(lres.Created) != 0 || len(lres.Resources) != 1 {
		t.Fatalf("list Apply = %+v, %v", lres, err)
	}
}

// Every new setting is checked when the line is planned: PARAM_INVALID
// naming the setting, before any request.
func TestWireSettingsChecked(t *testing.T) {
	cases := map[string]struct {
		block, params map[string]any
		param         string
	}{
		"auth two forms":       {map[string]any{"auth": map[string]any{"bearer_env": "A", "header": "X-Key"}}, nil, "providers.http.api.auth"},
		"auth header reserved": {map[string]any{"auth": map[string]any{"header": "Authorization", "value_env": "A"}}, nil, "providers.http.api.auth"},
		"auth empty variable":  {map[string]any{"auth": map[string]any{"username_env": ""}}, nil, "providers.http.api.auth"},
		"header with newline":  {map[string]any{"headers": map[string]any{"X-V": "a\r\nb"}}, nil, "providers.http.api.headers.X-V"},
		"credential header":    {map[string]any{"headers": map[string]any{"Authorization": "Bearer x"}}, nil, "providers.http.api.headers.Authorization"},
		"encoding":             {map[string]any{"encoding": "xml"}, nil, "providers.http.api.encoding"},
		"idempotency header":   {map[string]any{"idempotency_header": "Bad Header"}, nil, "providers.http.api.idempotency_header"},
		"paging kind":          {map[string]any{"paging": "pages"}, nil, "providers.http.api.paging"},
		"paging setting":       {map[string]any{"paging": map[string]any{"type": "link", "size": int64(5)}}, nil, "providers.http.api.paging"},
		"paging size":          {map[string]any{"paging": map[string]any{"type": "offset", "size": int64(0)}}, nil, "providers.http.api.paging"},
		"list method":          {map[string]any{"list_method": "GET"}, nil, "providers.http.api.list_method"},
		"list entries":         {map[string]any{"list_entries": "some"}, nil, "providers.http.api.list_entries"},
		"line destroy":         {nil, map[string]any{"destroy": "forget"}, "destroy"},
		"line encoding":        {nil, map[string]any{"encoding": "yaml"}, "encoding"},
		"line paging":          {nil, map[string]any{"list": map[string]any{"paging": "numbers"}}, "list.paging"},
		"read from":            {nil, map[string]any{"read": map[string]any{"from": "cache"}}, "read.from"},
		"output setting":       {nil, map[string]any{"outputs": map[string]any{"key": map[string]any{"path": "/key", "secret": true}}}, "outputs.key.secret"},
		"output sensitive":     {nil, map[string]any{"outputs": map[string]any{"key": map[string]any{"path": "/key", "sensitive": "yes"}}}, "outputs.key.sensitive"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			w, _, op, p := wireWorld(t, c.block, nil)
			_, err := op.Defaults(resourceReq(p, c.params).Params, p, adapter.RunCtx{})
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.PARAM_INVALID || e.Details["param"] != c.param {
				t.Errorf("Defaults = %v (%+v), want PARAM_INVALID at %s", err, e, c.param)
			}
			if n := len(w.Cloud.Writes()); n != 0 {
				t.Errorf("%d writes", n)
			}
		})
	}
}

// A sensitive output is declared so to the engine (masked, kept out of
// receipts); the line stays an http.resource.
func TestSensitiveOutputDeclared(t *testing.T) {
	op := httpop.NewResource(nil, nil)
	params := map[string]any{"api": "api", "create": map[string]any{"path": "/keys"}, "outputs": map[string]any{"slug": "/slug", "key": map[string]any{"path": "/key", "sensitive": true, "once": true}}}
	x, err := op.Expand(params, nil, adapter.RunCtx{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]adapter.OutputSpec{}
	for _, o := range x.Outputs {
		got[o.Name] = o
	}
	if x.Op != "resource" || !got["key"].Sensitive || !got["key"].Once || got["slug"].Sensitive || got["id"].Name != "id" || len(got) != 3 {
		t.Errorf("expansion %s with outputs %+v", x.Op, x.Outputs)
	}
	if names := op.LineOutputs(params); strings.Join(names, ",") != "id,key,slug" {
		t.Errorf("LineOutputs = %v", names)
	}
}

// A Link header whose next page is on another host is refused: the
// credential goes to the API's base URL only.
func TestLinkPagingStaysOnTheAPI(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Link", `<https://elsewhere.example/api/things?cursor=2>; rel="next"; results="true"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"id":"1","name":"a"}]`))
	}))
	t.Cleanup(srv.Close)
	p := adapter.Provider{"api": map[string]any{"base_url": srv.URL + "/api", "paging": "link"}}
	op := httpop.NewResource(func(string) (string, bool) { return "", false }, httpclient.New(httpclient.Config{}))
	req := resourceReq(p, map[string]any{"list": map[string]any{"filter": "none"}})
	_, err := op.Read(context.Background(), req)
	if !errors.Is(err, errs.PROVIDER_RESPONSE) || !strings.Contains(err.Error(), "not beneath the API's base URL") || calls != 1 {
		t.Errorf("Read = %v after %d calls, want PROVIDER_RESPONSE after one", err, calls)
	}
}
