package sim

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

// The generic API's answers in a target's shape are validated against
// the target's description: an object that lacks what GitHub's hook
// requires breaks it (a response violation), while the same answer under
// a shape made for a test's envelope only is not checked.
func TestTargetAnswersAreChecked(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.UseHTTPTarget("github.repo_webhook")
	if _, err := tc.c.Console.SeedHTTPObject("repos/acme/shop/hooks", map[string]any{"id": "7", "name": "web"}); err != nil {
		t.Fatal(err)
	}
	tc.call(ProviderHTTP, "GET", "/repos/acme/shop/hooks", nil).want(t, http.StatusOK)
	got := tc.c.TakeViolations()
	if len(got) != 1 || got[0].Kind != "response" || got[0].Description != "github-hooks" {
		t.Fatalf("violations = %+v, want the answer's", got)
	}
	// A hook the API made itself answers as GitHub's.
	body := map[string]any{"name": "web", "config": map[string]any{"url": "https://x.example/h", "content_type": "json"}, "events": []string{"push"}, "active": true}
	id := tc.call(ProviderHTTP, "POST", "/repos/acme/other/hooks", body).want(t, http.StatusCreated).obj(t)["id"]
	if _, ok := id.(float64); !ok {
		t.Errorf("id %v is not a number", id)
	}
	tc.call(ProviderHTTP, "GET", "/repos/acme/other/hooks/999", nil).want(t, http.StatusNotFound)
	if got := tc.c.TakeViolations(); len(got) != 0 {
		t.Errorf("violations = %+v", got)
	}

	plain := newCloud(t, Options{})
	plain.c.Console.SetHTTPShape("repos/*/*/hooks", HTTPShape{BareList: true, NumericID: true})
	if _, err := plain.c.Console.SeedHTTPObject("repos/acme/shop/hooks", map[string]any{"id": "7"}); err != nil {
		t.Fatal(err)
	}
	plain.call(ProviderHTTP, "GET", "/repos/acme/shop/hooks", nil).want(t, http.StatusOK)
	if got := plain.c.TakeViolations(); len(got) != 0 {
		t.Errorf("an unchecked shape's answer was checked: %+v", got)
	}
}

// The targets' own answers: a delete's status and body (Resend), errors
// in the target's format (Svix), create-only fields (a Resend API key's
// token) and Link paging (Sentry).
func TestTargetAnswers(t *testing.T) {
	tc := newCloud(t, Options{})
	for _, r := range []string{"resend.api_key", "svix.endpoint", "sentry.deploy"} {
		tc.c.Console.UseHTTPTarget(r)
	}
	k := tc.call(ProviderHTTP, "POST", "/api-keys", map[string]any{"name": "k"}).want(t, http.StatusCreated).obj(t)
	if tok, _ := k["token"].(string); !strings.HasPrefix(tok, "tok_") {
		t.Errorf("create answer %v lacks the token", k)
	}
	l := tc.call(ProviderHTTP, "GET", "/api-keys", nil).want(t, http.StatusOK).obj(t)
	if strings.Contains(mustJSON(l), "tok_") || l["object"] != "list" {
		t.Errorf("the listing %v shows the token", l)
	}
	d := tc.call(ProviderHTTP, "DELETE", "/api-keys/"+k["id"].(string), nil).want(t, http.StatusOK).obj(t)
	if d["deleted"] != true || d["id"] != k["id"] {
		t.Errorf("delete answer %v", d)
	}
	e := tc.call(ProviderHTTP, "GET", "/api/v1/app/a/endpoint/missing", nil).want(t, http.StatusNotFound).obj(t)
	if e["code"] != "not_found" || e["detail"] == nil {
		t.Errorf("svix error %v", e)
	}
	for _, env := range []string{"a", "b"} {
		tc.call(ProviderHTTP, "POST", "/organizations/o/releases/v1/deploys/", map[string]any{"environment": env}).want(t, http.StatusCreated)
	}
	tc.c.MustAddRule(Rule{Kind: KindPageSize, Provider: ProviderHTTP, Path: "/organizations/o/releases/v1/deploys", PageSize: 1})
	first := tc.call(ProviderHTTP, "GET", "/organizations/o/releases/v1/deploys/", nil).want(t, http.StatusOK)
	link := first.header.Get("Link")
	if !strings.Contains(link, `rel="next"; results="true"`) || !strings.Contains(link, "/http/organizations/o/releases/v1/deploys") || len(first.arr(t)) != 1 {
		t.Fatalf("first page %s, Link %q", first.body, link)
	}
	next := link[strings.Index(link, "/http/")+len("/http") : strings.Index(link, ">")]
	last := tc.call(ProviderHTTP, "GET", next, nil).want(t, http.StatusOK)
	if !strings.Contains(last.header.Get("Link"), `results="false"`) || len(last.arr(t)) != 1 {
		t.Errorf("last page %s, Link %q", last.body, last.header.Get("Link"))
	}
}

// Credentials in basic auth and the targets' own headers are accepted;
// a wrong one is 401. A form body is read as the object it encodes.
func TestGenericCredentialsAndForms(t *testing.T) {
	tc := newCloud(t, Options{})
	tok := tc.c.Tokens().HTTP
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+tok))
	tc.raw(t.Context(), "GET", "/http/things", basic, nil, nil).want(t, http.StatusOK)
	tc.raw(t.Context(), "GET", "/http/things", "Basic "+base64.StdEncoding.EncodeToString([]byte("user:wrong")), nil, nil).want(t, http.StatusUnauthorized)
	for _, h := range HTTPCredentialHeaders {
		tc.raw(t.Context(), "GET", "/http/things", "", nil, http.Header{h: {tok}}).want(t, http.StatusOK)
		tc.raw(t.Context(), "GET", "/http/things", "", nil, http.Header{h: {"wrong"}}).want(t, http.StatusUnauthorized)
	}
	form := "name=t&metadata%5Bscope%5D=pr-7&tags%5B0%5D=a&tags%5B1%5D=b"
	o := tc.raw(t.Context(), "POST", "/http/things", "Bearer "+tok, form, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}).want(t, http.StatusCreated).obj(t)
	if str(o, "metadata", "scope") != "pr-7" || strings.Join(strs(o["tags"]), ",") != "a,b" || o["name"] != "t" {
		t.Errorf("form read as %v", o)
	}
}
