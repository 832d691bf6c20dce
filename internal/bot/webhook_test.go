package bot

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func sha1Sig(body []byte) string {
	m := hmac.New(sha1.New, testSecret)
	m.Write(body)
	return "sha1=" + hex.EncodeToString(m.Sum(nil))
}

// Refused deliveries change nothing: no job is queued, no receipt written,
// nothing remembered as seen (a correctly signed copy is still accepted).
func TestWebhookRefusesWhatItCannotTrust(t *testing.T) {
	w := newTestWorld(t)
	body := fixture(t, "pull_request/closed.payload.json")
	w.applyBranch("preview", "changes")
	before := w.rec("preview", "branch-changes")

	other := Sign([]byte("another secret"), body)
	tampered := append(bytes.Clone(body[:len(body)-2]), []byte(" }")...)
	huge := bytes.Repeat([]byte(" "), DefaultMaxBody+1)
	cases := []struct {
		name    string
		event   string
		body    []byte
		headers []string
		code    int
		outcome string
	}{
		{"missing signature", "pull_request", body, []string{"X-Hub-Signature-256", ""}, 401, OutcomeBadSig},
		{"SHA-1 only", "pull_request", body, []string{"X-Hub-Signature-256", "", "X-Hub-Signature", sha1Sig(body)}, 401, OutcomeBadSig},
		{"wrong secret", "pull_request", body, []string{"X-Hub-Signature-256", other}, 401, OutcomeBadSig},
		{"signature of another body", "pull_request", tampered, []string{"X-Hub-Signature-256", Sign(testSecret, body)}, 401, OutcomeBadSig},
		{"SHA-1 prefix in the SHA-256 header", "pull_request", body, []string{"X-Hub-Signature-256", sha1Sig(body)}, 401, OutcomeBadSig},
		{"not hex", "pull_request", body, []string{"X-Hub-Signature-256", "sha256=" + strings.Repeat("zz", 32)}, 401, OutcomeBadSig},
		{"over 25 MB", "pull_request", huge, nil, 413, OutcomeTooLarge},
		{"not JSON", "pull_request", []byte("{\"action\": \"closed\""), nil, 400, OutcomeMalformed},
		{"JSON of the wrong shape", "pull_request", []byte(`{"action": "closed", "pull_request": "nope"}`), nil, 400, OutcomeMalformed},
		{"no pull request", "pull_request", []byte(`{"action": "closed"}`), nil, 400, OutcomeMalformed},
		{"no event header", "", body, nil, 400, OutcomeMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, resp := w.post(c.event, "d-"+c.name, c.body, c.headers...)
			if code != c.code || !strings.Contains(resp, `"outcome":"`+c.outcome+`"`) {
				t.Errorf("got %d %s, want %d %s", code, resp, c.code, c.outcome)
			}
		})
	}
	w.idle()
	if got := w.bot.Queue.Stats().Done; got != 0 {
		t.Errorf("%d refused deliveries were handled", got)
	}
	if after := w.rec("preview", "branch-changes"); after.RunID != before.RunID {
		t.Errorf("a refused delivery wrote a receipt")
	}
	if n := w.bot.Dedup.Len(); n != 0 {
		t.Errorf("refused deliveries were remembered: %d", n)
	}
	if got := testutil.ToFloat64(w.bot.Metrics.Deliveries.WithLabelValues("unverified", OutcomeBadSig)); got != 6 {
		t.Errorf("bad signatures counted: %v, want 6", got)
	}
	// The genuine delivery is still accepted afterwards.
	w.setPR(2, false, "changes")
	if code, _, resp := w.post("pull_request", "d-genuine", body); code != http.StatusAccepted {
		t.Fatalf("genuine delivery: %d %s", code, resp)
	}
}

func TestWebhookPingAndIgnoredEvents(t *testing.T) {
	w := newTestWorld(t)
	for _, f := range []string{"ping/payload.json", "ping/with-app_id.payload.json", "ping/with-organization.payload.json"} {
		if code, _, resp := w.post("ping", "p-"+f, fixture(t, f)); code != 200 || !strings.Contains(resp, OutcomePing) {
			t.Errorf("%s: %d %s", f, code, resp)
		}
	}
	for _, c := range []struct{ event, file string }{
		{"pull_request", "pull_request/synchronize.payload.json"},
		{"pull_request", "pull_request/labeled.payload.json"},
		{"push", "push/with-installation.payload.json"}, // a deleted tag
		{"push", "push/with-new-branch.payload.json"},
		{"issue_comment", "issue_comment/created.payload.json"},
		{"deployment_status", "deployment_status/payload.json"},
	} {
		if code, _, resp := w.post(c.event, "i-"+c.file, fixture(t, c.file)); code != 200 || !strings.Contains(resp, OutcomeIgnored) {
			t.Errorf("%s: %d %s", c.file, code, resp)
		}
	}
	w.idle()
	if got := w.bot.Queue.Stats().Done; got != 0 {
		t.Errorf("%d ignored deliveries were queued", got)
	}
}

