package sim

import (
	"encoding/json"
	"slices"
	"testing"
)

func mustDrift(t *testing.T, c *Cloud, d Drift) string {
	t.Helper()
	id, err := c.Drift(d)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestDriftVercel(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web"})
	id := str(tc.call("vercel", "POST", "/v10/projects/web/env", map[string]any{"key": "K", "value": "v1", "type": "encrypted", "target": []string{"preview"}}).want(t, 201).obj(t), "created", "id")
	value := func() (string, string) {
		e := get(tc.call("vercel", "GET", "/v10/projects/web/env?decrypt=true", nil).want(t, 200).obj(t), "envs", 0)
		return str(e, "id"), str(e, "value")
	}

	mustDrift(t, tc.c, Drift{Provider: "vercel", Action: DriftChange, Project: "web", Key: "K", Value: "console"})
	if gotID, v := value(); gotID != id || v != "console" {
		t.Errorf("after change: %s %s", gotID, v)
	}
	newID := mustDrift(t, tc.c, Drift{Provider: "vercel", Action: DriftRecreate, Project: "web", ID: id})
	if gotID, v := value(); gotID != newID || newID == id || v != "console" {
		t.Errorf("after recreate: %s (%s) %s", gotID, newID, v)
	}
	p, _ := tc.c.State().VercelProject("web")
	if len(p.Envs) != 1 || p.Envs[0].Origin != OriginConsole || !slices.Equal(p.Envs[0].Target, []string{"preview"}) {
		t.Errorf("recreated %+v", p.Envs)
	}
	tc.call("vercel", "PATCH", "/v9/projects/web/env/"+id, map[string]any{"value": "x"}).want(t, 404)
	mustDrift(t, tc.c, Drift{Provider: "vercel", Action: DriftDelete, Project: "web", ID: newID})
	mustDrift(t, tc.c, Drift{Provider: "vercel", Action: DriftAdd, Project: "web", Key: "EXTRA", Value: "e", Target: "production"})
	p, _ = tc.c.State().VercelProject("web")
	if len(p.Envs) != 1 || p.Envs[0].Key != "EXTRA" || p.Envs[0].Origin != OriginConsole {
		t.Errorf("after delete and add %+v", p.Envs)
	}
	if len(tc.c.Writes()) != 2 { // the POST and the PATCH that met the recreated id
		t.Errorf("drift edits were logged as writes: %+v", tc.c.Writes())
	}
}

func TestDriftNeon(t *testing.T) {
	tc := newCloud(t, Options{})
	p := tc.c.Console.SeedNeonProject(NeonProject{Branches: []NeonBranch{{Name: "pr-1"}, {Name: "pr-2"}}})
	old := p.Branches[1].ID
	newID := mustDrift(t, tc.c, Drift{Provider: "neon", Action: DriftRecreate, Project: p.ID, ID: "pr-1"})
	tc.call("neon", "GET", "/projects/"+p.ID+"/branches/"+old, nil).want(t, 404)
	if b := tc.call("neon", "GET", "/projects/"+p.ID+"/branches/"+newID, nil).want(t, 200).obj(t); str(b, "branch", "name") != "pr-1" {
		t.Errorf("recreated %v", b)
	}
	mustDrift(t, tc.c, Drift{Provider: "neon", Action: DriftChange, Project: p.ID, ID: newID, Value: "renamed"})
	mustDrift(t, tc.c, Drift{Provider: "neon", Action: DriftDelete, Project: p.ID, ID: "pr-2"})
	mustDrift(t, tc.c, Drift{Provider: "neon", Action: DriftAdd, Project: p.ID, Value: "hand-made"})
	st, _ := tc.c.State().NeonProject(p.ID)
	var names []string
	for _, b := range st.Branches {
		names = append(names, b.Name+":"+string(b.Origin))
	}
	if want := []string{"main:seed", "renamed:console", "hand-made:console"}; !slices.Equal(names, want) {
		t.Errorf("branches %v, want %v", names, want)
	}
}

func TestDriftLists(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedSupabaseProject(SupabaseProject{Ref: ref, Auth: SupabaseAuthConfig{URIAllowList: "https://a,https://b"}})
	mustDrift(t, tc.c, Drift{Provider: "supabase", Action: DriftRemove, Project: ref, Value: "https://a"})
	mustDrift(t, tc.c, Drift{Provider: "supabase", Action: DriftAdd, Project: ref, Value: "https://c"})
	if got := tc.call("supabase", "GET", "/v1/projects/"+ref+"/config/auth", nil).want(t, 200).obj(t)["uri_allow_list"]; got != "https://b,https://c" {
		t.Errorf("uri_allow_list %v", got)
	}
	sp, _ := tc.c.State().SupabaseProject(ref)
	if want := []Entry{{"https://b", OriginSeed}, {"https://c", OriginConsole}}; !slices.Equal(sp.Entries, want) {
		t.Errorf("entries %v", sp.Entries)
	}
	mustDrift(t, tc.c, Drift{Provider: "supabase", Action: DriftChange, Project: ref, Field: "site_url", Value: "https://site"})

	id := tc.c.Console.SeedAuth0Client(Auth0Client{Lists: map[string][]string{Auth0AllowedLogoutURLs: {"https://x"}}})
	mustDrift(t, tc.c, Drift{Provider: "auth0", Action: DriftAdd, Project: id, List: Auth0AllowedLogoutURLs, Value: "https://y"})
	mustDrift(t, tc.c, Drift{Provider: "auth0", Action: DriftRemove, Project: id, List: Auth0AllowedLogoutURLs, Value: "https://x"})
	mustDrift(t, tc.c, Drift{Provider: "auth0", Action: DriftChange, Project: id, Value: "https://1, https://2"})
	cl := tc.call("auth0", "GET", "/api/v2/clients/"+id, nil).want(t, 200).obj(t)
	if !slices.Equal(strs(cl["allowed_logout_urls"]), []string{"https://y"}) || !slices.Equal(strs(cl["callbacks"]), []string{"https://1", "https://2"}) {
		t.Errorf("client %v", cl)
	}
}

func TestDriftHTTP(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedHTTPObject("apps", map[string]any{"id": "a", "arr": []string{"1", "2"}, "csv": "x,y", "m": map[string]any{"k": "v"}, "n": 1})
	for _, d := range []Drift{
		{Action: DriftAdd, Field: "arr", Value: "3"},
		{Action: DriftRemove, Field: "arr", Value: "1"},
		{Action: DriftAdd, Field: "csv", Value: "z"},
		{Action: DriftRemove, Field: "csv", Value: "x"},
		{Action: DriftAdd, Field: "m", Value: "k2=v2"},
		{Action: DriftRemove, Field: "m", Value: "k"},
		{Action: DriftAdd, Field: "fresh", Value: "f"},
		{Action: DriftChange, Field: "n", Value: "2"},
		{Action: DriftChange, Field: "s", Value: "plain text"},
	} {
		d.Provider, d.Project, d.ID = "http", "apps", "a"
		mustDrift(t, tc.c, d)
	}
	got := tc.call("http", "GET", "/apps/a", nil).want(t, 200)
	want := `{"arr":["2","3"],"csv":"y,z","fresh":["f"],"id":"a","m":{"k2":"v2"},"n":2,"s":"plain text"}`
	var g any
	json.Unmarshal(got.body, &g)
	if gb, _ := json.Marshal(g); string(gb) != want {
		t.Errorf("object %s\nwant   %s", gb, want)
	}
	if _, err := tc.c.Drift(Drift{Provider: "http", Action: DriftAdd, Project: "apps", ID: "a", Field: "n", Value: "x"}); err == nil {
		t.Error("a list edit of a number was accepted")
	}
	newID := mustDrift(t, tc.c, Drift{Provider: "http", Action: DriftRecreate, Project: "apps", ID: "a"})
	tc.call("http", "GET", "/apps/a", nil).want(t, 404)
	if o := tc.call("http", "GET", "/apps/"+newID, nil).want(t, 200).obj(t); o["s"] != "plain text" {
		t.Errorf("recreated %v", o)
	}
	mustDrift(t, tc.c, Drift{Provider: "http", Action: DriftDelete, Project: "apps", ID: newID})
	tc.call("http", "GET", "/apps/"+newID, nil).want(t, 404)
}

func TestDriftRefusals(t *testing.T) {
	c := New(Options{})
	c.Console.SeedVercelProject(VercelProject{Name: "web"})
	c.Console.SeedAuth0Client(Auth0Client{ClientID: "c"})
	for _, d := range []Drift{
		{Provider: "aws"},
		{Provider: "vercel", Action: DriftChange, Project: "nope"},
		{Provider: "vercel", Action: DriftChange, Project: "web", Key: "MISSING"},
		{Provider: "neon", Action: DriftDelete, Project: "nope"},
		{Provider: "supabase", Action: DriftAdd, Project: "nope"},
		{Provider: "auth0", Action: DriftAdd, Project: "c", List: "grants"},
		{Provider: "auth0", Action: DriftRecreate, Project: "c"},
		{Provider: "http", Action: DriftChange, Project: "apps", ID: "none"},
	} {
		if _, err := c.Drift(d); err == nil {
			t.Errorf("Drift(%+v) accepted", d)
		}
	}
}
