package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters"
	"github.com/sponson/apply/pkg/adapters/vercel"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/sim"
)

// markedPlan makes, per scope, the three kinds of resource that carry
// their scope's mark at the provider: a Neon branch (its name), a Vercel
// preview variable of the scope's branch (its comment), a Netlify value of
// the scope's branch (its branch context).
const markedPlan = `
version: 1
providers:
  neon: { project: %NEON% }
  vercel: { project: web }
  netlify: { site: %SITE% }
changes:
  - { id: db, adapter: neon, op: branch }
  - { id: vars, adapter: vercel, op: env, values: { API_URL: "https://api.example" } }
  - { id: site, adapter: netlify, op: env, context: branch, values: { API_URL: "https://api.example" } }
`

// markWorld is a git-store world whose engine has the built-in ops against
// a fake cloud with a Neon project, a Vercel project and a Netlify site.
type markWorld struct {
	*world
	cloud     *sim.Cloud
	dir       string
	neon      string
	site      string
	plan      string
	vercelURL string
	token     string
}

func newMarkWorld(t *testing.T) *markWorld {
	t.Helper()
	w, _, dir := gitWorld(t)
	cloud := sim.New(sim.Options{Seed: 7})
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	np := cloud.Console.SeedNeonProject(sim.NeonProject{})
	cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web"})
	site := cloud.Console.SeedNetlifySite(sim.NetlifySite{Name: "web"})
	vars := map[string]string{}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	// Neon answers 423 while its branch operation runs; the client's
	// retries wait on the test's clock, whose sleeps only yield (the
	// operation finishes after further requests, not after time).
	client := httpclient.New(httpclient.Config{Clock: enginetest.Yielding(w.tm)})
	builtin := adapters.Registry(func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, client)
	w.eng.Ops = adapter.NewRegistry(builtin.Ops()...)
	p := strings.NewReplacer("%NEON%", np.ID, "%SITE%", site).Replace(markedPlan)
	return &markWorld{world: w, cloud: cloud, dir: dir, neon: np.ID, site: site, plan: p,
		vercelURL: vars[vercel.URLVar], token: vars[vercel.TokenVar]}
}

func markCtx(branch string) scope.Ctx {
	return scope.Ctx{Env: "preview", Scope: scope.BranchScope(branch), Git: scope.Git{Branch: branch, SHA: "1111111111111111111111111111111111111111"}}
}

// live is every resource of the cloud the plan's ops make, by ledger key.
func (m *markWorld) live() map[string]string {
	out := map[string]string{}
	st := m.cloud.State()
	for _, p := range st.Neon {
		for _, b := range p.Branches {
			if b.Name != "main" {
				out["branch:"+b.Name] = b.ID
			}
		}
	}
	for _, p := range st.Vercel {
		for _, e := range p.Envs {
			out[vercel.Key("preview", e.GitBranch, e.Key)] = e.Comment
		}
	}
	for _, s := range st.Netlify {
		for _, v := range s.Env {
			for _, x := range v.Values {
				out["env:"+x.Context+":"+x.ContextParameter+":"+v.Key] = x.ID
			}
		}
	}
	return out
}

func (m *markWorld) vercelEnv(key string) sim.VercelEnv {
	m.t.Helper()
	for _, p := range m.cloud.State().Vercel {
		for _, e := range p.Envs {
			if vercel.Key("preview", e.GitBranch, e.Key) == key {
				return e
			}
		}
	}
	m.t.Fatalf("no vercel variable %s", key)
	return sim.VercelEnv{}
}

// sponsonPush commits a receipt to branch of the bare repository with the
// git CLI and a Sponson-Event trailer of its own making: what anyone with
// push access can forge when receipts are not signed. The store's history
// then "proves" every entry of the ledger.
func sponsonPush(t *testing.T, bare, env, sc string, data []byte) {
	t.Helper()
	work := t.TempDir()
	gittest.Run(t, work, "init", "-q")
	gittest.Run(t, work, "checkout", "-q", "--orphan", "w")
	if err := os.WriteFile(filepath.Join(work, receipt.ReceiptFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, work, "add", receipt.ReceiptFile)
	ev, err := json.Marshal(receipt.Event{At: t0, Target: receipt.ScopeTarget(env, sc), Operation: receipt.OpApply, RunID: "hand", Status: receipt.StatusComplete})
	if err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, work, "commit", "-q", "-m", "apply "+env+"/"+sc+" hand complete\n\nSponson-Event: "+string(ev))
	gittest.Run(t, work, "remote", "add", "origin", gittest.FileURL(bare))
	gittest.Run(t, work, "push", "-q", "-f", "origin", "HEAD:refs/heads/sponson-receipts/"+env+"/"+sc)
}

