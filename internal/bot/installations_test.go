package bot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/sim"
)

// vercelPlan writes one preview variable of the Vercel project "web" per
// scope, through the real Vercel adapter.
const vercelPlan = `version: 1
providers:
  vercel: { project: web }
changes:
  - id: env
    adapter: vercel
    op: env
    target: preview
    branch: "*"
    values:
      SCOPE: "${ctx.scope}"
`

// tokenCloud is a fake cloud (pkg/sim) that accepts one Vercel token and
// records the Authorization header of every request it is sent.
type tokenCloud struct {
	cloud *sim.Cloud
	url   string
	mu    sync.Mutex
	auth  []string
}

func newTokenCloud(t *testing.T, token string) *tokenCloud {
	t.Helper()
	c := &tokenCloud{cloud: sim.New(sim.Options{Seed: 23, Tokens: sim.Tokens{Vercel: token}})}
	c.cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	h := c.cloud.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.auth = append(c.auth, r.Header.Get("Authorization"))
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// dotenv is the cloud's environment as a credentials file.
func (c *tokenCloud) dotenv() string { return strings.Join(c.cloud.Env(c.url), "\n") + "\n" }

func (c *tokenCloud) tokens() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.auth...)
}

func (c *tokenCloud) deletes() int {
	n := 0
	for _, w := range c.cloud.Writes() {
		if w.Method == http.MethodDelete && w.Status < 300 {
			n++
		}
	}
	return n
}

// credsWorld is the App world with the built-in adapters (no fake ops)
// and SPONSON_CREDENTIALS_DIR set.
func credsWorld(t *testing.T) (*appWorld, string) {
	t.Helper()
	w := newAppWorld(t)
	dir := t.TempDir()
	w.ws.Ops = nil
	w.ws.CredentialsDir, w.ws.ReadFile = dir, os.ReadFile
	// The process environment has a Vercel token of its own: with the
	// directory set it must never be used.
	w.ws.LookupEnv = func(k string) (string, bool) {
		if k == "VERCEL_TOKEN" {
			return "process-token", true
		}
		return "", false
	}
	return w, dir
}

func (w *appWorld) applyPlan(r Repository, env string, pr int, branch string) {
	w.t.Helper()
	ws, err := w.ws.Open(context.Background(), r)
	if err != nil {
		w.t.Fatal(err)
	}
	defer ws.close()
	if ws.Refused != nil {
		w.t.Fatalf("%s: %v", r.FullName(), ws.Refused)
	}
	p, err := plan.Parse("release.plan.yaml", []byte(vercelPlan))
	if err != nil {
		w.t.Fatal(err)
	}
	c := scope.Ctx{Env: env, Scope: scope.PRScope(pr), PR: scope.PR{Number: &pr}, Git: scope.Git{Branch: branch}, Repo: r.FullName()}
	if _, err := ws.Engine.Apply(context.Background(), p, c, engine.Options{Env: env}); err != nil {
		w.t.Fatalf("apply %s %s: %v", r.FullName(), c.Scope, err)
	}
}

