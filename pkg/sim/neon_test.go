package sim

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func neonCreate(name string, endpoint bool) map[string]any {
	b := map[string]any{"branch": map[string]any{"name": name}}
	if endpoint {
		b["endpoints"] = []any{map[string]any{"type": "read_write"}}
	}
	return b
}

func TestNeonBranchLifecycle(t *testing.T) {
	tc := newCloud(t, Options{})
	p := tc.c.Console.SeedNeonProject(NeonProject{})
	base := "/projects/" + p.ID

	r := tc.call("neon", "POST", base+"/branches", neonCreate("sponson/pr-1", true)).want(t, 201).obj(t)
	id := str(r, "branch", "id")
	if !strings.HasPrefix(id, "br-") || str(r, "branch", "name") != "sponson/pr-1" || str(r, "branch", "parent_id") != p.DefaultBranchID {
		t.Fatalf("branch = %v", get(r, "branch"))
	}
	if str(r, "branch", "current_state") != "init" || str(r, "branch", "pending_state") != "ready" {
		t.Errorf("a new branch is %s/%s, want init/ready", str(r, "branch", "current_state"), str(r, "branch", "pending_state"))
	}
	ops := get(r, "operations").([]any)
	if len(ops) != 2 || str(ops, 0, "action") != "create_branch" || str(ops, 0, "status") != "running" || str(ops, 1, "action") != "start_compute" {
		t.Errorf("operations = %v", ops)
	}
	host := str(r, "endpoints", 0, "host")
	uri := str(r, "connection_uris", 0, "connection_uri")
	if host == "" || !strings.Contains(uri, ":"+p.Password+"@"+host+"/neondb") || str(r, "connection_uris", 0, "connection_parameters", "password") != p.Password {
		t.Errorf("connection: host %q uri %q", host, uri)
	}
	if str(r, "roles", 0, "name") != "neondb_owner" || str(r, "databases", 0, "name") != "neondb" {
		t.Errorf("roles/databases = %v %v", get(r, "roles"), get(r, "databases"))
	}

	locked := tc.call("neon", "DELETE", base+"/branches/"+id, nil).want(t, 423).obj(t)
	if !strings.Contains(str(locked, "message"), "conflicting operations") {
		t.Errorf("423 body = %v", locked)
	}
	if st, ok := tc.c.State().NeonProject(p.ID); !ok || len(st.Branches) != 2 {
		t.Fatalf("the 423 delete removed something: %+v", st)
	}
	op := tc.call("neon", "GET", base+"/operations/"+str(ops, 0, "id"), nil).want(t, 200).obj(t)
	if str(op, "operation", "status") != "finished" {
		t.Errorf("after two more requests the operation is %v", get(op, "operation"))
	}
	if b := tc.call("neon", "GET", base+"/branches/"+id, nil).want(t, 200).obj(t); str(b, "branch", "current_state") != "ready" {
		t.Errorf("branch = %v", b)
	}
	d := tc.call("neon", "DELETE", base+"/branches/"+id, nil).want(t, 200).obj(t)
	if str(d, "branch", "id") != id || len(get(d, "operations").([]any)) == 0 {
		t.Errorf("delete answered %v", d)
	}
	tc.call("neon", "GET", base+"/branches/"+id, nil).want(t, 404)
	tc.call("neon", "DELETE", base+"/branches/"+id, nil).want(t, 204)
	tc.call("neon", "DELETE", base+"/branches/"+p.DefaultBranchID, nil).want(t, 400)
	tc.call("neon", "GET", "/projects/nope/branches", nil).want(t, 404)
	tc.call("neon", "GET", base+"/operations/nope", nil).want(t, 404)
}

