package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestMatchPath(t *testing.T) {
	for _, tt := range []struct {
		pattern, path string
		want          bool
	}{
		{"", "/anything/at/all", true},
		{"**", "/a/b", true},
		{"/api/v2/clients/*", "/api/v2/clients/abc", true},
		{"/api/v2/clients/*", "/api/v2/clients/abc/grants", false},
		{"/api/v2/clients/*", "/api/v2/clients", false},
		{"/projects/*/branches", "/projects/p1/branches", true},
		{"/projects/*/branches/**", "/projects/p1/branches", true},
		{"/projects/*/branches/**", "/projects/p1/branches/b1", true},
		{"/projects/**/b*", "/projects/p1/x/branches", true},
		{"/v*/projects/*/env", "/v10/projects/web/env", true},
		{"/v*/projects/*/env", "/v10/projects/web/env/x", false},
		{"/things", "/things/", true},
		{"/things", "/other", false},
		{"/[", "/x", false},
	} {
		if got := matchPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestAddRuleRefusals(t *testing.T) {
	c := New(Options{})
	for _, r := range []Rule{
		{Kind: "explode"},
		{Kind: KindFail, Status: 200},
		{Kind: KindLatency},
		{Kind: KindPageSize},
		{Kind: KindDrop, Provider: "aws"},
		{Kind: KindDrop, Count: -1},
	} {
		if _, err := c.AddRule(r); err == nil {
			t.Errorf("AddRule(%+v) accepted", r)
		}
	}
	if _, err := c.AddRule(Rule{ID: "x", Kind: KindDrop}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddRule(Rule{ID: "x", Kind: KindDrop}); err == nil {
		t.Error("a duplicate id was accepted")
	}
}

func TestChaosFailNextN(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.MustAddRule(Rule{Kind: KindFail, Provider: "http", Method: "POST", Path: "/things", Count: 2, Status: 502})
	for range 2 {
		r := tc.call("http", "POST", "/things", map[string]any{"a": 1}).want(t, 502).obj(t)
		if str(r, "error", "code") != "bad_gateway" {
			t.Errorf("injected failure body %v", r)
		}
		tc.call("http", "GET", "/things", nil).want(t, 200)               // other methods pass
		tc.call("http", "POST", "/others", map[string]any{}).want(t, 201) // other paths pass
	}
	tc.call("http", "POST", "/things", map[string]any{"a": 1}).want(t, 201)
	if n := len(tc.c.State().HTTP); n != 3 {
		t.Errorf("%d objects, want 3 (the failed POSTs applied nothing)", n)
	}
	var failed []int
	for _, w := range tc.c.Writes() {
		if w.Failed {
			failed = append(failed, w.Status)
		}
	}
	if len(failed) != 2 || failed[0] != 502 {
		t.Errorf("failed writes %v", failed)
	}
}

func TestChaosFailFormats(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
	tc.c.MustAddRule(Rule{Kind: KindFail, Count: 4, Status: 500})
	if r := tc.call("vercel", "GET", "/v10/projects/web/env", nil).want(t, 500).obj(t); str(r, "error", "code") != "internal_server_error" {
		t.Errorf("vercel %v", r)
	}
	if r := tc.call("neon", "GET", "/projects/x/branches", nil).want(t, 500).obj(t); str(r, "message") == "" {
		t.Errorf("neon %v", r)
	}
	if r := tc.call("supabase", "GET", "/v1/projects/"+ref+"/config/auth", nil).want(t, 500).obj(t); str(r, "message") == "" {
		t.Errorf("supabase %v", r)
	}
	if r := tc.call("auth0", "GET", "/api/v2/clients/x", nil).want(t, 500).obj(t); r["statusCode"] != float64(500) || r["error"] != "Internal Server Error" {
		t.Errorf("auth0 %v", r)
	}
}

func TestChaosRateLimitEveryProvider(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.sendsForbidden()
	for _, p := range Providers {
		tc.c.MustAddRule(Rule{Kind: KindRateLimit, Provider: p, Count: 1, RetryAfter: Duration(2 * time.Second)})
		r := tc.call(p, "GET", "/whatever", nil).want(t, 429)
		if r.header.Get("Retry-After") != "2" {
			t.Errorf("%s: Retry-After %q", p, r.header.Get("Retry-After"))
		}
		r.obj(t)
		if r := tc.call(p, "GET", "/whatever", nil); r.status == 429 {
			t.Errorf("%s: the rule had count 1 but limits again", p)
		}
	}
}

func TestChaosDropLosesTheResponseNotTheWrite(t *testing.T) {
	tc := newCloud(t, Options{})
	p := tc.c.Console.SeedNeonProject(NeonProject{})
	tc.c.MustAddRule(Rule{Kind: KindDrop, Provider: "neon", Method: "POST", Path: "/projects/*/branches", Count: 1})
	body := `{"branch":{"name":"sponson/pr-1"},"endpoints":[{"type":"read_write"}]}`
	_, err := tc.try(context.Background(), "POST", "/neon/projects/"+p.ID+"/branches", "Bearer "+tc.token("neon"), body, nil)
	if err == nil {
		t.Fatal("the client got a response; a dropped connection must be an error")
	}
	st, _ := tc.c.State().NeonProject(p.ID)
	var made *NeonBranch
	for i, b := range st.Branches {
		if b.Name == "sponson/pr-1" {
			made = &st.Branches[i]
		}
	}
	if made == nil || made.Origin != OriginAPI {
		t.Fatalf("the write was not applied: %+v", st.Branches)
	}
	ws := tc.c.Writes()
	sum := sha256.Sum256([]byte(body))
	if len(ws) != 1 || !ws[0].Lost || ws[0].Failed || ws[0].Status != 201 || ws[0].BodySHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("write log %+v", ws)
	}
	// The retry of a non-idempotent create meets the branch it made.
	tc.call("neon", "POST", "/projects/"+p.ID+"/branches", body).want(t, 409)
}

func TestChaosHoldAndRelease(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedHTTPObject("apps", map[string]any{"id": "a", "v": 1})
	pin := tc.c.MustAddRule(Rule{ID: "pin", Kind: KindHold, Provider: "http", Method: "PUT", Count: 1})
	done := make(chan resp, 1)
	go func() { done <- tc.call("http", "PUT", "/apps/a", map[string]any{"v": 2}) }()
	if err := tc.c.WaitHeld(waitCtx(t), pin, 1); err != nil {
		t.Fatal(err)
	}
	if o, _ := tc.c.State().HTTPObject("apps", "a"); o.Fields["v"] != json.Number("1") {
		t.Fatalf("a held request was applied: %v", o.Fields)
	}
	answered := func() {
		select {
		case r := <-done:
			t.Fatalf("a held request answered %d", r.status)
		default:
		}
	}
	answered()
	tc.call("http", "PUT", "/apps/a", map[string]any{"v": 3}).want(t, 200) // count 1: the next one passes
	answered()
	if !tc.c.Release(pin) {
		t.Fatal("no rule to release")
	}
	(<-done).want(t, 200)
	if o, _ := tc.c.State().HTTPObject("apps", "a"); o.Fields["v"] != json.Number("2") {
		t.Errorf("after release v = %v, want the held PUT's 2", o.Fields["v"])
	}
	if tc.c.Held(pin) != 0 {
		t.Error("still held")
	}
}

func TestChaosHoldClientGivesUp(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedHTTPObject("apps", map[string]any{"id": "a", "v": 1})
	pin := tc.c.MustAddRule(Rule{Kind: KindHold, Provider: "http", Method: "PUT"})
	giveUpWhenHeld(t, tc, pin, "PUT", map[string]any{"v": 2})
	waitUnheld(t, tc.c, pin)
	tc.c.Release(pin)
	if o, _ := tc.c.State().HTTPObject("apps", "a"); o.Fields["v"] != json.Number("1") {
		t.Errorf("an abandoned held request was applied: %v", o.Fields)
	}
	ws := tc.c.Writes()
	if len(ws) != 1 || !ws[0].Failed || ws[0].Status != 0 {
		t.Errorf("write log %+v", ws)
	}
}

// giveUpWhenHeld sends a request to /http/apps/a that rule id holds, and
// gives up on it (cancels it) once the cloud holds it: the client gives
// up on a request the server has, however slow this machine is.
func giveUpWhenHeld(t *testing.T, tc *tcloud, id, method string, body any) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := tc.try(ctx, method, "/http/apps/a", "Bearer "+tc.token("http"), body, nil)
		errc <- err
	}()
	if err := tc.c.WaitHeld(waitCtx(t), id, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the client's cancellation", err)
	}
}

