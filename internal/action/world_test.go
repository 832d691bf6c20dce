package action

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/ghfixtures"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/sim"
)

// The world of an Action test: the fake GitHub (REST and git smart HTTP
// on one port, every call checked against GitHub's OpenAPI description),
// the fake cloud, a workspace with a plan, and the variables GitHub
// Actions sets for a container action.

const (
	repoName = "Codertocat/Hello-World" // the fixtures' repository
	token    = "ghs_workflowTokenForTheTests0123456789"
	secretV  = "sk_test_the_stripe_key_no_output_may_show"
	headSHA  = "ec26c3e57ca3a959ca5aad62de7213c562f8c821" // the fixtures' pull request head
)

type world struct {
	t     *testing.T
	gh    *githubtest.Server
	cloud *sim.Cloud
	demo  sim.Demo
	ws    string
	vars  map[string]string
	out   bytes.Buffer
	code  int
	ctx   context.Context // the job's context (nil: never cancelled)
	// stdout, when a test watches the job's stdout, passes it on to out.
	stdout io.Writer
}

// Every test has a world of its own (its fake GitHub, repository, cloud
// and workspace), so the tests run in parallel: most of their time is
// spent waiting on git.
func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, gh: githubtest.Start(t, nil)}
	w.gh.AddToken(githubtest.Token{Value: token, Identity: githubtest.ActionsBot, Repos: []string{repoName},
		Permissions: map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "actions": "read", "deployments": "read", "metadata": "read"}})
	if err := w.gh.AddRepo(githubtest.Repo{FullName: repoName, DefaultBranch: "master", Branches: map[string]string{"changes": "the change"}}); err != nil {
		t.Fatal(err)
	}
	w.cloud = sim.New(sim.Options{Seed: 7})
	w.cloud.CheckDescriptions(t)
	w.demo = w.cloud.Console.SeedDemo()
	srv, err := w.cloud.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	w.ws = t.TempDir()
	w.writePlan(planFor(w.demo))
	dir := t.TempDir()
	w.vars = map[string]string{
		"GITHUB_ACTIONS":      "true",
		"GITHUB_WORKSPACE":    w.ws,
		"GITHUB_OUTPUT":       filepath.Join(dir, "output"),
		"GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary"),
		"GITHUB_REPOSITORY":   repoName,
		"GITHUB_SERVER_URL":   w.gh.URL,
		"GITHUB_API_URL":      w.gh.APIURL,
		"GITHUB_RUN_ID":       "9001",
		"GITHUB_RUN_ATTEMPT":  "1",
		"GITHUB_ACTOR":        "Codertocat",
		"INPUT_GITHUB_TOKEN":  token,
		"STRIPE_TEST_KEY":     secretV,
		"SPONSON_LEASE_TTL":   "2m",
	}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		w.vars[k] = v
	}
	return w
}

func planFor(d sim.Demo) string {
	return fmt.Sprintf(`version: 1
environments: [preview]
providers:
  neon:   { project: %s }
  vercel: { project: %s }
  auth0:  { domain: test.eu.auth0.com, client: %s }
changes:
  - id: db
    adapter: neon
    op: branch
  - id: env
    adapter: vercel
    op: env
    target: preview
    values:
      DATABASE_URL: { from: db.connection_string }
      STRIPE_SECRET_KEY: { secret: "env://STRIPE_TEST_KEY" }
  - id: callback
    adapter: auth0
    op: callback
    url: https://${ctx.scope}.test.dev/callback
`, d.NeonProject, d.VercelProject, d.Auth0Client)
}

