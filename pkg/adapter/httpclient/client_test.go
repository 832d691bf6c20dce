package httpclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/errs"
)

const token = "tok_s3cr3t_value_123"

// clock is a fake clock whose Sleep advances time instead of waiting.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *clock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// server answers with the statuses in order (the last one repeats) and
// counts attempts.
type server struct {
	*httptest.Server
	attempts atomic.Int32
	auth     atomic.Value
}

func serve(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.attempts.Add(1))
		s.auth.Store(r.Header.Get("Authorization"))
		h(n, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func statuses(codes ...int) func(n int, w http.ResponseWriter, r *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		c := codes[min(n, len(codes))-1]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(c)
		if c/100 == 2 {
			fmt.Fprint(w, `{"ok":true}`)
		} else {
			fmt.Fprintf(w, `{"error":{"code":"e%d","message":"failed with %d"}}`, c, c)
		}
	}
}

func newClient(c *clock, mut ...func(*httpclient.Config)) *httpclient.Client {
	cfg := httpclient.Config{Now: c.Now, Sleep: c.Sleep, Rand: func() float64 { return 0.5 },
		BaseDelay: time.Second, MaxDelay: 8 * time.Second, Budget: time.Minute, MaxAttempts: 6, Timeout: 5 * time.Second}
	for _, m := range mut {
		m(&cfg)
	}
	return httpclient.New(cfg)
}

func req(s *server, method string) *httpclient.Request {
	return &httpclient.Request{Provider: "test", Method: method, BaseURL: s.URL, Path: "/things", Token: token}
}

func TestIdempotentRetriedOn5xxAnd423(t *testing.T) {
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		for _, st := range []int{500, 502, 503, 504, 423} {
			c := newClock()
			s := serve(t, statuses(st, st, 200))
			resp, err := newClient(c).Do(context.Background(), req(s, method))
			if err != nil {
				t.Fatalf("%s %d: %v", method, st, err)
			}
			if got := s.attempts.Load(); got != 3 || resp.Attempts != 3 {
				t.Errorf("%s %d: attempts = %d (response says %d), want 3", method, st, got, resp.Attempts)
			}
		}
	}
}

func TestBearerSent(t *testing.T) {
	s := serve(t, statuses(200))
	if _, err := newClient(newClock()).Do(context.Background(), req(s, "GET")); err != nil {
		t.Fatal(err)
	}
	if got := s.auth.Load(); got != "Bearer "+token {
		t.Errorf("Authorization = %q", got)
	}
}

func TestBackoffIsExponentialWithFullJitter(t *testing.T) {
	c := newClock()
	s := serve(t, statuses(500, 500, 500, 500, 500, 200))
	if _, err := newClient(c).Do(context.Background(), req(s, "GET")); err != nil {
		t.Fatal(err)
	}
	// Rand = 0.5: half of min(8s, 1s·2ⁿ⁻¹).
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	if got := c.slept(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sleeps = %v, want %v", got, want)
	}
	// Full jitter: the draw scales the whole wait.
	c2 := newClock()
	s2 := serve(t, statuses(500, 200))
	if _, err := newClient(c2, func(cfg *httpclient.Config) { cfg.Rand = func() float64 { return 0.1 } }).Do(context.Background(), req(s2, "GET")); err != nil {
		t.Fatal(err)
	}
	if got := c2.slept(); len(got) != 1 || got[0] != 100*time.Millisecond {
		t.Errorf("sleeps with draw 0.1 = %v, want [100ms]", got)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, st := range []int{429, 503} {
		c := newClock()
		s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(st)
				return
			}
			w.WriteHeader(200)
		})
		if _, err := newClient(c).Do(context.Background(), req(s, "GET")); err != nil {
			t.Fatal(err)
		}
		if got := c.slept(); len(got) != 1 || got[0] != 7*time.Second {
			t.Errorf("%d: sleeps = %v, want [7s]", st, got)
		}
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	c := newClock()
	at := c.Now().Add(12 * time.Second)
	s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", at.Format(http.TimeFormat))
			w.WriteHeader(429)
			return
		}
		w.WriteHeader(200)
	})
	if _, err := newClient(c).Do(context.Background(), req(s, "GET")); err != nil {
		t.Fatal(err)
	}
	if got := c.slept(); len(got) != 1 || got[0] != 12*time.Second {
		t.Errorf("sleeps = %v, want [12s]", got)
	}
}

