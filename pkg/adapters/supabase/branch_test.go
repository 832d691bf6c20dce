package supabase_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/supabase"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

func (w *world) branchReq(name string) adapter.Request {
	return adapter.Request{Line: "db", Params: map[string]any{"name": name}, Provider: adapter.Provider{"project": w.ref}}
}

func TestBranchConformance(t *testing.T) {
	w := newWorld(t, "")
	w.Cloud.Console.SeedSupabaseBranch(w.ref, "staging")
	adaptertest.Run(t, adaptertest.Case{
		Op:            supabase.NewBranch(w.With(nil), w.Client),
		Request:       w.branchReq("sponson-preview-pr-7"),
		Other:         w.branchReq("sponson-preview-pr-8"),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[supabase.TokenVar], "sbp_wrong_token_123"}},
		Unauthorized:  supabase.NewBranch(w.With(map[string]string{supabase.TokenVar: "sbp_wrong_token_123"}), w.Client),
		NoCredential:  supabase.NewBranch(w.With(map[string]string{supabase.TokenVar: ""}), w.Client),
		CredentialVar: supabase.TokenVar,
	})
	if bs := w.Cloud.State().SupabaseBranches; len(bs) != 1 || bs[0].Name != "staging" {
		t.Errorf("branches after the suite = %+v, want the seeded one", bs)
	}
}

// Apply waits until the branch is healthy and returns its database.
func TestBranchWaitsForHealthy(t *testing.T) {
	w := newWorld(t, "")
	op := supabase.NewBranch(w.With(nil), w.Client)
	run := adapter.RunCtx{Env: "preview", Scope: "pr-3"}
	p := adapter.Provider{"project": w.ref}
	params, err := op.Defaults(map[string]any{}, p, run)
	if err != nil || params["name"] != "sponson-preview-pr-3" {
		t.Fatalf("defaults = %v, %v", params, err)
	}
	res, err := op.Apply(context.Background(), adapter.Request{Params: params, Provider: p, Run: run}, nil, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	b := w.Cloud.State().SupabaseBranches[0]
	out := res.Outputs
	if b.Status != "ACTIVE_HEALTHY" || out["project_ref"] != b.ProjectRef || out["api_url"] != "https://"+b.ProjectRef+".supabase.co" {
		t.Fatalf("branch %+v, outputs %v", b, out)
	}
	cs, _ := out["connection_string"].(string)
	if !strings.HasPrefix(cs, "postgresql://postgres:"+b.DBPass+"@db."+b.ProjectRef+".supabase.co:5432/postgres") {
		t.Errorf("connection_string = %q", cs)
	}
	if !slicesHas(op.Spec().Outputs, "connection_string") {
		t.Error("connection_string is not declared sensitive")
	}
}

func slicesHas(outs []adapter.OutputSpec, name string) bool {
	for _, o := range outs {
		if o.Name == name {
			return o.Sensitive
		}
	}
	return false
}

func TestBranchNeedsProject(t *testing.T) {
	op := supabase.NewBranch(nil, nil)
	if _, err := op.Defaults(map[string]any{"name": "x"}, adapter.Provider{}, adapter.RunCtx{}); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("no project: %v", err)
	}
}

// fakeClock is a clock whose Sleep advances time instead of waiting.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return ctx.Err()
}

// A branch that never comes up ends the wait with PROVIDER_TIMEOUT on the
// injected clock: nothing sleeps for real.
func TestBranchWaitTimesOutOnTheInjectedClock(t *testing.T) {
	w := newWorld(t, "")
	if _, err := w.Cloud.AddRule(sim.Rule{Kind: sim.KindFail, Provider: sim.ProviderSupabase, Method: "GET", Path: "/v1/branches/*", Status: 404, Count: 100000}); err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	client := httpclient.New(httpclient.Config{Now: clock.Now, Sleep: clock.Sleep})
	op := supabase.NewBranch(w.With(nil), client)
	start := time.Now()
	_, err := op.Apply(context.Background(), w.branchReq("never-up"), nil, func(...string) error { return nil })
	if errs.CodeOf(err) != errs.PROVIDER_TIMEOUT {
		t.Fatalf("err = %v, want PROVIDER_TIMEOUT", err)
	}
	if waited := clock.Now().Sub(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)); waited < 10*time.Minute {
		t.Errorf("the injected clock moved %s; the wait should be minutes long", waited)
	}
	if real := time.Since(start); real > 30*time.Second {
		t.Errorf("the wait took %s of real time", real)
	}
}

// A parent project deleted in the dashboard took its preview branches with
// it: the Management API answers 404 for its branch listing, and
// destroying (or looking up) a branch of it is success, not an error that
// blocks the scope's teardown forever.
func TestBranchParentGoneIsGone(t *testing.T) {
	w := newWorld(t, "")
	op := supabase.NewBranch(w.With(nil), w.Client)
	gone := adapter.Provider{"project": "zzzzzzzzzzzzzzzzzzzz"}
	w.ParentGone(t, op, gone, adapter.Resource{Key: supabase.BranchKey("sponson-preview-pr-7")})
}
