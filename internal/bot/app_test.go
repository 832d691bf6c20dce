package bot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

const hello = "Codertocat/Hello-World"

// appWorld is the bot as it runs in production — a GitHub App (JWT,
// installation tokens that expire), receipts on the repository's own
// branches over git smart HTTP — against the OpenAPI-validated fake GitHub,
// with the in-memory fake cloud as the providers.
type appWorld struct {
	t     *testing.T
	tm    *enginetest.Time
	gh    *githubtest.Server
	app   *github.App
	key   []byte // the App's private key (PEM)
	cloud *optest.Cloud
	ws    *AppWorkspaces
	bot   *Bot
	srv   *httptest.Server
}

func newAppWorld(t *testing.T) *appWorld {
	t.Helper()
	w := &appWorld{t: t, tm: enginetest.NewTime(time.Now().UTC().Truncate(time.Second)), cloud: optest.New()}
	w.gh = githubtest.Start(t, w.tm)
	key, err := w.gh.AddApp(githubtest.App{ID: 4242, Slug: "sponson-test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.gh.AddRepo(githubtest.Repo{FullName: hello, Branches: map[string]string{"changes": "work on changes", "feat/b": "work on b"}}); err != nil {
		t.Fatal(err)
	}
	// The payloads' installation id is 1.
	if err := w.gh.AddInstallation(githubtest.Installation{ID: 1, App: 4242, Account: "Codertocat", Repos: []string{hello},
		Permissions: map[string]string{"contents": "write", "pull_requests": "write", "actions": "read", "metadata": "read"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: hello, Number: 2, Head: githubtest.Ref{Ref: "changes"}}); err != nil {
		t.Fatal(err)
	}
	w.key = key
	w.app, err = github.NewApp(github.Config{APIURL: w.gh.APIURL, ServerURL: w.gh.URL, Clock: w.tm}, 4242, key)
	if err != nil {
		t.Fatal(err)
	}
	info, err := w.app.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w.ws = &AppWorkspaces{App: w.app, ServerURL: w.gh.URL, Clock: w.tm, Ops: w.cloud.Registry(), Dir: t.TempDir(),
		Identity: wire.Identity{Kind: receipt.KindBot, Actor: info.Login()}}
	q := &Queue{Cap: 100, Clock: w.tm}
	w.bot = &Bot{Secret: testSecret, Identity: info.Login(), Workspace: w.ws, Installed: AppInstallations{App: w.app},
		Clock: enginetest.Yielding(w.tm), Queue: q, Dedup: &Dedup{Clock: w.tm}, Metrics: NewMetrics(q, func() GitHubCounters { return w.app }),
		Sweeper: &sweep.Sweeper{Clock: w.tm}, Ready: w.app.Check, Workers: 2}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx, 2, w.bot.Handle) }()
	w.srv = httptest.NewServer(w.bot.Handler())
	t.Cleanup(func() { w.srv.Close(); cancel(); <-done })
	return w
}

func (w *appWorld) post(event, id string, body []byte) int {
	w.t.Helper()
	tw := &testWorld{t: w.t, srv: w.srv}
	code, _, resp := tw.post(event, id, body)
	if code >= 300 {
		w.t.Logf("%s %s: %d %s", event, id, code, resp)
	}
	return code
}

func (w *appWorld) idle() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.bot.Queue.Idle(ctx); err != nil {
		w.t.Fatal(err)
	}
}

// apply applies testPlan to a scope of the repository through the same
// store the bot uses (as an agent or a workflow would).
func (w *appWorld) apply(env, sc, branch string) {
	w.t.Helper()
	ws, err := w.ws.Open(context.Background(), Repository{Installation: 1, Owner: "Codertocat", Name: "Hello-World"})
	if err != nil {
		w.t.Fatal(err)
	}
	defer ws.close()
	p, err := plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(testPlan, "\n")))
	if err != nil {
		w.t.Fatal(err)
	}
	c := scope.Ctx{Env: env, Scope: sc, Git: scope.Git{Branch: branch}, Repo: hello}
	if _, err := ws.Engine.Apply(context.Background(), p, c, engine.Options{Env: env}); err != nil {
		w.t.Fatalf("apply %s/%s: %v", env, sc, err)
	}
}