// waitUnheld waits until the server has noticed that held clients gave up.
func waitUnheld(t *testing.T, c *Cloud, id string) {
	t.Helper()
	if err := c.chaos.waitHeld(waitCtx(t), id, func(held int) bool { return held == 0 }); err != nil {
		t.Fatalf("rule %s still holds %d request(s): %v", id, c.Held(id), err)
	}
}

func TestChaosHang(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedHTTPObject("apps", map[string]any{"id": "a", "v": 1})
	hang := tc.c.MustAddRule(Rule{Kind: KindHang, Provider: "http", Method: "PATCH"})
	giveUpWhenHeld(t, tc, hang, "PATCH", map[string]any{"v": 2})

	waitUnheld(t, tc.c, hang)
	errc := make(chan error, 1)
	go func() {
		_, err := tc.try(context.Background(), "PATCH", "/http/apps/a", "Bearer "+tc.token("http"), map[string]any{"v": 3}, nil)
		errc <- err
	}()
	if err := tc.c.WaitHeld(waitCtx(t), hang, 1); err != nil {
		t.Fatal(err)
	}
	tc.c.Release(hang)
	if err := <-errc; err == nil {
		t.Error("a released hang answered; it must drop the connection")
	}
	if o, _ := tc.c.State().HTTPObject("apps", "a"); o.Fields["v"] != json.Number("1") {
		t.Errorf("a hung request was applied: %v", o.Fields)
	}
	tc.call("http", "PATCH", "/apps/a", map[string]any{"v": 4}).want(t, 200) // released: no longer matches
}

