package bot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/receipt"
)

// heldReplica is a process of the bot on w's GitHub and cloud whose queue
// is not served yet: what its webhook does is all that has happened when
// its answer returns.
func (w *appWorld) heldReplica() (*Bot, *httptest.Server) {
	w.t.Helper()
	return w.webhookReplica(1)
}

// webhookReplica is another process of the bot on w's GitHub and cloud: its own
// App client, workspaces, queue (not served) and server.
func (w *appWorld) webhookReplica(workers int) (*Bot, *httptest.Server) {
	w.t.Helper()
	app, err := github.NewApp(github.Config{APIURL: w.gh.APIURL, ServerURL: w.gh.URL, Clock: w.tm}, 4242, w.key)
	if err != nil {
		w.t.Fatal(err)
	}
	ws := &AppWorkspaces{App: app, ServerURL: w.gh.URL, Clock: w.tm, Ops: w.ws.Ops, Dir: w.t.TempDir(), Identity: w.ws.Identity}
	q := &Queue{Cap: 100, Clock: w.tm}
	b := &Bot{Secret: testSecret, Identity: w.bot.Identity, Workspace: ws, Clock: enginetest.Yielding(w.tm), Queue: q, Dedup: &Dedup{Clock: w.tm}, Workers: workers}
	srv := httptest.NewServer(b.Handler())
	w.t.Cleanup(srv.Close)
	return b, srv
}

// serve runs b's queue until the test ends and waits until it is idle.
func serve(t *testing.T, b *Bot) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Queue.Run(ctx, 1, b.Handle) }()
	t.Cleanup(func() { cancel(); <-done })
	wait, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if err := b.Queue.Idle(wait); err != nil {
		t.Fatal(err)
	}
}

// The eyes reaction is on the comment when the webhook's answer returns,
// before any of the queued work has run (no permission asked, no cloud
// write); the same delivery again adds nothing; the work then ends with
// +1 beside it.
func TestCommentAcknowledgedWithinTheWebhookAnswer(t *testing.T) {
	w := stepWorld(t)
	b, srv := w.heldReplica()
	body := "/sponson apply --env preview"
	id := w.gh.AddComment(hello, 2, githubtest.Identity{Login: "wes"}, body)
	payload := commentOn(t, 2, id, "wes", body)
	tw := &testWorld{t: t}
	code, _, resp := tw.postURL(srv.URL, "issue_comment", "ack-1", payload)
	if code != http.StatusAccepted {
		t.Fatalf("%d %s", code, resp)
	}
	if got := w.reactions(id); strings.Join(got, ",") != "eyes" {
		t.Errorf("reactions when the webhook answered: %v, want eyes", got)
	}
	if st := b.Queue.Stats(); st.Depth != 1 || st.Running != 0 || st.Done != 0 {
		t.Errorf("the queue when the webhook answered: %+v, want the job queued and not run", st)
	}
	if n := w.gh.Count("repos/get-collaborator-permission-level"); n != 0 {
		t.Errorf("the command's work began before the answer: %d permission requests", n)
	}
	if n := len(w.cloud.Writes()); n != 0 {
		t.Errorf("%d cloud writes before the answer", n)
	}
	if code, _, resp := tw.postURL(srv.URL, "issue_comment", "ack-1", payload); code != http.StatusOK || !strings.Contains(resp, OutcomeDuplicate) {
		t.Errorf("the same delivery again: %d %s", code, resp)
	}
	if n := w.gh.Count("reactions/create-for-issue-comment"); n != 1 {
		t.Errorf("%d reaction requests for one delivery, want 1", n)
	}

	serve(t, b)
	if got := w.reactions(id); strings.Join(got, ",") != "eyes,+1" {
		t.Errorf("reactions after the work: %v", got)
	}
	if r := w.receipt("preview", "pr-2"); r == nil || r.Status != receipt.StatusPartial {
		t.Errorf("the receipt: %+v", r)
	}
	if v := w.gh.Violations(); len(v) > 0 {
		t.Errorf("requests GitHub's description refuses: %v", v)
	}
}

