package bot

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/manual"
	"github.com/sponson/apply/pkg/receipt"
)

const stepPlan = testPlan + `  - { id: dns, adapter: manual, op: step, title: Add the record, instructions: Add it., undo: Remove the record. }
`

// commentOn is the real issue_comment created payload made a comment on
// pull request n: its issue carries pull_request, as GitHub's does.
func commentOn(t *testing.T, n int, id int64, login, body string, set ...func(m map[string]any)) []byte {
	t.Helper()
	return edit(t, fixture(t, "issue_comment/created.with-installation.payload.json"), func(m map[string]any) {
		is := obj(m, "issue")
		is["number"] = n
		is["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/" + itoa(n),
			"html_url": "https://github.com/Codertocat/Hello-World/pull/" + itoa(n), "diff_url": "", "patch_url": "", "merged_at": nil}
		cm := obj(m, "comment")
		cm["id"], cm["body"] = id, body
		obj(cm, "user")["login"] = login
		for _, s := range set {
			s(m)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// stepWorld is the App world whose plan, on pull request #2's head
// commit, has a manual step, with "wes" a collaborator who may write.
func stepWorld(t *testing.T) *appWorld {
	t.Helper()
	w, _ := stepWorldOf(t, newAppWorld(t), strings.TrimLeft(stepPlan, "\n"))
	return w
}

// stepWorldOf makes w a step world whose plan is src; it returns w and
// the head commit of pull request #2.
func stepWorldOf(t *testing.T, w *appWorld, src string) (*appWorld, string) {
	t.Helper()
	w.ws.Ops = adapter.NewRegistry(append(w.cloud.Ops(), manual.NewStep(httpclient.New(httpclient.Config{}), w.tm.Now))...)
	sha, err := w.gh.Git.CommitFiles(hello, "changes", "add the plan", map[string]string{"release.plan.yaml": src})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Issues.SetPullHead(hello, 2, sha); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Repos.SetCollaborator(hello, "wes", "write"); err != nil {
		t.Fatal(err)
	}
	return w, sha
}

// say posts login's comment body on pull request #2 and waits for the
// bot; it returns the comment's id.
func (w *appWorld) say(login, body string) int64 {
	w.t.Helper()
	id := w.gh.AddComment(hello, 2, githubtest.Identity{Login: login}, body)
	if code := w.post("issue_comment", "c-"+itoa(int(id)), commentOn(w.t, 2, id, login, body)); code != http.StatusAccepted {
		w.t.Fatalf("%q: %d", body, code)
	}
	w.idle()
	return id
}

func (w *appWorld) reactions(id int64) []string {
	var out []string
	for _, r := range w.gh.Issues.Reactions(id) {
		out = append(out, r.Content)
	}
	return out
}

func (w *appWorld) botComment(marker string) string {
	for _, c := range w.gh.Comments(hello, 2) {
		if c.Author.Login == w.bot.Identity && strings.Contains(c.Body, marker) {
			return c.Body
		}
	}
	return ""
}

// A collaborator applies the preview from the pull request, which waits
// on a manual step; their `/sponson confirm dns` completes it, records
// them as who did it, and the environment's one comment says so.
func TestCommentConfirmsManualStep(t *testing.T) {
	w := stepWorld(t)
	id := w.say("wes", "/sponson apply --env preview")
	r := w.receipt("preview", "pr-2")
	if r == nil || r.Status != receipt.StatusPartial {
		t.Fatalf("after /sponson apply: %+v", r)
	}
	if got := w.reactions(id); strings.Join(got, ",") != "eyes,+1" {
		t.Errorf("reactions to the apply: %v", got)
	}
	if body := w.botComment(report.Marker("preview")); !strings.Contains(body, "dns") {
		t.Errorf("the preview's comment does not name the step:\n%s", body)
	}

	w.say("wes", "Done in the console.\n/sponson confirm dns --env preview")
	r = w.receipt("preview", "pr-2")
	if r == nil || r.Status != receipt.StatusComplete {
		t.Fatalf("after /sponson confirm: %+v", r)
	}
	var by any
	for _, en := range r.Ledger {
		if en.Line == "dns" {
			by = en.Outputs["confirmed_by"]
		}
	}
	if by != "wes" {
		t.Errorf("the step was confirmed by %v, want the commenter", by)
	}
	n := 0
	for _, c := range w.gh.Comments(hello, 2) {
		if c.Author.Login == w.bot.Identity {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d comments of the bot, want the environment's one", n)
	}
	if v := w.gh.Violations(); len(v) > 0 {
		t.Errorf("requests GitHub's description refuses: %v", v)
	}
}

// Someone without write permission comments `/sponson destroy`: nothing
// is destroyed, and the answer says why.
func TestNonCollaboratorCannotDestroy(t *testing.T) {
	w := stepWorld(t)
	w.apply("preview", "pr-2", "changes")
	before := len(w.cloud.Keys())
	id := w.say("drive-by", "/sponson destroy")
	if got := len(w.cloud.Keys()); got != before || before == 0 {
		t.Errorf("cloud resources %d → %d", before, got)
	}
	if r := w.receipt("preview", "pr-2"); r == nil || len(r.Ledger) != 2 {
		t.Errorf("the receipt changed: %+v", r)
	}
	if body := w.botComment(answerMarker); !strings.Contains(body, "COMMAND_REFUSED") || !strings.Contains(body, "write permission") {
		t.Errorf("the answer:\n%s", body)
	}
	if got := w.reactions(id); strings.Join(got, ",") != "eyes,confused" {
		t.Errorf("reactions: %v", got)
	}
	if n := w.gh.Count("repos/get-collaborator-permission-level"); n != 1 {
		t.Errorf("%d permission requests, want 1", n)
	}
}

// A fork's pull request runs nothing, whoever asks: its head is code the
// repository's writers have not pushed. Its comments are ignored, as an
// edited one is: no reaction, no answer.
func TestForkPullRequestRunsNothing(t *testing.T) {
	w := stepWorld(t)
	if err := w.gh.AddRepo(githubtest.Repo{FullName: "drive-by/Hello-World", Fork: hello, Branches: map[string]string{"evil": "change the plan"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: hello, Number: 3, Head: githubtest.Ref{Repo: "drive-by/Hello-World", Ref: "evil"}}); err != nil {
		t.Fatal(err)
	}
	id := w.gh.AddComment(hello, 3, githubtest.Identity{Login: "Codertocat"}, "/sponson apply --env preview")
	if code := w.post("issue_comment", "fork-1", commentOn(t, 3, id, "Codertocat", "/sponson apply --env preview")); code != http.StatusAccepted {
		t.Fatalf("%d", code)
	}
	w.idle()
	if r := w.receipt("preview", "pr-3"); r != nil || len(w.cloud.Keys()) != 0 {
		t.Fatalf("a fork's pull request was applied: %+v", r)
	}
	// Ignored like an edited comment: no answer, no reaction, and
	// nothing of the fork read.
	for _, c := range w.gh.Comments(hello, 3) {
		if c.Author.Login == w.bot.Identity {
			t.Errorf("the bot answered a fork's pull request:\n%s", c.Body)
		}
	}
	if got := w.reactions(id); len(got) != 0 {
		t.Errorf("reactions to a fork's comment: %v", got)
	}
	for _, op := range []string{"repos/get-content", "reactions/create-for-issue-comment", "repos/get-collaborator-permission-level"} {
		if n := w.gh.Count(op); n != 0 {
			t.Errorf("%s: %d requests for a fork's comment", op, n)
		}
	}
}

// A writer may not write production: only an admin, who is recorded as
// the approver.
func TestProductionNeedsAnAdmin(t *testing.T) {
	w := stepWorld(t)
	prod := strings.Replace(strings.TrimLeft(testPlan, "\n"), "[preview, staging]", "[preview, production]", 1)
	sha, err := w.gh.Git.CommitFiles(hello, "changes", "production too", map[string]string{"release.plan.yaml": prod})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Issues.SetPullHead(hello, 2, sha); err != nil {
		t.Fatal(err)
	}
	w.say("wes", "/sponson apply --env production")
	if r := w.receipt("production", "pr-2"); r != nil {
		t.Fatalf("a writer applied production: %+v", r)
	}
	if body := w.botComment(answerMarker); !strings.Contains(body, "needs an admin") {
		t.Errorf("the answer:\n%s", body)
	}
	// The repository's owner is its admin: recorded as the approver.
	w.say("Codertocat", "/sponson apply --env production")
	if r := w.receipt("production", "pr-2"); r == nil || r.ApprovedBy != "Codertocat" || len(r.Ledger) != 2 {
		t.Fatalf("the admin's apply: %+v", r)
	}
}

// Edited and deleted comments, comments on issues or closed pull
// requests, the bot's own and conversation are answered and never queued.
func TestCommentsThatAreNotCommands(t *testing.T) {
	w := newTestWorld(t)
	for name, body := range map[string][]byte{
		"edited":  edit(t, commentOn(t, 2, 7, "Codertocat", "/sponson destroy"), func(m map[string]any) { m["action"] = "edited" }),
		"deleted": edit(t, commentOn(t, 2, 7, "Codertocat", "/sponson destroy"), func(m map[string]any) { m["action"] = "deleted" }),
		"issue": edit(t, fixture(t, "issue_comment/created.with-installation.payload.json"), func(m map[string]any) {
			obj(m, "comment")["body"] = "/sponson destroy"
		}),
		"closed":       commentOn(t, 2, 7, "Codertocat", "/sponson destroy", func(m map[string]any) { obj(m, "issue")["state"] = "closed" }),
		"own":          commentOn(t, 2, 7, identity, "/sponson destroy"),
		"conversation": commentOn(t, 2, 7, "Codertocat", "Looks good; `/sponson destroy` once merged"),
	} {
		code, _, resp := w.post("issue_comment", "n-"+name, body)
		if code != http.StatusOK || !strings.Contains(resp, `"outcome":"`+OutcomeIgnored+`"`) {
			t.Errorf("%s: %d %s", name, code, resp)
		}
	}
	// The real edited payload, as GitHub sends it, too.
	if code, _, resp := w.post("issue_comment", "n-real", fixture(t, "issue_comment/edited.payload.json")); code != http.StatusOK || !strings.Contains(resp, "only a new comment") {
		t.Errorf("real edited: %d %s", code, resp)
	}
	w.idle()
	if got := w.bot.Queue.Stats().Done; got != 0 {
		t.Errorf("%d comments were queued", got)
	}
	if code, _, _ := w.post("issue_comment", "n-cmd", commentOn(t, 2, 7, "Codertocat", "/sponson plan")); code != http.StatusAccepted {
		t.Errorf("a command was not accepted: %d", code)
	}
}

// A collaborator's /sponson destroy destroys the pull request's preview
// and says so in its comment; /sponson plan after it shows what an apply
// would create; an unknown command is answered with what to type.
func TestCommentPlanDestroyAndUnknown(t *testing.T) {
	w := stepWorld(t)
	w.apply("preview", "pr-2", "changes")
	w.say("wes", "/sponson destroy")
	if keys := w.cloud.Keys(); len(keys) != 0 {
		t.Errorf("left after /sponson destroy: %v", keys)
	}
	if r := w.receipt("preview", "pr-2"); r == nil || len(r.Ledger) != 0 || r.Closed != nil {
		t.Errorf("after /sponson destroy: %+v", r)
	}
	if body := w.botComment(report.Marker("preview")); !strings.Contains(body, "destroy") {
		t.Errorf("the preview's comment after destroy:\n%s", body)
	}

	w.say("wes", "/sponson plan --env preview")
	if keys := w.cloud.Keys(); len(keys) != 0 {
		t.Errorf("/sponson plan created %v", keys)
	}
	if body := w.botComment(report.Marker("preview")); !strings.Contains(body, "Sponson plan · preview · pr-2") || !strings.Contains(body, "3 create") {
		t.Errorf("the preview's comment after plan:\n%s", body)
	}

	id := w.say("wes", "/sponson deploy")
	if body := w.botComment(answerMarker); !strings.Contains(body, "COMMAND_INVALID") || !strings.Contains(body, "`/sponson confirm <line>`") {
		t.Errorf("the answer to an unknown command:\n%s", body)
	}
	if got := w.reactions(id); strings.Join(got, ",") != "eyes,confused" {
		t.Errorf("reactions: %v", got)
	}
}

// A run died holding the preview's lease: a collaborator's
// /sponson unlock releases it, recording who and why; a shared object's
// lease (--parent) needs an admin.
func TestCommentUnlock(t *testing.T) {
	w := stepWorld(t)
	w.apply("preview", "pr-2", "changes")
	ws, err := w.ws.Open(context.Background(), Repository{Installation: 1, Owner: "Codertocat", Name: "Hello-World"})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.close()
	target := receipt.ScopeTarget("preview", "pr-2")
	if _, _, err := ws.Store.Acquire(context.Background(), target, receipt.Owner{RunID: "dead-run"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	w.say("wes", "/sponson unlock the runner died")
	body := w.botComment(report.Marker("preview"))
	if !strings.Contains(body, "wes released the lease on") || !strings.Contains(body, "the runner died") {
		t.Errorf("the preview's comment after unlock:\n%s", body)
	}
	if _, _, err := ws.Store.Acquire(context.Background(), target, receipt.Owner{RunID: "next-run"}, time.Hour); err != nil {
		t.Errorf("the lease is still held: %v", err)
	}

	w.say("wes", "/sponson unlock --parent fake:p1:list:callbacks stuck")
	if body := w.botComment(answerMarker); !strings.Contains(body, "needs an admin") {
		t.Errorf("a writer's --parent unlock:\n%s", body)
	}
	w.say("Codertocat", "/sponson unlock --parent fake:p1:list:callbacks stuck")
	if body := w.botComment(answerMarker); !strings.Contains(body, "no lease was held on") {
		t.Errorf("an admin's --parent unlock:\n%s", body)
	}
}

// /sponson keep labels the pull request sponson:keep; /sponson unkeep
// takes the label off.
func TestCommentKeep(t *testing.T) {
	w := stepWorld(t)
	w.say("wes", "/sponson keep")
	if got := w.gh.Issues.IssueLabels(hello, 2); len(got) != 1 || got[0] != KeepLabel {
		t.Errorf("labels after keep: %v", got)
	}
	if body := w.botComment(answerMarker); !strings.Contains(body, "wes kept this preview") {
		t.Errorf("the answer:\n%s", body)
	}
	w.say("wes", "/sponson unkeep")
	if got := w.gh.Issues.IssueLabels(hello, 2); len(got) != 0 {
		t.Errorf("labels after unkeep: %v", got)
	}
}

// With an approvers team configured, its active member may write
// production from a comment and is recorded as the approver; a writer
// off the team may not.
func TestApproversTeamMayWriteProduction(t *testing.T) {
	w := stepWorld(t)
	w.bot.Approvers = "Codertocat/approvers"
	prod := strings.Replace(strings.TrimLeft(testPlan, "\n"), "[preview, staging]", "[preview, production]", 1)
	sha, err := w.gh.Git.CommitFiles(hello, "changes", "production too", map[string]string{"release.plan.yaml": prod})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Issues.SetPullHead(hello, 2, sha); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Repos.SetCollaborator(hello, "ada", "write"); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Repos.AddTeamMember(githubtest.Member{Org: "Codertocat", Team: "approvers", Login: "ada"}); err != nil {
		t.Fatal(err)
	}
	// The installation may not read teams yet: the answer names the
	// permission, and nothing is written.
	w.say("ada", "/sponson apply --env production")
	if body := w.botComment(answerMarker); !strings.Contains(body, "members") {
		t.Errorf("the answer when the App may not read teams:\n%s", body)
	}
	if r := w.receipt("production", "pr-2"); r != nil {
		t.Fatalf("applied without knowing the approver: %+v", r)
	}
	if err := w.gh.Apps.AddInstallation(githubtest.Installation{ID: 1, App: 4242, Account: "Codertocat", Repos: []string{hello},
		Permissions: map[string]string{"contents": "write", "pull_requests": "write", "actions": "read", "metadata": "read", "members": "read"}}); err != nil {
		t.Fatal(err)
	}
	w.gh.ExpireTokens(1)
	w.say("wes", "/sponson apply --env production")
	if body := w.botComment(answerMarker); !strings.Contains(body, "or a member of team Codertocat/approvers") {
		t.Errorf("the answer to a writer off the team:\n%s", body)
	}
	w.say("ada", "/sponson apply --env production")
	if r := w.receipt("production", "pr-2"); r == nil || r.ApprovedBy != "ada" {
		t.Fatalf("the approver's apply: %+v", r)
	}
}

// /sponson recreate replaces what a line created; /sponson reconcile runs
// an apply that accepts outside changes; a head commit without the plan
// is answered, and nothing runs.
func TestCommentRecreateReconcileAndNoPlan(t *testing.T) {
	w := stepWorld(t)
	w.say("wes", "/sponson apply --env preview")
	w.cloud.ResetWrites()
	w.say("wes", "/sponson recreate db --env preview")
	var deleted, created bool
	for _, wr := range w.cloud.Writes() {
		if strings.Contains(wr.Key, "preview-changes-db") && !wr.Failed {
			deleted = deleted || wr.Method == "delete"
			created = created || wr.Method == "create"
		}
	}
	if !deleted || !created {
		t.Errorf("recreate db: writes %+v", w.cloud.Writes())
	}
	w.cloud.ResetWrites()
	w.say("wes", "/sponson reconcile --env preview")
	if r := w.receipt("preview", "pr-2"); r == nil || len(r.Ledger) != 2 {
		t.Errorf("after reconcile: %+v", r)
	}

	main := w.gh.Branches(hello)["main"]
	if err := w.gh.Issues.SetPullHead(hello, 2, main); err != nil {
		t.Fatal(err)
	}
	w.cloud.ResetWrites()
	w.say("wes", "/sponson apply --env preview")
	if body := w.botComment(answerMarker); !strings.Contains(body, "release.plan.yaml could not be read at the head commit") {
		t.Errorf("the answer without a plan:\n%s", body)
	}
	if n := len(w.cloud.Writes()); n != 0 {
		t.Errorf("%d cloud writes without a plan", n)
	}
}
