package sim

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"
)

func TestVercelEnvRoundTrip(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web", Envs: []VercelEnv{{Key: "ANALYTICS_ID", Value: "UA-1", Target: []string{"production"}}}})

	body := map[string]any{"key": "API_URL", "value": "https://pr-1.example.com", "type": "encrypted", "target": []string{"preview"}, "gitBranch": "feat-1"}
	created := tc.call("vercel", "POST", "/v10/projects/web/env", body).want(t, 201).obj(t)
	id := str(created, "created", "id")
	if id == "" || str(created, "created", "key") != "API_URL" || str(created, "created", "gitBranch") != "feat-1" {
		t.Fatalf("created = %v", created)
	}
	if v := str(created, "created", "value"); v == "https://pr-1.example.com" || v == "" {
		t.Errorf("an encrypted value came back as %q, want an opaque string", v)
	}
	if f := get(created, "failed").([]any); len(f) != 0 {
		t.Errorf("failed = %v", f)
	}

	find := func(decrypt bool) map[string]any {
		q := ""
		if decrypt {
			q = "?decrypt=true"
		}
		envs := tc.call("vercel", "GET", "/v10/projects/web/env"+q, nil).want(t, 200).obj(t)
		if get(envs, "pagination", "count") == nil {
			t.Errorf("no pagination in %v", envs)
		}
		var found map[string]any
		for _, e := range get(envs, "envs").([]any) {
			if str(e, "key") == "API_URL" {
				if found != nil {
					t.Fatalf("two API_URL variables: %v", envs)
				}
				found = e.(map[string]any)
			}
		}
		if found == nil {
			t.Fatalf("API_URL not listed: %v", envs)
		}
		return found
	}
	if e := find(false); e["value"] == "https://pr-1.example.com" || e["decrypted"] != false {
		t.Errorf("without decrypt: %v", e)
	}
	if e := find(true); e["value"] != "https://pr-1.example.com" || e["decrypted"] != true {
		t.Errorf("with decrypt: %v", e)
	}

	dup := tc.call("vercel", "POST", "/v10/projects/web/env", body).want(t, 400).obj(t)
	if str(dup, "error", "code") != "ENV_ALREADY_EXISTS" || str(dup, "error", "envVarId") != id {
		t.Errorf("duplicate create: %v", dup)
	}

	body["value"] = "https://pr-1b.example.com"
	up := tc.call("vercel", "POST", "/v10/projects/web/env?upsert=true", body).want(t, 201).obj(t)
	if str(up, "created", "id") != id {
		t.Errorf("upsert made a new variable: %v", up)
	}
	if e := find(true); e["value"] != "https://pr-1b.example.com" {
		t.Errorf("after upsert: %v", e)
	}

	tc.call("vercel", "PATCH", "/v9/projects/web/env/"+id, map[string]any{"value": "https://pr-1c.example.com"}).want(t, 200)
	if e := find(true); e["value"] != "https://pr-1c.example.com" || e["id"] != id {
		t.Errorf("after edit: %v", e)
	}
	tc.call("vercel", "PATCH", "/v9/projects/web/env/nope", map[string]any{"value": "x"}).want(t, 404)

	snap, _ := tc.c.State().VercelProject("web")
	origins := map[string]Origin{}
	for _, e := range snap.Envs {
		origins[e.Key] = e.Origin
	}
	if origins["ANALYTICS_ID"] != OriginSeed || origins["API_URL"] != OriginAPI {
		t.Errorf("origins = %v", origins)
	}

	del := tc.call("vercel", "DELETE", "/v9/projects/web/env/"+id, nil).want(t, 200).arr(t)
	if str(del, 0, "id") != id {
		t.Errorf("delete answered %v", del)
	}
	tc.call("vercel", "DELETE", "/v9/projects/web/env/"+id, nil).want(t, 404)
	envs := tc.call("vercel", "GET", "/v10/projects/web/env", nil).want(t, 200).obj(t)
	if n := len(get(envs, "envs").([]any)); n != 1 {
		t.Errorf("after delete %d variables, want only the seeded one", n)
	}
}

