package action

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/testing/ghfixtures"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/receipt"
)

func gitShow(gitDir, spec string) ([]byte, error) {
	return exec.Command("git", "--git-dir", gitDir, "show", spec).Output()
}

// TestEveryFixturePayload drives the Action with every webhook payload of
// the fixtures, each in a fresh world where its pull request is open, and
// checks what the event table says: the events Sponson acts on run, every
// other one is a skip that touches nothing - no provider write, no
// comment, no receipt branch.
func TestEveryFixturePayload(t *testing.T) {
	t.Parallel()
	root := ghfixtures.Webhooks(t)
	events, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range events {
		files, _ := filepath.Glob(filepath.Join(root, ev.Name(), "*.json"))
		for _, f := range files {
			name, file := ev.Name(), filepath.Base(f)
			n++
			t.Run(name+"/"+file, func(t *testing.T) {
				// Each payload has a world of its own: they run side by
				// side, waiting on git at once.
				t.Parallel()
				w := newWorld(t)
				w.openPR()
				payload, _ := os.ReadFile(f)
				w.event(name, payload)
				code := w.run()
				o := w.outputs()
				action := strings.SplitN(file, ".", 2)[0]
				switch {
				case name == "pull_request" && (action == "opened" || action == "synchronize"):
					w.want("status", "complete", "skipped", "false", "scope", "pr-2", "exit_code", "0", "receipt_ref", "sponson-receipts/preview/pr-2")
					if cs := w.comments(2); len(cs) != 1 || !strings.HasPrefix(cs[0].Body, report.Marker("preview")) || cs[0].Author.Login != githubtest.ActionsBot.Login {
						t.Errorf("comments %+v", cs)
					}
					if r := w.receipt("preview", "pr-2"); r == nil || r.Status != receipt.StatusComplete || len(r.Ledger) != 4 {
						t.Errorf("receipt %+v", r)
					}
				case name == "pull_request" && action == "closed":
					w.want("status", "complete", "skipped", "false", "scope", "pr-2", "exit_code", "0")
					if r := w.receipt("preview", "pr-2"); r == nil || r.Closed == nil || !r.Destroyed {
						t.Errorf("no tombstone: %+v", r)
					}
				case name == "push" && strings.HasPrefix(file, "with-new-branch"):
					// A push to master, the default branch: apply main.
					w.want("status", "complete", "skipped", "false", "scope", "main", "exit_code", "0")
					if r := w.receipt("preview", "main"); r == nil || r.Status != receipt.StatusComplete {
						t.Errorf("receipt %+v", r)
					}
					if cs := w.comments(2); len(cs) != 0 {
						t.Errorf("a push commented on a pull request: %+v", cs)
					}
				default:
					// Tag pushes, production deployments, labels, drafts,
					// comments, pings, installations: nothing to do.
					if code != 0 || o["skipped"] != "true" || o["status"] != "skipped" || o["skip_reason"] == "" {
						t.Errorf("exit %d, outputs %v\n%s", code, o, w.out.String())
					}
					if w.writes() != 0 || len(w.comments(2)) != 0 || len(w.receiptRefs()) != 0 {
						t.Errorf("a skip touched something: %d writes, comments %+v, refs %v", w.writes(), w.comments(2), w.receiptRefs())
					}
					if !strings.Contains(w.out.String(), "::notice::") {
						t.Errorf("no notice says why:\n%s", w.out.String())
					}
				}
				if len(w.gh.Violations()) != 0 {
					t.Errorf("requests GitHub would refuse: %v", w.gh.Violations())
				}
			})
		}
	}
	if n < 20 {
		t.Fatalf("only %d payloads found", n)
	}
}

