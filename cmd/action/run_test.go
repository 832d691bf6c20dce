package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sethvargo/go-githubactions"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/internal/ghfixtures"
)

// fixture is a real webhook payload from shared/fixtures/github.
func fixture(t *testing.T, rel string) string { return ghfixtures.Payload(t, rel) }

type world struct {
	ws, output string
	vars       map[string]string
	stdout     bytes.Buffer
}

func newWorld(t *testing.T, plan string, event, eventPath string) *world {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "release.plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &world{ws: ws, output: filepath.Join(t.TempDir(), "output")}
	w.vars = map[string]string{
		"GITHUB_ACTIONS":    "true",
		"GITHUB_WORKSPACE":  ws,
		"GITHUB_OUTPUT":     w.output,
		"GITHUB_EVENT_NAME": event,
		"GITHUB_EVENT_PATH": eventPath,
		"INPUT_COMMAND":     "auto",
	}
	return w
}

func (w *world) run() int {
	lookup := func(k string) (string, bool) { v, ok := w.vars[k]; return v, ok }
	getenv := func(k string) string { return w.vars[k] }
	gha := githubactions.New(githubactions.WithGetenv(getenv), githubactions.WithWriter(&w.stdout))
	env := cli.Env{LookupEnv: lookup, Environ: func() []string { return nil }, Dir: w.ws, ReadFile: os.ReadFile}
	return run(gha, env, cli.IO{In: strings.NewReader(""), Out: &w.stdout, Err: &w.stdout})
}

func (w *world) outputs(t *testing.T) string {
	b, err := os.ReadFile(w.output)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const goodPlan = `version: 1
changes:
  - id: db
    adapter: neon
    op: branch
    name: sponson/${ctx.env}/${ctx.scope}
`

func TestPlanErrorsBecomeAnnotations(t *testing.T) {
	bad := "version: 1\nchanges:\n  - id: db\n    adapter: neon\n    op: branch\n  - id: env\n    adapter: vercel\n    op: env\n    values:\n      DATABASE_URL: { from: nope.connection_string }\n"
	w := newWorld(t, bad, "pull_request", fixture(t, "pull_request/opened.payload.json"))
	if code := w.run(); code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, w.stdout.String())
	}
	out := w.stdout.String()
	if !strings.Contains(out, "::error col=29,file=release.plan.yaml,line=10::REF_UNKNOWN") || !strings.Contains(out, "REF_UNKNOWN") {
		t.Errorf("no annotation on release.plan.yaml line 10:\n%s", out)
	}
	if o := w.outputs(t); !strings.Contains(o, "exit_code") || !strings.Contains(o, "\n2\n") {
		t.Errorf("exit_code output is not 2:\n%s", o)
	}
}

func TestScopeFromTheEventAndAnHonestRefusal(t *testing.T) {
	path := fixture(t, "pull_request/opened.payload.json")
	raw, _ := os.ReadFile(path)
	var ev struct {
		Number int `json:"number"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, goodPlan, "pull_request", path)
	code := w.run()
	out := w.stdout.String()
	if code != 2 || !strings.Contains(out, "NOT_IMPLEMENTED") {
		t.Errorf("exit %d; the Action must refuse to pretend it applied:\n%s", code, out)
	}
	o := w.outputs(t)
	want := "pr-" + itoa(ev.Number)
	if !strings.Contains(o, want) {
		t.Errorf("outputs lack scope %s:\n%s", want, o)
	}
	if !strings.Contains(o, "status") || !strings.Contains(o, "error") {
		t.Errorf("outputs lack status error:\n%s", o)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