func TestVercelEnvRefusals(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.sendsForbidden()
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "teamweb", TeamID: "team_1"})
	ok := map[string]any{"key": "K", "value": "v", "type": "encrypted", "target": []string{"preview"}}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range ok {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tt := range []struct {
		name   string
		path   string
		body   any
		status int
		code   string
	}{
		{"gitBranch on production", "/v10/projects/web/env", with("target", []string{"production"}), 400, "bad_request"},
		{"gitBranch with two targets", "/v10/projects/web/env", map[string]any{"key": "K", "value": "v", "type": "plain", "target": []string{"preview", "development"}, "gitBranch": "b"}, 400, "bad_request"},
		{"no value", "/v10/projects/web/env", with("value", nil), 400, "bad_request"},
		{"unknown type", "/v10/projects/web/env", with("type", "secretive"), 400, "bad_request"},
		{"target as string", "/v10/projects/web/env", with("target", "preview"), 400, "bad_request"},
		{"unknown target", "/v10/projects/web/env", with("target", []string{"staging"}), 400, "bad_request"},
		{"unknown project", "/v10/projects/nope/env", ok, 404, "not_found"},
		{"team project without teamId", "/v10/projects/teamweb/env", ok, 404, "not_found"},
		{"personal project with a teamId", "/v10/projects/web/env?teamId=team_1", ok, 404, "not_found"},
		{"team project with teamId", "/v10/projects/teamweb/env?teamId=team_1", ok, 201, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "gitBranch on production" {
				tt.body.(map[string]any)["gitBranch"] = "feat"
			}
			r := tc.call("vercel", "POST", tt.path, tt.body).want(t, tt.status)
			if tt.code != "" && str(r.obj(t), "error", "code") != tt.code {
				t.Errorf("error = %s, want code %s", r.body, tt.code)
			}
		})
	}
}

func TestVercelEnvArrayPartialFailure(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web", Envs: []VercelEnv{{Key: "TAKEN", Value: "x", Target: []string{"preview"}}}})
	r := tc.call("vercel", "POST", "/v10/projects/web/env", []any{
		map[string]any{"key": "NEW", "value": "1", "type": "plain", "target": []string{"preview"}},
		map[string]any{"key": "TAKEN", "value": "2", "type": "plain", "target": []string{"preview", "production"}},
	}).want(t, 201).obj(t)
	if c := get(r, "created").([]any); len(c) != 1 || str(c, 0, "key") != "NEW" {
		t.Errorf("created = %v", c)
	}
	if f := get(r, "failed").([]any); len(f) != 1 || str(f, 0, "error", "code") != "ENV_ALREADY_EXISTS" {
		t.Errorf("failed = %v", f)
	}
}

func TestVercelEnvGitBranchFilter(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.sendsForbidden()
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web", Envs: []VercelEnv{
		{Key: "A", Value: "a", Target: []string{"preview"}, GitBranch: "feat"},
		{Key: "B", Value: "b", Target: []string{"preview"}, GitBranch: "other"},
		{Key: "C", Value: "c"},
	}})
	keys := func(q string) []string {
		var ks []string
		for _, e := range get(tc.call("vercel", "GET", "/v10/projects/web/env"+q, nil).want(t, 200).obj(t), "envs").([]any) {
			ks = append(ks, str(e, "key"))
		}
		slices.Sort(ks)
		return ks
	}
	if got := keys("?gitBranch=feat"); !slices.Equal(got, []string{"A", "C"}) {
		t.Errorf("gitBranch=feat lists %v, want the branch's and the branch-less variables [A C]", got)
	}
	// target is not a parameter of the operation (V4): Vercel ignores it,
	// the sim refuses it, so an adapter relying on it fails its test.
	tc.call("vercel", "GET", "/v10/projects/web/env?target=production", nil).want(t, 400)
}

// pollStates lists the deployments of one commit n times and returns the
// readyState each time (of the newest).
func pollStates(t *testing.T, tc *tcloud, sha string, n int) []string {
	t.Helper()
	var states []string
	for range n {
		r := tc.call("vercel", "GET", "/v6/deployments?projectId=web&target=preview&sha="+sha, nil).want(t, 200).obj(t)
		d := get(r, "deployments", 0)
		if d == nil {
			t.Fatalf("no deployment of %s: %v", sha, r)
		}
		if str(d, "meta", "githubCommitSha") != sha || str(d, "url") == "" || get(d, "target") != nil || str(d, "state") != str(d, "readyState") {
			t.Fatalf("deployment = %v", d)
		}
		states = append(states, str(d, "readyState"))
	}
	return states
}

