package journeys

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/bot"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/receipt"
)

func deletes(w *botWorld, branch string) int {
	n := 0
	for _, wr := range w.cloud.Writes() {
		if wr.Method == optest.MethodDelete && !wr.Failed && (strings.Contains(wr.Key, "-"+branch+"-db") || strings.Contains(wr.Key, "-"+branch+".example")) {
			n++
		}
	}
	return n
}

// A branch applied by an agent, its pull request opened (succession), then
// closed: nothing of it is left, and the pull request's comment says so.
func TestBotJourneyBranchToClose(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	for _, env := range []string{"preview", "staging"} {
		if err := w.applyAs(env, 0, "feat-a", false); err != nil {
			t.Fatal(err)
		}
	}
	w.gh.setBranch("feat-a", true)
	w.gh.setPR(7, true, "feat-a", w.tm.Now())
	if code := w.deliver("pull_request", "open-7", prPayload(t, "opened", 7, "feat-a", w.tm.Now())); code != http.StatusAccepted {
		t.Fatalf("opened: %d", code)
	}
	w.idle()
	for _, env := range []string{"preview", "staging"} {
		r, _, _ := w.store.Read(context.Background(), env, "pr-7")
		if r == nil || len(r.Ledger) != 2 {
			t.Fatalf("%s/pr-7 did not inherit the branch's resources: %+v", env, r)
		}
	}
	// The workflow applies the pull request: nothing to create, all inherited.
	writes := len(w.cloud.Writes())
	if err := w.applyAs("preview", 7, "feat-a", false); err != nil {
		t.Fatal(err)
	}
	if len(w.cloud.Writes()) != writes {
		t.Errorf("the pull request's apply rebuilt what it inherited")
	}
	w.tm.Advance(time.Hour)
	w.gh.setPR(7, false, "feat-a", w.tm.Now())
	if code := w.deliver("pull_request", "close-7", prPayload(t, "closed", 7, "feat-a", w.tm.Now())); code != http.StatusAccepted {
		t.Fatalf("closed: %d", code)
	}
	w.idle()
	if left := w.keysOf("feat-a"); len(left) != 0 {
		t.Fatalf("left after close: %v", left)
	}
	cs, _ := w.gh.Comments(context.Background(), 7)
	if len(cs) != 2 {
		t.Fatalf("%d comments, want one per environment", len(cs))
	}
	for _, c := range cs {
		if !strings.Contains(c.Body, "torn down") {
			t.Errorf("comment:\n%s", c.Body)
		}
	}
	// A late workflow run cannot rebuild it.
	if err := w.applyAs("preview", 7, "feat-a", false); err == nil || !strings.Contains(err.Error(), "SCOPE_CLOSED") {
		t.Errorf("a late apply after close: %v", err)
	}
	if left := w.keysOf("feat-a"); len(left) != 0 {
		t.Fatalf("rebuilt after close: %v", left)
	}
}

// The close delivery is lost (GitHub does not redeliver): the next sweep
// finds the closed pull request with resources and destroys them.
func TestBotJourneyLostCloseIsSwept(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	w.gh.setBranch("feat-b", true)
	w.gh.setPR(8, true, "feat-b", w.tm.Now())
	if err := w.applyAs("preview", 8, "feat-b", false); err != nil {
		t.Fatal(err)
	}
	w.gh.setPR(8, false, "feat-b", w.tm.Now()) // closed; the delivery never arrives
	w.tm.Advance(bot.DefaultSweepInterval)
	reps := w.bot.SweepAll(context.Background())
	if len(reps) != 1 || reps[0].Count("closed_pr") != 1 {
		t.Fatalf("sweep: %+v", reps)
	}
	if left := w.keysOf("feat-b"); len(left) != 0 {
		t.Fatalf("left after the sweep: %v", left)
	}
	if r, _, _ := w.store.Read(context.Background(), "preview", "pr-8"); r.Closed == nil || r.Closed.By != botIdentity {
		t.Errorf("no tombstone after the sweep: %+v", r.Closed)
	}
}