// The latency is waited out on the cloud's clock: in a synctest bubble
// the request takes exactly the rule's latency plus jitter, and no real
// time.
func TestChaosLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Options{})
		c.CheckDescriptions(t)
		c.Console.SeedAuth0Client(Auth0Client{ClientID: "c1"})
		c.MustAddRule(Rule{Kind: KindLatency, Provider: "auth0", Method: "GET", Path: "/api/v2/clients/*", Latency: Duration(60 * time.Millisecond), Jitter: Duration(20 * time.Millisecond), Count: 1})
		get := func() time.Duration {
			req := httptest.NewRequest("GET", "/auth0/api/v2/clients/c1", nil)
			req.Header.Set("Authorization", "Bearer "+c.Tokens().Auth0)
			rec := httptest.NewRecorder()
			start := time.Now()
			c.Handler().ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			return time.Since(start)
		}
		if d := get(); d < 60*time.Millisecond || d > 80*time.Millisecond {
			t.Errorf("took %v, want 60ms to 80ms", d)
		}
		if d := get(); d != 0 {
			t.Errorf("the spent rule still delays: %v", d)
		}
		if r := c.Rules(); r[0].Hits != 1 {
			t.Errorf("rules %+v", r)
		}
	})
}

func TestChaosAPI(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
	tc.c.Console.SeedAuth0Client(Auth0Client{ClientID: "c1"})
	post := func(body string) resp {
		return tc.raw(context.Background(), "POST", "/_chaos", "", body, nil)
	}
	r := post(`{"rules":[{"kind":"fail","provider":"auth0","method":"PATCH","count":1,"status":503},{"id":"slow","kind":"latency","provider":"neon","latency":5}],
		"drift":[{"provider":"auth0","action":"add","project":"c1","value":"https://console/cb"}],
		"deploy":[{"project":"web","sha":"s1","behavior":"fail"}]}`).want(t, 200).obj(t)
	if ids := strs(r["rules"]); len(ids) != 2 || ids[1] != "slow" || len(strs(r["deployments"])) != 1 || str(r, "drift", 0) != "c1" {
		t.Fatalf("chaos answered %v", r)
	}
	tc.call("auth0", "PATCH", "/api/v2/clients/c1", map[string]any{"callbacks": []string{}}).want(t, 503)
	rules := tc.raw(context.Background(), "GET", "/_chaos", "", nil, nil).want(t, 200).obj(t)
	if str(rules, "rules", 0, "kind") != "fail" || get(rules, "rules", 0, "hits") != float64(1) || str(rules, "rules", 1, "latency") != "5ms" {
		t.Errorf("GET /_chaos %v", rules)
	}
	if cl, _ := tc.c.State().Auth0Client("c1"); cl.Entries[Auth0Callbacks][0] != (Entry{"https://console/cb", OriginConsole}) {
		t.Errorf("drift via /_chaos: %+v", cl)
	}

	for _, bad := range []string{`{"rules":[{"kind":"nope"}]}`, `{"release":["missing"]}`, `{"reset":"some"}`, `{"rulez":[]}`, `not json`,
		`{"drift":[{"provider":"vercel","action":"delete","project":"web","key":"NOPE"}]}`, `{"deploy":[{"project":"nope"}]}`} {
		if r := post(bad); r.status != 400 || str(r.obj(t), "error") == "" {
			t.Errorf("%s: %d %s", bad, r.status, r.body)
		}
	}
	post(`{"release":["*"]}`).want(t, 200)
	if rs := tc.c.Rules(); !rs[0].Released || !rs[1].Released {
		t.Errorf("release * left %+v", rs)
	}
	post(`{"reset":"rules"}`).want(t, 200)
	if len(tc.c.Rules()) != 0 {
		t.Error("reset rules kept rules")
	}
	post(`{"reset":"writes"}`).want(t, 200)
	if len(tc.c.Writes()) != 0 {
		t.Error("reset writes kept writes")
	}
	post(`{"reset":"all"}`).want(t, 200)
	if s := tc.c.State(); len(s.Vercel)+len(s.Auth0) != 0 {
		t.Errorf("reset all kept %+v", s)
	}
}

