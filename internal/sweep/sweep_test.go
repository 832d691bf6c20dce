package sweep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/secret"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// fakeGitHub is the state of one repository's pull requests and branches,
// as GitHub would answer. onAsk runs before every answer (a test flips a
// state between the sweep's two looks).
type fakeGitHub struct {
	mu       sync.Mutex
	prs      map[int]PullRequest
	branches map[string]bool
	fail     error
	asks     int // questions about one pull request
	lists    int // listings of the open ones
	listFail error
	onAsk    func(n int)
}

// OpenPullRequests is GitHub's list of open pull requests (OpenLister).
func (g *fakeGitHub) OpenPullRequests(ctx context.Context) ([]int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lists++
	if g.fail != nil {
		return nil, g.fail
	}
	if g.listFail != nil {
		return nil, g.listFail
	}
	var open []int
	for n, pr := range g.prs {
		if pr.Open {
			open = append(open, n)
		}
	}
	return open, nil
}

// askOnly is a GitHub that can only be asked about one pull request at a
// time (no OpenLister).
type askOnly struct{ g *fakeGitHub }

func (a askOnly) PullRequest(ctx context.Context, n int) (PullRequest, bool, error) {
	return a.g.PullRequest(ctx, n)
}
func (a askOnly) BranchExists(ctx context.Context, b string) (bool, error) {
	return a.g.BranchExists(ctx, b)
}

func newGitHub() *fakeGitHub {
	return &fakeGitHub{prs: map[int]PullRequest{}, branches: map[string]bool{}}
}

func (g *fakeGitHub) PullRequest(ctx context.Context, n int) (PullRequest, bool, error) {
	g.mu.Lock()
	g.asks++
	asks, hook := g.asks, g.onAsk
	g.mu.Unlock()
	if hook != nil {
		hook(asks)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail != nil {
		return PullRequest{}, false, g.fail
	}
	pr, ok := g.prs[n]
	return pr, ok, nil
}

func (g *fakeGitHub) BranchExists(ctx context.Context, b string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail != nil {
		return false, g.fail
	}
	return g.branches[b], nil
}

func (g *fakeGitHub) set(pr PullRequest) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.prs[pr.Number] = pr
}

// world is a repository's receipts (a memory store, or a git remote), an
// engine over them with the in-memory fake cloud, and its GitHub.
type world struct {
	t     testing.TB
	tm    *enginetest.Time
	store receipt.Store
	cloud *optest.Cloud
	eng   *engine.Engine
	gh    *fakeGitHub
}

func newWorld(t testing.TB, st receipt.Store, tm *enginetest.Time) *world {
	w := &world{t: t, tm: tm, store: st, cloud: optest.New(), gh: newGitHub()}
	w.eng = &engine.Engine{
		Store: st, Ops: w.cloud.Registry(),
		Secrets:  secret.New(secret.Config{LookupEnv: func(string) (string, bool) { return "", false }}),
		Redactor: redact.New(), Clock: enginetest.Yielding(tm), UnsavedDir: t.TempDir(),
	}
	return w
}

func memWorld(t testing.TB) *world {
	tm := enginetest.NewTime(t0)
	return newWorld(t, memstore.New(tm), tm)
}

func (w *world) repo() Repo {
	return Repo{Name: "acme/shop", Store: w.store, Engine: w.eng, GitHub: w.gh,
		Owner: receipt.Owner{Kind: receipt.KindBot, Actor: "sponson-test[bot]"}, Actor: "sponson-test[bot]"}
}

const objPlan = `
version: 1
environments: [preview, staging]
providers:
  fake: { project: p1 }
changes:
  - { id: db, adapter: fake, op: object, name: "${ctx.scope}-db", fields: { size: 1 } }
  - { id: cb, adapter: fake, op: item, list: callbacks, item: "https://${ctx.scope}.example.test/cb" }
`

