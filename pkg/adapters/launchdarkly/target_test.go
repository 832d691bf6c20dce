package launchdarkly_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/adapters/launchdarkly"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/sim"
)

var block = adapter.Provider{"project": "web", "environment": "preview"}

func newWorld(t *testing.T) *simtest.World {
	w := simtest.New(t, sim.Options{Seed: 13})
	w.Cloud.Console.SeedLaunchDarklyFlag(sim.LaunchDarklyFlag{Project: "web", Key: "new-checkout",
		Variations: []sim.LaunchDarklyVariation{{Value: true}, {Value: false}},
		Environments: map[string]*sim.LaunchDarklyEnv{
			"preview":    {On: true, Targets: []sim.LaunchDarklyTarget{{ContextKind: "user", Variation: 1, Values: []string{"qa-bot"}}}},
			"production": {On: true, ApprovalRequired: true},
		}})
	w.Cloud.Console.SeedLaunchDarklyFlag(sim.LaunchDarklyFlag{Project: "web", Key: "theme",
		Variations:   []sim.LaunchDarklyVariation{{Value: "blue", Name: "Blue"}, {Value: "green", Name: "Green"}},
		Environments: map[string]*sim.LaunchDarklyEnv{"preview": {}}})
	return w
}

func req(flag, key string, extra map[string]any) adapter.Request {
	p := map[string]any{"flag": flag, "key": key}
	for k, v := range extra {
		p[k] = v
	}
	return adapter.Request{Line: "flag", Params: p, Provider: block, Run: adapter.RunCtx{Env: "preview", Scope: key}}
}

func TestConformance(t *testing.T) {
	w := newWorld(t)
	adaptertest.Run(t, adaptertest.Case{
		Op:            launchdarkly.NewTarget(w.With(nil), w.Client),
		Request:       req("new-checkout", "pr-7", nil),
		Other:         req("new-checkout", "pr-8", nil),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[launchdarkly.TokenVar], "api-wrong"}},
		Unauthorized:  launchdarkly.NewTarget(w.With(map[string]string{launchdarkly.TokenVar: "api-wrong"}), w.Client),
		NoCredential:  launchdarkly.NewTarget(w.With(map[string]string{launchdarkly.TokenVar: ""}), w.Client),
		CredentialVar: launchdarkly.TokenVar,
	})
	env := w.Cloud.State().LaunchDarkly[0].Environments["preview"]
	if len(env.Targets) != 1 || len(env.Targets[0].Values) != 1 || env.Targets[0].Values[0] != "qa-bot" {
		t.Errorf("targets after the suite = %+v, want only the seeded qa-bot", env.Targets)
	}
}

func intendOK(...string) error { return nil }

// A variation by name; moving the key to another variation is one patch;
// the seeded target is left alone.
func TestVariationByNameAndMove(t *testing.T) {
	w := newWorld(t)
	op := launchdarkly.NewTarget(w.With(nil), w.Client)
	ctx := context.Background()
	r := req("theme", "pr-9", map[string]any{"variation": "Green"})
	if _, err := op.Apply(ctx, r, nil, intendOK); err != nil {
		t.Fatal(err)
	}
	r.Params["variation"] = "blue" // by value this time
	live, err := op.Read(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	diffs, _ := op.Diff(live, r)
	if diffs[0].Action != adapter.Update {
		t.Fatalf("diff = %+v, want an update", diffs)
	}
	w.Cloud.ResetWrites()
	res, err := op.Apply(ctx, r, live, intendOK)
	if err != nil || len(res.Created) != 0 || w.Writes() != 1 {
		t.Fatalf("move: %+v, %v with %d writes, want one patch and nothing created", res, err, w.Writes())
	}
	theme := w.Cloud.State().LaunchDarkly[1].Environments["preview"]
	if len(theme.Targets) != 1 || theme.Targets[0].Variation != 0 || theme.Targets[0].Values[0] != "pr-9" {
		t.Errorf("targets = %+v, want pr-9 on Blue only", theme.Targets)
	}
}

func TestApprovalRequiredIsClear(t *testing.T) {
	w := newWorld(t)
	op := launchdarkly.NewTarget(w.With(nil), w.Client)
	prod := adapter.Provider{"project": "web", "environment": "production", "production": true}
	if got := op.WritesEnvironment(nil, prod, adapter.RunCtx{}); got != "production" {
		t.Errorf("WritesEnvironment = %q", got)
	}
	// Without production: true, the environment's key is named, and the
	// engine gates it by name (plan.Production).
	for env, gated := range map[string]bool{"production": true, "prod-eu": true, "Prod": true, "preview": false, "test": false} {
		got := op.WritesEnvironment(nil, adapter.Provider{"project": "web", "environment": env}, adapter.RunCtx{})
		if got != env || plan.Production(got) != gated {
			t.Errorf("WritesEnvironment(environment %s) = %q (gated %v), want %q (gated %v)", env, got, plan.Production(got), env, gated)
		}
	}
	r := req("new-checkout", "pr-7", nil)
	r.Provider = prod
	_, err := op.Apply(context.Background(), r, nil, intendOK)
	if errs.CodeOf(err) != errs.PROVIDER_CONFLICT || len(adapter.NotCreatedKeys(err)) != 1 {
		t.Errorf("err = %v, want PROVIDER_CONFLICT about approvals, nothing created", err)
	}
}

func TestMissingFlagOrVariation(t *testing.T) {
	w := newWorld(t)
	op := launchdarkly.NewTarget(w.With(nil), w.Client)
	if _, err := op.Read(context.Background(), req("nope", "pr-7", nil)); errs.CodeOf(err) != errs.PROVIDER_NOT_FOUND {
		t.Errorf("unknown flag: %v", err)
	}
	if _, err := op.Read(context.Background(), req("theme", "pr-7", map[string]any{"variation": "Red"})); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("unknown variation: %v", err)
	}
	d, err := op.Defaults(map[string]any{"flag": "theme"}, block, adapter.RunCtx{Scope: "pr-3"})
	if err != nil || d["key"] != "pr-3" || d["context_kind"] != "user" || d["variation"] != true {
		t.Errorf("defaults = %v, %v", d, err)
	}
}

