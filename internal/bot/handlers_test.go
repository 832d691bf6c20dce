package bot

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sponson/apply/pkg/scope"
)

// edit rewrites a real payload's JSON (a field path and its new value).
func edit(t *testing.T, body []byte, set func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	set(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func obj(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

// The branch was applied before the pull request existed; opening it hands
// the branch's resources to the pull request in every environment, and the
// bot says so in its comment. Closing it destroys them, leaves the
// tombstone, and the comment says what was destroyed.
func TestPullRequestLifecycle(t *testing.T) {
	w := newTestWorld(t)
	w.applyBranch("preview", "changes")
	w.applyBranch("staging", "changes")
	w.applyBranch("preview", "other") // another branch: never touched
	w.setPR(2, true, "changes")

	if code, _, resp := w.post("pull_request", "open-1", fixture(t, "pull_request/opened.payload.json")); code != http.StatusAccepted {
		t.Fatalf("opened: %d %s", code, resp)
	}
	w.idle()
	for _, env := range []string{"preview", "staging"} {
		if n := len(w.ledger(env, "pr-2")); n != 2 {
			t.Errorf("%s/pr-2 inherited %d resources, want 2", env, n)
		}
		if r := w.rec(env, "branch-changes"); len(r.Ledger) != 0 || r.SupersededBy != "pr-2" {
			t.Errorf("%s/branch-changes after succession: ledger %d superseded_by %q", env, len(r.Ledger), r.SupersededBy)
		}
	}
	if n := len(w.ledger("preview", "branch-other")); n != 2 {
		t.Errorf("another branch's scope changed: %d", n)
	}
	if len(w.gh.comments) != 2 {
		t.Fatalf("comments after open: %d, want one per environment", len(w.gh.comments))
	}
	for _, c := range w.gh.comments {
		if !strings.Contains(c.Body, "Inherited 2 resources from branch-changes") {
			t.Errorf("succession comment:\n%s", c.Body)
		}
	}

	// A replay of the open changes nothing and says nothing.
	if code, _, _ := w.post("pull_request", "open-2", edit(t, fixture(t, "pull_request/opened.payload.json"), func(m map[string]any) { m["replayed"] = true })); code != http.StatusAccepted {
		t.Fatal("second open not accepted")
	}
	w.idle()
	if w.gh.edits != 0 || len(w.gh.comments) != 2 {
		t.Errorf("a replayed open wrote comments: %d edits, %d comments", w.gh.edits, len(w.gh.comments))
	}

	w.setPR(2, false, "changes")
	if code, _, resp := w.post("pull_request", "close-1", fixture(t, "pull_request/closed.payload.json")); code != http.StatusAccepted {
		t.Fatalf("closed: %d %s", code, resp)
	}
	w.idle()
	for _, k := range w.cloud.Keys() {
		if strings.Contains(k, "changes") {
			t.Errorf("left behind after close: %s", k)
		}
	}
	for _, env := range []string{"preview", "staging"} {
		r := w.rec(env, "pr-2")
		if r.Closed == nil || r.Closed.By != identity || len(r.Ledger) != 0 {
			t.Errorf("%s/pr-2 after close: closed %+v ledger %d", env, r.Closed, len(r.Ledger))
		}
	}
	if len(w.gh.comments) != 2 || w.gh.edits != 2 {
		t.Fatalf("after close: %d comments, %d edits; want the two comments edited in place", len(w.gh.comments), w.gh.edits)
	}
	for _, c := range w.gh.comments {
		if !strings.Contains(c.Body, "torn down") || !strings.Contains(c.Body, "Destroyed (2)") {
			t.Errorf("teardown comment:\n%s", c.Body)
		}
	}
	if got := testutil.ToFloat64(w.bot.Metrics.ResourcesDestroyed); got != 4 {
		t.Errorf("resources destroyed metric: %v, want 4", got)
	}

	// Reopened: the tombstone is cleared in every environment, and says so.
	w.setPR(2, true, "changes")
	reopened := edit(t, fixture(t, "pull_request/opened.payload.json"), func(m map[string]any) { m["action"] = "reopened" })
	if code, _, _ := w.post("pull_request", "reopen-1", reopened); code != http.StatusAccepted {
		t.Fatal("reopen not accepted")
	}
	w.idle()
	for _, env := range []string{"preview", "staging"} {
		if r := w.rec(env, "pr-2"); r.Closed != nil {
			t.Errorf("%s/pr-2 is still closed after the reopen", env)
		}
	}
	for _, c := range w.gh.comments {
		if !strings.Contains(c.Body, "reopened") {
			t.Errorf("reopen comment:\n%s", c.Body)
		}
	}
}

// The delivery of a close that GitHub sent before a reopen arrives late:
// the bot asks GitHub, sees the pull request open, and destroys nothing.
func TestLateCloseDestroysNothing(t *testing.T) {
	w := newTestWorld(t)
	w.applyBranch("preview", "changes")
	w.setPR(2, true, "changes")
	w.post("pull_request", "open-1", fixture(t, "pull_request/opened.payload.json"))
	w.idle()
	w.post("pull_request", "close-1", fixture(t, "pull_request/closed.payload.json"))
	w.idle()
	if n := len(w.ledger("preview", "pr-2")); n != 2 {
		t.Errorf("a late close destroyed an open pull request's resources: %d left", n)
	}
}

// A fork's pull request never inherits the base repository's branch of the
// same name.
func TestNoSuccessionFromAFork(t *testing.T) {
	w := newTestWorld(t)
	w.applyBranch("preview", "changes")
	w.setPR(2, true, "changes")
	fork := edit(t, fixture(t, "pull_request/opened.payload.json"), func(m map[string]any) {
		obj(m, "pull_request", "head", "repo")["full_name"] = "mallory/Hello-World"
	})
	w.post("pull_request", "fork-1", fork)
	w.idle()
	if n := len(w.ledger("preview", "pr-2")); n != 0 {
		t.Errorf("a fork inherited %d resources", n)
	}
	if n := len(w.ledger("preview", "branch-changes")); n != 2 {
		t.Errorf("the branch lost its resources to a fork: %d left", n)
	}
}

// A push deleting a branch destroys its scope (a real push payload, its
// ref turned from a tag into a branch).
func TestDeletedBranchIsDestroyed(t *testing.T) {
	w := newTestWorld(t)
	w.applyBranch("preview", "feat/gone")
	w.applyBranch("staging", "feat/gone")
	w.gh.mu.Lock()
	delete(w.gh.branches, "feat/gone")
	w.gh.mu.Unlock()
	body := edit(t, fixture(t, "push/with-installation.payload.json"), func(m map[string]any) { m["ref"] = "refs/heads/feat/gone" })
	if code, _, resp := w.post("push", "push-1", body); code != http.StatusAccepted {
		t.Fatalf("push: %d %s", code, resp)
	}
	w.idle()
	sc := scope.BranchScope("feat/gone")
	for _, env := range []string{"preview", "staging"} {
		if r := w.rec(env, sc); len(r.Ledger) != 0 || !r.Destroyed {
			t.Errorf("%s/%s after the branch was deleted: ledger %d destroyed %v", env, sc, len(r.Ledger), r.Destroyed)
		}
	}
	if len(w.cloud.Keys()) != 0 {
		t.Errorf("left: %v", w.cloud.Keys())
	}
	if len(w.gh.comments) != 0 {
		t.Errorf("a branch has no pull request to comment on: %d comments", len(w.gh.comments))
	}
}

func (w *testWorld) learnForTest(r Repository) { w.bot.learn([]Repository{r}, nil) }

func TestInstallationEventsKeepTheSetToSweep(t *testing.T) {
	w := newTestWorld(t)
	w.post("installation", "i-1", fixture(t, "installation/created.payload.json"))
	w.post("installation_repositories", "i-2", fixture(t, "installation_repositories/added.payload.json"))
	w.idle()
	names := func() string {
		var b bytes.Buffer
		for _, r := range w.bot.Known() {
			b.WriteString(r.FullName() + " ")
		}
		return strings.TrimSpace(b.String())
	}
	if got := names(); got != "Codertocat/Hello-World Codertocat/Space" {
		t.Errorf("after created and added: %q", got)
	}
	// Another installation's repository removed: nothing of ours changes.
	w.post("installation_repositories", "i-3", fixture(t, "installation_repositories/removed.payload.json"))
	w.idle()
	if got := names(); got != "Codertocat/Hello-World Codertocat/Space" {
		t.Errorf("after another installation's removal: %q", got)
	}
	// One repository removed from ours, then the App uninstalled: every
	// repository of that installation leaves the set.
	removed := edit(t, fixture(t, "installation_repositories/removed.payload.json"), func(m map[string]any) {
		obj(m, "installation")["id"] = 957387
		obj(m, "installation", "account")["login"] = "Codertocat"
		m["repositories_removed"].([]any)[0].(map[string]any)["full_name"] = "Codertocat/Space"
	})
	w.post("installation_repositories", "i-4", removed)
	w.idle()
	if got := names(); got != "Codertocat/Hello-World" {
		t.Errorf("after removing Space: %q", got)
	}
	w.learnForTest(Repository{Installation: 957387, Owner: "Codertocat", Name: "Later"})
	deleted := edit(t, fixture(t, "installation/deleted.payload.json"), func(m map[string]any) { obj(m, "installation")["id"] = 957387 })
	w.post("installation", "i-5", deleted)
	w.idle()
	if got := names(); got != "" {
		t.Errorf("after the App was uninstalled: %q", got)
	}
}