func TestStateAPI(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedDemo()
	tc.call("http", "POST", "/apps", map[string]any{"name": "x"}).want(t, 201)
	tc.c.MustAddRule(Rule{Kind: KindDrop, Provider: "neon", Count: 1})
	r := tc.raw(context.Background(), "GET", "/_state", "", nil, nil).want(t, 200)
	var s Snapshot
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Vercel) != 1 || len(s.Neon) != 1 || len(s.Supabase) != 1 || len(s.Auth0) != 1 || len(s.HTTP) != 2 || len(s.Writes) != 1 || len(s.Rules) != 1 {
		t.Errorf("state %s", r.body)
	}
	if s.Neon[0].Password == "" || s.Neon[0].Branches[0].Name != "main" || s.Writes[0].Path != "/apps" {
		t.Errorf("state %+v", s)
	}
	if !strings.Contains(string(r.body), `"origin":"seed"`) || !strings.Contains(string(r.body), `"origin":"api"`) {
		t.Errorf("origins missing from %s", r.body)
	}
}

func TestAuthEveryProvider(t *testing.T) {
	tc := newCloud(t, Options{})
	d := tc.c.Console.SeedDemo()
	for _, tt := range []struct {
		provider, path string
		status         int
		check          func(missing bool, r resp) bool
	}{
		{"vercel", "/v10/projects/web/env", 403, func(missing bool, r resp) bool {
			o := r.obj(t)
			return str(o, "error", "code") == "forbidden" && get(o, "error", map[bool]string{true: "missingToken", false: "invalidToken"}[missing]) == true
		}},
		{"neon", "/projects/" + d.NeonProject + "/branches", 401, func(_ bool, r resp) bool { return str(r.obj(t), "message") != "" }},
		{"supabase", "/v1/projects/" + d.SupabaseRef + "/config/auth", 401, func(_ bool, r resp) bool { return str(r.obj(t), "message") == "Unauthorized" }},
		{"auth0", "/api/v2/clients/" + d.Auth0Client, 401, func(missing bool, r resp) bool {
			o := r.obj(t)
			return o["statusCode"] == float64(401) && o["message"] == map[bool]string{true: "Missing authentication", false: "Invalid token"}[missing]
		}},
		{"http", "/apps/" + d.HTTPApp, 401, func(_ bool, r resp) bool {
			return str(r.obj(t), "error", "code") == "unauthorized" && strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer")
		}},
	} {
		t.Run(tt.provider, func(t *testing.T) {
			for _, auth := range []string{"", "Bearer wrong", tc.token(tt.provider)} {
				r := tc.raw(context.Background(), "GET", "/"+tt.provider+tt.path, auth, nil, nil)
				if r.status != tt.status || !tt.check(auth == "", r) {
					t.Errorf("auth %q: %d %s", auth, r.status, r.body)
				}
			}
			tc.raw(context.Background(), "GET", "/"+tt.provider+tt.path, "Bearer "+tc.token(tt.provider), nil, nil).want(t, 200)
		})
	}
	tc.c.ResetWrites()
	tc.raw(context.Background(), "PATCH", "/auth0/api/v2/clients/"+d.Auth0Client, "", map[string]any{"callbacks": []string{}}, nil).want(t, 401)
	if ws := tc.c.Writes(); len(ws) != 1 || !ws[0].Failed || ws[0].Status != 401 {
		t.Errorf("unauthenticated write logged as %+v", ws)
	}
	if cl, _ := tc.c.State().Auth0Client(d.Auth0Client); len(cl.Lists[Auth0Callbacks]) != 1 {
		t.Errorf("an unauthenticated PATCH changed %v", cl.Lists)
	}
}