// One delivery replayed five times within milliseconds (same id, and the
// same body under new ids): one teardown, one comment.
func TestBotJourneyReplayedDeliveryHasOneEffect(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	w.gh.setBranch("feat-c", true)
	w.gh.setPR(9, true, "feat-c", w.tm.Now())
	if err := w.applyAs("preview", 9, "feat-c", false); err != nil {
		t.Fatal(err)
	}
	w.gh.setPR(9, false, "feat-c", w.tm.Now())
	body := prPayload(t, "closed", 9, "feat-c", w.tm.Now())
	var wg sync.WaitGroup
	codes := make([]int, 5)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "close-9"
			if i >= 3 {
				id = "close-9-copy-" + string(rune('a'+i))
			}
			codes[i] = w.deliver("pull_request", id, body)
		}()
	}
	wg.Wait()
	w.idle()
	accepted := 0
	for _, c := range codes {
		if c == http.StatusAccepted {
			accepted++
		}
	}
	if accepted != 1 {
		t.Errorf("accepted %d of 5 copies: %v", accepted, codes)
	}
	if n := deletes(w, "feat-c"); n != 2 {
		t.Errorf("%d deletes, want one per resource (2)", n)
	}
	if cs, _ := w.gh.Comments(context.Background(), 9); len(cs) != 1 {
		t.Errorf("%d comments, want 1", len(cs))
	}
	if left := w.keysOf("feat-c"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

// Two bot replicas behind one load balancer both get every delivery: the
// store's leases and compare-and-swap make it one effect.
func TestBotJourneyTwoReplicasOneEffect(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	first := w.bot
	firstURL := w.srv.URL
	firstSrv, firstCancel, firstDone := w.srv, w.cancel, w.done
	w.start() // a second replica on the same store and GitHub
	t.Cleanup(func() { firstSrv.Close(); firstCancel(); <-firstDone })

	w.gh.setBranch("feat-d", true)
	for _, env := range []string{"preview", "staging"} {
		if err := w.applyAs(env, 0, "feat-d", false); err != nil {
			t.Fatal(err)
		}
	}
	w.gh.setPR(10, true, "feat-d", w.tm.Now())
	open := prPayload(t, "opened", 10, "feat-d", w.tm.Now())
	var wg sync.WaitGroup
	for _, u := range []string{firstURL, w.srv.URL} {
		wg.Add(1)
		go func() { defer wg.Done(); deliverTo(t, u, "pull_request", "open-10", open) }()
	}
	wg.Wait()
	w.idle()
	idle(t, first)
	for _, env := range []string{"preview", "staging"} {
		r, _, _ := w.store.Read(context.Background(), env, "pr-10")
		if r == nil || len(r.Ledger) != 2 {
			t.Fatalf("%s/pr-10 after two replicas' succession: %+v", env, r)
		}
	}

	w.gh.setPR(10, false, "feat-d", w.tm.Now())
	closeBody := prPayload(t, "closed", 10, "feat-d", w.tm.Now())
	for _, u := range []string{firstURL, w.srv.URL} {
		wg.Add(1)
		go func() { defer wg.Done(); deliverTo(t, u, "pull_request", "close-10", closeBody) }()
	}
	wg.Wait()
	w.idle()
	idle(t, first)
	if n := deletes(w, "feat-d"); n != 4 {
		t.Errorf("%d deletes, want one per resource (4)", n)
	}
	if left := w.keysOf("feat-d"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
	cs, _ := w.gh.Comments(context.Background(), 10)
	if len(cs) != 2 {
		t.Errorf("%d comments, want one per environment (2)", len(cs))
	}
	for _, c := range cs {
		// The replica that found nothing left did not overwrite it.
		if !strings.Contains(c.Body, "Destroyed (2)") {
			t.Errorf("comment:\n%s", c.Body)
		}
	}
}

func idle(t *testing.T, b *bot.Bot) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Queue.Idle(ctx); err != nil {
		t.Fatal(err)
	}
}

// The bot dies in the middle of a teardown (just before its second delete
// leaves); it restarts, and its sweep at start finishes the job once the
// dead run's lease has expired.
func TestBotJourneyKilledMidTeardownIsFinished(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	w.gh.setBranch("feat-e", true)
	w.gh.setPR(11, true, "feat-e", w.tm.Now())
	if err := w.applyAs("preview", 11, "feat-e", false); err != nil {
		t.Fatal(err)
	}
	w.gh.setPR(11, false, "feat-e", w.tm.Now())
	var once sync.Once
	w.cloud.Crash(optest.Match{Method: optest.MethodDelete}, func() { once.Do(func() { panic("SIGKILL") }) })
	w.deliver("pull_request", "close-11", prPayload(t, "closed", 11, "feat-e", w.tm.Now()))
	w.idle()
	w.cloud.ClearFaults()
	if left := w.keysOf("feat-e"); len(left) == 0 {
		t.Fatal("the teardown was not interrupted: nothing left to finish")
	}
	w.tm.Advance(receipt.DefaultTTL + time.Minute)
	w.restart()
	if left := w.keysOf("feat-e"); len(left) != 0 {
		t.Fatalf("left after the restarted bot's sweep: %v", left)
	}
}
