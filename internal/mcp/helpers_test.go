package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/internal/mcp"
	"github.com/sponson/apply/pkg/sim"
)

// stripeKey is the secret the plan references: it must reach the fake
// Vercel and no tool result.
const stripeKey = "sk_test_51MxPq8ZrT4vW2yK9nB7cD3fG"

// plan is the README's preview stack, less the callback that waits on a
// deploy: a Neon branch per pull request and the preview's variables, one
// of them a secret.
const plan = `version: 1
providers:
  neon:   { project: proj-abc }
  vercel: { project: prj_123, team: team_9 }
changes:
  - id: db
    adapter: neon
    op: branch
    parent: main
    environments: [preview]
  - id: env
    adapter: vercel
    op: env
    target: preview
    values:
      DATABASE_URL: { from: db.connection_string }
      STRIPE_KEY:   { secret: "env://STRIPE_KEY" }
    environments: [preview]
`

// world is a checkout holding the plan, the fake cloud it runs against,
// and the environment a server started there would have: the cloud's base
// URLs and tokens, the secret, receipts in the local store.
type world struct {
	cloud *sim.Cloud
	vars  map[string]string
	env   cli.Env
	log   *syncBuffer // the server's stderr
}

func newWorld(t *testing.T) *world {
	t.Helper()
	cloud := sim.New(sim.Options{Seed: 22})
	cloud.CheckDescriptions(t)
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(cloud.ReleaseAll) // a held request must not outlive the test
	if err := cloud.Console.SeedExamples(); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"SPONSON_CTX_SHA":    "0123456789abcdef0123456789abcdef01234567",
		"SPONSON_CTX_BRANCH": "feature/login",
		"SPONSON_RECEIPTS":   "local",
		"STRIPE_KEY":         stripeKey,
		// A held request waits this long unless its run is cancelled.
		"SPONSON_HTTP_TIMEOUT": "1h",
	}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "release.plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &world{cloud: cloud, vars: vars, log: &syncBuffer{}}
	w.env = cli.Env{
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		Environ: func() []string {
			l := make([]string, 0, len(vars))
			for k, v := range vars {
				l = append(l, k+"="+v)
			}
			return l
		},
		Dir:      dir,
		ReadFile: os.ReadFile,
	}
	return w
}

// serve starts the server on one end of the SDK's in-memory transport
// and returns a client session on the other, closed at the test's end.
func (w *world) serve(t *testing.T) (*sdk.ClientSession, *mcp.Server) {
	t.Helper()
	srv := mcp.New(mcp.Config{Runner: &cli.ToolRunner{Env: w.env, Err: w.log}, Version: "test", Log: w.log})
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); srv.Wait() })
	return cs, srv
}

// answer is a tool result read the way an agent reads it.
type answer struct {
	isError  bool
	envLine  string         // the first line: the envelope
	envelope map[string]any // the envelope, decoded
	summary  string         // the second line
	text     string         // the whole text
}

// call calls a tool and checks the result's shape: one text content whose
// first line is a compact JSON object, equal to the structured content,
// whose ok is !isError, and a second, last line.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) answer {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: a protocol error: %v", name, args, err)
	}
	return read(t, name, res)
}

func read(t *testing.T, name string, res *sdk.CallToolResult) answer {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: the content is %T, not text", name, res.Content[0])
	}
	lines := strings.Split(tc.Text, "\n")
	if len(lines) != 2 {
		t.Fatalf("%s: %d lines, want the envelope and a summary:\n%s", name, len(lines), tc.Text)
	}
	a := answer{isError: res.IsError, envLine: lines[0], summary: lines[1], text: tc.Text}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(a.envLine)); err != nil || compact.String() != a.envLine {
		t.Fatalf("%s: the first line is not compact JSON (%v):\n%s", name, err, a.envLine)
	}
	if err := json.Unmarshal([]byte(a.envLine), &a.envelope); err != nil {
		t.Fatalf("%s: the first line is not a JSON object: %v", name, err)
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, structured, []byte(a.envLine)) {
		t.Errorf("%s: the structured content is not the envelope:\n%s\n%s", name, structured, a.envLine)
	}
	if ok, _ := a.envelope["ok"].(bool); ok == a.isError {
		t.Errorf("%s: ok=%v beside isError=%v", name, a.envelope["ok"], a.isError)
	}
	if !strings.HasPrefix(a.summary, a.envelope["command"].(string)) {
		t.Errorf("%s: the summary %q does not start with the command %v", name, a.summary, a.envelope["command"])
	}
	return a
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// errorCode is the envelope's error code, "" when there is none.
func (a answer) errorCode() string {
	e, _ := a.envelope["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

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