// Two installations, each with its own credentials file (one for the
// repository, one for the installation's account), against two clouds
// that each accept only their own token: every request either cloud gets,
// the applies' and the sweep's destroys alike, carries that cloud's token,
// never the other's nor the process environment's.
func TestInstallationsNeverShareCredentials(t *testing.T) {
	w, dir := credsWorld(t)
	const shop = "acme/shop"
	if err := w.gh.AddRepo(githubtest.Repo{FullName: shop, Branches: map[string]string{"feat": "work on feat"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.AddInstallation(githubtest.Installation{ID: 2, App: 4242, Account: "acme", Repos: []string{shop},
		Permissions: map[string]string{"contents": "write", "pull_requests": "write", "actions": "read", "metadata": "read"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: shop, Number: 5, Head: githubtest.Ref{Ref: "feat"}}); err != nil {
		t.Fatal(err)
	}
	a, b := newTokenCloud(t, "token-of-codertocat"), newTokenCloud(t, "token-of-acme")
	writeFile(t, filepath.Join(dir, "Codertocat", "Hello-World.env"), a.dotenv())
	writeFile(t, filepath.Join(dir, "acme.env"), b.dotenv())

	logRedactor := redact.New()
	w.ws.Redact = func(environ []string) { logRedactor.RegisterEnv(environ) }

	hw, sh := Repository{Installation: 1, Owner: "Codertocat", Name: "Hello-World"}, Repository{Installation: 2, Owner: "acme", Name: "shop"}
	w.applyPlan(hw, "preview", 2, "changes")
	w.applyPlan(sh, "preview", 5, "feat")
	for _, pr := range []struct {
		repo string
		n    int
	}{{hello, 2}, {shop, 5}} {
		if err := w.gh.SetPullState(pr.repo, pr.n, "closed", false); err != nil {
			t.Fatal(err)
		}
	}
	reps := w.bot.SweepAll(context.Background())
	if len(reps) != 2 {
		t.Fatalf("reports: %+v", reps)
	}
	for _, rep := range reps {
		if rep.Count(sweep.ClosedPR) != 1 {
			t.Errorf("%s: findings %+v", rep.Repo, rep.Findings)
		}
	}
	for name, c := range map[string]*tokenCloud{"Codertocat's": a, "acme's": b} {
		toks := c.tokens()
		if len(toks) == 0 || c.deletes() != 1 {
			t.Errorf("%s cloud: %d requests, %d deletes; want the apply's and one destroy", name, len(toks), c.deletes())
		}
		want := "Bearer " + c.cloud.Tokens().Vercel
		for _, tok := range toks {
			if tok != want {
				t.Errorf("%s cloud was sent %q, want only %q", name, tok, want)
			}
		}
	}
	// The files' tokens are secrets of the process's log as well.
	for _, tok := range []string{"token-of-codertocat", "token-of-acme"} {
		if got := logRedactor.String("sent " + tok); strings.Contains(got, tok) {
			t.Errorf("the log's redactor does not know %s: %q", tok, got)
		}
	}
	if got := testutil.ToFloat64(w.bot.Metrics.CredentialsRefused.WithLabelValues("sweep", "CREDENTIALS_NOT_FOUND")); got != 0 {
		t.Errorf("refusals: %v", got)
	}
}

// A repository whose credentials file is gone (another account's is
// there) is refused, not served with a guess: the pull request's close
// destroys nothing, says why in the environment's comment, and counts the
// refusal; the sweep refuses it too.
func TestRepositoryWithoutCredentialsIsRefused(t *testing.T) {
	w, dir := credsWorld(t)
	a := newTokenCloud(t, "token-of-codertocat")
	own := filepath.Join(dir, "Codertocat", "Hello-World.env")
	writeFile(t, own, a.dotenv())
	writeFile(t, filepath.Join(dir, "acme.env"), a.dotenv())
	w.applyPlan(Repository{Installation: 1, Owner: "Codertocat", Name: "Hello-World"}, "preview", 2, "changes")
	if err := os.Remove(own); err != nil {
		t.Fatal(err)
	}
	before := len(a.tokens())

	if err := w.gh.SetPullState(hello, 2, "closed", false); err != nil {
		t.Fatal(err)
	}
	if code := w.post("pull_request", "close-1", fixture(t, "pull_request/closed.payload.json")); code != http.StatusAccepted {
		t.Fatalf("closed: %d", code)
	}
	w.idle()
	cs := w.gh.Comments(hello, 2)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "teardown refused") || !strings.Contains(cs[0].Body, "CREDENTIALS_NOT_FOUND") ||
		!strings.Contains(cs[0].Body, "Hello-World.env") || !strings.Contains(cs[0].Body, "Codertocat.env") {
		t.Fatalf("comments: %+v", cs)
	}
	if got := testutil.ToFloat64(w.bot.Metrics.CredentialsRefused.WithLabelValues("teardown", "CREDENTIALS_NOT_FOUND")); got != 1 {
		t.Errorf("teardown refusals counted: %v", got)
	}
	w.bot.SweepAll(context.Background())
	if got := testutil.ToFloat64(w.bot.Metrics.CredentialsRefused.WithLabelValues("sweep", "CREDENTIALS_NOT_FOUND")); got != 1 {
		t.Errorf("sweep refusals counted: %v", got)
	}
	if n := len(a.tokens()); n != before || a.deletes() != 0 {
		t.Errorf("the cloud was sent %d requests after the file went (%d deletes)", n-before, a.deletes())
	}
	if r := w.receipt("preview", "pr-2"); r == nil || r.Closed != nil || len(r.Ledger) != 1 {
		t.Errorf("the receipt changed: %+v", r)
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}