func TestWriteLog(t *testing.T) {
	tc := newCloud(t, Options{})
	body := `{"name":"a"}`
	id := str(tc.call("http", "POST", "/things", body).want(t, 201).obj(t), "id")
	tc.call("http", "GET", "/things/"+id, nil).want(t, 200)
	tc.call("http", "PATCH", "/things/"+id+"?x=1", `{"name":"b"}`).want(t, 200)
	tc.call("http", "DELETE", "/things/"+id, nil).want(t, 204)
	tc.call("http", "DELETE", "/things/"+id, nil).want(t, 404)
	ws := tc.c.Writes()
	sum := sha256.Sum256([]byte(body))
	empty := sha256.Sum256(nil)
	want := []WriteEntry{
		{Seq: 1, Provider: "http", Method: "POST", Path: "/things", BodySHA256: hex.EncodeToString(sum[:]), Status: 201},
		{Seq: 2, Provider: "http", Method: "PATCH", Path: "/things/" + id, Query: "x=1", Status: 200},
		{Seq: 3, Provider: "http", Method: "DELETE", Path: "/things/" + id, BodySHA256: hex.EncodeToString(empty[:]), Status: 204},
		{Seq: 4, Provider: "http", Method: "DELETE", Path: "/things/" + id, BodySHA256: hex.EncodeToString(empty[:]), Status: 404, Failed: true},
	}
	if len(ws) != len(want) {
		t.Fatalf("writes %+v", ws)
	}
	for i := range want {
		if want[i].BodySHA256 == "" {
			want[i].BodySHA256 = ws[i].BodySHA256
		}
		if ws[i] != want[i] {
			t.Errorf("write %d = %+v, want %+v", i, ws[i], want[i])
		}
	}
	tc.c.ResetWrites()
	tc.call("http", "GET", "/things", nil).want(t, 200)
	tc.c.Drift(Drift{Provider: "http", Action: DriftAdd, Project: "things", ID: "nope"}) // fails, and is no request
	if ws := tc.c.Writes(); len(ws) != 0 {
		t.Errorf("reads logged: %+v", ws)
	}
	tc.raw(context.Background(), "POST", "/_chaos", "", `{}`, nil).want(t, 200)
	if ws := tc.c.Writes(); len(ws) != 0 {
		t.Errorf("control requests logged: %+v", ws)
	}
}

func TestEnvLines(t *testing.T) {
	c := New(Options{Tokens: Tokens{Auth0: "custom"}})
	got := strings.Join(c.Env("http://127.0.0.1:9/"), "\n")
	want := strings.Join([]string{
		"VERCEL_API_URL=http://127.0.0.1:9/vercel", "VERCEL_TOKEN=sim-vercel-token",
		"NEON_API_URL=http://127.0.0.1:9/neon", "NEON_API_KEY=sim-neon-api-key",
		"SUPABASE_API_URL=http://127.0.0.1:9/supabase", "SUPABASE_ACCESS_TOKEN=sbp_sim_supabase_access_token",
		"AUTH0_API_URL=http://127.0.0.1:9/auth0", "AUTH0_MANAGEMENT_TOKEN=custom",
		"SIM_HTTP_URL=http://127.0.0.1:9/http", "SIM_HTTP_TOKEN=sim-http-token",
		"CLERK_API_URL=http://127.0.0.1:9/clerk", "CLERK_SECRET_KEY=sk_test_simclerksecretkey",
		"CLOUDFLARE_API_URL=http://127.0.0.1:9/cloudflare", "CLOUDFLARE_API_TOKEN=sim-cloudflare-api-token",
		"NETLIFY_API_URL=http://127.0.0.1:9/netlify", "NETLIFY_AUTH_TOKEN=nfp_simnetlifyaccesstoken",
		"LAUNCHDARKLY_API_URL=http://127.0.0.1:9/launchdarkly", "LAUNCHDARKLY_ACCESS_TOKEN=api-sim-launchdarkly-token",
		"PLANETSCALE_API_URL=http://127.0.0.1:9/planetscale",
		"PLANETSCALE_SERVICE_TOKEN_ID=sim-planetscale-token-id",
		"PLANETSCALE_SERVICE_TOKEN=pscale_tkn_simplanetscaletoken",
	}, "\n")
	if got != want {
		t.Errorf("Env:\n%s\nwant:\n%s", got, want)
	}
}