// A receipt whose history looks like Sponson's (a forged trailer: the
// store's record proves every entry) names resources that carry another
// scope's mark, or a person's: a Neon branch named for pr-7, a Vercel
// variable whose comment is pr-7's mark, a Netlify value of pr-7's branch
// (pr-7's receipt is gone: the resources are nobody's in the store), and a
// variable a person commented. Destroy refuses each (RESOURCE_UNMARKED,
// naming the branch and the entry), leaves them in the ledger and at the
// provider, and deletes the one resource that carries the scope's mark.
func TestDestroyRefusesWhatCarriesAnotherScopesMark(t *testing.T) {
	t.Parallel()
	m := newMarkWorld(t)
	ctx := context.Background()
	pr7 := prCtx(7)
	pr7.Git.Branch = "feat/a"
	res := m.mustApply(mustPlan(t, m.plan), pr7, Options{})
	ledger := res.Receipt.Ledger
	if got := m.vercelEnv("env:preview:feat/a:API_URL").Comment; got != "sponson preview/pr-7" {
		t.Fatalf("the variable pr-7 made is commented %q, want its mark", got)
	}
	// pr-7's receipt is lost: what it made is nobody's in the store.
	gittest.Run(t, m.dir, "update-ref", "-d", "refs/heads/sponson-receipts/preview/pr-7")

	ghost := markCtx("ghost")
	hand, err := m.cloud.Console.SeedVercelEnv("web", sim.VercelEnv{Key: "HAND", Value: "x", Target: []string{"preview"}, GitBranch: "ghost", Comment: "the staging key, do not touch"})
	if err != nil {
		t.Fatal(err)
	}
	own, err := m.cloud.Console.SeedVercelEnv("web", sim.VercelEnv{Key: "OWN", Value: "y", Target: []string{"preview"}, GitBranch: "ghost", Comment: vercel.Mark(adapter.RunCtx{Env: "preview", Scope: ghost.Scope})})
	if err != nil {
		t.Fatal(err)
	}
	vp := adapter.Provider{"project": "web"}
	entries := []receipt.LedgerEntry{
		{Line: "own", Adapter: "vercel", Op: "env", Key: "env:preview:ghost:OWN", ID: own, Provider: vp},
		{Line: "hand", Adapter: "vercel", Op: "env", Key: "env:preview:ghost:HAND", ID: hand, Provider: vp},
	}
	var stolen []string
	for _, en := range ledger {
		en.Line = "stolen-" + en.Line
		entries = append(entries, en)
		stolen = append(stolen, en.Key)
	}
	sponsonPush(t, m.dir, "preview", ghost.Scope, forged(t, "preview", ghost.Scope, "ghost", entries...))
	before := m.live()

	res, err = m.eng.Destroy(ctx, ghost, Options{})
	if errs.CodeOf(err) != errs.RESOURCE_UNMARKED {
		t.Fatalf("destroy of the forged scope: %v, want RESOURCE_UNMARKED", err)
	}
	after := m.live()
	if _, ok := after["env:preview:ghost:OWN"]; ok {
		t.Error("the variable that carries the scope's mark was not destroyed")
	}
	refused := append([]string{"env:preview:ghost:HAND"}, stolen...)
	codes, _ := errs.Coded(err).Details["codes"].(map[string]errs.Code)
	for _, key := range refused {
		if _, ok := after[key]; !ok || after[key] != before[key] {
			t.Errorf("%s was destroyed or changed (before %q, after %q)", key, before[key], after[key])
		}
		if codes[key] != errs.RESOURCE_UNMARKED {
			t.Errorf("%s: code %s, want RESOURCE_UNMARKED", key, codes[key])
		}
		if res.Receipt.Ledger.Index(receipt.ResourceRef{Adapter: adapterOf(entries, key), Op: opOf(entries, key), Provider: providerOf(entries, key), Key: key}) < 0 {
			t.Errorf("%s left the ledger", key)
		}
		found := false
		for _, lr := range res.Receipt.Lines {
			if slices.Contains(lr.Resources, key) && lr.ErrorCode == errs.RESOURCE_UNMARKED &&
				strings.Contains(lr.Error, "sponson-receipts/preview/branch-ghost") && strings.Contains(lr.Error, key) {
				found = true
			}
		}
		if !found {
			t.Errorf("no line result names %s with the branch: %s", key, dump(res.Receipt.Lines))
		}
	}
	if !strings.Contains(err.Error(), "sponson-receipts/preview/branch-ghost") {
		t.Errorf("the refusal does not name the branch: %v", err)
	}
	if errs.ExitCode(err) != errs.ExitCode(errs.New(errs.LEDGER_IMPLAUSIBLE, "x")) {
		t.Errorf("exit code %d, want the other refusals'", errs.ExitCode(err))
	}
}

func entryOf(entries []receipt.LedgerEntry, key string) receipt.LedgerEntry {
	for _, en := range entries {
		if en.Key == key {
			return en
		}
	}
	return receipt.LedgerEntry{}
}

func adapterOf(e []receipt.LedgerEntry, k string) string          { return entryOf(e, k).Adapter }
func opOf(e []receipt.LedgerEntry, k string) string               { return entryOf(e, k).Op }
func providerOf(e []receipt.LedgerEntry, k string) map[string]any { return entryOf(e, k).Provider }

// A normal apply then destroy deletes everything, a variable made before
// Sponson wrote marks (no comment) included: the store proves Sponson made
// it in this scope, and an absent comment contradicts nothing.
func TestDestroyDeletesWhatCarriesItsMark(t *testing.T) {
	t.Parallel()
	m := newMarkWorld(t)
	ctx := context.Background()
	p := mustPlan(t, m.plan)
	a, b := markCtx("feat/a"), markCtx("feat/b")
	m.mustApply(p, a, Options{})
	m.mustApply(p, b, Options{})
	if got := m.vercelEnv("env:preview:feat/b:API_URL").Comment; got != "sponson preview/branch-feat-b" {
		t.Fatalf("the variable made is commented %q", got)
	}
	// feat/b's variable as an older Sponson left it: no comment.
	old := m.vercelEnv("env:preview:feat/b:API_URL")
	req, err := http.NewRequest(http.MethodPatch, m.vercelURL+"/v9/projects/web/env/"+old.ID, strings.NewReader(`{"comment":""}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || m.vercelEnv("env:preview:feat/b:API_URL").Comment != "" {
		t.Fatalf("clearing the comment: %s", resp.Status)
	}
	for _, c := range []scope.Ctx{a, b} {
		if _, err := m.eng.Destroy(ctx, c, Options{}); err != nil {
			t.Fatalf("destroy %s: %v", c.Scope, err)
		}
	}
	if got := m.live(); len(got) != 0 {
		t.Fatalf("left after destroying both scopes: %v", got)
	}
}