func (w *world) writePlan(src string) {
	if err := os.WriteFile(filepath.Join(w.ws, "release.plan.yaml"), []byte(src), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// openPR opens the fixtures' pull request #2 (head "changes").
func (w *world) openPR() {
	w.t.Helper()
	if _, err := w.gh.AddPull(githubtest.PullRequest{Repo: repoName, Number: 2, State: "open", Head: githubtest.Ref{Ref: "changes", SHA: headSHA}}); err != nil {
		w.t.Fatal(err)
	}
}

// event writes a payload (a fixture, or bytes) as GITHUB_EVENT_PATH.
func (w *world) event(name string, payload []byte) {
	p := filepath.Join(w.t.TempDir(), "event.json")
	if err := os.WriteFile(p, payload, 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.vars["GITHUB_EVENT_NAME"], w.vars["GITHUB_EVENT_PATH"] = name, p
}

func fixture(t *testing.T, rel string) []byte {
	b, err := os.ReadFile(ghfixtures.Payload(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit changes a payload: f gets the decoded JSON.
func edit(t *testing.T, payload []byte, f func(m map[string]any)) []byte {
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, _ := json.Marshal(m)
	return b
}

func (w *world) run() int {
	w.t.Helper()
	w.out.Reset()
	for _, f := range []string{w.vars["GITHUB_OUTPUT"], w.vars["GITHUB_STEP_SUMMARY"]} {
		os.Remove(f)
	}
	lookup := func(k string) (string, bool) { v, ok := w.vars[k]; return v, ok }
	environ := func() []string {
		var l []string
		for k, v := range w.vars {
			l = append(l, k+"="+v)
		}
		return l
	}
	var stdout io.Writer = &w.out
	if w.stdout != nil {
		stdout = w.stdout
	}
	w.code = Main(Env{LookupEnv: lookup, Environ: environ, ReadFile: os.ReadFile, Dir: w.ws, Stdout: stdout, Context: w.ctx})
	for _, l := range strings.Split(w.out.String(), "\n") {
		if !strings.HasPrefix(l, "::add-mask::") && (strings.Contains(l, secretV) || strings.Contains(l, token)) {
			w.t.Errorf("a secret reached stdout: %s", l)
		}
	}
	return w.code
}

// outputs parses GITHUB_OUTPUT (name<<delimiter\nvalue\ndelimiter).
func (w *world) outputs() map[string]string {
	w.t.Helper()
	b, err := os.ReadFile(w.vars["GITHUB_OUTPUT"])
	if err != nil {
		w.t.Fatalf("no outputs: %v\n%s", err, w.out.String())
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		name, delim, ok := strings.Cut(sc.Text(), "<<")
		if !ok {
			continue
		}
		var val []string
		for sc.Scan() && sc.Text() != delim {
			val = append(val, sc.Text())
		}
		out[name] = strings.Join(val, "\n")
	}
	for _, v := range out {
		if strings.Contains(v, secretV) || strings.Contains(v, token) {
			w.t.Errorf("a secret reached the outputs: %s", v)
		}
	}
	return out
}

func (w *world) summary() string {
	b, _ := os.ReadFile(w.vars["GITHUB_STEP_SUMMARY"])
	return string(b)
}

// want checks outputs.
func (w *world) want(kv ...string) map[string]string {
	w.t.Helper()
	o := w.outputs()
	for i := 0; i+1 < len(kv); i += 2 {
		if o[kv[i]] != kv[i+1] {
			w.t.Errorf("output %s = %q, want %q\nresult: %s\nstdout:\n%s", kv[i], o[kv[i]], kv[i+1], o["result"], w.out.String())
		}
	}
	return o
}

// comments are the pull request's live comments.
func (w *world) comments(n int) []githubtest.Comment {
	var out []githubtest.Comment
	for _, c := range w.gh.Comments(repoName, n) {
		if !c.Deleted {
			out = append(out, c)
		}
	}
	return out
}

// receipt reads a scope's receipt from the remote's bare repository.
func (w *world) receipt(env, sc string) *receipt.Receipt {
	w.t.Helper()
	ref := "refs/heads/sponson-receipts/" + receipt.ScopeTarget(env, sc).Key()
	if _, ok := w.gh.Refs(repoName, "refs/heads/sponson-receipts/")[ref]; !ok {
		return nil
	}
	data, err := gitShow(w.gh.GitDir(repoName), ref+":receipt.json")
	if err != nil {
		w.t.Fatal(err)
	}
	r, err := receipt.Decode(data)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) receiptRefs() map[string]string {
	return w.gh.Refs(repoName, "refs/heads/sponson-receipts/")
}

// touched counts the fake cloud's writes.
func (w *world) writes() int { return len(w.cloud.Writes()) }