// TestPullRequestLife: opened applies and comments; synchronize edits the
// same comment; closed destroys everything the pull request created,
// leaves the tombstone and edits the comment again; a late synchronize is
// a quiet skip that writes nothing anywhere.
func TestPullRequestLife(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if w.run() != 0 {
		t.Fatalf("opened: exit %d\n%s", w.code, w.out.String())
	}
	w.want("status", "complete")
	cs := w.comments(2)
	if len(cs) != 1 {
		t.Fatalf("comments %+v", cs)
	}
	id := cs[0].ID
	if !strings.Contains(cs[0].Body, "pr-2") || !strings.Contains(w.summary(), "Sponson apply") || !strings.Contains(w.summary(), "git-branch store at "+w.gh.URL) {
		t.Errorf("comment:\n%s\nsummary:\n%s", cs[0].Body, w.summary())
	}

	w.event("pull_request", fixture(t, "pull_request/synchronize.payload.json"))
	w.run()
	w.want("status", "complete", "exit_code", "0")
	if cs := w.comments(2); len(cs) != 1 || cs[0].ID != id || len(cs[0].Edits) != 1 {
		t.Fatalf("after synchronize: %+v", cs)
	}

	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: repoName, Number: 2, State: "closed", Head: githubtest.Ref{Ref: "changes", SHA: headSHA}}); err != nil {
		t.Fatal(err)
	}
	w.event("pull_request", fixture(t, "pull_request/closed.payload.json"))
	w.run()
	w.want("status", "complete", "exit_code", "0", "skipped", "false")
	cs = w.comments(2)
	if len(cs) != 1 || cs[0].ID != id || len(cs[0].Edits) != 2 || !strings.Contains(cs[0].Body, "destroy") {
		t.Fatalf("after closed: %+v", cs)
	}
	st := w.cloud.State()
	for _, p := range st.Neon {
		for _, b := range p.Branches {
			if strings.Contains(b.Name, "pr-2") {
				t.Errorf("the database branch %s is left", b.Name)
			}
		}
	}
	for _, p := range st.Vercel {
		for _, e := range p.Envs {
			if e.Origin != "seed" {
				t.Errorf("the variable %s is left", e.Key)
			}
		}
	}
	for _, c := range st.Auth0 {
		for _, cb := range c.Lists["callbacks"] {
			if strings.Contains(cb, "pr-2") {
				t.Errorf("the callback %s is left", cb)
			}
		}
	}
	tomb := w.receipt("preview", "pr-2")
	if tomb == nil || tomb.Closed == nil {
		t.Fatalf("no tombstone: %+v", tomb)
	}

	// A synchronize that arrives after the close: a quiet skip.
	refs, writes, body := w.receiptRefs(), w.writes(), cs[0].Body
	w.event("pull_request", fixture(t, "pull_request/synchronize.payload.json"))
	if w.run() != 0 {
		t.Fatalf("late synchronize: exit %d\n%s", w.code, w.out.String())
	}
	w.want("skipped", "true", "status", "skipped")
	if w.writes() != writes || w.comments(2)[0].Body != body || len(w.comments(2)[0].Edits) != 2 {
		t.Errorf("the skip wrote something")
	}
	if after := w.receiptRefs(); after["refs/heads/sponson-receipts/preview/pr-2"] != refs["refs/heads/sponson-receipts/preview/pr-2"] {
		t.Errorf("the skip wrote the receipt branch")
	}
}

// TestMasksBeforeAnythingElse: the token and the plan's secrets are sent as
// ::add-mask:: before the first other byte of output, and neither appears
// anywhere else (world.run checks stdout and outputs).
func TestMasksBeforeAnythingElse(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	w.run()
	lines := strings.Split(w.out.String(), "\n")
	masks := map[string]bool{}
	for _, l := range lines {
		v, ok := strings.CutPrefix(l, "::add-mask::")
		if !ok {
			break
		}
		masks[v] = true
	}
	if !masks[token] || !masks[secretV] {
		t.Fatalf("the first lines do not mask the token and the secret:\n%s", w.out.String())
	}
	if strings.Count(w.out.String(), "::add-mask::"+secretV) != 1 {
		t.Errorf("the secret is masked more than once or later")
	}
}

