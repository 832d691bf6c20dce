package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/internal/testing/parallel"
)

func TestMain(m *testing.M) {
	testscript.Main(widened{m}, map[string]func(){
		"sponson": func() { os.Exit(cli.Main(os.Args[1:], cli.OSEnv(), cli.StdIO())) },
		// The scenarios' harness reads a script's environment through it
		// (scenario_test.go).
		"sponson-testenv": func() { os.Exit(testEnvMain()) },
	})
}

// widened runs the tests (never the commands testscript re-executes the
// binary as) several at once: a journey waits on the fake cloud and git.
type widened struct{ m *testing.M }

func (w widened) Run() int {
	parallel.AtLeast(8)
	return w.m.Run()
}

// TestScripts runs the CLI journeys in testdata/script: each .txtar holds the
// plan, the event, the commands and the expected output.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			// A run inside this repository's CI must not see GitHub's variables.
			for _, k := range []string{"GITHUB_ACTIONS", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REF", "GITHUB_SHA", "GITHUB_REPOSITORY", "GITHUB_HEAD_REF", "CI", "GITLAB_CI", "CIRCLECI", "BITBUCKET_BUILD_NUMBER"} {
				e.Setenv(k, "")
			}
			// A gh on the machine's PATH must not name a pull request
			// (scope_hosts.txtar turns it back on with a stand-in).
			e.Setenv("SPONSON_NO_GH", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"envelope": cmdEnvelope,
			"sim":      cmdSim,
			"expand":   cmdExpand,
		},
	})
}

// cmdEnvelope checks that stdout is exactly one JSON document whose "ok"
// matches the exit code of the last command, then checks fields:
//
//	envelope EXIT [PATH=VALUE ...]
//
// PATH is dotted (error.code, receipt.lines.db.status, ctx.pr.number); VALUE
// is compared with the field's JSON text (strings without quotes).
func cmdEnvelope(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("envelope does not support !")
	}
	if len(args) < 1 {
		ts.Fatalf("usage: envelope EXIT [PATH=VALUE ...]")
	}
	out := ts.ReadFile("stdout")
	dec := json.NewDecoder(strings.NewReader(out))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("stdout is not a JSON document: %v\n%s", err, out)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err == nil {
		ts.Fatalf("stdout holds more than one JSON document:\n%s", out)
	}
	wantOK := args[0] == "0"
	if ok, _ := doc["ok"].(bool); ok != wantOK {
		ts.Fatalf("ok = %v, but the exit code is %s", doc["ok"], args[0])
	}
	for _, kv := range args[1:] {
		path, want, found := strings.Cut(kv, "=")
		if !found {
			ts.Fatalf("want PATH=VALUE, got %q", kv)
		}
		got, ok := lookup(doc, path)
		if !ok {
			ts.Fatalf("%s: no such field in\n%s", path, out)
		}
		if got != want {
			ts.Fatalf("%s = %s, want %s", path, got, want)
		}
	}
}

func lookup(v any, path string) (string, bool) {
	for _, part := range strings.Split(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[part]; !ok {
				return "", false
			}
		case []any:
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i < 0 || i >= len(c) {
				return "", false
			}
			v = c[i]
		default:
			return "", false
		}
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	b, _ := json.Marshal(v)
	return string(bytes.TrimSpace(b)), true
}