// GitHub can send a form-encoded body; the signature covers the raw body.
func TestWebhookTakesFormEncodedPayloads(t *testing.T) {
	w := newTestWorld(t)
	form := []byte("payload=" + url.QueryEscape(string(fixture(t, "installation_repositories/added.payload.json"))))
	code, _, resp := w.post("installation_repositories", "f-1", form, "Content-Type", "application/x-www-form-urlencoded", "X-Hub-Signature-256", Sign(testSecret, form))
	if code != http.StatusAccepted {
		t.Fatalf("%d %s", code, resp)
	}
	w.idle()
	if got := w.bot.Known(); len(got) != 1 || got[0].FullName() != "Codertocat/Space" {
		t.Errorf("known repositories: %+v", got)
	}
}

// Five copies of one delivery within milliseconds, some under another id
// (GitHub's duplicates) and some under the same id (a redelivery): one is
// accepted, the others are duplicates, whatever the interleaving.
func TestWebhookDeDuplicatesOnIDAndBody(t *testing.T) {
	w := newTestWorld(t)
	body := fixture(t, "installation/created.payload.json")
	var wg sync.WaitGroup
	codes := make([]int, 5)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "dup-1"
			if i%2 == 1 {
				id = "dup-" + string(rune('a'+i))
			}
			codes[i], _, _ = w.post("installation", id, body)
		}()
	}
	wg.Wait()
	accepted := 0
	for _, c := range codes {
		switch c {
		case http.StatusAccepted:
			accepted++
		case http.StatusOK:
		default:
			t.Errorf("unexpected answer %d", c)
		}
	}
	if accepted != 1 {
		t.Fatalf("accepted %d of 5 copies: %v", accepted, codes)
	}
	// Another event under a reused id is a duplicate too (GitHub's id is
	// the delivery's); a new id with a new body is not.
	if code, _, _ := w.post("installation_repositories", "dup-1", fixture(t, "installation_repositories/added.payload.json")); code != http.StatusOK {
		t.Errorf("reused id: %d", code)
	}
	if code, _, _ := w.post("installation_repositories", "new-1", fixture(t, "installation_repositories/added.payload.json")); code != http.StatusAccepted {
		t.Errorf("new delivery: %d", code)
	}
	// After the window, a redelivery is handled again (handlers are
	// idempotent anyway).
	w.tm.Advance(DefaultDedupWindow + time.Second)
	if code, _, _ := w.post("installation", "dup-1", body); code != http.StatusAccepted {
		t.Errorf("after the window: %d", code)
	}
}

// A full queue answers 503 with Retry-After and forgets the delivery, so
// GitHub's retry of it is accepted later.
func TestWebhookFullQueueAnswers503(t *testing.T) {
	w := newTestWorld(t)
	w.bot.Queue.Close() // stop the workers: nothing drains
	q := &Queue{Cap: 1, Clock: w.tm}
	w.bot.Queue = q
	a := fixture(t, "installation/created.payload.json")
	b := fixture(t, "installation_repositories/added.payload.json")
	if code, _, _ := w.post("installation", "q-1", a); code != http.StatusAccepted {
		t.Fatalf("first: %d", code)
	}
	code, h, resp := w.post("installation_repositories", "q-2", b)
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("full queue: %d Retry-After %q %s", code, h.Get("Retry-After"), resp)
	}
	// Make room; the retry is accepted.
	go q.Run(w.ctx, 1, w.bot.Handle)
	if err := q.Idle(w.ctx); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := w.post("installation_repositories", "q-2", b); code != http.StatusAccepted {
		t.Errorf("retry after 503: %d", code)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	w := newTestWorld(t)
	get := func(path string) (int, string) {
		resp, err := http.Get(w.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, body)
	}
	// A queue that does not move is not ready.
	w.bot.Queue.Close()
	q := &Queue{Cap: 10, Clock: w.tm}
	w.bot.Queue = q
	q.Push(Job{Key: "k"})
	w.tm.Advance(DefaultStuckAfter + time.Minute)
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "stuck") {
		t.Errorf("/readyz with a stuck queue: %d %s", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "sponson_bot_queue_depth") || !strings.Contains(body, "sponson_bot_queue_oldest_age_seconds") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
}