// TestPlanErrorsAreAnnotations: a broken plan is refused (exit 2) with an
// annotation on the plan file's line and column, and writes nothing.
func TestPlanErrorsAreAnnotations(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.writePlan("version: 1\nchanges:\n  - id: db\n    adapter: neon\n    op: branch\n  - id: env\n    adapter: vercel\n    op: env\n    values:\n      DATABASE_URL: { from: nope.connection_string }\n")
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if code := w.run(); code != 2 {
		t.Fatalf("exit %d\n%s", code, w.out.String())
	}
	if !strings.Contains(w.out.String(), "::error col=29,file=release.plan.yaml,line=10::REF_UNKNOWN") {
		t.Errorf("no annotation at release.plan.yaml:10:29:\n%s", w.out.String())
	}
	w.want("status", "failed", "exit_code", "2")
	if w.writes() != 0 || len(w.receiptRefs()) != 0 {
		t.Errorf("a refused plan wrote something")
	}
	if cs := w.comments(2); len(cs) != 1 || !strings.Contains(cs[0].Body, "REF") {
		t.Errorf("the refusal is not on the pull request: %+v", cs)
	}
}

// TestNoContentsWrite: a token that may not push to the repository gets
// one coded error naming the permission to add.
func TestNoContentsWrite(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	perms := githubtest.ReadOnly()
	perms["pull_requests"], perms["issues"] = "write", "write"
	w.gh.AddToken(githubtest.Token{Value: "ghs_readonlyContentsToken000000000", Identity: githubtest.ActionsBot, Repos: []string{repoName}, Permissions: perms})
	w.vars["INPUT_GITHUB_TOKEN"] = "ghs_readonlyContentsToken000000000"
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if code := w.run(); code == 0 {
		t.Fatalf("exit 0\n%s", w.out.String())
	}
	out := w.out.String()
	if strings.Count(out, "::error") != 1 || !strings.Contains(out, "STORE_PERMISSION") || !strings.Contains(out, "contents: write") {
		t.Errorf("want one STORE_PERMISSION error naming contents: write:\n%s", out)
	}
	if w.writes() != 0 {
		t.Errorf("%d provider writes without a place to record them", w.writes())
	}
}

// TestCommentFoundAmongManyAndOnlyOurs: the comment is found by its marker
// among this identity's comments across pages; a comment with the same
// marker by someone else is never edited.
func TestCommentFoundAmongManyAndOnlyOurs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	someone := githubtest.Identity{Login: "Codertocat", Type: "User"}
	quote := w.gh.AddComment(repoName, 2, someone, report.Marker("preview")+"\nquoting the bot")
	for i := range 130 {
		w.gh.AddComment(repoName, 2, someone, "comment "+string(rune('a'+i%26)))
	}
	ours := w.gh.AddComment(repoName, 2, githubtest.ActionsBot, report.Marker("preview")+"\nan older report")
	w.gh.AddComment(repoName, 2, githubtest.ActionsBot, report.Marker("production")+"\nanother environment's")
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	w.run()
	for _, c := range w.comments(2) {
		switch c.ID {
		case quote:
			if len(c.Edits) != 0 {
				t.Errorf("someone else's comment was edited")
			}
		case ours:
			if len(c.Edits) != 1 || !strings.Contains(c.Body, "Sponson apply") {
				t.Errorf("our comment was not updated: %+v", c)
			}
		}
	}
	if n := len(w.comments(2)); n != 133 {
		t.Errorf("%d comments, want 133 (none created)", n)
	}
}

// TestForkSkipped: a pull request from a fork, and pull_request_target
// with a fork head, are skipped with a notice and touch nothing.
func TestForkSkipped(t *testing.T) {
	t.Parallel()
	for _, ev := range []string{"pull_request", "pull_request_target"} {
		t.Run(ev, func(t *testing.T) {
			w := newWorld(t)
			w.openPR()
			w.event(ev, edit(t, fixture(t, "pull_request/opened.payload.json"), func(m map[string]any) {
				head := m["pull_request"].(map[string]any)["head"].(map[string]any)
				head["repo"].(map[string]any)["full_name"] = "evil/Hello-World"
			}))
			if w.run() != 0 {
				t.Fatalf("exit %d", w.code)
			}
			w.want("skipped", "true", "status", "skipped", "scope", "pr-2")
			if !strings.Contains(w.out.String(), "::notice::FORK_NO_SECRETS") {
				t.Errorf("no notice:\n%s", w.out.String())
			}
			if w.writes() != 0 || len(w.comments(2)) != 0 || len(w.receiptRefs()) != 0 {
				t.Errorf("a fork's run touched something")
			}
		})
	}
}