func TestRateLimitResetHeader(t *testing.T) {
	c := newClock()
	reset := c.Now().Add(3 * time.Second).Unix()
	s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("X-RateLimit-Reset", fmt.Sprint(reset))
			w.WriteHeader(429)
			return
		}
		w.WriteHeader(200)
	})
	if _, err := newClient(c).Do(context.Background(), req(s, "GET")); err != nil {
		t.Fatal(err)
	}
	if got := c.slept(); len(got) != 1 || got[0] != 3*time.Second {
		t.Errorf("sleeps = %v, want [3s]", got)
	}
}

func TestRetryAfterPastBudgetGivesUpAtOnce(t *testing.T) {
	c := newClock()
	s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(429)
	})
	_, err := newClient(c).Do(context.Background(), req(s, "GET"))
	if errs.CodeOf(err) != errs.PROVIDER_TRANSIENT {
		t.Fatalf("err = %v, want PROVIDER_TRANSIENT", err)
	}
	if s.attempts.Load() != 1 || len(c.slept()) != 0 {
		t.Errorf("attempts = %d, sleeps = %v; want 1 attempt and no sleep", s.attempts.Load(), c.slept())
	}
}

func TestBudgetBoundsAllAttempts(t *testing.T) {
	c := newClock()
	s := serve(t, statuses(500))
	start := c.Now()
	_, err := newClient(c, func(cfg *httpclient.Config) {
		cfg.Budget = 10 * time.Second
		cfg.MaxAttempts = 100
		cfg.Rand = func() float64 { return 0.99 }
	}).Do(context.Background(), req(s, "GET"))
	if errs.CodeOf(err) != errs.PROVIDER_TRANSIENT || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("err = %v, want PROVIDER_TRANSIENT giving up", err)
	}
	if spent := c.Now().Sub(start); spent > 10*time.Second {
		t.Errorf("spent %s, budget 10s", spent)
	}
	// 0.99·(1+2+4+8)s > 10s: attempts 1..4 fit (waits 0.99, 1.98, 3.96), the
	// fourth wait (7.92s) does not.
	if got := s.attempts.Load(); got != 4 {
		t.Errorf("attempts = %d, want 4", got)
	}
	if httpclient.Status(err) != 500 {
		t.Errorf("Status(err) = %d, want 500", httpclient.Status(err))
	}
}

func TestMaxAttempts(t *testing.T) {
	c := newClock()
	s := serve(t, statuses(503))
	_, err := newClient(c, func(cfg *httpclient.Config) { cfg.MaxAttempts = 3 }).Do(context.Background(), req(s, "GET"))
	if errs.CodeOf(err) != errs.PROVIDER_TRANSIENT || s.attempts.Load() != 3 {
		t.Errorf("err = %v after %d attempts; want PROVIDER_TRANSIENT after 3", err, s.attempts.Load())
	}
}