// apply applies objPlan in env to the scope of a pull request (n > 0) or
// of branch (n == 0).
func (w *world) apply(env string, n int, branch string) {
	w.t.Helper()
	p, err := plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(objPlan, "\n")))
	if err != nil {
		w.t.Fatal(err)
	}
	c := scope.Ctx{Env: env, Git: scope.Git{Branch: branch, SHA: "1111111111111111111111111111111111111111"}, Repo: "acme/shop"}
	if n > 0 {
		c.Scope, c.PR = scope.PRScope(n), scope.PR{Number: &n}
		w.gh.set(PullRequest{Number: n, Open: true, HeadRef: branch, HeadSHA: c.Git.SHA, HeadRepo: "acme/shop", BaseRepo: "acme/shop"})
	} else {
		c.Scope = scope.BranchScope(branch)
		w.gh.mu.Lock()
		w.gh.branches[branch] = true
		w.gh.mu.Unlock()
	}
	if _, err := w.eng.Apply(context.Background(), p, c, engine.Options{Env: env, Owner: receipt.Owner{Kind: receipt.KindCLI}}); err != nil {
		w.t.Fatalf("apply %s/%s: %v", env, c.Scope, err)
	}
}

func (w *world) close(n int) {
	w.gh.mu.Lock()
	defer w.gh.mu.Unlock()
	pr := w.gh.prs[n]
	pr.Open, pr.ClosedAt = false, w.tm.Now()
	w.gh.prs[n] = pr
}

func (w *world) keys(sc string) []string {
	var out []string
	for _, k := range w.cloud.Keys() {
		if strings.Contains(k, sc+"-db") || strings.Contains(k, "https://"+sc+".") {
			out = append(out, k)
		}
	}
	return out
}

func (w *world) receipt(env, sc string) *receipt.Receipt {
	w.t.Helper()
	r, _, err := w.store.Read(context.Background(), env, sc)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) sweep() Report {
	w.t.Helper()
	s := &Sweeper{Clock: w.tm, Concurrency: 3}
	rep, err := s.Sweep(context.Background(), w.repo())
	if err != nil {
		w.t.Fatalf("sweep: %v", err)
	}
	return rep
}

func kinds(rep Report) string {
	var b []string
	for _, f := range rep.Findings {
		b = append(b, fmt.Sprintf("%s/%s:%s", f.Env, f.Scope, f.Kind))
	}
	return strings.Join(b, " ")
}

func TestSweepDestroysClosedPullRequestsAndKeepsOpenOnes(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 1, "feat/a")
	w.apply("staging", 1, "feat/a")
	w.apply("preview", 2, "feat/b")
	w.close(1)

	rep := w.sweep()
	if got, want := kinds(rep), "preview/pr-1:closed_pr staging/pr-1:closed_pr"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if left := w.keys("pr-1"); len(left) != 0 {
		t.Errorf("closed pull request's resources left: %v", left)
	}
	if got := len(w.keys("pr-2")); got != 2 {
		t.Errorf("open pull request lost resources: %d left, want 2", got)
	}
	for _, env := range []string{"preview", "staging"} {
		r := w.receipt(env, "pr-1")
		if r.Closed == nil || len(r.Ledger) != 0 || !r.Destroyed {
			t.Errorf("%s/pr-1 after the sweep: closed %v, ledger %d, destroyed %v", env, r.Closed, len(r.Ledger), r.Destroyed)
		} else if r.Closed.By != "sponson-test[bot]" || !r.Closed.At.Equal(t0) {
			t.Errorf("%s/pr-1 tombstone: %+v", env, r.Closed)
		}
	}
	if f := rep.Findings[0]; len(f.Destroyed) != 2 || f.RunID == "" {
		t.Errorf("finding does not say what was destroyed: %+v", f)
	}

	// Idempotent: a second sweep writes nothing and finds nothing.
	writes := len(w.cloud.Writes())
	v1 := version(t, w.store, "preview", "pr-1")
	if rep := w.sweep(); len(rep.Findings) != 0 {
		t.Errorf("second sweep: %s", kinds(rep))
	}
	if len(w.cloud.Writes()) != writes || version(t, w.store, "preview", "pr-1") != v1 {
		t.Errorf("second sweep wrote something")
	}
}