func (w *appWorld) receipt(env, sc string) *receipt.Receipt {
	w.t.Helper()
	ws, err := w.ws.Open(context.Background(), Repository{Installation: 1, Owner: "Codertocat", Name: "Hello-World"})
	if err != nil {
		w.t.Fatal(err)
	}
	defer ws.close()
	r, _, err := ws.Store.Read(context.Background(), env, sc)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// The whole lifecycle against the fake GitHub: the real opened and closed
// payloads of pull request #2 (installation 1), the App's JWT and
// installation token, receipts pushed to the repository's branches, the
// bot's comment written as sponson-test[bot] and edited in place.
func TestAppLifecycleAgainstFakeGitHub(t *testing.T) {
	w := newAppWorld(t)
	w.apply("preview", "branch-changes", "changes")

	if code := w.post("pull_request", "open-1", fixture(t, "pull_request/opened.payload.json")); code != http.StatusAccepted {
		t.Fatalf("opened: %d", code)
	}
	w.idle()
	if r := w.receipt("preview", "pr-2"); r == nil || len(r.Ledger) != 2 {
		t.Fatalf("pr-2 after open: %+v", r)
	}
	if refs := w.gh.Refs(hello, "refs/heads/sponson-receipts/"); len(refs) < 2 {
		t.Errorf("receipt branches on the repository: %v", refs)
	}
	cs := w.gh.Comments(hello, 2)
	if len(cs) != 1 || cs[0].Author.Login != "sponson-test[bot]" || !strings.Contains(cs[0].Body, "Inherited 2 resources") {
		t.Fatalf("comments after open: %+v", cs)
	}

	// An hour and a half later the first installation token has expired:
	// the client gets a new one by itself.
	w.tm.Advance(90 * time.Minute)
	if err := w.gh.SetPullState(hello, 2, "closed", false); err != nil {
		t.Fatal(err)
	}
	if code := w.post("pull_request", "close-1", fixture(t, "pull_request/closed.payload.json")); code != http.StatusAccepted {
		t.Fatalf("closed: %d", code)
	}
	w.idle()
	if keys := w.cloud.Keys(); len(keys) != 0 {
		t.Fatalf("left after close: %v", keys)
	}
	r := w.receipt("preview", "pr-2")
	if r.Closed == nil || r.Closed.By != "sponson-test[bot]" || len(r.Ledger) != 0 {
		t.Fatalf("pr-2 after close: %+v", r)
	}
	cs = w.gh.Comments(hello, 2)
	if len(cs) != 1 || len(cs[0].Edits) != 1 || !strings.Contains(cs[0].Body, "torn down") || !strings.Contains(cs[0].Body, "Destroyed (2)") {
		t.Fatalf("comments after close (one, edited in place): %+v", cs)
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}

// A close the bot never heard of: the sweep (installations listed with the
// App's JWT, each repository with its installation's token) asks GitHub,
// finds the pull request closed, and destroys its scope; a revoked token
// is replaced on the 401.
func TestAppSweepAgainstFakeGitHub(t *testing.T) {
	w := newAppWorld(t)
	w.apply("preview", "pr-2", "changes")
	w.apply("preview", "branch-feat-b", "feat/b")
	if err := w.gh.SetPullState(hello, 2, "closed", true); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.DeleteBranch(hello, "feat/b"); err != nil {
		t.Fatal(err)
	}
	w.gh.ExpireTokens(1)
	reps := w.bot.SweepAll(context.Background())
	if len(reps) != 1 || reps[0].Repo != hello {
		t.Fatalf("reports: %+v", reps)
	}
	if got := reps[0].Count(sweep.ClosedPR) + reps[0].Count(sweep.BranchGone); got != 2 {
		t.Fatalf("findings: %+v", reps[0].Findings)
	}
	if keys := w.cloud.Keys(); len(keys) != 0 {
		t.Fatalf("left after the sweep: %v", keys)
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
	// /readyz asks GitHub for /app with a freshly signed JWT.
	resp, err := http.Get(w.srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/readyz: %d", resp.StatusCode)
	}
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Two replicas of the bot (two processes: two App clients, each with its
// own installation token) write pull request #2's comment at once, in the
// worst interleaving: replica B lists the comments and finds none, replica
// A then lists, finds none and creates its comment, and B creates its own.
// Both see the other's afterwards; one comment is left — the oldest, A's,
// carrying B's text, B's deleted — and the next write edits it in place.
func TestRacingReplicasLeaveOneComment(t *testing.T) {
	w := newAppWorld(t)
	ctx := context.Background()
	cfg := github.Config{APIURL: w.gh.APIURL, ServerURL: w.gh.URL, Clock: w.tm}
	replica := func(tr http.RoundTripper) appRepo {
		t.Helper()
		c := cfg
		c.Transport = tr
		app, err := github.NewApp(c, 4242, w.key)
		if err != nil {
			t.Fatal(err)
		}
		client, err := app.Installation(1)
		if err != nil {
			t.Fatal(err)
		}
		return appRepo{sweep.ClientRepo{Client: client, Owner: "Codertocat", Name: "Hello-World"}}
	}
	a := replica(nil)
	var raced bool
	b := replica(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && !raced && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/issues/2/comments") {
			raced = true // B has seen no comment; A writes before B goes on
			if err := upsertComment(ctx, a, 2, "preview", "from replica A"); err != nil {
				t.Errorf("replica A: %v", err)
			}
		}
		return resp, err
	}))
	if err := upsertComment(ctx, b, 2, "preview", "from replica B"); err != nil {
		t.Fatal(err)
	}
	if !raced {
		t.Fatal("replica B never listed the comments: the race did not happen")
	}
	var created, deleted int
	for _, r := range w.gh.Requests() {
		if strings.HasSuffix(r.Path, "/issues/2/comments") && r.Method == http.MethodPost {
			created++
		}
		if strings.Contains(r.Path, "/issues/comments/") && r.Method == http.MethodDelete {
			deleted++
		}
	}
	if created != 2 || deleted != 1 {
		t.Fatalf("%d comments created, %d deleted; want both replicas to create and one to be deleted", created, deleted)
	}
	cs := w.gh.Comments(hello, 2)
	if len(cs) != 1 || cs[0].Author.Login != "sponson-test[bot]" || !strings.Contains(cs[0].Body, "from replica B") ||
		!strings.HasPrefix(cs[0].Body, report.Marker("preview")) || len(cs[0].Edits) != 1 || !strings.Contains(cs[0].Edits[0], "from replica A") {
		t.Fatalf("after the race: %+v", cs)
	}
	keep := cs[0].ID
	if err := upsertComment(ctx, a, 2, "preview", "torn down"); err != nil {
		t.Fatal(err)
	}
	if cs := w.gh.Comments(hello, 2); len(cs) != 1 || cs[0].ID != keep || !strings.Contains(cs[0].Body, "torn down") {
		t.Fatalf("the next write: %+v", cs)
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}
