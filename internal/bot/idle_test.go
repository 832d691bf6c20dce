package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/testing/githubtest"
)

const idleTTL, idleWarn = 7 * 24 * time.Hour, 24 * time.Hour

// idleWorld is the App world (the fake GitHub, the receipts on the
// repository's own git branches, the fake cloud) with idle expiry on,
// deployments writable, and pull request #2's preview applied, with a
// deployment the Action made for it.
func idleWorld(t *testing.T) (*appWorld, int64) {
	t.Helper()
	w := newAppWorld(t)
	if err := w.gh.AddInstallation(githubtest.Installation{ID: 1, App: 4242, Account: "Codertocat", Repos: []string{hello},
		Permissions: map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "actions": "read", "metadata": "read", "deployments": "write"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Repos.SetCollaborator(hello, "wes", "write"); err != nil {
		t.Fatal(err)
	}
	w.bot.Sweeper = &sweep.Sweeper{Clock: w.tm, IdleTTL: idleTTL, IdleWarn: idleWarn, KeepLabel: KeepLabel}
	tip := w.gh.Branches(hello)["changes"]
	dep := w.gh.Deploys.AddDeployment(githubtest.Deployment{Repo: hello, SHA: tip, Ref: tip, Environment: "preview/pr-2", Task: github.DeploymentTask,
		Statuses: []githubtest.DeploymentStatus{{State: "success", URL: "https://pr-2.example.dev"}}})
	w.apply("preview", "pr-2", "changes")
	return w, dep
}

// sweepOnce sweeps every repository once and returns the findings' kinds
// and how many REST requests the sweep made.
func (w *appWorld) sweepOnce() (kinds []string, rest int) {
	w.t.Helper()
	before := len(w.gh.Requests())
	reps := w.bot.SweepAll(context.Background())
	for _, r := range w.gh.Requests()[before:] {
		if !strings.HasPrefix(r.Op, "git-") && r.Op != "info-refs" {
			rest++
		}
	}
	for _, rep := range reps {
		for _, f := range rep.Findings {
			kinds = append(kinds, f.Scope+":"+string(f.Kind))
		}
	}
	return kinds, rest
}

func (w *appWorld) envComment() string { return w.botComment(report.Marker("preview")) }

func (w *appWorld) deploymentState(id int64) string {
	for _, d := range w.gh.Deploys.Deployments(hello) {
		if d.ID == id {
			return d.Statuses[len(d.Statuses)-1].State
		}
	}
	return ""
}

// A preview idles out: a fresh one costs the sweep no request more than
// without idle expiry; once idle TTL − warn it is warned in its
// environment's comment; at the warned time it is hibernated — its
// resources gone from the cloud, no tombstone, the deployment inactive,
// the comment saying how to wake it — and the next push's apply rebuilds
// it on the same receipts.
func TestIdlePreviewHibernatesAndTheNextPushRebuildsIt(t *testing.T) {
	w, dep := idleWorld(t)

	w.tm.Advance(time.Hour)
	w.sweepOnce() // the installation's first token
	kinds, withIdle := w.sweepOnce()
	w.bot.Sweeper.IdleTTL = 0
	_, without := w.sweepOnce()
	w.bot.Sweeper.IdleTTL = idleTTL
	if len(kinds) != 0 || withIdle != without {
		t.Fatalf("a fresh preview: findings %v, %d requests with idle expiry, %d without", kinds, withIdle, without)
	}

	w.tm.Advance(idleTTL)
	warnedAt := w.tm.Now()
	if kinds, _ := w.sweepOnce(); strings.Join(kinds, " ") != "pr-2:idle_warned" {
		t.Fatalf("idle past the TTL when first seen: %v", kinds)
	}
	body := w.envComment()
	if !strings.Contains(body, "expires at "+humanTime(warnedAt.Add(idleWarn))) || !strings.Contains(body, "/sponson keep") || !strings.Contains(body, "/sponson apply") {
		t.Fatalf("the warning:\n%s", body)
	}
	if len(w.cloud.Keys()) != 2 {
		t.Fatalf("warned, yet destroyed: %v", w.cloud.Keys())
	}

	w.tm.Advance(idleWarn - time.Minute)
	if kinds, _ := w.sweepOnce(); len(kinds) != 0 || len(w.cloud.Keys()) != 2 {
		t.Fatalf("before the warned time: %v, %v", kinds, w.cloud.Keys())
	}
	w.tm.Advance(time.Minute)
	if kinds, _ := w.sweepOnce(); strings.Join(kinds, " ") != "pr-2:idle_expired" {
		t.Fatalf("at the warned time: %v", kinds)
	}
	if keys := w.cloud.Keys(); len(keys) != 0 {
		t.Fatalf("left in the cloud after hibernation: %v", keys)
	}
	if r := w.receipt("preview", "pr-2"); r == nil || r.Closed != nil || len(r.Ledger) != 0 {
		t.Fatalf("the hibernated receipt (no tombstone, nothing left): %+v", r)
	}
	if body := w.envComment(); !strings.Contains(body, "was hibernated") || !strings.Contains(body, "To wake it") || strings.Contains(body, idleMarker) {
		t.Fatalf("the hibernation comment:\n%s", body)
	}
	if got := w.deploymentState(dep); got != "inactive" {
		t.Errorf("the deployment after hibernation: %q, want inactive", got)
	}
	if got := testutil.ToFloat64(w.bot.Metrics.IdlePreviews.WithLabelValues("expired")); got != 1 {
		t.Errorf("idle expiries counted: %v", got)
	}
	if kinds, _ := w.sweepOnce(); len(kinds) != 0 {
		t.Errorf("a hibernated preview judged again: %v", kinds)
	}

	// The next push: a commit on the head branch, and the Action's apply.
	sha, err := w.gh.Git.CommitFiles(hello, "changes", "wake up", map[string]string{"a.txt": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Issues.SetPullHead(hello, 2, sha); err != nil {
		t.Fatal(err)
	}
	w.apply("preview", "pr-2", "changes")
	if r := w.receipt("preview", "pr-2"); len(w.cloud.Keys()) != 2 || len(r.Ledger) != 2 {
		t.Fatalf("the next push did not rebuild it: %v, ledger %d", w.cloud.Keys(), len(r.Ledger))
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}

// `/sponson keep` keeps an idle preview: weeks past the TTL, it is never
// warned nor destroyed.
func TestKeptPreviewIsNeverHibernated(t *testing.T) {
	w, _ := idleWorld(t)
	w.say("wes", "/sponson keep")
	for range 3 {
		w.tm.Advance(idleTTL)
		if kinds, _ := w.sweepOnce(); strings.Join(kinds, " ") != "pr-2:kept" {
			t.Fatalf("a kept preview: %v", kinds)
		}
	}
	if len(w.cloud.Keys()) != 2 || strings.Contains(w.envComment(), idleMarker) {
		t.Fatalf("a kept preview: %v, comment %q", w.cloud.Keys(), w.envComment())
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}

// A push after the warning answers it: the preview outlives the warned
// time, and is warned anew only once idle the TTL − warn again.
func TestPushAfterTheWarningKeepsThePreview(t *testing.T) {
	w, _ := idleWorld(t)
	w.tm.Advance(idleTTL - idleWarn)
	if kinds, _ := w.sweepOnce(); strings.Join(kinds, " ") != "pr-2:idle_warned" {
		t.Fatalf("warned: %v", kinds)
	}
	w.tm.Advance(idleWarn / 2)
	if _, err := w.gh.Git.CommitFiles(hello, "changes", "still here", map[string]string{"b.txt": "b"}); err != nil {
		t.Fatal(err)
	}
	w.tm.Advance(idleWarn)
	if kinds, _ := w.sweepOnce(); len(kinds) != 0 || len(w.cloud.Keys()) != 2 {
		t.Fatalf("pushed after the warning, past the warned time: %v, %v", kinds, w.cloud.Keys())
	}
	w.tm.Advance(idleTTL - idleWarn - idleWarn/2)
	if kinds, _ := w.sweepOnce(); strings.Join(kinds, " ") != "pr-2:idle_warned" {
		t.Fatalf("idle again since the push: %v", kinds)
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}

// The warning line reads back what was written; a comment without one,
// or with a broken one, has none.
func TestIdleWarningReadsBack(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	w := sweep.IdleWarning{At: at, Activity: at.Add(-7 * 24 * time.Hour), Expires: at.Add(24 * time.Hour)}
	body := commentBody("preview", idleWarningBody("preview", "pr-2", w)+"\nthe plan said this\n")
	got, ok := parseIdleWarning(body)
	if !ok || !got.At.Equal(w.At) || !got.Activity.Equal(w.Activity) || !got.Expires.Equal(w.Expires) {
		t.Fatalf("read back %+v %v, want %+v", got, ok, w)
	}
	if rest := withoutIdleWarning(body, "preview"); rest != "the plan said this\n" {
		t.Errorf("without the warning: %q", rest)
	}
	if rest := withoutIdleWarning(commentBody("preview", hibernatedBody("preview", "pr-2", sweep.EnvTeardown{Destroyed: []string{"fake.object x"}})), "preview"); rest != "" {
		t.Errorf("a hibernation's comment kept under a new warning: %q", rest)
	}
	for _, bad := range []string{"no warning here", idleMarker + "warned=yesterday activity=x expires=y -->", idleMarker + "warned=2026-12-01T09:00:00Z -->"} {
		if _, ok := parseIdleWarning(bad); ok {
			t.Errorf("%q read as a warning", bad)
		}
	}
}

// `/sponson apply` wakes a hibernated preview too: nothing closed it, so
// the command's apply rebuilds it from the plan at the head commit.
func TestSlashApplyWakesAHibernatedPreview(t *testing.T) {
	w, _ := idleWorld(t)
	sha, err := w.gh.Git.CommitFiles(hello, "changes", "the plan", map[string]string{PlanFile: strings.TrimLeft(testPlan, "\n")})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Issues.SetPullHead(hello, 2, sha); err != nil {
		t.Fatal(err)
	}
	w.tm.Advance(idleTTL)
	w.sweepOnce()
	w.tm.Advance(idleWarn)
	if kinds, _ := w.sweepOnce(); strings.Join(kinds, " ") != "pr-2:idle_expired" || len(w.cloud.Keys()) != 0 {
		t.Fatalf("hibernation: %v, %v", kinds, w.cloud.Keys())
	}
	w.say("wes", "/sponson apply")
	if r := w.receipt("preview", "pr-2"); len(w.cloud.Keys()) != 2 || r == nil || len(r.Ledger) != 2 || r.Closed != nil {
		t.Fatalf("after /sponson apply: %v, %+v", w.cloud.Keys(), r)
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}