func version(t *testing.T, st receipt.Store, env, sc string) receipt.Version {
	_, v, err := st.Read(context.Background(), env, sc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSweepDestroysGoneBranchesOnly(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 0, "feat/gone")
	w.apply("preview", 0, "feat/here")
	w.apply("preview", 0, "main-like") // a branch scope whose branch stays
	w.gh.mu.Lock()
	delete(w.gh.branches, "feat/gone")
	w.gh.mu.Unlock()

	rep := w.sweep()
	if got, want := kinds(rep), "preview/branch-feat-gone:branch_gone"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if left := w.keys("branch-feat-gone"); len(left) != 0 {
		t.Errorf("gone branch's resources left: %v", left)
	}
	if len(w.keys("branch-feat-here")) != 2 {
		t.Errorf("an existing branch lost resources")
	}
	if r := w.receipt("preview", "branch-feat-gone"); !r.Destroyed || r.Closed != nil {
		t.Errorf("a gone branch is destroyed without a tombstone: destroyed %v closed %v", r.Destroyed, r.Closed)
	}
}

func TestSweepNeverTouchesALiveLease(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 3, "feat/c")
	w.close(3)
	held, _, err := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-3"), receipt.Owner{RunID: "r-other", Kind: receipt.KindAction, Operation: receipt.OpApply}, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rep := w.sweep()
	if got, want := kinds(rep), "preview/pr-3:lease_live"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if len(w.keys("pr-3")) != 2 {
		t.Fatalf("a scope under a live lease was destroyed")
	}

	// The holder dies: its lease expires without release. The next sweep
	// says so and finishes the job.
	w.tm.Advance(11 * time.Minute)
	rep = w.sweep()
	if got, want := kinds(rep), "preview/pr-3:lease_expired preview/pr-3:closed_pr"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if !strings.Contains(rep.Findings[0].Why, held.Holder) {
		t.Errorf("the expired lease's finding does not name its holder: %q", rep.Findings[0].Why)
	}
	if left := w.keys("pr-3"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

func TestSweepRetriesAFailedTeardown(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 4, "feat/d")
	w.close(4)
	w.cloud.FailNext(optest.Match{Op: optest.OpObject, Method: optest.MethodDelete}, errs.New(errs.PROVIDER_TRANSIENT, "503 from the fake cloud"), 1)

	rep := w.sweep()
	if got, want := kinds(rep), "preview/pr-4:destroy_failed"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	f := rep.Findings[0]
	if len(f.Failed) != 1 || !strings.Contains(f.Failed[0], "pr-4-db") || f.Code != string(errs.DESTROY_FAILED) {
		t.Errorf("the failure is not reported: %+v", f)
	}
	if r := w.receipt("preview", "pr-4"); r.Closed == nil || len(r.Ledger) != 1 {
		t.Fatalf("after a failed teardown the tombstone must stand with the survivor in the ledger: closed %v, ledger %d", r.Closed, len(r.Ledger))
	}
	rep = w.sweep()
	if got, want := kinds(rep), "preview/pr-4:retry_teardown"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if left := w.keys("pr-4"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

func TestSweepAsksAgainRightBeforeDestroying(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 5, "feat/e")
	w.close(5)
	// Reopened between the sweep's first and second look.
	w.gh.onAsk = func(n int) {
		if n == 2 {
			w.gh.mu.Lock()
			pr := w.gh.prs[5]
			pr.Open = true
			w.gh.prs[5] = pr
			w.gh.mu.Unlock()
		}
	}
	rep := w.sweep()
	if got, want := kinds(rep), "preview/pr-5:reopened_pr"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if len(w.keys("pr-5")) != 2 {
		t.Errorf("a reopened pull request's resources were destroyed")
	}
}

func TestSweepLeavesScopesAloneWhenGitHubCannotSay(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 6, "feat/f")
	w.apply("preview", 0, "feat/g")
	w.close(6)
	w.gh.fail = errors.New("502 Bad Gateway")
	rep := w.sweep()
	if got, want := kinds(rep), "preview/branch-feat-g:github_unknown preview/pr-6:github_unknown"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if len(w.keys("pr-6")) != 2 || len(w.keys("branch-feat-g")) != 2 {
		t.Errorf("a scope was destroyed on an unknown answer")
	}
}

func TestSweepNeverJudgesMainOrUnknownPullRequests(t *testing.T) {
	w := memWorld(t)
	p, _ := plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(objPlan, "\n")))
	if _, err := w.eng.Apply(context.Background(), p, scope.Ctx{Env: "preview", Scope: scope.Main, Git: scope.Git{Branch: "main"}}, engine.Options{}); err != nil {
		t.Fatal(err)
	}
	w.apply("preview", 7, "feat/h")
	w.gh.mu.Lock()
	delete(w.gh.prs, 7)
	w.gh.mu.Unlock()
	rep := w.sweep()
	if got, want := kinds(rep), "preview/pr-7:pr_not_found"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if len(w.keys("main")) != 2 || len(w.keys("pr-7")) != 2 {
		t.Errorf("main or an unknown pull request was destroyed")
	}
}

