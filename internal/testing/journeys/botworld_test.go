package journeys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/bot"
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

// The bot's journeys run the bot in-process (its HTTP handler, queue and
// sweep) on an injected clock, against one repository whose GitHub state
// (pull requests, branches, comments) is modelled here, a receipt store
// and the in-memory fake cloud. Deliveries are real webhook payloads
// (shared/fixtures/github/webhooks) rewritten per pull request and signed
// with a test secret.

var botSecret = []byte("journey-webhook-secret")

const botIdentity = "sponson-journey[bot]"

const repoFull = "Codertocat/Hello-World"

// ghComment is one comment of a pull request's conversation.
type ghComment struct {
	ID     int64
	Author string
	Body   string
}

// ghState is one repository as GitHub knows it.
type ghState struct {
	mu       sync.Mutex
	prs      map[int]sweep.PullRequest
	branches map[string]bool
	comments map[int][]ghComment
	next     int64
}

func newGHState() *ghState {
	return &ghState{prs: map[int]sweep.PullRequest{}, branches: map[string]bool{}, comments: map[int][]ghComment{}}
}

func (g *ghState) PullRequest(ctx context.Context, n int) (sweep.PullRequest, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	pr, ok := g.prs[n]
	return pr, ok, nil
}

func (g *ghState) BranchExists(ctx context.Context, b string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.branches[b], nil
}

// Comments returns pull request n's comments, oldest first.
func (g *ghState) Comments(ctx context.Context, n int) ([]ghComment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]ghComment(nil), g.comments[n]...), nil
}

// UpsertComment keeps one comment per marker among the bot's own.
func (g *ghState) UpsertComment(ctx context.Context, n int, marker, body string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, c := range g.comments[n] {
		if c.Author == botIdentity && strings.Contains(c.Body, marker) {
			g.comments[n][i].Body = body
			return nil
		}
	}
	g.next++
	g.comments[n] = append(g.comments[n], ghComment{ID: g.next, Author: botIdentity, Body: body})
	return nil
}

func (g *ghState) setPR(n int, open bool, head string, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	pr := sweep.PullRequest{Number: n, Open: open, HeadRef: head, HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRepo: repoFull, BaseRepo: repoFull}
	if !open {
		pr.ClosedAt = at
	}
	g.prs[n] = pr
}

func (g *ghState) setBranch(b string, exists bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.branches[b] = exists
}

func (g *ghState) isOpen(n int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.prs[n].Open
}

// botWorld is the repository's receipts and cloud, its GitHub, and the bot
// serving them (restartable: a restart is a new Bot on the same world).
type botWorld struct {
	t     *testing.T
	tm    *enginetest.Time
	store receipt.Store
	cloud *optest.Cloud
	eng   *engine.Engine
	gh    *ghState
	plan  *plan.Plan

	bot    *bot.Bot
	srv    *httptest.Server
	cancel context.CancelFunc
	done   chan struct{}
}

type worldRepos struct{ w *botWorld }

func (r worldRepos) Open(ctx context.Context, repo bot.Repository) (*bot.Workspace, error) {
	return &bot.Workspace{Store: r.w.store, Engine: r.w.eng, GitHub: r.w.gh}, nil
}

type worldInstalled struct{}

func (worldInstalled) Repositories(ctx context.Context) ([]bot.Repository, error) {
	return []bot.Repository{{Installation: 1, Owner: "Codertocat", Name: "Hello-World"}}, nil
}

const journeyPlan = `
version: 1
environments: [preview, staging]
providers:
  fake: { project: p1 }
changes:
  - { id: db, adapter: fake, op: object, name: "${ctx.env}-${ctx.git.branch}-db", fields: { size: 1 } }
  - { id: cb, adapter: fake, op: item, list: callbacks, item: "https://${ctx.env}-${ctx.git.branch}.example.test/cb" }
`

func newBotWorld(t *testing.T) *botWorld {
	t.Helper()
	w := &botWorld{t: t, tm: enginetest.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)), cloud: optest.New(), gh: newGHState()}
	w.store = memstore.New(w.tm)
	w.eng = &engine.Engine{Store: w.store, Ops: w.cloud.Registry(),
		Secrets:  secret.New(secret.Config{LookupEnv: func(string) (string, bool) { return "", false }}),
		Redactor: redact.New(), Clock: enginetest.Yielding(w.tm), UnsavedDir: t.TempDir()}
	p, err := plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(journeyPlan, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	w.plan = p
	w.start()
	t.Cleanup(w.stop)
	return w
}