func TestNeonOperationsRunningThenFinished(t *testing.T) {
	tc := newCloud(t, Options{NeonOpsAfterRequests: 3})
	p := tc.c.Console.SeedNeonProject(NeonProject{})
	r := tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("b", false)).want(t, 201).obj(t)
	if get(r, "connection_uris") != nil || len(get(r, "endpoints").([]any)) != 0 {
		t.Errorf("no endpoint was asked for: %v", r)
	}
	opPath := "/projects/" + p.ID + "/operations/" + str(r, "operations", 0, "id")
	var got []string
	for range 4 {
		got = append(got, str(tc.call("neon", "GET", opPath, nil).want(t, 200).obj(t), "operation", "status"))
	}
	if want := []string{"running", "running", "finished", "finished"}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}

func TestNeonOperationsByTime(t *testing.T) {
	clk := newClock()
	tc := newCloud(t, Options{Now: clk.Now, NeonOpsAfter: time.Minute})
	p := tc.c.Console.SeedNeonProject(NeonProject{})
	id := str(tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("b", true)).want(t, 201).obj(t), "branch", "id")
	for range 5 {
		tc.call("neon", "DELETE", "/projects/"+p.ID+"/branches/"+id, nil).want(t, 423)
	}
	clk.Add(time.Minute)
	tc.call("neon", "DELETE", "/projects/"+p.ID+"/branches/"+id, nil).want(t, 200)
}

func TestNeonOperationsImmediate(t *testing.T) {
	tc := newCloud(t, Options{NeonOpsImmediate: true})
	p := tc.c.Console.SeedNeonProject(NeonProject{})
	r := tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("b", true)).want(t, 201).obj(t)
	if str(r, "operations", 0, "status") != "finished" || str(r, "branch", "current_state") != "ready" {
		t.Errorf("immediate: %v", r)
	}
	tc.call("neon", "DELETE", "/projects/"+p.ID+"/branches/"+str(r, "branch", "id"), nil).want(t, 200)
}

func TestNeonLocking(t *testing.T) {
	t.Run("branch scope", func(t *testing.T) {
		tc := newCloud(t, Options{})
		p := tc.c.Console.SeedNeonProject(NeonProject{})
		a := str(tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("a", true)).want(t, 201).obj(t), "branch", "id")
		tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("b", true)).want(t, 201)
		child := neonCreate("c", true)
		child["branch"].(map[string]any)["parent_id"] = a
		tc.SetNeonOpsNever()
		tc.call("neon", "POST", "/projects/"+p.ID+"/branches", child).want(t, 423)
	})
	t.Run("project scope", func(t *testing.T) {
		tc := newCloud(t, Options{NeonLockProject: true})
		p := tc.c.Console.SeedNeonProject(NeonProject{})
		tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("a", true)).want(t, 201)
		tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("b", true)).want(t, 423)
		tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("b", true)).want(t, 201)
		if st, _ := tc.c.State().NeonProject(p.ID); len(st.Branches) != 3 {
			t.Errorf("branches = %+v", st.Branches)
		}
	})
}

// SetNeonOpsNever makes operations effectively never finish.
func (tc *tcloud) SetNeonOpsNever() { tc.c.Console.SetNeonOps(1<<30, 0) }

func TestNeonDuplicateName(t *testing.T) {
	tc := newCloud(t, Options{})
	p := tc.c.Console.SeedNeonProject(NeonProject{Branches: []NeonBranch{{Name: "taken"}}})
	r := tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("taken", true)).want(t, 409).obj(t)
	if !strings.Contains(str(r, "message"), `branch already exists; branch_name:"taken"`) {
		t.Errorf("409 body = %v", r)
	}
	tc.call("neon", "POST", "/projects/"+p.ID+"/branches", `{"endpoints":[{"type":"read_write"},{"type":"read_write"}]}`).want(t, 400)
	tc.call("neon", "POST", "/projects/"+p.ID+"/branches", `{"branch":{"parent_id":"br-none"}}`).want(t, 404)
	// An empty body makes a branch with a generated name from the default branch.
	r = tc.call("neon", "POST", "/projects/"+p.ID+"/branches", nil).want(t, 201).obj(t)
	if str(r, "branch", "name") != str(r, "branch", "id") || str(r, "branch", "parent_id") != p.DefaultBranchID {
		t.Errorf("empty body made %v", get(r, "branch"))
	}
}

