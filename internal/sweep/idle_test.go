package sweep

import (
	"context"
	"sync"
	"testing"
	"time"
)

// describing is the fake GitHub listing its open pull requests with
// their heads and labels (OpenDescriber).
type describing struct{ *fakeGitHub }

func (d describing) OpenPullRequestsDescribed(ctx context.Context) ([]PullRequest, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lists++
	var out []PullRequest
	for _, pr := range d.prs {
		if pr.Open {
			out = append(out, pr)
		}
	}
	return out, nil
}

// fakeIdler keeps warnings in memory, as the bot keeps them in its
// comment, and counts what it was asked.
type fakeIdler struct {
	mu         sync.Mutex
	push       map[int]time.Time
	warnings   map[string]IdleWarning // by env/pr
	pushAsks   int
	warnReads  int
	warned     []IdleWarning
	hibernated []EnvTeardown
}

func newIdler() *fakeIdler {
	return &fakeIdler{push: map[int]time.Time{}, warnings: map[string]IdleWarning{}}
}

func key(n int, env string) string { return env + "/" + itoa(n) }

func (f *fakeIdler) LastPush(ctx context.Context, pr PullRequest) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pushAsks++
	return f.push[pr.Number], nil
}

func (f *fakeIdler) Warning(ctx context.Context, n int, env string) (IdleWarning, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warnReads++
	w, ok := f.warnings[key(n, env)]
	return w, ok, nil
}

func (f *fakeIdler) Warn(ctx context.Context, n int, env, sc string, w IdleWarning) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warnings[key(n, env)] = w
	f.warned = append(f.warned, w)
	return nil
}

func (f *fakeIdler) Hibernated(ctx context.Context, n int, env, sc string, t EnvTeardown) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.warnings, key(n, env))
	f.hibernated = append(f.hibernated, t)
	return nil
}

const ttl, warn = 7 * 24 * time.Hour, 24 * time.Hour

func (w *world) idleSweep(id *fakeIdler) Report {
	w.t.Helper()
	s := &Sweeper{Clock: w.tm, IdleTTL: ttl, IdleWarn: warn, KeepLabel: "sponson:keep"}
	r := w.repo()
	r.GitHub, r.Idle = describing{w.gh}, id
	rep, err := s.Sweep(context.Background(), r)
	if err != nil {
		w.t.Fatalf("sweep: %v", err)
	}
	return rep
}

// A preview idle far past the TTL when the sweep first sees it is warned
// first and expires no sooner than the warning period later: hibernated,
// its resources destroyed, no tombstone, and the next apply rebuilds it.
// A fresh preview costs no question at all.
func TestIdlePreviewIsWarnedThenHibernated(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 1, "feat/a")
	id := newIdler()

	w.tm.Advance(ttl - warn - time.Hour)
	if rep := w.idleSweep(id); len(rep.Findings) != 0 || id.pushAsks+id.warnReads != 0 {
		t.Fatalf("a fresh preview: %s, %d questions", kinds(rep), id.pushAsks+id.warnReads)
	}

	w.tm.Advance(30 * 24 * time.Hour)
	warnedAt := w.tm.Now()
	if rep := w.idleSweep(id); kinds(rep) != "preview/pr-1:idle_warned" {
		t.Fatalf("first look at a long-idle preview: %s", kinds(rep))
	}
	if len(id.warned) != 1 || !id.warned[0].Expires.Equal(warnedAt.Add(warn)) {
		t.Fatalf("warning: %+v, want expiry at %s", id.warned, warnedAt.Add(warn))
	}
	w.tm.Advance(warn - time.Minute)
	if rep := w.idleSweep(id); len(rep.Findings) != 0 || len(w.keys("pr-1")) != 2 || len(id.warned) != 1 {
		t.Fatalf("before the warned expiry: %s, %d resources, %d warnings", kinds(rep), len(w.keys("pr-1")), len(id.warned))
	}
	w.tm.Advance(time.Minute)
	rep := w.idleSweep(id)
	if kinds(rep) != "preview/pr-1:idle_expired" || len(rep.Findings[0].Destroyed) != 2 {
		t.Fatalf("at the expiry: %+v", rep.Findings)
	}
	if left := w.keys("pr-1"); len(left) != 0 {
		t.Errorf("resources left after the expiry: %v", left)
	}
	r := w.receipt("preview", "pr-1")
	if r.Closed != nil || len(r.Ledger) != 0 {
		t.Errorf("hibernated receipt: closed %+v, ledger %d", r.Closed, len(r.Ledger))
	}
	if len(id.hibernated) != 1 {
		t.Errorf("hibernations said: %d", len(id.hibernated))
	}
	if rep := w.idleSweep(id); len(rep.Findings) != 0 {
		t.Errorf("a hibernated preview judged again: %s", kinds(rep))
	}
	w.apply("preview", 1, "feat/a") // the next push's apply
	if got := len(w.keys("pr-1")); got != 2 {
		t.Errorf("the next apply rebuilt %d resources, want 2", got)
	}
}

