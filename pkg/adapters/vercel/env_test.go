package vercel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/adapters/vercel"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

// world is the fake cloud served over HTTP, with the environment the
// adapter reads.
type world struct {
	*simtest.World
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{World: simtest.New(t, sim.Options{Seed: 1})}
	return w
}

func (w *world) op() *vercel.EnvOp { return vercel.NewEnv(w.Lookup, w.Client) }

var run = adapter.RunCtx{Env: "preview", Scope: "pr-7", Branch: "feat/login", SHA: "0123456789abcdef0123456789abcdef01234567"}

func request(project string, params map[string]any) adapter.Request {
	return adapter.Request{Line: "env", Params: params, Provider: adapter.Provider{"project": project}, Run: run}
}

func TestConformance(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	other := request("web", map[string]any{"values": map[string]any{"DATABASE_URL": "postgres://other"}, "branch": "feat/other"})
	adaptertest.Run(t, adaptertest.Case{
		Op: w.op(),
		Request: request("web", map[string]any{"values": map[string]any{
			"DATABASE_URL": "postgres://u@h/db", "API_BASE": "https://api.example.dev", "RETRIES": int64(3),
		}}),
		Other:         other,
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[vercel.TokenVar], "wrong-token-123"}},
		Unauthorized:  vercel.NewEnv(w.With(map[string]string{vercel.TokenVar: "wrong-token-123"}), w.Client),
		NoCredential:  vercel.NewEnv(w.With(map[string]string{vercel.TokenVar: ""}), w.Client),
		CredentialVar: vercel.TokenVar,
	})
}

func TestDefaults(t *testing.T) {
	op := vercel.NewEnv(nil, nil)
	p := adapter.Provider{"project": "web"}
	vals := map[string]any{"values": map[string]any{"A": "1"}}
	got, err := op.Defaults(vals, p, run)
	if err != nil || got["target"] != "preview" || got["branch"] != "feat/login" {
		t.Errorf("preview defaults = %v, %v", got, err)
	}
	got, err = op.Defaults(vals, p, adapter.RunCtx{Env: "production"})
	if err != nil || got["target"] != "production" || got["branch"] != "*" {
		t.Errorf("production defaults = %v, %v", got, err)
	}
	if op.WritesEnvironment(vals, p, adapter.RunCtx{Env: "production"}) != "production" || op.WritesEnvironment(vals, p, run) != "" {
		t.Error("WritesEnvironment does not follow the target")
	}
	bad := []struct {
		params map[string]any
		run    adapter.RunCtx
		name   string
	}{
		{map[string]any{"values": map[string]any{"A": "1"}}, adapter.RunCtx{Env: "staging"}, "target"},
		{map[string]any{"values": map[string]any{"A": "1"}, "target": "prod"}, run, "target"},
		{map[string]any{"values": map[string]any{"A": "1"}, "target": "production", "branch": "main"}, run, "branch"},
		{map[string]any{"values": map[string]any{"A": "1"}}, adapter.RunCtx{Env: "preview"}, "branch"},
		{map[string]any{"values": map[string]any{"1A": "1"}}, run, "values.1A"},
		{map[string]any{"values": map[string]any{"A": []any{"x"}}}, run, "values.A"},
		{map[string]any{"values": map[string]any{}}, run, "values"},
		{map[string]any{"values": map[string]any{"A": "1"}, "colour": "red"}, run, "colour"},
	}
	for _, c := range bad {
		_, err := op.Defaults(c.params, p, c.run)
		if errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), c.name) {
			t.Errorf("Defaults(%v) = %v, want PARAM_INVALID naming %s", c.params, err, c.name)
		}
	}
	if _, err := op.Defaults(vals, adapter.Provider{}, run); errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), "project") {
		t.Errorf("no project: %v", err)
	}
	got, err = op.Defaults(map[string]any{"values": map[string]any{"N": int64(3), "B": true, "F": 1.5}}, p, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"N", "B", "F"} {
		if _, isM := adapter.MarkerOf(got["values"].(map[string]any)[k]); isM {
			t.Errorf("%s became a marker", k)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, c := range []struct{ target, branch, name string }{{"preview", "feat/x", "A"}, {"production", "*", "DB_URL"}, {"preview", "a:b", "X"}} {
		k := vercel.Key(c.target, c.branch, c.name)
		tg, br, n, ok := vercel.ParseKey(k)
		if !ok || tg != c.target || br != c.branch || n != c.name {
			t.Errorf("ParseKey(%s) = %s %s %s %v", k, tg, br, n, ok)
		}
	}
	for _, bad := range []string{"", "env:", "env:preview", "env:preview:x:", "branch:x"} {
		if _, _, _, ok := vercel.ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) ok", bad)
		}
	}
}

