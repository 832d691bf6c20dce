package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/clock"
)

// syncBuffer is a log sink read while the bot writes it.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed at the next write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// waitFor blocks until the log holds text, woken by each write; the bound
// is only against a bot that never writes it.
func (s *syncBuffer) waitFor(t *testing.T, text string) {
	t.Helper()
	guard := time.After(time.Minute)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), text) {
			s.mu.Unlock()
			return
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-guard:
			t.Fatalf("the log never said %q:\n%s", text, s.String())
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func mapEnv(m map[string]string) Env {
	var environ []string
	for k, v := range m {
		environ = append(environ, k+"="+v)
	}
	return Env{LookupEnv: func(k string) (string, bool) { v, ok := m[k]; return v, ok }, Environ: func() []string { return environ }}
}

func TestMainRefusesToStartWithoutAWebhookSecret(t *testing.T) {
	var stderr syncBuffer
	code := Main(nil, mapEnv(map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": testKeyPEM(t)}), &bytes.Buffer{}, &stderr)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, stderr.String())
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(stderr.String())), &line); err != nil {
		t.Fatalf("the log is not one JSON line: %v\n%s", err, stderr.String())
	}
	if line["code"] != "CONFIG_INVALID" || !strings.Contains(line["error"].(string), "SPONSON_WEBHOOK_SECRET") {
		t.Errorf("log line: %v", line)
	}
	if strings.Contains(stderr.String(), "PRIVATE KEY") {
		t.Errorf("the log shows the private key")
	}
}

// Main as the binary runs it: configured by the environment alone, it
// reads its App from GitHub, listens, answers a signed ping and /readyz,
// logs JSON without the secret, and stops cleanly.
func TestMainServesUntilStopped(t *testing.T) {
	gh := githubtest.Start(t, nil)
	key, err := gh.AddApp(githubtest.App{ID: 77, Slug: "sponson-main"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := mapEnv(map[string]string{
		"SPONSON_APP_ID": "77", "SPONSON_APP_PRIVATE_KEY": string(key), "SPONSON_WEBHOOK_SECRET": string(testSecret),
		"GITHUB_API_URL": gh.APIURL, "GITHUB_SERVER_URL": gh.URL, "SPONSON_ADDR": ln.Addr().String(),
	})
	ctx, cancel := context.WithCancel(context.Background())
	env.Context = ctx
	env.Listen = func(string, string) (net.Listener, error) { return ln, nil }
	var stderr syncBuffer
	done := make(chan int)
	go func() { done <- Main(nil, env, &bytes.Buffer{}, &stderr) }()
	base := "http://" + ln.Addr().String()
	tw := &testWorld{t: t}
	// The listener is open before Main runs: the requests wait in its
	// backlog until the bot serves, however long starting takes.
	waitReady(t, base, &stderr)
	code, _, _ := tw.postURL(base, "ping", "ping-1", fixture(t, "ping/with-app_id.payload.json"))
	if code != http.StatusOK {
		t.Fatalf("ping: %d\n%s", code, stderr.String())
	}
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/readyz: %d", resp.StatusCode)
	}
	// /metrics: the build, the ping counted once, and the bot's calls to
	// GitHub (GET /app to connect and for each /readyz, the installations
	// for the sweep) by route and code.
	series := scrape(t, base)
	if got := series[buildInfoSeries()]; got != 1 {
		t.Errorf("%s = %v; build_info series: %v", buildInfoSeries(), got, withPrefix(series, "sponson_build_info"))
	}
	if got := withPrefix(series, "sponson_bot_deliveries_total"); len(got) != 1 || got[`sponson_bot_deliveries_total{event="ping",outcome="ping"}`] != 1 {
		t.Errorf("deliveries: %v", got)
	}
	calls := withPrefix(series, "sponson_github_requests_total")
	if calls[`sponson_github_requests_total{code="200",method="GET",route="/app"}`] < 1 {
		t.Errorf("GitHub requests: %v", calls)
	}
	for s := range calls {
		if !strings.Contains(s, `route="/app"`) && !strings.Contains(s, `route="/app/installations"`) {
			t.Errorf("a GitHub request of an unexpected route: %s", s)
		}
	}
	cancel()
	select {
	case c := <-done:
		if c != 0 {
			t.Errorf("exit %d\n%s", c, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the bot did not stop")
	}
	log := stderr.String()
	if !strings.Contains(log, `"msg":"the bot started"`) || !strings.Contains(log, `"version":"`) || !strings.Contains(log, `"identity":"sponson-main[bot]"`) || !strings.Contains(log, `"msg":"the bot stopped"`) {
		t.Errorf("log:\n%s", log)
	}
	if strings.Contains(log, string(testSecret)) {
		t.Errorf("the log shows the webhook secret")
	}
	for i, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line %d is not one JSON record: %s", i+1, line)
		}
	}
}

// waitReady waits for the bot to say it serves (it has reached GitHub
// and its workers run), then /readyz must answer 200.
func waitReady(t *testing.T, base string, log *syncBuffer) {
	t.Helper()
	log.waitFor(t, `"msg":"the bot is serving"`)
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: %d once serving\n%s", resp.StatusCode, log.String())
	}
}

// A GitHub that does not answer at start does not stop the bot: it
// serves /healthz, is unready on /readyz, refuses deliveries with 503 and
// Retry-After, and becomes ready once GitHub answers.
func TestMainStartsUnreadyWhileGitHubIsDown(t *testing.T) {
	gh := githubtest.Start(t, nil)
	key, err := gh.AddApp(githubtest.App{ID: 78, Slug: "sponson-late"})
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(gh.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var down atomic.Bool
	down.Store(true)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "unavailable", http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := mapEnv(map[string]string{
		"SPONSON_APP_ID": "78", "SPONSON_APP_PRIVATE_KEY": string(key), "SPONSON_WEBHOOK_SECRET": string(testSecret),
		"GITHUB_API_URL": front.URL + "/api/v3", "GITHUB_SERVER_URL": front.URL, "SPONSON_ADDR": ln.Addr().String(),
	})
	ctx, cancel := context.WithCancel(context.Background())
	env.Context = ctx
	env.Listen = func(string, string) (net.Listener, error) { return ln, nil }
	up := make(chan struct{})
	env.Clock = untilUp{up: up}
	var stderr syncBuffer
	done := make(chan int)
	go func() { done <- Main(nil, env, &bytes.Buffer{}, &stderr) }()
	base := "http://" + ln.Addr().String()
	get := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/healthz"); c != http.StatusOK {
		t.Errorf("/healthz while GitHub is down: %d", c)
	}
	if c := get("/readyz"); c != http.StatusServiceUnavailable {
		t.Errorf("/readyz while GitHub is down: %d", c)
	}
	tw := &testWorld{t: t}
	code, hdr, _ := tw.postURL(base, "ping", "ping-down", fixture(t, "ping/with-app_id.payload.json"))
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("a delivery while unready: %d, Retry-After %q", code, hdr.Get("Retry-After"))
	}
	down.Store(false)
	close(up)
	waitReady(t, base, &stderr)
	if code, _, _ := tw.postURL(base, "ping", "ping-up", fixture(t, "ping/with-app_id.payload.json")); code != http.StatusOK {
		t.Errorf("a delivery once ready: %d", code)
	}
	cancel()
	if c := <-done; c != 0 {
		t.Errorf("exit %d\n%s", c, stderr.String())
	}
	log := stderr.String()
	if !strings.Contains(log, `"identity":"sponson-late[bot]"`) {
		t.Errorf("log:\n%s", log)
	}
}

func TestMainVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"--version"}, mapEnv(nil), &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "sponson-bot ") {
		t.Errorf("--version: exit %d, %q %q", code, stdout.String(), stderr.String())
	}
}

// On a terminal the log is text for a person; elsewhere JSON lines.
func TestMainLogsTextOnATerminal(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		var stderr syncBuffer
		env := mapEnv(map[string]string{"SPONSON_APP_ID": "1"})
		env.IsTerminal = func(io.Writer) bool { return terminal }
		Main(nil, env, &bytes.Buffer{}, &stderr)
		isJSON := json.Valid([]byte(strings.TrimSpace(stderr.String())))
		if isJSON == terminal || (terminal && !strings.Contains(stderr.String(), "level=ERROR")) {
			t.Errorf("terminal=%v: %q", terminal, stderr.String())
		}
	}
}

// An address already in use is named once, in one CONFIG_INVALID line.
func TestMainNamesABusyAddressOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	var stderr syncBuffer
	code := Main(nil, mapEnv(map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": testKeyPEM(t),
		"SPONSON_WEBHOOK_SECRET": string(testSecret), "SPONSON_ADDR": addr, "GITHUB_API_URL": "http://127.0.0.1:1"}), &bytes.Buffer{}, &stderr)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, stderr.String())
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(stderr.String())), &line); err != nil {
		t.Fatalf("the log is not one JSON line: %v\n%s", err, stderr.String())
	}
	msg, _ := line["error"].(string)
	if line["code"] != "CONFIG_INVALID" || strings.Count(msg, addr) != 1 || !strings.Contains(msg, "address already in use") {
		t.Errorf("log line: %v", line)
	}
}

// untilUp is the system clock whose waits (Connect's backoff) last until
// GitHub is up again: the bot tries again at once then, never on a real
// timer.
type untilUp struct {
	clock.System
	up <-chan struct{}
}

func (c untilUp) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-c.up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