// start starts a bot process: a fresh queue, de-duplication memory and
// metrics (nothing survives a restart but the store and GitHub).
func (w *botWorld) start() {
	q := &bot.Queue{Cap: 1000, Clock: w.tm}
	w.bot = &bot.Bot{Secret: botSecret, Identity: botIdentity, Workspace: worldRepos{w}, Installed: worldInstalled{},
		Clock: enginetest.Yielding(w.tm), Queue: q, Dedup: &bot.Dedup{Clock: w.tm}, Metrics: bot.NewMetrics(q, nil),
		Sweeper: &sweep.Sweeper{Clock: w.tm, Concurrency: 4}, Workers: 3}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.cancel, w.done = cancel, done
	b := w.bot
	go func() { defer close(done); q.Run(ctx, b.Workers, b.Handle) }()
	w.srv = httptest.NewServer(b.Handler())
}

func (w *botWorld) stop() {
	if w.srv == nil {
		return
	}
	w.srv.Close()
	w.cancel()
	<-w.done
	w.srv = nil
}

// restart stops the bot (what it had queued is lost, as in a crash) and
// starts another, which sweeps at once.
func (w *botWorld) restart() {
	w.stop()
	w.start()
	w.bot.SweepAll(context.Background())
}

func (w *botWorld) idle() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.bot.Queue.Idle(ctx); err != nil {
		w.t.Fatalf("the bot's queue did not drain: %v", err)
	}
}

var fixtureCache sync.Map

func payloadTemplate(t *testing.T, rel string) map[string]any {
	t.Helper()
	raw, ok := fixtureCache.Load(rel)
	if !ok {
		b, err := os.ReadFile(ghfixtures.Payload(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		fixtureCache.Store(rel, b)
		raw = b
	}
	var m map[string]any
	if err := json.Unmarshal(raw.([]byte), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// prPayload is the real opened/closed payload turned into pull request n
// of head branch, with action.
func prPayload(t *testing.T, action string, n int, head string, at time.Time) []byte {
	file := "pull_request/opened.payload.json"
	if action == "closed" {
		file = "pull_request/closed.payload.json"
	}
	m := payloadTemplate(t, file)
	m["action"] = action
	m["number"] = n
	pr := m["pull_request"].(map[string]any)
	pr["number"] = n
	pr["head"].(map[string]any)["ref"] = head
	pr["updated_at"] = at.Format(time.RFC3339)
	if action == "closed" {
		pr["closed_at"] = at.Format(time.RFC3339)
		pr["state"] = "closed"
	} else {
		pr["closed_at"] = nil
		pr["state"] = "open"
	}
	b, _ := json.Marshal(m)
	return b
}

// deletePayload is the real push payload of a deleted ref turned into the
// deletion of branch.
func deletePayload(t *testing.T, branch string, at time.Time) []byte {
	m := payloadTemplate(t, "push/with-installation.payload.json")
	m["ref"] = "refs/heads/" + branch
	m["after"] = "0000000000000000000000000000000000000000"
	m["deleted"] = true
	m["x_sent_at"] = at.Format(time.RFC3339Nano) // distinct bodies for distinct deliveries
	b, _ := json.Marshal(m)
	return b
}

// deliver posts one signed delivery and returns the answer's status.
func (w *botWorld) deliver(event, id string, body []byte) int {
	w.t.Helper()
	return deliverTo(w.t, w.srv.URL, event, id, body)
}

func deliverTo(t testing.TB, url, event, id string, body []byte) int {
	req, _ := http.NewRequest(http.MethodPost, url+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", bot.Sign(botSecret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("deliver %s: %v", event, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// applyAs applies the plan as a workflow (or an agent) would: to pr-n when
// n > 0, else to branch's scope. A killed run (kill) dies just before its
// first create leaves, as a SIGKILLed process does: nothing after it runs.
func (w *botWorld) applyAs(env string, n int, branch string, kill bool) (err error) {
	c := scope.Ctx{Env: env, Git: scope.Git{Branch: branch, SHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821"}, Repo: repoFull}
	if n > 0 {
		c.Scope, c.PR = scope.PRScope(n), scope.PR{Number: &n}
	} else {
		c.Scope = scope.BranchScope(branch)
	}
	if kill {
		w.cloud.Crash(optest.Match{Method: optest.MethodCreate}, func() { panic("SIGKILL") })
		defer func() {
			if recover() != nil {
				err = fmt.Errorf("killed")
			}
			w.cloud.ClearFaults()
		}()
	}
	_, err = w.eng.Apply(context.Background(), w.plan, c, engine.Options{Env: env, Owner: receipt.Owner{Kind: receipt.KindAction}})
	return err
}

// keysOf are the cloud's keys of a head branch's resources.
func (w *botWorld) keysOf(branch string) []string {
	var out []string
	for _, k := range w.cloud.Keys() {
		if strings.Contains(k, "-"+branch+"-db") || strings.Contains(k, "-"+branch+".example") {
			out = append(out, k)
		}
	}
	return out
}