func apply(t *testing.T, op adapter.Op, req adapter.Request) *adapter.Result {
	t.Helper()
	if d, ok := op.(adapter.Defaulter); ok {
		p, err := d.Defaults(req.Params, req.Provider, req.Run)
		if err != nil {
			t.Fatal(err)
		}
		req.Params = p
	}
	res, err := op.Apply(context.Background(), req, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

func diff(t *testing.T, op adapter.Op, req adapter.Request) []adapter.ResourceDiff {
	t.Helper()
	p, err := op.(adapter.Defaulter).Defaults(req.Params, req.Provider, req.Run)
	if err != nil {
		t.Fatal(err)
	}
	req.Params = p
	live, err := op.Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	d, err := op.Diff(live, req)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestUpdateAndMarkers(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	op := w.op()
	apply(t, op, request("web", map[string]any{"values": map[string]any{"A": "1"}}))
	d := diff(t, op, request("web", map[string]any{"values": map[string]any{"A": "2"}}))
	// A known value is shown on both sides (the engine hides those that
	// come from a secret); a marker's never.
	if len(d) != 1 || d[0].Action != adapter.Update || d[0].Fields[0].Before != "1" || d[0].Fields[0].After != "2" {
		t.Errorf("changed value: %+v (want 1 → 2)", d)
	}
	before := w.Writes()
	res := apply(t, op, request("web", map[string]any{"values": map[string]any{"A": "2"}}))
	if len(res.Created) != 0 || w.Writes() != before+1 || res.Resources[0].Value != "2" {
		t.Errorf("update: created %v, %d writes, value %v", res.Created, w.Writes()-before, res.Resources[0].Value)
	}
	for _, m := range []adapter.Marker{{Kind: adapter.Pending, Ref: "db.url"}, {Kind: adapter.Secret, Ref: "env://X"}} {
		d := diff(t, op, request("web", map[string]any{"values": map[string]any{"A": m, "B": m}}))
		if d[0].Action != adapter.Update || d[0].Desired != nil || d[1].Action != adapter.Create || d[1].Desired != nil ||
			d[0].Fields[0].Before != nil || d[0].Fields[0].After != nil {
			t.Errorf("%s: %+v", m.Kind, d)
		}
		req := request("web", map[string]any{"values": map[string]any{"A": m}, "target": "preview", "branch": "feat/login"})
		if _, err := op.Apply(context.Background(), req, nil, func(...string) error { return nil }); errs.CodeOf(err) != errs.PARAM_INVALID {
			t.Errorf("Apply with a %s marker: %v", m.Kind, err)
		}
	}
}

func TestKeepAdoptsAndListScope(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	if _, err := w.Cloud.Console.SeedVercelEnv("web", sim.VercelEnv{Key: "LEGACY", Value: "v", Target: []string{"preview"}, GitBranch: "feat/login"}); err != nil {
		t.Fatal(err)
	}
	op := w.op()
	req := request("web", map[string]any{"values": map[string]any{"LEGACY": adapter.Marker{Kind: adapter.Keep}}})
	d := diff(t, op, req)
	if d[0].Action != adapter.Unchanged || d[0].Desired != "v" {
		t.Errorf("keep: %+v", d)
	}
	before := w.Writes()
	res := apply(t, op, req)
	if w.Writes() != before || len(res.Created) != 0 || res.Resources[0].Value != "v" {
		t.Errorf("keep apply: %d writes, %+v", w.Writes()-before, res)
	}
	listed, err := op.ListScope(context.Background(), request("web", map[string]any{"values": map[string]any{"X": "1"}}))
	if err != nil || len(listed) != 1 || listed[0].Key != "env:preview:feat/login:LEGACY" {
		t.Errorf("ListScope = %+v, %v", listed, err)
	}
	req = request("web", map[string]any{"values": map[string]any{"NOPE": adapter.Marker{Kind: adapter.Keep}}})
	p, _ := op.Defaults(req.Params, req.Provider, req.Run)
	req.Params = p
	live, _ := op.Read(context.Background(), req)
	if _, err := op.Diff(live, req); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("keep of nothing: %v", err)
	}
}

func TestSharedVariableIsNotChanged(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	id, _ := w.Cloud.Console.SeedVercelEnv("web", sim.VercelEnv{Key: "SHARED", Value: "old", Target: []string{"preview", "production"}})
	op := w.op()
	req := request("web", map[string]any{"values": map[string]any{"SHARED": "new"}, "branch": "*"})
	p, _ := op.Defaults(req.Params, req.Provider, req.Run)
	req.Params = p
	before := w.Writes()
	if _, err := op.Apply(context.Background(), req, nil, func(...string) error { return nil }); errs.CodeOf(err) != errs.PROVIDER_CONFLICT {
		t.Errorf("update of a shared variable: %v", err)
	}
	err := op.Destroy(context.Background(), req.Provider, run, adapter.Resource{Key: "env:preview:*:SHARED", ID: id})
	if errs.CodeOf(err) != errs.PROVIDER_CONFLICT || w.Writes() != before {
		t.Errorf("destroy of a shared variable: %v, %d writes", err, w.Writes()-before)
	}
}

func TestTeamProject(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web", TeamID: "team_9"})
	op := w.op()
	req := adapter.Request{Params: map[string]any{"values": map[string]any{"A": "1"}}, Provider: adapter.Provider{"project": "web", "team": "team_9"}, Run: run}
	res := apply(t, op, req)
	if len(res.Created) != 1 {
		t.Errorf("team apply: %+v", res)
	}
	req.Provider = adapter.Provider{"project": "web"}
	p, _ := op.Defaults(req.Params, req.Provider, req.Run)
	req.Params = p
	if _, err := op.Read(context.Background(), req); errs.CodeOf(err) != errs.PROVIDER_NOT_FOUND {
		t.Errorf("team project without team: %v, want PROVIDER_NOT_FOUND", err)
	}
}

func TestRecreatedOutsideIsNotDestroyed(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	op := w.op()
	res := apply(t, op, request("web", map[string]any{"values": map[string]any{"A": "1"}}))
	r := res.Resources[0]
	if _, err := w.Cloud.Drift(sim.Drift{Provider: sim.ProviderVercel, Action: sim.DriftRecreate, Project: "web", ID: r.ID}); err != nil {
		t.Fatal(err)
	}
	before := w.Writes()
	if err := op.Destroy(context.Background(), adapter.Provider{"project": "web"}, run, r); err != nil || w.Writes() != before {
		t.Errorf("destroy of a re-created variable: %v, %d writes", err, w.Writes()-before)
	}
	got, err := op.Lookup(context.Background(), adapter.Provider{"project": "web"}, run, r.Key)
	if err != nil || got == nil || got.ID == r.ID {
		t.Errorf("the re-created variable: %+v, %v", got, err)
	}
}

func TestChaos(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	op := w.op()
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindFail, Provider: "vercel", Method: "GET", Status: 503, Count: 2})
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindRateLimit, Provider: "vercel", Method: "POST", Count: 1})
	w.Cloud.MustAddRule(sim.Rule{Kind: sim.KindDrop, Provider: "vercel", Method: "POST", Count: 1})
	res := apply(t, op, request("web", map[string]any{"values": map[string]any{"A": "1"}}))
	if len(res.Created) != 1 {
		t.Fatalf("apply through chaos: %+v", res)
	}
	listed, err := op.ListScope(context.Background(), request("web", map[string]any{"values": map[string]any{"A": "1"}}))
	if err != nil || len(listed) != 1 {
		t.Errorf("after a lost create answer and its upsert retry: %+v, %v (want exactly one variable)", listed, err)
	}
}