func TestCreateNotRetriedAfterAmbiguousFailure(t *testing.T) {
	for _, st := range []int{500, 502, 503, 504} {
		c := newClock()
		s := serve(t, statuses(st, 201))
		_, err := newClient(c).Do(context.Background(), req(s, "POST"))
		if s.attempts.Load() != 1 {
			t.Errorf("POST %d: %d attempts, want 1", st, s.attempts.Load())
		}
		if !httpclient.IsAmbiguous(err) || errs.CodeOf(err) != errs.PROVIDER_TRANSIENT {
			t.Errorf("POST %d: err = %v (ambiguous %v), want an ambiguous PROVIDER_TRANSIENT", st, err, httpclient.IsAmbiguous(err))
		}
	}
	// A PATCH is not idempotent unless declared.
	c := newClock()
	s := serve(t, statuses(500, 200))
	if _, err := newClient(c).Do(context.Background(), req(s, "PATCH")); !httpclient.IsAmbiguous(err) || s.attempts.Load() != 1 {
		t.Errorf("undeclared PATCH: err = %v after %d attempts", err, s.attempts.Load())
	}
	s2 := serve(t, statuses(500, 200))
	r := req(s2, "PATCH")
	r.Idempotent = true
	if _, err := newClient(c).Do(context.Background(), r); err != nil || s2.attempts.Load() != 2 {
		t.Errorf("declared PATCH: err = %v after %d attempts, want success after 2", err, s2.attempts.Load())
	}
}

func TestCreateRetriedOnRefusal(t *testing.T) {
	for _, st := range []int{429, 423} {
		c := newClock()
		s := serve(t, statuses(st, st, 201))
		if _, err := newClient(c).Do(context.Background(), req(s, "POST")); err != nil {
			t.Fatalf("POST after %d: %v", st, err)
		}
		if s.attempts.Load() != 3 {
			t.Errorf("POST %d: %d attempts, want 3", st, s.attempts.Load())
		}
	}
}

// dropper closes the connection without an answer.
func dropper(n int, w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func TestNetworkErrors(t *testing.T) {
	c := newClock()
	s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 3 {
			dropper(n, w, r)
			return
		}
		w.WriteHeader(200)
	})
	if _, err := newClient(c).Do(context.Background(), req(s, "GET")); err != nil || s.attempts.Load() != 3 {
		t.Errorf("GET over a dropping connection: err = %v after %d attempts, want success after 3", err, s.attempts.Load())
	}
	s2 := serve(t, dropper)
	_, err := newClient(c).Do(context.Background(), req(s2, "POST"))
	if s2.attempts.Load() != 1 || !httpclient.IsAmbiguous(err) || errs.CodeOf(err) != errs.PROVIDER_TRANSIENT {
		t.Errorf("POST over a dropping connection: err = %v after %d attempts, want one ambiguous PROVIDER_TRANSIENT", err, s2.attempts.Load())
	}
	s3 := serve(t, dropper)
	_, err = newClient(c, func(cfg *httpclient.Config) { cfg.MaxAttempts = 2 }).Do(context.Background(), req(s3, "GET"))
	if errs.CodeOf(err) != errs.PROVIDER_TRANSIENT || s3.attempts.Load() != 2 {
		t.Errorf("GET always dropped: err = %v after %d attempts", err, s3.attempts.Load())
	}
}

func TestAttemptTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	// The attempt timeout is real time (the transport's own deadline), so
	// the attempts are counted where the client made them: on a busy machine
	// an attempt can time out before its request reaches the server.
	c := newClock()
	short := func(cfg *httpclient.Config) { cfg.Timeout = 30 * time.Millisecond; cfg.MaxAttempts = 2 }
	s := serve(t, hang)
	_, err := newClient(c, short).Do(context.Background(), req(s, "GET"))
	if errs.CodeOf(err) != errs.PROVIDER_TIMEOUT || attemptsOf(err) != 2 || s.attempts.Load() > 2 {
		t.Errorf("hanging GET: err = %v after %d attempts (%d reached the server), want PROVIDER_TIMEOUT after 2", err, attemptsOf(err), s.attempts.Load())
	}
	s2 := serve(t, hang)
	_, err = newClient(c, short).Do(context.Background(), req(s2, "POST"))
	if errs.CodeOf(err) != errs.PROVIDER_TIMEOUT || !httpclient.IsAmbiguous(err) || attemptsOf(err) != 1 || s2.attempts.Load() > 1 {
		t.Errorf("hanging POST: err = %v after %d attempts (%d reached the server), want one ambiguous PROVIDER_TIMEOUT", err, attemptsOf(err), s2.attempts.Load())
	}
}