func TestVercelDeploymentLifecycles(t *testing.T) {
	for _, tt := range []struct {
		behavior string
		polls    int
		want     []string
	}{
		{DeployOK, 0, []string{"BUILDING", "READY", "READY"}},
		{DeployNever, 0, []string{"BUILDING", "BUILDING", "BUILDING", "BUILDING", "BUILDING"}},
		{DeployFail, 0, []string{"BUILDING", "ERROR", "ERROR"}},
		{DeployCancel, 0, []string{"BUILDING", "CANCELED"}},
		{DeploySlow, 0, []string{"BUILDING", "BUILDING", "BUILDING", "READY"}},
		{DeploySlow, 5, []string{"BUILDING", "BUILDING", "BUILDING", "BUILDING", "BUILDING", "READY"}},
	} {
		t.Run(fmt.Sprintf("%s-%d", tt.behavior, tt.polls), func(t *testing.T) {
			tc := newCloud(t, Options{})
			tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
			if _, err := tc.c.Console.Deploy(DeploySpec{Project: "web", SHA: "abc123", Branch: "feat", Behavior: tt.behavior, Polls: tt.polls}); err != nil {
				t.Fatal(err)
			}
			if got := pollStates(t, tc, "abc123", len(tt.want)); !slices.Equal(got, tt.want) {
				t.Errorf("states %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVercelDeploymentSlowByTime(t *testing.T) {
	clk := newClock()
	tc := newCloud(t, Options{Now: clk.Now})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
	if _, err := tc.c.Console.Deploy(DeploySpec{Project: "web", SHA: "s1", Behavior: DeploySlow, After: Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got := pollStates(t, tc, "s1", 4); !slices.Equal(got, []string{"BUILDING", "BUILDING", "BUILDING", "BUILDING"}) {
		t.Errorf("before the minute: %v", got)
	}
	clk.Add(61 * time.Second)
	if got := pollStates(t, tc, "s1", 1); got[0] != "READY" {
		t.Errorf("after the minute: %v", got)
	}
}

func TestVercelDeploymentDoubleNewestWins(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
	uids, err := tc.c.Console.Deploy(DeploySpec{Project: "web", SHA: "d1", Behavior: DeployDouble})
	if err != nil || len(uids) != 2 {
		t.Fatalf("deploy: %v %v", uids, err)
	}
	list := func() []any {
		return get(tc.call("vercel", "GET", "/v6/deployments?projectId=web&sha=d1", nil).want(t, 200).obj(t), "deployments").([]any)
	}
	ds := list()
	if len(ds) != 2 || str(ds, 0, "uid") != uids[1] || str(ds, 1, "uid") != uids[0] {
		t.Fatalf("want newest first %v, got %v", uids, ds)
	}
	if str(ds, 0, "readyState") != "BUILDING" || str(ds, 1, "readyState") != "READY" {
		t.Errorf("first poll: newest %s, older %s; want BUILDING, READY", str(ds, 0, "readyState"), str(ds, 1, "readyState"))
	}
	ds = list()
	if str(ds, 0, "readyState") != "READY" || str(ds, 0, "url") == str(ds, 1, "url") {
		t.Errorf("second poll: %v", ds)
	}
}

func TestVercelDeploymentFiltersAndPages(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "other"})
	var all []string
	for i := range 5 {
		u, _ := tc.c.Console.Deploy(DeploySpec{Project: "web", SHA: fmt.Sprint("sha", i), Branch: "feat"})
		all = append([]string{u[0]}, all...) // newest first
	}
	prod, _ := tc.c.Console.Deploy(DeploySpec{Project: "web", SHA: "p", Branch: "main", Target: "production"})
	tc.c.Console.Deploy(DeploySpec{Project: "other", SHA: "o", Branch: "feat"})

	uids := func(q string) ([]string, any) {
		r := tc.call("vercel", "GET", "/v6/deployments?"+q, nil).want(t, 200).obj(t)
		var us []string
		for _, d := range get(r, "deployments").([]any) {
			us = append(us, str(d, "uid"))
		}
		return us, get(r, "pagination", "next")
	}
	if got, _ := uids("projectId=web&target=production"); !slices.Equal(got, prod) {
		t.Errorf("production: %v, want %v", got, prod)
	}
	if got, _ := uids("projectId=web&branch=feat"); !slices.Equal(got, all) {
		t.Errorf("branch=feat: %v, want %v", got, all)
	}
	// The feat deployments have been polled once (BUILDING); this poll is
	// their second, so they are READY as the state filter sees them.
	if got, _ := uids("projectId=web&branch=feat&state=READY"); !slices.Equal(got, all) {
		t.Errorf("state=READY: %v, want %v", got, all)
	}
	if got, _ := uids("projectId=web&state=ERROR,CANCELED"); len(got) != 0 {
		t.Errorf("state=ERROR,CANCELED: %v, want none", got)
	}

	var paged []string
	q := "projectId=web&target=preview&limit=2"
	for range 10 {
		us, next := uids(q)
		paged = append(paged, us...)
		if next == nil {
			break
		}
		q = "projectId=web&target=preview&limit=2&until=" + url.QueryEscape(fmt.Sprint(int64(next.(float64))))
	}
	if !slices.Equal(paged, all) {
		t.Errorf("paged through %v, want %v", paged, all)
	}

	tc.c.MustAddRule(Rule{Kind: KindPageSize, Provider: "vercel", PageSize: 1, Count: 1})
	if us, next := uids("projectId=web&target=preview"); len(us) != 1 || next == nil {
		t.Errorf("with page size 1: %v next %v", us, next)
	}
}
