package costs_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/reqcount"
	"github.com/sponson/apply/pkg/sim"
)

// world is one repository's receipts remote over HTTP, the fake cloud
// behind a request counter, and a working directory with a plan.
type world struct {
	tb      testing.TB
	dir     string // the bare receipts repository
	git     *gittest.Server
	cloud   *sim.Cloud
	prov    *reqcount.Counter
	provSrv *httptest.Server
	conns   atomic.Int64 // connections the providers' server accepted
	vars    map[string]string
	workDir string
}

// resources and items: the 20-line plan, 16 http.resource lines
// and 4 http.list_item lines on one shared parent object. Its floor for a
// steady apply is 17 provider requests: one read per resource, one read
// of the shared parent.
const (
	resources = 16
	items     = 4
)

func newWorld(tb testing.TB, plan func(parentID string) string) *world {
	tb.Helper()
	w := &world{tb: tb, cloud: sim.New(sim.Options{Seed: 1}), prov: reqcount.New()}
	w.cloud.CheckDescriptions(tb)
	w.dir, _ = gittest.NewBareRepo(tb)
	w.git = gittest.Serve(tb, w.dir)
	srv := httptest.NewUnstartedServer(w.prov.Wrap(w.cloud.Handler()))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			w.conns.Add(1)
		}
	}
	srv.Start()
	w.provSrv = srv
	tb.Cleanup(srv.Close)
	parent, err := w.cloud.Console.SeedHTTPObject("apps", map[string]any{"name": "web", "callbacks": []any{"https://example.dev/cb"}})
	if err != nil {
		tb.Fatal(err)
	}
	w.vars = map[string]string{"SPONSON_RECEIPTS_REMOTE": w.git.URL}
	for _, kv := range w.cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		w.vars[k] = v
	}
	w.workDir = tb.TempDir()
	if err := os.WriteFile(filepath.Join(w.workDir, "release.plan.yaml"), []byte(plan(parent)), 0o644); err != nil {
		tb.Fatal(err)
	}
	return w
}

// plan20 is the 20-line plan: resources objects and items entries in the
// callback list of one shared object, each entry taking a resource's
// output.
func plan20(parentID string) string {
	var b strings.Builder
	b.WriteString("version: 1\nproviders:\n  http:\n    sim:\n      base_url_env: " + sim.HTTPURLVar + "\n      auth: { bearer_env: " + sim.HTTPTokenVar + " }\nchanges:\n")
	for i := 0; i < resources; i++ {
		fmt.Fprintf(&b, "  - { id: r%d, adapter: http, op: resource, api: sim, create: { path: /flags }, fields: { name: \"r%d-${ctx.scope}\", n: %d } }\n", i, i, i)
	}
	for i := 0; i < items; i++ {
		fmt.Fprintf(&b, "  - { id: cb%d, adapter: http, op: list_item, api: sim, parent: { path: /apps/%s }, list_path: /callbacks, item: \"https://${ctx.scope}.example.dev/cb%d\", depends_on: [r%d] }\n", i, parentID, i, i)
	}
	return b.String()
}

// run runs one CLI command in the world and returns its exit code and
// output; a non-zero exit fails the test unless allowed.
func (w *world) run(args ...string) string {
	w.tb.Helper()
	var out, errb bytes.Buffer
	env := cli.Env{
		LookupEnv: func(k string) (string, bool) { v, ok := w.vars[k]; return v, ok },
		Environ: func() []string {
			var l []string
			for k, v := range w.vars {
				l = append(l, k+"="+v)
			}
			return l
		},
		Dir:      w.workDir,
		ReadFile: os.ReadFile,
	}
	if code := cli.Main(args, env, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		w.tb.Fatalf("sponson %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	return out.String()
}

// cost is what one command cost, counted at the servers.
type cost struct {
	git, provider, commits int
	conns                  int // connections opened to the providers
	gitLog, provLog        []string
}

func (w *world) measure(args ...string) cost {
	w.tb.Helper()
	g0, p0 := len(w.git.Log()), w.prov.Mark()
	c0 := w.commits()
	// Each command starts as a new process would, with no connection open.
	w.provSrv.CloseClientConnections()
	n0 := w.conns.Load()
	w.run(args...)
	return cost{git: len(w.git.Log()) - g0, provider: w.prov.Count(p0, nil), commits: w.commits() - c0, conns: int(w.conns.Load() - n0),
		gitLog: w.git.Log()[g0:], provLog: w.prov.Since(p0)}
}

// commits is the number of commits on every receipts branch.
func (w *world) commits() int {
	out, err := gittest.Try(w.dir, nil, "rev-list", "--count", "--all")
	if err != nil {
		if strings.Contains(out, "bad revision") || strings.TrimSpace(out) == "" {
			return 0
		}
		w.tb.Fatalf("rev-list: %v %s", err, out)
	}
	var n int
	fmt.Sscan(strings.TrimSpace(out), &n)
	return n
}