// attemptsOf is the number of attempts the client says it made.
func attemptsOf(err error) int {
	var te *httpclient.TransportError
	if errors.As(err, &te) {
		return te.Attempts
	}
	return -1
}

func TestContextCancellation(t *testing.T) {
	c := newClock()
	s := serve(t, statuses(500))
	ctx, cancel := context.WithCancel(context.Background())
	cl := newClient(c, func(cfg *httpclient.Config) {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	})
	_, err := cl.Do(ctx, req(s, "GET"))
	if errs.CodeOf(err) != errs.INTERRUPTED || s.attempts.Load() != 1 {
		t.Errorf("cancelled while waiting: err = %v after %d attempts, want INTERRUPTED after 1", err, s.attempts.Load())
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := newClient(c).Do(done, req(s, "GET")); errs.CodeOf(err) != errs.INTERRUPTED {
		t.Errorf("cancelled before: err = %v, want INTERRUPTED", err)
	}
}

func TestStatusCodes(t *testing.T) {
	cases := map[int]errs.Code{
		400: errs.PROVIDER_INVALID, 422: errs.PROVIDER_INVALID, 401: errs.PROVIDER_AUTH, 403: errs.PROVIDER_AUTH,
		404: errs.PROVIDER_NOT_FOUND, 410: errs.PROVIDER_NOT_FOUND, 409: errs.PROVIDER_CONFLICT, 412: errs.PROVIDER_CONFLICT,
	}
	for st, want := range cases {
		c := newClock()
		// The provider echoes the credential in its message, as some do.
		s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(st)
			fmt.Fprintf(w, `{"message":"bad request with header %s"}`, r.Header.Get("Authorization"))
		})
		r := req(s, "GET")
		r.Query = url.Values{"access_token": {token}, "teamId": {"team_1"}}
		_, err := newClient(c).Do(context.Background(), r)
		if got := errs.CodeOf(err); got != want {
			t.Errorf("%d: code %s, want %s", st, got, want)
		}
		if s.attempts.Load() != 1 {
			t.Errorf("%d: %d attempts, want 1", st, s.attempts.Load())
		}
		text := err.Error()
		if strings.Contains(text, token) {
			t.Errorf("%d: the token is in the error: %s", st, text)
		}
		if !strings.Contains(text, "bad request with header Bearer ***") || !strings.Contains(text, "teamId=team_1") {
			t.Errorf("%d: the error lacks the provider's message or the path: %s", st, text)
		}
		if httpclient.Status(err) != st {
			t.Errorf("%d: Status(err) = %d", st, httpclient.Status(err))
		}
	}
}

func TestUndecodableAnswer(t *testing.T) {
	s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>oops") })
	var out map[string]any
	_, err := newClient(newClock()).JSON(context.Background(), req(s, "GET"), &out)
	if errs.CodeOf(err) != errs.PROVIDER_RESPONSE {
		t.Errorf("err = %v, want PROVIDER_RESPONSE", err)
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	other := serve(t, statuses(200))
	s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	})
	_, err := newClient(newClock()).Do(context.Background(), req(s, "GET"))
	if err == nil || other.attempts.Load() != 0 {
		t.Errorf("redirect: err = %v, the other host got %d requests; want an error and none", err, other.attempts.Load())
	}
}

func TestAPIHelpers(t *testing.T) {
	var gotBody, gotMethod string
	s := serve(t, func(n int, w http.ResponseWriter, r *http.Request) {
		b := new(strings.Builder)
		_, _ = fmt.Fprint(b, r.URL.RawQuery)
		gotMethod = r.Method
		buf := make([]byte, 100)
		k, _ := r.Body.Read(buf)
		gotBody = string(buf[:k])
		fmt.Fprint(w, `{"name":"x","n":1}`)
	})
	a := httpclient.API{Client: newClient(newClock()), Provider: "test", BaseURL: s.URL, Token: token}
	var out struct {
		Name string `json:"name"`
	}
	if err := a.Send(context.Background(), "PATCH", "/x", nil, map[string]any{"url": "https://a/b?c&d"}, true, &out); err != nil {
		t.Fatal(err)
	}
	if gotMethod != "PATCH" || gotBody != `{"url":"https://a/b?c&d"}` || out.Name != "x" {
		t.Errorf("method %s body %s out %+v", gotMethod, gotBody, out)
	}
	if err := a.Get(context.Background(), "/x", url.Values{"a": {"1"}}, &out); err != nil {
		t.Fatal(err)
	}
}