// A comment the bot ignores is never acknowledged: an edited or deleted
// one, one on an issue, on a closed pull request (by the payload, or by
// GitHub when the payload is late), on a fork's, the bot's own, and
// conversation.
func TestIgnoredCommentsAreNotAcknowledged(t *testing.T) {
	w := stepWorld(t)
	if err := w.gh.AddRepo(githubtest.Repo{FullName: "drive-by/Hello-World", Fork: hello, Branches: map[string]string{"evil": "change the plan"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: hello, Number: 3, Head: githubtest.Ref{Repo: "drive-by/Hello-World", Ref: "evil"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: hello, Number: 4, Head: githubtest.Ref{Ref: "feat/b"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.SetPullState(hello, 4, "closed", false); err != nil {
		t.Fatal(err)
	}
	cmd := "/sponson apply --env preview"
	c2 := w.gh.AddComment(hello, 2, githubtest.Identity{Login: "wes"}, cmd)
	c3 := w.gh.AddComment(hello, 3, githubtest.Identity{Login: "wes"}, cmd)
	c4 := w.gh.AddComment(hello, 4, githubtest.Identity{Login: "wes"}, cmd)
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	for name, body := range map[string][]byte{
		"edited":        commentOn(t, 2, c2, "wes", cmd, set("action", "edited")),
		"deleted":       commentOn(t, 2, c2, "wes", cmd, set("action", "deleted")),
		"real edited":   fixture(t, "issue_comment/edited.payload.json"),
		"real deleted":  fixture(t, "issue_comment/deleted.payload.json"),
		"issue":         edit(t, fixture(t, "issue_comment/created.with-installation.payload.json"), func(m map[string]any) { obj(m, "comment")["body"] = cmd }),
		"closed":        commentOn(t, 2, c2, "wes", cmd, func(m map[string]any) { obj(m, "issue")["state"] = "closed" }),
		"closed since":  commentOn(t, 4, c4, "wes", cmd),
		"fork":          commentOn(t, 3, c3, "wes", cmd),
		"own":           commentOn(t, 2, c2, w.bot.Identity, cmd),
		"conversation":  commentOn(t, 2, c2, "wes", "LGTM; "+cmd+" after lunch"),
		"no such issue": commentOn(t, 9, c2, "wes", cmd),
	} {
		if code := w.post("issue_comment", "ign-"+name, body); code != http.StatusOK && code != http.StatusAccepted {
			t.Errorf("%s: %d", name, code)
		}
	}
	w.idle()
	if n := w.gh.Count("reactions/create-for-issue-comment"); n != 0 {
		t.Errorf("%d reactions left on comments the bot ignores", n)
	}
	for _, n := range []int{2, 3, 4} {
		for _, c := range w.gh.Comments(hello, n) {
			if c.Author.Login == w.bot.Identity {
				t.Errorf("the bot answered an ignored comment on #%d:\n%s", n, c.Body)
			}
		}
	}
	if r := w.receipt("preview", "pr-2"); r != nil || len(w.cloud.Keys()) != 0 {
		t.Errorf("an ignored comment ran: %+v", r)
	}
}

// When the queue refuses an accepted command (503), the eyes already left
// is followed by confused: the command will not run.
func TestRefusedByAFullQueueIsConfused(t *testing.T) {
	w := stepWorld(t)
	b, srv := w.heldReplica()
	b.Queue.Cap = 1
	tw := &testWorld{t: t}
	first := w.gh.AddComment(hello, 2, githubtest.Identity{Login: "wes"}, "/sponson plan")
	if code, _, resp := tw.postURL(srv.URL, "issue_comment", "full-1", commentOn(t, 2, first, "wes", "/sponson plan")); code != http.StatusAccepted {
		t.Fatalf("%d %s", code, resp)
	}
	id := w.gh.AddComment(hello, 2, githubtest.Identity{Login: "wes"}, "/sponson apply")
	if code, _, resp := tw.postURL(srv.URL, "issue_comment", "full-2", commentOn(t, 2, id, "wes", "/sponson apply")); code != http.StatusServiceUnavailable {
		t.Fatalf("a full queue: %d %s", code, resp)
	}
	if got := w.reactions(id); strings.Join(got, ",") != "eyes,confused" {
		t.Errorf("reactions to the refused delivery: %v", got)
	}
}
