package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/ghfake"
)

// syncBuffer is a log sink read while the bot writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
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
	gh := ghfake.Start(t, nil)
	key, err := gh.AddApp(ghfake.App{ID: 77, Slug: "sponson-main"})
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
	// The listener is open before Main runs: the request waits in its
	// backlog until the bot serves, however long starting takes.
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
	if !strings.Contains(log, `"msg":"the bot started"`) || !strings.Contains(log, `"identity":"sponson-main[bot]"`) || !strings.Contains(log, `"msg":"the bot stopped"`) {
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
