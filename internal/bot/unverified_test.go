package bot

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Unsigned bodies held open at once take no more than MaxUnverified bytes:
// past it the bot answers 503 with Retry-After without reading them, and
// /healthz answers meanwhile. Counted, not timed: the refusals are
// collected before anything else is checked, and the held bytes are read
// from the bot's own count.
func TestUnverifiedBodiesAreBounded(t *testing.T) {
	const (
		body    = 1 << 20
		max     = 4 << 20
		senders = 10
		held    = max / body
	)
	b := &Bot{Secret: testSecret, MaxBody: body, MaxUnverified: max}
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	client := srv.Client()

	type result struct {
		code       int
		retryAfter string
	}
	results := make(chan result, senders+1)
	var writers []*io.PipeWriter
	send := func(length int64) {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhook", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		if length < 0 {
			req.TransferEncoding = []string{"chunked"}
		}
		req.Close = true
		req.Header.Set("X-GitHub-Event", "pull_request")
		go func() {
			resp, err := client.Do(req)
			if err != nil {
				results <- result{code: -1}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- result{resp.StatusCode, resp.Header.Get("Retry-After")}
		}()
		go func() { _, _ = pw.Write(bytes.Repeat([]byte(" "), 1024)) }() // a start, then nothing
	}
	for range senders {
		send(body)
	}
	// Every sender past the budget is refused while the others hold it.
	for range senders - held {
		r := <-results
		if r.code != http.StatusServiceUnavailable || r.retryAfter == "" {
			t.Fatalf("a sender past the budget got %d (Retry-After %q), want 503 with Retry-After", r.code, r.retryAfter)
		}
	}
	if got := b.unverified.Held(); got != max {
		t.Fatalf("held %d bytes of unverified bodies, want the budget, %d", got, max)
	}
	// A body of unknown length is refused too, as soon as it would pass.
	send(-1)
	if r := <-results; r.code != http.StatusServiceUnavailable || r.retryAfter == "" {
		t.Fatalf("a chunked body past the budget got %d (Retry-After %q), want 503", r.code, r.retryAfter)
	}
	resp, err := client.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz while the budget is held: %v %v", resp, err)
	}
	resp.Body.Close()

	// The held bodies end unsigned: 401, and their bytes are given back.
	for _, pw := range writers {
		go func() {
			_, _ = pw.Write(bytes.Repeat([]byte(" "), body-1024))
			pw.Close()
		}()
	}
	for range held {
		if r := <-results; r.code != http.StatusUnauthorized {
			t.Fatalf("a held unsigned body got %d, want 401", r.code)
		}
	}
	if got, peak := b.unverified.Held(), b.unverified.Peak(); got != 0 || peak > max {
		t.Fatalf("after the bodies ended: held %d (want 0), peak %d (want at most %d)", got, peak, max)
	}
}