// countingWorld is newWorld's fake cloud behind a server that counts the
// requests it receives, by method.
func countingWorld(t *testing.T) (*simtest.World, func() map[string]int) {
	t.Helper()
	w := newWorld(t)
	var mu sync.Mutex
	counts := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		counts[r.Method]++
		mu.Unlock()
		w.Cloud.Handler().ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	for _, kv := range w.Cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		w.Env[k] = v
	}
	return w, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := maps.Clone(counts)
		clear(counts)
		return out
	}
}

// A create is the engine's read and one semantic patch (issue 11: at most
// two provider requests per create), and so is a move: Apply starts from
// the flag Read fetched. Without a read to start from it reads first.
func TestCreateIsOneReadAndOneWrite(t *testing.T) {
	w, requests := countingWorld(t)
	op := launchdarkly.NewTarget(w.With(nil), w.Client)
	ctx := context.Background()
	r := req("theme", "pr-5", map[string]any{"variation": "Green"})

	live, err := op.Read(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := op.Diff(live, r); len(d) != 1 || d[0].Action != adapter.Create {
		t.Fatalf("diff = %+v, want a create", d)
	}
	var intended []string
	res, err := op.Apply(ctx, r, live, func(keys ...string) error { intended = append(intended, keys...); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := requests(); got[http.MethodGet] != 1 || got[http.MethodPatch] != 1 || len(got) != 2 {
		t.Errorf("a create made %v requests, want one GET (the read) and one PATCH", got)
	}
	key := launchdarkly.Key("preview", "theme", "user", "pr-5")
	if len(res.Created) != 1 || res.Created[0] != key || len(intended) != 1 || intended[0] != key {
		t.Errorf("created %v, intended %v; want %s both", res.Created, intended, key)
	}
	theme := w.Cloud.State().LaunchDarkly[1].Environments["preview"]
	if len(theme.Targets) != 1 || theme.Targets[0].Variation != 1 || len(theme.Targets[0].Values) != 1 || theme.Targets[0].Values[0] != "pr-5" {
		t.Fatalf("targets = %+v, want pr-5 on Green", theme.Targets)
	}

	// A move: the read, then one patch that removes and adds.
	r.Params["variation"] = "Blue"
	if live, err = op.Read(ctx, r); err != nil {
		t.Fatal(err)
	}
	requests()
	if res, err = op.Apply(ctx, r, live, func(...string) error { t.Error("a move intends"); return nil }); err != nil || len(res.Created) != 0 {
		t.Fatalf("move: %+v, %v", res, err)
	}
	if got := requests(); got[http.MethodPatch] != 1 || len(got) != 1 {
		t.Errorf("a move after the read made %v requests, want one PATCH", got)
	}
	theme = w.Cloud.State().LaunchDarkly[1].Environments["preview"]
	if len(theme.Targets) != 1 || theme.Targets[0].Variation != 0 || theme.Targets[0].Values[0] != "pr-5" {
		t.Errorf("targets = %+v, want pr-5 on Blue only", theme.Targets)
	}

	// A read of another flag is not this line's: Apply reads its own.
	other, err := op.Read(ctx, req("new-checkout", "pr-5", nil))
	if err != nil {
		t.Fatal(err)
	}
	r.Params["variation"] = "Green"
	requests()
	if _, err := op.Apply(ctx, r, other, intendOK); err != nil {
		t.Fatal(err)
	}
	if got := requests(); got[http.MethodGet] != 1 || got[http.MethodPatch] != 1 {
		t.Errorf("Apply given another flag's read made %v requests, want its own GET and one PATCH", got)
	}
	theme = w.Cloud.State().LaunchDarkly[1].Environments["preview"]
	if len(theme.Targets) != 1 || theme.Targets[0].Variation != 1 {
		t.Errorf("targets = %+v, want pr-5 on Green", theme.Targets)
	}
}