func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"45s": 45 * time.Second, "2m": 2 * time.Minute, "10": 10 * time.Second, "0.5": 500 * time.Millisecond} {
		if got, err := httpclient.ParseTimeout(in); err != nil || got != want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "0", "soon", "-3s"} {
		if _, err := httpclient.ParseTimeout(in); errs.CodeOf(err) != errs.USAGE {
			t.Errorf("ParseTimeout(%q) = %v, want USAGE", in, err)
		}
	}
}

func TestTokenAndBaseURL(t *testing.T) {
	env := func(m map[string]string) httpclient.Env {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	_, err := httpclient.Token(env(nil), "VERCEL_TOKEN", "vercel")
	if errs.CodeOf(err) != errs.PROVIDER_AUTH || !strings.Contains(errs.As(err).HintText(), "VERCEL_TOKEN") || !strings.Contains(err.Error(), "VERCEL_TOKEN") {
		t.Errorf("missing token: %v (hint %q)", err, errs.As(err).HintText())
	}
	if _, err := httpclient.Token(env(map[string]string{"X": "  "}), "X", "p"); errs.CodeOf(err) != errs.PROVIDER_AUTH {
		t.Errorf("blank token: %v", err)
	}
	if v, err := httpclient.Token(env(map[string]string{"X": "abc"}), "X", "p"); err != nil || v != "abc" {
		t.Errorf("token = %q, %v", v, err)
	}
	if u, err := httpclient.BaseURL(env(nil), "U", "https://api.example.com/"); err != nil || u != "https://api.example.com" {
		t.Errorf("default base = %q, %v", u, err)
	}
	if u, err := httpclient.BaseURL(env(map[string]string{"U": "http://127.0.0.1:9/vercel"}), "U", "https://x"); err != nil || u != "http://127.0.0.1:9/vercel" {
		t.Errorf("override base = %q, %v", u, err)
	}
	for _, bad := range []string{"ftp://x", "not a url", "https://user:pw@x", "https://x/?token=1", "/relative"} {
		_, err := httpclient.BaseURL(env(map[string]string{"U": bad}), "U", "https://x")
		if errs.CodeOf(err) != errs.USAGE || strings.Contains(err.Error(), "pw") {
			t.Errorf("base %q: %v", bad, err)
		}
	}
}

func TestPages(t *testing.T) {
	var seen []string
	err := httpclient.Pages(context.Background(), "p", func(ctx context.Context, cursor string) (string, error) {
		seen = append(seen, cursor)
		switch cursor {
		case "":
			return "a", nil
		case "a":
			return "b", nil
		}
		return "", nil
	})
	if err != nil || strings.Join(seen, ",") != ",a,b" {
		t.Errorf("pages = %q, %v", seen, err)
	}
	err = httpclient.Pages(context.Background(), "p", func(ctx context.Context, cursor string) (string, error) { return "same", nil })
	if errs.CodeOf(err) != errs.PROVIDER_RESPONSE {
		t.Errorf("looping cursor: %v", err)
	}
	boom := errors.New("boom")
	if err := httpclient.Pages(context.Background(), "p", func(ctx context.Context, cursor string) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("fetch error: %v", err)
	}
	var pages []int
	err = httpclient.Numbered(context.Background(), "p", 1, 10, func(ctx context.Context, page int) (int, error) {
		pages = append(pages, page)
		if page < 3 {
			return 10, nil
		}
		return 4, nil
	})
	if err != nil || fmt.Sprint(pages) != "[1 2 3]" {
		t.Errorf("numbered pages = %v, %v", pages, err)
	}
	pages = nil
	_ = httpclient.Numbered(context.Background(), "p", 0, 0, func(ctx context.Context, page int) (int, error) {
		pages = append(pages, page)
		if page == 2 {
			return 0, nil
		}
		return 7, nil
	})
	if fmt.Sprint(pages) != "[0 1 2]" {
		t.Errorf("numbered pages without a page size = %v", pages)
	}
}

func TestPoll(t *testing.T) {
	c := newClock()
	cl := newClient(c)
	n := 0
	err := cl.Poll(context.Background(), "branch", time.Minute, 2*time.Second, func(ctx context.Context) (bool, error) {
		n++
		return n == 3, nil
	})
	if err != nil || n != 3 || len(c.slept()) != 2 {
		t.Errorf("poll: err %v after %d checks and %d sleeps", err, n, len(c.slept()))
	}
	err = cl.Poll(context.Background(), "branch", 5*time.Second, 2*time.Second, func(ctx context.Context) (bool, error) { return false, nil })
	if errs.CodeOf(err) != errs.PROVIDER_TIMEOUT {
		t.Errorf("poll that never ends: %v", err)
	}
}

func TestConfigFromEnv(t *testing.T) {
	cfg, err := httpclient.ConfigFromEnv(func(k string) (string, bool) {
		if k == httpclient.TimeoutVar {
			return "12s", true
		}
		return "", false
	})
	if err != nil || cfg.Timeout != 12*time.Second {
		t.Errorf("ConfigFromEnv = %+v, %v", cfg, err)
	}
	if _, err := httpclient.ConfigFromEnv(func(string) (string, bool) { return "soon", true }); errs.CodeOf(err) != errs.USAGE {
		t.Errorf("malformed timeout: %v", err)
	}
	if c := httpclient.New(httpclient.Config{}).Config(); c.Timeout != httpclient.DefaultTimeout || c.Budget != httpclient.DefaultBudget {
		t.Errorf("defaults = %+v", c)
	}
}

func TestAuthFailureNamesTheVariable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	c := httpclient.New(httpclient.Config{})
	api := httpclient.API{Client: c, Provider: "vercel", BaseURL: srv.URL, Token: "t0ken-value", TokenVar: "VERCEL_TOKEN"}
	err := api.Get(context.Background(), "/v10/projects/p/env", nil, nil)
	e := errs.As(err)
	if e == nil || e.Code != errs.PROVIDER_AUTH || !strings.Contains(e.HintText(), "VERCEL_TOKEN") {
		t.Fatalf("err %v (hint %q)", err, e.HintText())
	}
	if strings.Contains(err.Error()+e.HintText(), "t0ken-value") {
		t.Error("the token is in the error")
	}
}

