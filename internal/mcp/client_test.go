package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/buildtest"
)

// TestTheTypeScriptClient drives the built binary's `sponson mcp` with the
// official TypeScript SDK's client (testdata/client/client.mjs, installed
// by `npm ci` there; .ci/run does it): the tools listed with their
// schemas, plan, apply, receipt, locks, a USAGE refusal and destroy,
// against the fake cloud, with the receipts in the checkout's local store.
// It skips only when node or the client's node_modules are missing.
func TestTheTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: install Node.js 20 and run `npm ci` in internal/mcp/testdata/client (.ci/run does both)")
	}
	clientDir, err := filepath.Abs(filepath.Join("testdata", "client"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skip("the TypeScript client is not installed: run `npm ci` in internal/mcp/testdata/client (.ci/run does)")
	}
	w := newWorld(t)
	bin := buildtest.Binary(t, "github.com/sponson/apply/cmd/sponson")

	// A budget for a hung server, not a verdict on speed: every call
	// answers in well under a second.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = clientDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"SPONSON_BIN=" + bin, "SPONSON_CHECKOUT=" + w.env.Dir, "SPONSON_TEST_PR=11"}
	for k, v := range w.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var report struct {
		Calls []struct {
			Tool     string `json:"tool"`
			IsError  bool   `json:"isError"`
			Envelope string `json:"envelope"`
			Summary  string `json:"summary"`
		} `json:"calls"`
		ServerLog string `json:"serverLog"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("the client's report is not JSON (%v):\n%s", err, stdout.String())
	}
	var tools []string
	for _, c := range report.Calls {
		tools = append(tools, c.Tool)
		if strings.Contains(c.Envelope, stripeKey) || strings.Contains(c.Summary, stripeKey) {
			t.Errorf("%s: the secret is in the result", c.Tool)
		}
	}
	if got := strings.Join(tools, " "); got != "plan apply receipt locks apply receipt apply" {
		t.Errorf("the client called %q", got)
	}
	if len(report.Calls) == 7 && !strings.HasPrefix(report.Calls[1].Summary, "apply preview/pr-11: complete, 2 lines (") {
		t.Errorf("apply's summary: %q", report.Calls[1].Summary)
	}
	// The server's log went to stderr (the client saw it there), and the
	// fake cloud holds what apply made until destroy removed it.
	if !strings.Contains(report.ServerLog, "server session connected") {
		t.Errorf("the server logged nothing on stderr:\n%s", report.ServerLog)
	}
	if len(w.cloud.Writes()) == 0 {
		t.Error("the client's apply wrote nothing to the fake cloud")
	}
	for _, p := range w.cloud.State().Neon {
		for _, b := range p.Branches {
			if strings.Contains(b.Name, "pr-11") {
				t.Errorf("destroy left branch %s", b.Name)
			}
		}
	}
}