func TestAwaitExternal(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	op := w.op()
	req := request("web", map[string]any{"values": map[string]any{"A": "1"}})
	p, _ := op.Defaults(req.Params, req.Provider, req.Run)
	req.Params = p
	ctx := context.Background()
	if out, err := op.AwaitExternal(ctx, req, nil); out != nil || err != nil {
		t.Errorf("no deployment yet: %v, %v", out, err)
	}
	uids, err := w.Cloud.Console.Deploy(sim.DeploySpec{Project: "web", SHA: run.SHA, Branch: run.Branch})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	for i := 0; i < 5 && out == nil; i++ {
		if out, err = op.AwaitExternal(ctx, req, nil); err != nil {
			t.Fatal(err)
		}
	}
	if out == nil || out["deployment_id"] != uids[0] || !strings.HasPrefix(out["preview_url"].(string), "https://") {
		t.Errorf("ready deployment: %v", out)
	}
	// Another commit's deployment is not this one.
	other := req
	other.Run.SHA = "ffffffffffffffffffffffffffffffffffffffff"
	if out, err := op.AwaitExternal(ctx, other, nil); out != nil || err != nil {
		t.Errorf("another commit: %v, %v", out, err)
	}
	for _, b := range []string{sim.DeployFail, sim.DeployCancel} {
		w2 := newWorld(t)
		w2.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
		if _, err := w2.Cloud.Console.Deploy(sim.DeploySpec{Project: "web", SHA: run.SHA, Behavior: b}); err != nil {
			t.Fatal(err)
		}
		var err error
		for i := 0; i < 5 && err == nil; i++ {
			_, err = w2.op().AwaitExternal(ctx, req, nil)
		}
		if errs.CodeOf(err) != errs.EXTERNAL_FAILED {
			t.Errorf("%s deployment: %v, want EXTERNAL_FAILED", b, err)
		}
	}
	w3 := newWorld(t)
	w3.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	uids, _ = w3.Cloud.Console.Deploy(sim.DeploySpec{Project: "web", SHA: run.SHA, Behavior: sim.DeployDouble})
	out, err = w3.op().AwaitExternal(ctx, req, nil)
	if out != nil || err != nil {
		t.Errorf("double: the newest is still building, but got %v, %v", out, err)
	}
	out, _ = w3.op().AwaitExternal(ctx, req, nil)
	if out == nil || out["deployment_id"] != uids[1] {
		t.Errorf("double: want the newest %s, got %v", uids[1], out)
	}
	prod := req
	prod.Params = map[string]any{"values": map[string]any{"A": "1"}, "target": "production", "branch": "*"}
	if out, err := w3.op().AwaitExternal(ctx, prod, nil); out != nil || err != nil {
		t.Errorf("production has no deployment: %v, %v", out, err)
	}
	nosha := req
	nosha.Run.SHA = ""
	if _, err := op.AwaitExternal(ctx, nosha, nil); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("no sha: %v", err)
	}
}