// A request that may write waits for the context's BeforeWrite (the scope
// lease), and is not sent when it fails; a GET or HEAD never asks it.
func TestBeforeWrite(t *testing.T) {
	s := serve(t, statuses(200))
	refuse := errs.New(errs.LOCK_HELD, "the lease is held")
	var asked []string
	for _, method := range []string{"GET", "HEAD", "POST", "PATCH", "PUT", "DELETE"} {
		ctx := adapter.WithBeforeWrite(context.Background(), func() error {
			asked = append(asked, method)
			return refuse
		})
		before := s.attempts.Load()
		_, err := newClient(newClock()).Do(ctx, req(s, method))
		sent := s.attempts.Load() > before
		if write := method != "GET" && method != "HEAD"; write {
			if !errors.Is(err, errs.LOCK_HELD) || sent {
				t.Errorf("%s: %v, sent %v; want BeforeWrite's error and nothing sent", method, err, sent)
			}
		} else if err != nil || !sent {
			t.Errorf("%s: %v, sent %v", method, err, sent)
		}
	}
	if want := []string{"POST", "PATCH", "PUT", "DELETE"}; !slices.Equal(asked, want) {
		t.Errorf("BeforeWrite asked for %v, want %v", asked, want)
	}
}

// Requests sent at once to one host keep their connections for the next
// ones: 3 rounds of 8 requests in flight together open about 8
// connections, where net/http's 2 idle connections a host would open 8,
// then 6 more every round.
func TestIdleConnectionsAreKept(t *testing.T) {
	const inFlight, rounds = 8, 3
	var conns atomic.Int32
	var mu sync.Mutex
	waiting, release := 0, make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answer only once every request of the round is here.
		mu.Lock()
		waiting++
		ch := release
		if waiting == inFlight {
			waiting, release = 0, make(chan struct{})
			close(ch)
		}
		mu.Unlock()
		<-ch
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := httpclient.New(httpclient.Config{})
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		for i := 0; i < inFlight; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Do(context.Background(), &httpclient.Request{Provider: "test", Method: "GET", BaseURL: srv.URL, Path: "/things"}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	// 8, and a few more when a connection was not back in the pool yet as
	// the next round began; with 2 kept, 20.
	if n := conns.Load(); n > inFlight+4 {
		t.Errorf("%d rounds of %d requests at once opened %d connections, want about %d", rounds, inFlight, n, inFlight)
	}
}

// dialing is a transport whose dials fail with err, counting them: the
// resolver's or the dialer's answer, injected.
func dialing(err error) (*http.Transport, *atomic.Int32) {
	var n atomic.Int32
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return nil, err
	}}, &n
}