func TestNeonListBranches(t *testing.T) {
	tc := newCloud(t, Options{})
	p := tc.c.Console.SeedNeonProject(NeonProject{Branches: []NeonBranch{{Name: "sponson/pr-1"}, {Name: "sponson/pr-10"}, {Name: "other"}}})
	names := func(q string) ([]string, string) {
		r := tc.call("neon", "GET", "/projects/"+p.ID+"/branches"+q, nil).want(t, 200).obj(t)
		var ns []string
		for _, b := range get(r, "branches").([]any) {
			ns = append(ns, str(b, "name"))
		}
		return ns, str(r, "pagination", "next")
	}
	got, _ := names("?search=" + url.QueryEscape("sponson/pr-1"))
	slices.Sort(got)
	if !slices.Equal(got, []string{"sponson/pr-1", "sponson/pr-10"}) {
		t.Errorf("search matches %v; search is partial, so both must come back", got)
	}
	var all []string
	q := "?limit=1&sort_by=name&sort_order=asc"
	for range 10 {
		ns, next := names(q)
		all = append(all, ns...)
		if next == "" {
			break
		}
		q = "?limit=1&sort_by=name&sort_order=asc&cursor=" + next
	}
	if want := []string{"main", "other", "sponson/pr-1", "sponson/pr-10"}; !slices.Equal(all, want) {
		t.Errorf("paged %v, want %v", all, want)
	}
	tc.c.MustAddRule(Rule{Kind: KindPageSize, Provider: "neon", Method: "GET", Path: "/projects/*/branches", PageSize: 2})
	if ns, next := names(""); len(ns) != 2 || next == "" {
		t.Errorf("page size 2: %v next %q", ns, next)
	}
	tc.call("neon", "GET", "/projects/"+p.ID+"/branches?limit=0", nil).want(t, 400)
	tc.call("neon", "GET", "/projects/"+p.ID+"/branches?cursor=zzzz", nil).want(t, 400)
}

func TestNeonConnectionURI(t *testing.T) {
	tc := newCloud(t, Options{})
	p := tc.c.Console.SeedNeonProject(NeonProject{})
	base := "/projects/" + p.ID + "/connection_uri?database_name=neondb&role_name=neondb_owner"
	uri := str(tc.call("neon", "GET", base, nil).want(t, 200).obj(t), "uri")
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "postgresql" || u.User.Username() != "neondb_owner" || u.Path != "/neondb" || u.Query().Get("sslmode") != "require" {
		t.Fatalf("uri %q: %v", uri, err)
	}
	if pw, _ := u.User.Password(); pw != p.Password || pw == "" {
		t.Errorf("password %q, want %q", pw, p.Password)
	}
	pooled := str(tc.call("neon", "GET", base+"&pooled=true", nil).want(t, 200).obj(t), "uri")
	if !strings.Contains(pooled, "-pooler.") || strings.Contains(uri, "-pooler.") {
		t.Errorf("pooled %q direct %q", pooled, uri)
	}
	noEP := str(tc.call("neon", "POST", "/projects/"+p.ID+"/branches", neonCreate("bare", false)).want(t, 201).obj(t), "branch", "id")
	for _, tt := range []struct {
		q      string
		status int
	}{
		{"/projects/" + p.ID + "/connection_uri?role_name=neondb_owner", 400},
		{"/projects/" + p.ID + "/connection_uri?database_name=neondb", 400},
		{base + "&branch_id=br-none", 404},
		{"/projects/" + p.ID + "/connection_uri?database_name=neondb&role_name=someone", 404},
		{base + "&branch_id=" + noEP, 404},
	} {
		tc.call("neon", "GET", tt.q, nil).want(t, tt.status)
	}
}