func TestUnreadableValueIsRewrittenEncrypted(t *testing.T) {
	w := newWorld(t)
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	if _, err := w.Cloud.Console.SeedVercelEnv("web", sim.VercelEnv{Key: "S", Value: "x", Type: "sensitive", Target: []string{"preview"}, GitBranch: "feat/login"}); err != nil {
		t.Fatal(err)
	}
	op := w.op()
	req := request("web", map[string]any{"values": map[string]any{"S": "x"}})
	if d := diff(t, op, req); d[0].Action != adapter.Update {
		t.Errorf("a value that cannot be read back: %+v, want update", d)
	}
	apply(t, op, req)
	if d := diff(t, op, req); d[0].Action != adapter.Unchanged {
		t.Errorf("after rewriting it encrypted: %+v", d)
	}
	for _, e := range w.Cloud.State().Vercel[0].Envs {
		if e.Key == "S" && e.Type != "encrypted" {
			t.Errorf("type = %s, want encrypted", e.Type)
		}
	}
}

// The env listing sends only the query parameters the Vercel description
// declares for filterProjectEnvs (vercel/sdk vercel-spec.json): no target,
// no paging cursor.
func TestEnvListingSendsDeclaredParameters(t *testing.T) {
	declared := map[string]bool{"gitBranch": true, "decrypt": true, "source": true, "customEnvironmentId": true, "customEnvironmentSlug": true, "teamId": true, "slug": true}
	c := sim.New(sim.Options{Seed: 3})
	c.Console.SeedVercelProject(sim.VercelProject{Name: "web", TeamID: "team_1"})
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/env") {
			mu.Lock()
			for k := range r.URL.Query() {
				sent = append(sent, k)
			}
			mu.Unlock()
		}
		c.Handler().ServeHTTP(rw, r)
	}))
	defer srv.Close()
	env := map[string]string{}
	for _, kv := range c.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	op := vercel.NewEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		httpclient.New(httpclient.Config{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}))
	req := adapter.Request{Line: "env", Params: map[string]any{"values": map[string]any{"A": "1"}, "target": "preview", "branch": "feat/login"},
		Provider: adapter.Provider{"project": "web", "team": "team_1"}, Run: run}
	if _, err := op.Apply(context.Background(), req, nil, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(sent) == 0 {
		t.Fatal("no env listing was sent")
	}
	for _, k := range sent {
		if !declared[k] {
			t.Errorf("the env listing sends %q, which the description does not declare", k)
		}
	}
}

