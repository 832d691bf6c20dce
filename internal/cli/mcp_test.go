package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/pkg/sim"
)

// mcpSession runs `sponson mcp` in-process on pipes and connects the Go
// SDK's client to it. stdout records every byte the command wrote there;
// the returned function closes the client's end (stdin) and waits for Main.
func mcpSession(t *testing.T, env cli.Env) (cs *sdk.ClientSession, stdout *bytes.Buffer, stderr *syncBuffer, end func() int) {
	cs, stdout, stderr, _, end = mcpSessionExit(t, env)
	return cs, stdout, stderr, end
}

// mcpSessionExit is mcpSession, with the channel of Main's exit code.
func mcpSessionExit(t *testing.T, env cli.Env) (cs *sdk.ClientSession, stdout *bytes.Buffer, stderr *syncBuffer, exited <-chan int, end func() int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stdout, stderr = &bytes.Buffer{}, &syncBuffer{}
	var mu sync.Mutex
	code, exit1 := make(chan int, 1), make(chan int, 1)
	go func() {
		c := cli.Main([]string{"mcp"}, env, cli.IO{In: inR, Out: io.MultiWriter(lockedBuffer{&mu, stdout}, outW), Err: stderr})
		outW.Close()
		exit1 <- c
		code <- c
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var exit int
	end = func() int {
		once.Do(func() {
			inW.Close() // as when the client's process ends: stdin's EOF
			exit = <-code
			cs.Close()
		})
		return exit
	}
	t.Cleanup(func() { end() })
	return cs, stdout, stderr, exit1, end
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// `sponson mcp` writes nothing but the protocol on stdout (each line one
// JSON-RPC message), logs on stderr, answers a tool call with the
// command's envelope, and exits 0 when the client closes stdin.
func TestMCPStdoutIsTheProtocolOnly(t *testing.T) {
	_, vars := exampleCloud(t)
	vars["SPONSON_RECEIPTS"] = "local"
	// A held request waits this long unless its run is cancelled.
	vars["SPONSON_HTTP_TIMEOUT"] = "1h"
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": plan})
	cs, stdout, stderr, end := mcpSession(t, env)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "plan", Arguments: map[string]any{"pr": 3}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if res.IsError || !strings.HasPrefix(text, `{"approval_required":false,"command":"plan",`) || !strings.Contains(text, "\nplan preview/pr-3: 1 line (1 create), 0 drift") {
		t.Errorf("plan: isError=%v\n%s", res.IsError, text)
	}
	if code := end(); code != 0 {
		t.Errorf("sponson mcp exited %d when its client went away\n%s", code, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("stdout line %d is not a JSON-RPC message: %q", n+1, sc.Text())
		}
		n++
	}
	if n < 2 {
		t.Errorf("stdout holds %d messages, want the initialize and the call's answers", n)
	}
	if !strings.Contains(stderr.String(), "server session connected") {
		t.Errorf("nothing was logged on stderr:\n%s", stderr.String())
	}
}

// A client that goes away while an apply runs cancels it: `sponson mcp`
// returns only after the run has stopped and released the scope's lease.
func TestMCPClientGoneReleasesTheLease(t *testing.T) {
	cloud, vars := exampleCloud(t)
	t.Cleanup(cloud.ReleaseAll)
	vars["SPONSON_RECEIPTS"] = "local"
	// A held request waits this long unless its run is cancelled.
	vars["SPONSON_HTTP_TIMEOUT"] = "1h"
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": plan})
	hold := cloud.MustAddRule(sim.Rule{Kind: sim.KindHold, Provider: "neon", Method: "POST", Path: "/projects/*/branches"})
	cs, _, stderr, end := mcpSession(t, env)
	ended, stop := context.WithCancel(context.Background())
	go func() {
		// The call fails when the session closes under it.
		cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "apply", Arguments: map[string]any{"pr": 4}}) //nolint:errcheck
		stop()
	}()
	if err := cloud.WaitHeld(ended, hold, 1); err != nil {
		t.Fatalf("the apply ended before its create was sent: %v\n%s", err, stderr.String())
	}
	if code := end(); code != 0 {
		t.Errorf("sponson mcp exited %d\n%s", code, stderr.String())
	}
	r := runCLI(t, env, "locks", "--json")
	if locks := oneDocument(t, r)["locks"].([]any); len(locks) != 0 {
		t.Errorf("the apply's lease outlived the server: %v", locks)
	}
	if cloud.Held(hold) != 0 {
		t.Error("the held create is still waiting: the run did not stop")
	}
}

// Ctrl-C (the command's context ending) while an apply runs stops the
// run: `sponson mcp` returns, with the client still connected, only
// after the run has released the scope's lease.
func TestMCPInterruptReleasesTheLease(t *testing.T) {
	cloud, vars := exampleCloud(t)
	t.Cleanup(cloud.ReleaseAll)
	vars["SPONSON_RECEIPTS"] = "local"
	// A held request waits this long unless its run is cancelled.
	vars["SPONSON_HTTP_TIMEOUT"] = "1h"
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": plan})
	ctx, interrupt := context.WithCancel(context.Background())
	env.Context = ctx
	hold := cloud.MustAddRule(sim.Rule{Kind: sim.KindHold, Provider: "neon", Method: "POST", Path: "/projects/*/branches"})
	cs, _, stderr, exited, _ := mcpSessionExit(t, env)
	ended, stop := context.WithCancel(context.Background())
	go func() {
		cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "apply", Arguments: map[string]any{"pr": 5}}) //nolint:errcheck
		stop()
	}()
	if err := cloud.WaitHeld(ended, hold, 1); err != nil {
		t.Fatalf("the apply ended before its create was sent: %v\n%s", err, stderr.String())
	}
	interrupt()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("sponson mcp exited %d on an interrupt\n%s", code, stderr.String())
		}
	case <-time.After(2 * time.Minute): // the held create waits an hour
		t.Fatalf("sponson mcp still runs after the interrupt: the run was not cancelled\n%s", stderr.String())
	}
	noEnv := env
	noEnv.Context = context.Background()
	r := runCLI(t, noEnv, "locks", "--json")
	if locks := oneDocument(t, r)["locks"].([]any); len(locks) != 0 {
		t.Errorf("the apply's lease outlived the interrupt: %v", locks)
	}
	if cloud.Held(hold) != 0 {
		t.Error("the held create is still waiting: the run did not stop")
	}
}
