package bot

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// servingReplica is a second process of the bot on w's GitHub and cloud: its own
// App client, workspaces, queue and server.
func (w *appWorld) servingReplica() (*Bot, *httptest.Server) {
	w.t.Helper()
	b, srv := w.webhookReplica(2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Queue.Run(ctx, 2, b.Handle) }()
	w.t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return b, srv
}

// Two replicas given the same /sponson apply act once: each resource is
// created once, the receipt is complete, the environment has one
// comment, and the comment one eyes reaction.
func TestReplicasGivenTheSameCommentActOnce(t *testing.T) {
	w := stepWorld(t)
	other, srv := w.servingReplica()
	body := "/sponson apply --env preview"
	id := w.gh.AddComment(hello, 2, githubtest.Identity{Login: "wes"}, body)
	payload := commentOn(t, 2, id, "wes", body)
	var wg sync.WaitGroup
	for _, url := range []string{w.srv.URL, srv.URL} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tw := &testWorld{t: t}
			if code, _, resp := tw.postURL(url, "issue_comment", "same-delivery", payload); code != 202 {
				t.Errorf("%s: %d %s", url, code, resp)
			}
		}()
	}
	wg.Wait()
	w.idle()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := other.Queue.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	creates := map[string]int{}
	for _, wr := range w.cloud.Writes() {
		if !wr.Failed && wr.Method == "create" {
			creates[wr.Key]++
		}
	}
	if len(creates) != 2 {
		t.Errorf("creates: %v, want db and cb", creates)
	}
	for k, n := range creates {
		if n != 1 {
			t.Errorf("%s created %d times", k, n)
		}
	}
	if len(w.cloud.Keys()) != 2 {
		t.Errorf("cloud: %v", w.cloud.Keys())
	}
	if r := w.receipt("preview", "pr-2"); r == nil || r.Status != receipt.StatusPartial || len(r.Ledger) != 2 {
		t.Errorf("the receipt: %+v", r)
	}
	n := 0
	for _, c := range w.gh.Comments(hello, 2) {
		if c.Author.Login == w.bot.Identity && strings.HasPrefix(c.Body, report.Marker("preview")) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d comments for preview, want one", n)
	}
	// Both replicas acknowledged the delivery while answering it; the
	// comment has the one eyes reaction.
	eyes := 0
	for _, r := range w.reactions(id) {
		if r == "eyes" {
			eyes++
		}
	}
	if eyes != 1 {
		t.Errorf("reactions %v: eyes %d times, want once", w.reactions(id), eyes)
	}
	// The replica kept out by the other's lease writes no refusal over
	// the result: the environment's comment is the run's.
	if body := w.botComment(report.Marker("preview")); strings.Contains(body, string(errs.WAIT_TIMEOUT)) || strings.Contains(body, string(errs.LOCK_HELD)) || !strings.Contains(body, "dns") {
		t.Errorf("the preview's comment:\n%s", body)
	}
}
