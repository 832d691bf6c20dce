package bot

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/testing/ghfixtures"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/secret"
)

var (
	t0         = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	testSecret = []byte("It's a Secret to Everybody")
)

const identity = "sponson-test[bot]"

// comment is one comment of a pull request's conversation.
type comment struct {
	ID     int64
	Author string
	Body   string
}

// repoState is a fake of what GitHub knows about one repository: its pull
// requests, branches and comments.
type repoState struct {
	mu       sync.Mutex
	prs      map[int]sweep.PullRequest
	branches map[string]bool
	comments []comment
	nextID   int64
	edits    int
}

func (g *repoState) PullRequest(ctx context.Context, n int) (sweep.PullRequest, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	pr, ok := g.prs[n]
	return pr, ok, nil
}

func (g *repoState) BranchExists(ctx context.Context, b string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.branches[b], nil
}

// UpsertComment is GitHub's comments seen through the bot's identity:
// one comment per marker among its own, edited only when the body changes.
// The fake is atomic, so it never races; internal/github's UpsertComment
// (TestRacingReplicasLeaveOneComment) is the one that has to converge.
func (g *repoState) UpsertComment(ctx context.Context, n int, marker, body string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, c := range g.comments {
		if c.Author == identity && strings.Contains(c.Body, marker) {
			if c.Body != body {
				g.comments[i].Body = body
				g.edits++
			}
			return nil
		}
	}
	g.nextID++
	g.comments = append(g.comments, comment{ID: g.nextID, Author: identity, Body: body})
	return nil
}

// testWorld is one repository (a memory store and the fake cloud) served
// by a Bot whose queue runs in the background.
type testWorld struct {
	t     testing.TB
	tm    *enginetest.Time
	store *memstore.Store
	cloud *optest.Cloud
	eng   *engine.Engine
	gh    *repoState
	bot   *Bot
	srv   *httptest.Server
	ctx   context.Context
}

type oneRepo struct{ w *testWorld }

func (o oneRepo) Open(ctx context.Context, r Repository) (*Workspace, error) {
	return &Workspace{Store: o.w.store, Engine: o.w.eng, GitHub: o.w.gh}, nil
}

func newTestWorld(t *testing.T) *testWorld { return newBenchWorld(t) }

func newBenchWorld(t testing.TB) *testWorld {
	t.Helper()
	w := &testWorld{t: t, tm: enginetest.NewTime(t0), cloud: optest.New(),
		gh: &repoState{prs: map[int]sweep.PullRequest{}, branches: map[string]bool{}}}
	w.store = memstore.New(w.tm)
	w.eng = &engine.Engine{Store: w.store, Ops: w.cloud.Registry(),
		Secrets:  secret.New(secret.Config{LookupEnv: func(string) (string, bool) { return "", false }}),
		Redactor: redact.New(), Clock: enginetest.Yielding(w.tm), UnsavedDir: t.TempDir()}
	q := &Queue{Cap: 100, Clock: w.tm}
	w.bot = &Bot{Secret: testSecret, Identity: identity, Workspace: oneRepo{w}, Clock: enginetest.Yielding(w.tm),
		Queue: q, Dedup: &Dedup{Clock: w.tm}, Metrics: NewMetrics(q, nil), Workers: 2}
	ctx, cancel := context.WithCancel(context.Background())
	w.ctx = ctx
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx, 2, w.bot.Handle) }()
	w.srv = httptest.NewServer(w.bot.Handler())
	t.Cleanup(func() { w.srv.Close(); cancel(); <-done })
	return w
}

// fixture reads a real webhook payload.
func fixture(t *testing.T, rel string) []byte { return fixtureB(t, rel) }

func fixtureB(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(ghfixtures.Payload(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post delivers body as event with id, signed with the test secret unless
// headers override it; it returns the status code.
func (w *testWorld) post(event, id string, body []byte, headers ...string) (int, http.Header, string) {
	w.t.Helper()
	return w.postURL(w.srv.URL, event, id, body, headers...)
}

// postURL is post to the bot at base; a connection error is status 0.
func (w *testWorld) postURL(base, event, id string, body []byte, headers ...string) (int, http.Header, string) {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", Sign(testSecret, body))
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, buf.String()
}

func (w *testWorld) idle() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := w.bot.Queue.Idle(ctx); err != nil {
		w.t.Fatalf("the queue did not drain: %v", err)
	}
}

const testPlan = `
version: 1
environments: [preview, staging]
providers:
  fake: { project: p1 }
changes:
  - { id: db, adapter: fake, op: object, name: "${ctx.env}-${ctx.git.branch}-db", fields: { size: 1 } }
  - { id: cb, adapter: fake, op: item, list: callbacks, item: "https://${ctx.env}-${ctx.git.branch}.example.test/cb" }
`

// applyBranch applies testPlan to branch's scope in env, as an agent
// would before the pull request exists.
func (w *testWorld) applyBranch(env, branch string) {
	w.t.Helper()
	p, err := plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(testPlan, "\n")))
	if err != nil {
		w.t.Fatal(err)
	}
	c := scope.Ctx{Env: env, Scope: scope.BranchScope(branch), Git: scope.Git{Branch: branch, SHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821"}, Repo: "Codertocat/Hello-World"}
	if _, err := w.eng.Apply(context.Background(), p, c, engine.Options{Env: env}); err != nil {
		w.t.Fatalf("apply: %v", err)
	}
	w.gh.mu.Lock()
	w.gh.branches[branch] = true
	w.gh.mu.Unlock()
}

func (w *testWorld) ledger(env, sc string) receipt.Ledger {
	w.t.Helper()
	r, _, err := w.store.Read(context.Background(), env, sc)
	if err != nil {
		w.t.Fatal(err)
	}
	if r == nil {
		return nil
	}
	return r.Ledger
}

func (w *testWorld) rec(env, sc string) *receipt.Receipt {
	w.t.Helper()
	r, _, err := w.store.Read(context.Background(), env, sc)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *testWorld) setPR(n int, open bool, head string) {
	w.gh.mu.Lock()
	defer w.gh.mu.Unlock()
	pr := sweep.PullRequest{Number: n, Open: open, HeadRef: head, HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRepo: "Codertocat/Hello-World", BaseRepo: "Codertocat/Hello-World"}
	if !open {
		pr.ClosedAt = w.tm.Now()
	}
	w.gh.prs[n] = pr
}