// The variables a line creates carry the scope's mark in their comment;
// an update writes it on a variable with no comment and keeps a person's;
// CheckMark accepts the scope's mark and no comment, and refuses another
// scope's mark and a person's comment.
func TestScopeMarkInTheComment(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	for _, e := range []sim.VercelEnv{
		{Key: "BARE", Value: "old", Target: []string{"preview"}, GitBranch: "feat/login"},
		{Key: "NOTED", Value: "old", Target: []string{"preview"}, GitBranch: "feat/login", Comment: "rotated by ops"},
	} {
		if _, err := w.Cloud.Console.SeedVercelEnv("web", e); err != nil {
			t.Fatal(err)
		}
	}
	op := w.op()
	req := request("web", map[string]any{"values": map[string]any{"NEW": "1", "BARE": "2", "NOTED": "3"}})
	live, err := op.Read(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Apply(ctx, req, live, func(...string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	comments := map[string]string{}
	for _, p := range w.Cloud.State().Vercel {
		for _, e := range p.Envs {
			comments[e.Key] = e.Comment
		}
	}
	want := map[string]string{"NEW": "sponson preview/pr-7", "BARE": "sponson preview/pr-7", "NOTED": "rotated by ops"}
	for k, v := range want {
		if comments[k] != v {
			t.Errorf("%s is commented %q, want %q", k, comments[k], v)
		}
	}
	p := adapter.Provider{"project": "web"}
	for _, tc := range []struct {
		key string
		run adapter.RunCtx
		ok  bool
	}{
		{"env:preview:feat/login:NEW", run, true},
		{"env:preview:feat/login:NEW", adapter.RunCtx{Env: "preview", Scope: "pr-8", Branch: "feat/login"}, false},
		{"env:preview:feat/login:NOTED", run, false},
		{"env:preview:feat/login:GONE", run, true},
	} {
		err := op.CheckMark(ctx, p, tc.run, adapter.Resource{Key: tc.key})
		if (err == nil) != tc.ok || (err != nil && errs.CodeOf(err) != errs.RESOURCE_UNMARKED) {
			t.Errorf("%s in %s: %v, want marked %v", tc.key, tc.run.Scope, err, tc.ok)
		}
	}
}
