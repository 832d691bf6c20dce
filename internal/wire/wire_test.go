package wire_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

const testPlan = `version: 1
environments: [preview]
changes:
  - id: app
    adapter: fake
    op: object
    name: app-${ctx.scope}
    fields:
      api_key: { secret: "env://APP_KEY" }
  - id: cb
    adapter: fake
    op: item
    list: callbacks
    item: https://${ctx.scope}.example.dev/cb
    depends_on: [app]
`

const appKey = "k3y-0f-the-app-that-must-never-leak"

// github is a GitHub-shaped git host in front of a real `git http-backend`:
// the repository owner/name is served at /<owner>/<name>.git, as GitHub and
// GitHub Enterprise Server lay it out, and every request must carry basic
// auth with the user x-access-token and a token valid() accepts.
type github struct {
	URL    string // the server, as GITHUB_SERVER_URL
	bare   string // the bare repository's directory
	valid  func(string) bool
	denied atomic.Int64
}

func newGitHub(t *testing.T, repo string, valid func(string) bool) *github {
	t.Helper()
	dir, _ := gittest.NewBareRepo(t)
	backend, err := url.Parse(gittest.ServeHTTP(t, dir)) // http://127.0.0.1:<port>/remote.git
	if err != nil {
		t.Fatal(err)
	}
	g := &github{bare: dir, valid: valid}
	prefix := "/" + repo + ".git"
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: backend.Scheme, Host: backend.Host})
		r.Out.URL.Path = backend.Path + strings.TrimPrefix(r.In.URL.Path, prefix)
		r.Out.Header.Del("Authorization")
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, prefix+"/") {
			http.NotFound(w, r)
			return
		}
		user, pass, ok := r.BasicAuth()
		if !ok || user != gitstore.TokenUser || !g.valid(pass) {
			g.denied.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func mustPlan(t *testing.T) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("release.plan.yaml", []byte(testPlan))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func prCtx(n int, branch string) scope.Ctx {
	return scope.Ctx{Env: "preview", Scope: fmt.Sprintf("pr-%d", n), Git: scope.Git{Branch: branch, SHA: strings.Repeat("a", 40), ShortSHA: "aaaaaaa"}, PR: scope.PR{Number: &n}}
}

// The Action's wiring: receipts on ${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}.git
// with the github_token, an owner that names the repository and the
// workflow run, the default lock wait; an apply lands its receipt on the
// repository's receipt branch.
func TestActionConfigAppliesOnTheRunsRepository(t *testing.T) {
	const token = "ghs_workflowTokenOfThisRun0123456789"
	gh := newGitHub(t, "acme/shop", func(p string) bool { return p == token })
	env := map[string]string{
		"GITHUB_SERVER_URL": gh.URL, "GITHUB_REPOSITORY": "acme/shop",
		"GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "3", "GITHUB_ACTOR": "octocat",
	}
	cfg, err := wire.ActionConfig(getenv(env), token)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Remote != gh.URL+"/acme/shop.git" || cfg.Store.Kind != wire.StoreGit {
		t.Fatalf("store = %+v", cfg.Store)
	}
	if cfg.LockWait != wire.DefaultActionLockWait {
		t.Errorf("lock wait = %v, want %v", cfg.LockWait, wire.DefaultActionLockWait)
	}
	want := wire.Identity{Kind: receipt.KindAction, Actor: "octocat", Repository: "acme/shop", GitHubRunID: 4242, GitHubRunAttempt: 3}
	got := cfg.Identity
	got.Host, got.PID = "", 0
	if got != want {
		t.Errorf("identity = %+v, want %+v", got, want)
	}

	cloud := optest.New()
	cfg.Ops = cloud.Registry()
	cfg.LookupEnv = lookup(map[string]string{"APP_KEY": appKey})
	cfg.Dir = t.TempDir()
	run, err := wire.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if run.Store.Git() == nil || run.Store.Location != gh.URL+"/acme/shop.git" {
		t.Fatalf("store %s at %s", run.Store.Kind, run.Store.Location)
	}
	// The token is a secret of the run.
	if s := run.Redactor.String("token " + token); strings.Contains(s, token) {
		t.Errorf("the token is not redacted: %s", s)
	}

	o := run.Options(receipt.OpApply)
	if o.Owner.RunID == "" || o.Owner.Repository != "acme/shop" || o.Owner.GitHubRunID != 4242 || o.Owner.GitHubRunAttempt != 3 || o.Owner.Kind != receipt.KindAction {
		t.Fatalf("owner = %+v", o.Owner)
	}
	if o2 := run.Options(receipt.OpApply); o2.Owner.RunID == o.Owner.RunID {
		t.Errorf("two runs share the run id %s", o.Owner.RunID)
	}
	res, err := run.Engine.Apply(context.Background(), mustPlan(t), prCtx(7, "feat/x"), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Receipt.Status != receipt.StatusComplete || len(res.Receipt.Ledger) != 2 {
		t.Fatalf("receipt %s with %d entries", res.Receipt.Status, len(res.Receipt.Ledger))
	}
	refs := gittest.Refs(t, gh.bare, "refs/heads/sponson-receipts/")
	if _, ok := refs["refs/heads/sponson-receipts/preview/pr-7"]; !ok {
		t.Fatalf("no receipt branch on the remote: %v", refs)
	}
	if gh.denied.Load() != 0 {
		t.Errorf("%d requests went out without the token", gh.denied.Load())
	}
}

// A lease the Action holds names its repository and workflow run, on the
// remote itself, and the run it blocks says so.
func TestActionOwnerIsRecordedInTheLease(t *testing.T) {
	const token = "ghs_anotherWorkflowToken9876543210"
	gh := newGitHub(t, "acme/shop", func(p string) bool { return p == token })
	env := map[string]string{"GITHUB_SERVER_URL": gh.URL, "GITHUB_REPOSITORY": "acme/shop", "GITHUB_RUN_ID": "99", "GITHUB_RUN_ATTEMPT": "2"}
	cfg, err := wire.ActionConfig(getenv(env), token)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Ops = optest.New().Registry()
	cfg.LockWait = 0                                             // fail at once: this test is about who blocks
	cfg.LookupEnv = lookup(map[string]string{"APP_KEY": appKey}) // the plan's secret resolves: the lease is what blocks
	holder, err := wire.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	owner := holder.Options(receipt.OpApply).Owner
	if _, _, err := holder.Store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-5"), owner, time.Hour); err != nil {
		t.Fatal(err)
	}
	lock := gittest.Run(t, gh.bare, "show", "refs/heads/sponson-receipts/preview/pr-5:lock.json")
	for _, want := range []string{`"repository": "acme/shop"`, `"github_run_id": 99`, `"github_run_attempt": 2`, `"kind": "action"`, `"run_id": "` + owner.RunID + `"`} {
		if !strings.Contains(lock, want) {
			t.Errorf("lock.json lacks %s:\n%s", want, lock)
		}
	}

	other, err := wire.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Engine.Apply(context.Background(), mustPlan(t), prCtx(5, "feat/y"), other.Options(receipt.OpApply))
	if errs.CodeOf(err) != errs.LOCK_HELD {
		t.Fatalf("apply under a held lease: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "GitHub run 99 attempt 2 of acme/shop") {
		t.Errorf("LOCK_HELD does not name the holder's run: %s", msg)
	}

	// The Action's HolderGone hook reaches the engine: a holder whose
	// workflow run is over is taken over at once.
	var asked receipt.Owner
	cfg.Hooks.HolderGone = func(_ context.Context, held receipt.Lease) (string, error) {
		asked = held.Owner
		return "its workflow run completed", nil
	}
	cfg.LookupEnv = lookup(map[string]string{"APP_KEY": appKey})
	third, err := wire.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := third.Engine.Apply(context.Background(), mustPlan(t), prCtx(5, "feat/y"), third.Options(receipt.OpApply))
	if err != nil {
		t.Fatalf("apply after the holder's run ended: %v", err)
	}
	if asked.GitHubRunID != 99 || asked.Repository != "acme/shop" || res.Receipt.LockPreempted == nil {
		t.Errorf("asked about %+v; preempted %+v", asked, res.Receipt.LockPreempted)
	}
}

// The bot's wiring: the git credential is a source asked on every request,
// so an installation token that is replaced keeps working on a store kept
// open for many runs, and the new token is redacted too.
func TestTokenSourceRefreshes(t *testing.T) {
	var mu sync.Mutex
	current := "ghs_installationTokenNumberOne0000"
	valid := func(p string) bool { mu.Lock(); defer mu.Unlock(); return p == current }
	gh := newGitHub(t, "acme/api", valid)
	var asked atomic.Int64
	src := wire.TokenFunc(func(context.Context) (string, error) {
		asked.Add(1)
		mu.Lock()
		defer mu.Unlock()
		return current, nil
	})
	ctx := context.Background()
	st, err := wire.OpenStore(ctx, wire.GitHubStore(gh.URL, "acme/api", src), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cloud := optest.New()
	cfg := wire.Config{Identity: wire.Identity{Kind: receipt.KindBot, Repository: "acme/api"}, Ops: cloud.Registry(), Dir: t.TempDir(),
		LookupEnv: lookup(map[string]string{"APP_KEY": appKey})}
	first, err := wire.Build(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Engine.Apply(ctx, mustPlan(t), prCtx(1, "a"), first.Options(receipt.OpApply)); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	before := asked.Load()
	if before < 2 {
		t.Fatalf("the source was asked %d times: it must be asked for every request", before)
	}

	// The installation token is replaced; the old one stops working.
	mu.Lock()
	current = "ghs_installationTokenNumberTwo1111"
	mu.Unlock()
	second, err := wire.Build(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := second.DestroyScope(ctx, "preview", "pr-1", second.Options(receipt.OpDestroy))
	if err != nil {
		t.Fatalf("destroy with the refreshed token: %v", err)
	}
	if !res.Receipt.Destroyed || len(cloud.Keys()) != 0 {
		t.Errorf("destroyed %v, left in the cloud %v", res.Receipt.Destroyed, cloud.Keys())
	}
	if gh.denied.Load() != 0 {
		t.Errorf("%d requests carried a stale or no token", gh.denied.Load())
	}
	if s := second.Redactor.String("ghs_installationTokenNumberTwo1111"); strings.Contains(s, "NumberTwo") {
		t.Errorf("the refreshed token is not redacted: %s", s)
	}
	first.Close()
	second.Close()

	scopes, err := st.Scopes(ctx)
	if err != nil || len(scopes) != 1 || scopes[0].Scope != "pr-1" {
		t.Fatalf("scopes = %v, %v", scopes, err)
	}
}

// A source that cannot mint a token fails the store's opening with a coded
// error, before any request goes out unauthenticated; a token the remote
// refuses is STORE_PERMISSION.
func TestTokenSourceFailures(t *testing.T) {
	gh := newGitHub(t, "acme/api", func(p string) bool { return p == "right" })
	ctx := context.Background()
	broken := wire.TokenFunc(func(context.Context) (string, error) { return "", errors.New("the app's key was revoked") })
	_, err := wire.OpenStore(ctx, wire.GitHubStore(gh.URL, "acme/api", broken), "", nil)
	if errs.CodeOf(err) != errs.STORE_PERMISSION {
		t.Fatalf("broken source: %v", err)
	}
	if gh.denied.Load() != 0 {
		t.Errorf("a request went out without a token")
	}
	_, err = wire.OpenStore(ctx, wire.GitHubStore(gh.URL, "acme/api", wire.StaticToken("wrong")), "", nil)
	if c := errs.CodeOf(err); c != errs.STORE_PERMISSION && c != errs.STORE_UNAVAILABLE {
		t.Fatalf("wrong token: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "wrong") {
		t.Errorf("the token leaked into the error: %v", err)
	}
}

// Choose is the CLI's precedence: flags, environment, the plan's
// receipts:, then a known remote, else the local store with a warning.
func TestChoose(t *testing.T) {
	dir := t.TempDir()
	origin := func(u string) func() string { return func() string { return u } }
	cases := []struct {
		name      string
		c         wire.Choice
		env       map[string]string
		kind      string
		remote    string
		token     bool
		warn      errs.Code
		errCode   errs.Code
		whyPrefix string
	}{
		{name: "nothing known: local with a warning", kind: wire.StoreLocal, warn: errs.LOCAL_RECEIPTS, whyPrefix: "no receipts remote"},
		{name: "--receipts local beats a remote", c: wire.Choice{Kind: "local", Remote: "file:///r.git"}, kind: wire.StoreLocal, whyPrefix: "--receipts"},
		{name: "flag remote", c: wire.Choice{Remote: "file:///r.git"}, kind: wire.StoreGit, remote: "file:///r.git", whyPrefix: "the receipts remote comes from --receipts-remote"},
		{name: "env remote", env: map[string]string{"SPONSON_RECEIPTS_REMOTE": "https://git.example/r.git", "SPONSON_GIT_TOKEN": "t0k"}, kind: wire.StoreGit, remote: "https://git.example/r.git", token: true},
		{name: "flag beats env", c: wire.Choice{Remote: "file:///a.git"}, env: map[string]string{"SPONSON_RECEIPTS_REMOTE": "file:///b.git"}, kind: wire.StoreGit, remote: "file:///a.git"},
		{name: "a GitHub Actions run's repository", env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/shop", "GITHUB_SERVER_URL": "https://ghe.example/", "GITHUB_TOKEN": "ghs_x"}, c: wire.Choice{Origin: origin("git@github.com:other/repo.git")}, kind: wire.StoreGit, remote: "https://ghe.example/acme/shop.git", token: true, whyPrefix: "the receipts remote comes from GITHUB_REPOSITORY"},
		{name: "origin path", c: wire.Choice{Origin: origin("./remote.git"), WorkDir: dir}, kind: wire.StoreGit, remote: "file://" + dir + "/remote.git"},
		{name: "ssh origin with a token", c: wire.Choice{Origin: origin("git@github.com:acme/shop.git")}, env: map[string]string{"GITHUB_TOKEN": "ghs_y"}, kind: wire.StoreGit, remote: "https://github.com/acme/shop.git", token: true},
		{name: "ssh origin without a token: local", c: wire.Choice{Origin: origin("git@github.com:acme/shop.git")}, kind: wire.StoreLocal, warn: errs.LOCAL_RECEIPTS},
		{name: "the plan's receipts: local", c: wire.Choice{PlanReceipts: "local", Remote: "file:///r.git"}, kind: wire.StoreLocal, whyPrefix: "the plan's receipts:"},
		{name: "SPONSON_RECEIPTS beats the plan", c: wire.Choice{PlanReceipts: "local", Remote: "file:///r.git"}, env: map[string]string{"SPONSON_RECEIPTS": "git-branch"}, kind: wire.StoreGit, remote: "file:///r.git", whyPrefix: "SPONSON_RECEIPTS"},
		{name: "git-branch without a remote", c: wire.Choice{Kind: "git-branch"}, errCode: errs.USAGE},
		{name: "unknown kind", c: wire.Choice{Kind: "s3"}, errCode: errs.USAGE},
		{name: "bad budget", c: wire.Choice{Remote: "file:///r.git"}, env: map[string]string{"SPONSON_STORE_BUDGET": "soon"}, errCode: errs.USAGE},
		{name: "ssh flag remote without a token", c: wire.Choice{Remote: "ssh://git@github.com/acme/shop.git"}, errCode: errs.USAGE},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Getenv = getenv(tc.env)
			cfg, err := wire.Choose(tc.c)
			if tc.errCode != "" {
				if errs.CodeOf(err) != tc.errCode {
					t.Fatalf("err = %v, want %s", err, tc.errCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Kind != tc.kind || cfg.Remote != tc.remote {
				t.Errorf("got %s %q, want %s %q", cfg.Kind, cfg.Remote, tc.kind, tc.remote)
			}
			if (cfg.Token != nil) != tc.token {
				t.Errorf("token set = %v, want %v", cfg.Token != nil, tc.token)
			}
			var codes []errs.Code
			for _, w := range cfg.Warnings {
				codes = append(codes, w.Code)
			}
			if tc.warn == "" && len(codes) > 0 || tc.warn != "" && (len(codes) == 0 || codes[len(codes)-1] != tc.warn) {
				t.Errorf("warnings = %v, want %q", codes, tc.warn)
			}
			if !strings.HasPrefix(cfg.Why, tc.whyPrefix) {
				t.Errorf("why = %q, want it to start %q", cfg.Why, tc.whyPrefix)
			}
		})
	}
}

// The chosen store opens: local in its folder, git-branch on a real
// file:// remote; the local store cannot prune.
func TestOpenStoreKinds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	local, err := wire.OpenStore(ctx, wire.StoreConfig{Kind: wire.StoreLocal, Dir: "receipts"}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if local.Git() != nil || local.Location != "receipts" {
		t.Errorf("local store: %+v", local)
	}
	if _, err := local.Prune(ctx, time.Hour); errs.CodeOf(err) != errs.USAGE {
		t.Errorf("local prune: %v", err)
	}
	bare, fileURL := gittest.NewBareRepo(t)
	git, err := wire.OpenStore(ctx, wire.StoreConfig{Kind: wire.StoreGit, Remote: fileURL, Token: wire.StaticToken("ignored-for-file")}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if git.Git() == nil || git.Location != fileURL {
		t.Fatalf("git store: %+v", git)
	}
	run, err := wire.Build(git, wire.Config{Identity: wire.IdentityFromEnv(receipt.KindCLI, getenv(nil)), Ops: optest.New().Registry(), Dir: dir,
		LookupEnv: lookup(map[string]string{"APP_KEY": appKey})})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if _, err := run.Engine.Apply(ctx, mustPlan(t), prCtx(2, "b"), run.Options(receipt.OpApply)); err != nil {
		t.Fatal(err)
	}
	if _, ok := gittest.Refs(t, bare, "refs/heads/sponson-receipts/")["refs/heads/sponson-receipts/preview/pr-2"]; !ok {
		t.Error("no receipt branch on the file:// remote")
	}
	pruned, err := git.Prune(ctx, time.Hour)
	if err != nil || len(pruned) != 0 {
		t.Errorf("prune of a live scope: %v, %v", pruned, err)
	}
}

// SPONSON_LEASE_TTL is honoured and checked.
func TestLeaseTTL(t *testing.T) {
	st, err := wire.OpenStore(context.Background(), wire.StoreConfig{Kind: wire.StoreLocal}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := wire.Build(st, wire.Config{LookupEnv: lookup(map[string]string{"SPONSON_LEASE_TTL": "2m"}), Ops: optest.New().Registry()})
	if err != nil || run.Engine.LeaseTTL != 2*time.Minute {
		t.Fatalf("ttl: %v, %v", run, err)
	}
	if _, err := wire.Build(st, wire.Config{LookupEnv: lookup(map[string]string{"SPONSON_LEASE_TTL": "1ms"}), Ops: optest.New().Registry()}); errs.CodeOf(err) != errs.USAGE {
		t.Errorf("1ms ttl: %v", err)
	}
	run, err = wire.Build(st, wire.Config{LeaseTTL: time.Hour, LookupEnv: lookup(map[string]string{"SPONSON_LEASE_TTL": "junk"}), Ops: optest.New().Registry()})
	if err != nil || run.Engine.LeaseTTL != time.Hour {
		t.Errorf("explicit ttl: %v", err)
	}
}

func TestActionConfigNeedsARepository(t *testing.T) {
	if _, err := wire.ActionConfig(getenv(nil), "t"); errs.CodeOf(err) != errs.USAGE {
		t.Fatalf("err = %v", err)
	}
}

// The checker refuses, with no store, what a run built from the same
// configuration refuses before it reads anything: an env:// secret that
// is not set; with it set, it passes.
func TestCheckerRefusesWhatTheRunRefuses(t *testing.T) {
	p, c := mustPlan(t), prCtx(3, "feat")
	cfg := wire.Config{LookupEnv: lookup(nil), Ops: optest.New().Registry(), Dir: t.TempDir()}
	err := wire.Checker(cfg).Check(p, c, "preview")
	if errs.CodeOf(err) != errs.SECRET_UNRESOLVED {
		t.Fatalf("checker with APP_KEY unset: %v, want SECRET_UNRESOLVED", err)
	}
	cfg.LookupEnv = lookup(map[string]string{"APP_KEY": "k-123456"})
	if err := wire.Checker(cfg).Check(p, c, "preview"); err != nil {
		t.Fatalf("checker with APP_KEY set: %v", err)
	}
}