// TestDeploymentStatus: a successful deployment outside production
// finishes the open pull request whose head was deployed; with that pull
// request closed it is a skip (a closed pull request's preview is never
// rebuilt).
func TestDeploymentStatus(t *testing.T) {
	t.Parallel()
	preview := func(t *testing.T) []byte {
		return edit(t, fixture(t, "deployment_status/payload.json"), func(m map[string]any) {
			m["deployment_status"].(map[string]any)["environment"] = "Preview"
			d := m["deployment"].(map[string]any)
			d["environment"], d["sha"], d["ref"], d["production_environment"] = "Preview", headSHA, "changes", false
		})
	}
	t.Run("open", func(t *testing.T) {
		w := newWorld(t)
		w.openPR()
		w.event("deployment_status", preview(t))
		w.run()
		w.want("status", "complete", "scope", "pr-2", "skipped", "false")
		if len(w.comments(2)) != 1 {
			t.Errorf("no comment on the deployed pull request")
		}
	})
	t.Run("closed", func(t *testing.T) {
		w := newWorld(t)
		if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: repoName, Number: 2, State: "closed", Head: githubtest.Ref{Ref: "changes", SHA: headSHA}}); err != nil {
			t.Fatal(err)
		}
		w.event("deployment_status", preview(t))
		w.run()
		w.want("skipped", "true", "status", "skipped")
		if !strings.Contains(w.out.String(), "NO_OPEN_PR") || w.writes() != 0 || len(w.receiptRefs()) != 0 {
			t.Errorf("a closed pull request's deployment touched something:\n%s", w.out.String())
		}
	})
}

// TestPushDeletingABranch destroys its branch scope.
func TestPushDeletingABranch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	apply := edit(t, fixture(t, "push/with-new-branch.payload.json"), func(m map[string]any) { m["ref"] = "refs/heads/feat/x" })
	w.vars["INPUT_COMMAND"] = "apply"
	w.event("push", apply)
	w.run()
	w.want("status", "complete", "scope", "branch-feat-x")
	delete(w.vars, "INPUT_COMMAND")
	w.event("push", edit(t, fixture(t, "push/payload.json"), func(m map[string]any) { m["ref"] = "refs/heads/feat/x" }))
	w.run()
	w.want("status", "complete", "scope", "branch-feat-x", "skipped", "false")
	if r := w.receipt("preview", "branch-feat-x"); r == nil || !r.Destroyed || len(r.Ledger) != 0 {
		t.Errorf("not destroyed: %+v", r)
	}
}

// TestCommandPlan plans, comments the plan and writes no receipt.
func TestCommandPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.openPR()
	w.vars["INPUT_COMMAND"] = "plan"
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	w.run()
	w.want("status", "ok", "exit_code", "0", "receipt_ref", "")
	if w.writes() != 0 || len(w.receiptRefs()) != 0 {
		t.Errorf("plan wrote something")
	}
	if cs := w.comments(2); len(cs) != 1 || !strings.Contains(cs[0].Body, "Sponson plan") {
		t.Errorf("comments %+v", cs)
	}
}

// Without a token a skip still skips cleanly, and a run that needs GitHub
// fails with one coded error.
func TestNoToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	delete(w.vars, "INPUT_GITHUB_TOKEN")
	w.event("ping", fixture(t, "ping/payload.json"))
	if w.run() != 0 {
		t.Fatalf("a skip without a token: exit %d\n%s", w.code, w.out.String())
	}
	w.want("skipped", "true")
	w.openPR()
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if w.run() == 0 {
		t.Fatalf("an apply without a token: exit 0\n%s", w.out.String())
	}
	if strings.Count(w.out.String(), "::error") != 1 {
		t.Errorf("want one error:\n%s", w.out.String())
	}
}