// A host that does not exist and a literal address that refuses the
// connection are not retried: asking again finds the same, and nothing
// was sent (so even a create is not ambiguous). A resolver that could not
// answer, and a refusal from a name, may pass and are retried.
func TestPermanentNetworkErrorsAreNotRetried(t *testing.T) {
	noHost := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "flags.internal.acme.dev", IsNotFound: true}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	dnsDown := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "server misbehaving", Name: "flags.internal.acme.dev", IsTemporary: true}}
	for _, tc := range []struct {
		name, base, method string
		err                error
		attempts           int32
		code               errs.Code
	}{
		{"no such host", "https://flags.internal.acme.dev/api", "GET", noHost, 1, errs.PROVIDER_UNREACHABLE},
		{"no such host, a create", "https://flags.internal.acme.dev/api", "POST", noHost, 1, errs.PROVIDER_UNREACHABLE},
		{"refused by a literal address", "http://127.0.0.1:9/api", "GET", refused, 1, errs.PROVIDER_UNREACHABLE},
		{"refused by a literal IPv6 address", "http://[::1]:9/api", "DELETE", refused, 1, errs.PROVIDER_UNREACHABLE},
		{"refused by a name", "https://flags.internal.acme.dev/api", "GET", refused, 6, errs.PROVIDER_TRANSIENT},
		{"resolver failure", "https://flags.internal.acme.dev/api", "GET", dnsDown, 6, errs.PROVIDER_TRANSIENT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, dials := dialing(tc.err)
			c := newClock()
			_, err := newClient(c, func(cfg *httpclient.Config) { cfg.Transport = tr }).Do(context.Background(),
				&httpclient.Request{Provider: "http flags", Method: tc.method, BaseURL: tc.base, Path: "/v1/flags", Token: token})
			if got := dials.Load(); got != tc.attempts || errs.CodeOf(err) != tc.code {
				t.Fatalf("err = %v (%s) after %d attempts, want %s after %d", err, errs.CodeOf(err), got, tc.code, tc.attempts)
			}
			if tc.code == errs.PROVIDER_UNREACHABLE {
				if httpclient.IsAmbiguous(err) || len(c.slept()) != 0 {
					t.Errorf("ambiguous %v, slept %v: nothing was sent, nothing to wait for", httpclient.IsAmbiguous(err), c.slept())
				}
				if u, _ := url.Parse(tc.base); !strings.Contains(err.Error(), u.Host) {
					t.Errorf("the message does not name the host %s: %v", u.Host, err)
				}
			}
		})
	}
}