// A succession that stopped between its writes leaves the branch's ledger
// in transit to the pull request; when that pull request closes, the
// sweep's teardown finishes the move and destroys it all.
func TestSweepFinishesAHandOverInTransit(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 0, "feat/i")
	rec := w.receipt("preview", "branch-feat-i")
	rec.SupersededBy = "pr-8"
	l, _, err := w.store.Acquire(context.Background(), rec.Target(), receipt.Owner{RunID: "r-succ"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.store.Write(context.Background(), rec, l); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Release(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	w.gh.set(PullRequest{Number: 8, Open: false, ClosedAt: t0, HeadRef: "feat/i"})

	rep := w.sweep()
	if got, want := kinds(rep), "preview/pr-8:handover_repair"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if left := w.keys("branch-feat-i"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
	if r := w.receipt("preview", "pr-8"); r == nil || r.Closed == nil || len(r.Ledger) != 0 {
		t.Errorf("pr-8 after the repair: %+v", r)
	}
}

// Pruning runs against a real git remote: the compare-and-swap delete is
// git's receive-pack's.
func TestSweepPrunesTombstonedBranchesAfterTheRetention(t *testing.T) {
	tm := enginetest.NewTime(t0)
	_, url := gittest.NewBareRepo(t)
	st, err := gitstore.New(context.Background(), gitstore.Options{URL: url, Clock: tm, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, st, tm)
	w.apply("preview", 9, "feat/j")
	w.apply("preview", 10, "feat/k")
	w.close(9)
	if rep := w.sweep(); kinds(rep) != "preview/pr-9:closed_pr" {
		t.Fatalf("findings: %s", kinds(rep))
	}
	s := &Sweeper{Clock: tm, Retention: 14 * 24 * time.Hour}
	tm.Advance(13 * 24 * time.Hour)
	rep, err := s.Sweep(context.Background(), w.repo())
	if err != nil || rep.Count(Pruned) != 0 {
		t.Fatalf("pruned before the retention: %s %v", kinds(rep), err)
	}
	tm.Advance(2 * 24 * time.Hour)
	rep, err = s.Sweep(context.Background(), w.repo())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(rep), "preview/pr-9:pruned"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	refs, err := st.Scopes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].Scope != "pr-10" {
		t.Errorf("scopes after pruning: %+v", refs)
	}
}

// Closed pull requests torn down at once share one callback list (a parent
// object): each teardown waits for the list's lease instead of failing.
func TestSweepTearsDownScopesSharingAParentAtOnce(t *testing.T) {
	w := memWorld(t)
	for i := 1; i <= 12; i++ {
		w.apply("preview", 20+i, fmt.Sprintf("feat/p%d", i))
		w.close(20 + i)
	}
	s := &Sweeper{Clock: w.tm, Concurrency: 4, Retention: -1}
	rep, err := s.Sweep(context.Background(), w.repo())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(ClosedPR) != 12 {
		t.Fatalf("findings: %s", kinds(rep))
	}
	if keys := w.cloud.Keys(); len(keys) != 0 {
		t.Errorf("left: %v", keys)
	}
}

// A live lease whose holder is certainly gone (a SIGKILLed bot on this
// host) is judged as expired, and the destroy takes it over at once.
func TestSweepTakesOverTheLeaseOfAGoneHolder(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 40, "feat/gone-holder")
	w.close(40)
	dead := receipt.Owner{RunID: "r-dead", Kind: receipt.KindBot, Host: "h1", PID: 4242, Operation: receipt.OpDestroy}
	if _, _, err := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-40"), dead, time.Hour); err != nil {
		t.Fatal(err)
	}
	gone := func(ctx context.Context, l receipt.Lease) (string, error) {
		if l.Owner.PID == 4242 {
			return "process 4242 on h1 is gone", nil
		}
		return "", nil
	}
	w.eng.HolderGone = gone
	r := w.repo()
	r.HolderGone = gone
	rep, err := (&Sweeper{Clock: w.tm}).Sweep(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(rep), "preview/pr-40:lease_expired preview/pr-40:closed_pr"; got != want {
		t.Fatalf("findings: got %q, want %q", got, want)
	}
	if !strings.Contains(rep.Findings[0].Why, "is gone") {
		t.Errorf("why: %s", rep.Findings[0].Why)
	}
	if left := w.keys("pr-40"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

// The sweep lists the open pull requests once and asks about a single
// pull request only when it is not among them (twice: to judge, and again
// right before destroying). Without a listing — a GitHub that cannot list,
// or a listing that failed — it asks about each, as before, and judges
// the same.
func TestSweepListsOpenPullRequestsOnce(t *testing.T) {
	for _, c := range []struct {
		name      string
		noList    bool
		listFail  error
		wantAsks  int
		wantLists int
	}{
		{name: "listed", wantAsks: 2 * 3, wantLists: 1},
		{name: "listing failed", listFail: errors.New("502 Bad Gateway"), wantAsks: 20 + 2*3, wantLists: 1},
		{name: "no listing", noList: true, wantAsks: 20 + 2*3},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := memWorld(t)
			for n := 1; n <= 23; n++ {
				w.apply("preview", n, fmt.Sprintf("feat/%d", n))
			}
			for n := 21; n <= 23; n++ {
				w.close(n)
			}
			w.gh.listFail = c.listFail
			r := w.repo()
			if c.noList {
				r.GitHub = askOnly{w.gh}
			}
			s := &Sweeper{Clock: w.tm, Concurrency: 3}
			rep, err := s.Sweep(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Count(ClosedPR); got != 3 || len(rep.Findings) != 3 {
				t.Fatalf("findings: %s, want the 3 closed pull requests torn down", kinds(rep))
			}
			for n := 1; n <= 23; n++ {
				if left, want := len(w.keys(fmt.Sprintf("pr-%d", n))), map[bool]int{true: 0, false: 2}[n > 20]; left != want {
					t.Errorf("pr-%d has %d resources, want %d", n, left, want)
				}
			}
			if w.gh.asks != c.wantAsks || w.gh.lists != c.wantLists {
				t.Errorf("asked about %d pull requests and listed %d times, want %d and %d", w.gh.asks, w.gh.lists, c.wantAsks, c.wantLists)
			}
		})
	}
}
