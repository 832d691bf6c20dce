package sweep

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/sim"
)

// prodTargetPlan makes, in a preview scope, a resource of production: the
// scope as a target of a flag in LaunchDarkly's production environment
// (written with an approver), beside an ordinary object.
const prodTargetPlan = `
version: 1
providers:
  fake: { project: p1 }
  launchdarkly: { project: shop, environment: production, production: true }
changes:
  - { id: db, adapter: fake, op: object, name: "${ctx.scope}-db", fields: { size: 1 } }
  - { id: flag, adapter: launchdarkly, op: flag_target, flag: checkout }
`

// simWorld is a memory-store world whose engine has the fake ops and the
// built-in ones against a fake cloud with a LaunchDarkly flag and a Vercel
// project holding a production variable.
func simWorld(t *testing.T) (*sim.Cloud, *world) {
	t.Helper()
	cloud := sim.New(sim.Options{Seed: 5})
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	cloud.Console.SeedLaunchDarklyFlag(sim.LaunchDarklyFlag{Project: "shop", Key: "checkout",
		Variations:   []sim.LaunchDarklyVariation{{Value: true, Name: "on"}, {Value: false, Name: "off"}},
		Environments: map[string]*sim.LaunchDarklyEnv{"production": {On: true}}})
	cloud.Console.SeedVercelProject(sim.VercelProject{Name: "web", Envs: []sim.VercelEnv{
		{Key: "DATABASE_URL", Value: "postgres://prod", Target: []string{"production"}}}})
	vars := map[string]string{}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	w := memWorld(t)
	builtin := adapters.Registry(func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, nil)
	w.eng.Ops = adapter.NewRegistry(append(w.cloud.Ops(), builtin.Ops()...)...)
	return cloud, w
}

// An unattended sweep (the bot's, gc without --approved-by) never destroys
// a resource of production: the teardown of the closed pull request leaves
// it in the ledger, says so (ENV_NOT_APPROVED naming it), and destroys the
// rest; a sweep with a named approver destroys it.
func TestSweepLeavesProductionWithoutAnApprover(t *testing.T) {
	_, w := simWorld(t)
	p, err := plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(prodTargetPlan, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	n := 7
	c := scope.Ctx{Env: "preview", Scope: scope.PRScope(n), PR: scope.PR{Number: &n}, Git: scope.Git{Branch: "feat/p", SHA: "1111111111111111111111111111111111111111"}, Repo: "acme/shop"}
	w.gh.set(PullRequest{Number: n, Open: true, HeadRef: "feat/p", HeadSHA: c.Git.SHA, HeadRepo: "acme/shop", BaseRepo: "acme/shop"})
	if _, err := w.eng.Apply(context.Background(), p, c, engine.Options{Env: "preview", ApprovedBy: "alice", Owner: receipt.Owner{Kind: receipt.KindCLI}}); err != nil {
		t.Fatal(err)
	}
	w.close(n)

	rep := w.sweep()
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != DestroyFailed || rep.Findings[0].Code != string(errs.ENV_NOT_APPROVED) {
		t.Fatalf("unattended sweep: %+v", rep.Findings)
	}
	f := rep.Findings[0]
	if len(f.Destroyed) != 1 || len(f.Failed) != 1 || !strings.Contains(f.Failed[0], "target:production:checkout:user:pr-7") ||
		!strings.Contains(f.Error, "approver") {
		t.Fatalf("the finding does not name what was left and why: %+v", f)
	}
	if left := w.receipt("preview", "pr-7").Ledger; len(left) != 1 || left[0].Op != "flag_target" {
		t.Fatalf("the ledger after the unattended sweep: %+v", left)
	}

	repo := w.repo()
	repo.ApprovedBy = "alice"
	rep, err = (&Sweeper{Clock: w.tm, Concurrency: 1}).Sweep(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Code != "" || len(rep.Findings[0].Destroyed) != 1 {
		t.Fatalf("approved sweep: %+v", rep.Findings)
	}
	if left := w.receipt("preview", "pr-7").Ledger; len(left) != 0 {
		t.Fatalf("left after the approved sweep: %+v", left)
	}
}

// A ledger entry its op could not have made in the scope's environment (a
// production variable in a preview pull request's ledger, recorded as if
// Sponson wrote it) is never destroyed, approver or not.
func TestSweepLeavesAnImplausibleEntry(t *testing.T) {
	cloud, w := simWorld(t)
	ctx := context.Background()
	target := receipt.ScopeTarget("preview", "pr-8")
	l, _, err := w.store.Acquire(ctx, target, receipt.Owner{RunID: "r-8"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := &receipt.Receipt{Env: "preview", Scope: "pr-8", Branch: "feat/q", RunID: "r-8", Operation: receipt.OpApply, Status: receipt.StatusComplete,
		StartedAt: t0, FinishedAt: t0, Ledger: receipt.Ledger{{Line: "env", Adapter: "vercel", Op: "env", Key: "env:production:*:DATABASE_URL",
			Provider: map[string]any{"project": "web"}, CreatedBy: receipt.CreatedBySponson}}}
	if err := w.store.Write(ctx, r, l); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	n := 8
	w.gh.set(PullRequest{Number: n, Open: true, HeadRef: "feat/q", HeadSHA: "1111111111111111111111111111111111111111", HeadRepo: "acme/shop", BaseRepo: "acme/shop"})
	w.close(n)
	cloud.ResetWrites()
	repo := w.repo()
	repo.ApprovedBy = "alice"
	rep, err := (&Sweeper{Clock: w.tm, Concurrency: 1}).Sweep(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Code != string(errs.LEDGER_IMPLAUSIBLE) || !strings.Contains(rep.Findings[0].Error, "env:production:*:DATABASE_URL") {
		t.Fatalf("findings: %+v", rep.Findings)
	}
	if wr := cloud.Writes(); len(wr) != 0 {
		t.Fatalf("the sweep wrote to the cloud: %+v", wr)
	}
}