// The keep label keeps an idle preview, without asking GitHub more.
func TestKeptPreviewSurvives(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 1, "feat/a")
	pr := w.gh.prs[1]
	pr.Labels = []string{"Sponson:Keep"}
	w.gh.set(pr)
	id := newIdler()
	for range 3 {
		w.tm.Advance(ttl)
		if rep := w.idleSweep(id); kinds(rep) != "preview/pr-1:kept" {
			t.Fatalf("kept: %s", kinds(rep))
		}
	}
	if len(w.keys("pr-1")) != 2 || id.pushAsks+id.warnReads != 0 || len(id.warned) != 0 {
		t.Errorf("a kept preview: %d resources, %d questions, %d warnings", len(w.keys("pr-1")), id.pushAsks+id.warnReads, len(id.warned))
	}
}

// A push after the warning answers it: the preview does not expire at
// the warned time, and is warned anew only once idle again.
func TestPushAfterWarningResetsIt(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 1, "feat/a")
	id := newIdler()
	w.tm.Advance(ttl - warn)
	if rep := w.idleSweep(id); kinds(rep) != "preview/pr-1:idle_warned" {
		t.Fatalf("warned: %s", kinds(rep))
	}
	w.tm.Advance(warn / 2)
	id.mu.Lock()
	id.push[1] = w.tm.Now() // a push the Action did not apply
	id.mu.Unlock()
	w.tm.Advance(warn / 2)
	if rep := w.idleSweep(id); len(rep.Findings) != 0 || len(w.keys("pr-1")) != 2 {
		t.Fatalf("after a push, at the warned expiry: %s, %d resources", kinds(rep), len(w.keys("pr-1")))
	}
	w.tm.Advance(ttl - warn - warn/2)
	if rep := w.idleSweep(id); kinds(rep) != "preview/pr-1:idle_warned" || len(id.warned) != 2 {
		t.Fatalf("idle again: %s, %d warnings", kinds(rep), len(id.warned))
	}
}

// A keep label put on between the listing and the destroy wins, and so
// does a pull request closed meanwhile (left to the closed-PR teardown).
func TestExpiryAsksAgainBeforeDestroying(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 1, "feat/a")
	id := newIdler()
	w.tm.Advance(ttl)
	w.idleSweep(id)
	w.tm.Advance(warn)
	w.gh.onAsk = func(int) {
		pr := w.gh.prs[1]
		pr.Labels = []string{"sponson:keep"}
		w.gh.prs[1] = pr
	}
	if rep := w.idleSweep(id); kinds(rep) != "preview/pr-1:kept" || len(w.keys("pr-1")) != 2 {
		t.Fatalf("a keep put on meanwhile: %s, %d resources", kinds(rep), len(w.keys("pr-1")))
	}
}

// Without a TTL, an idle preview is never judged for idleness.
func TestNoIdleExpiryWithoutTTL(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 1, "feat/a")
	w.tm.Advance(365 * 24 * time.Hour)
	s := &Sweeper{Clock: w.tm}
	r := w.repo()
	id := newIdler()
	r.GitHub, r.Idle = describing{w.gh}, id
	rep, err := s.Sweep(context.Background(), r)
	if err != nil || len(rep.Findings) != 0 || id.pushAsks+id.warnReads != 0 || len(w.keys("pr-1")) != 2 {
		t.Fatalf("no TTL: %s %v", kinds(rep), err)
	}
}
