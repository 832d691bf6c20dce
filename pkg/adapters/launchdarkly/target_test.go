package launchdarkly_test

import (
	"context"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/adapters/launchdarkly"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

var block = adapter.Provider{"project": "web", "environment": "preview"}

func newWorld(t *testing.T) *simtest.World {
	w := simtest.New(t, sim.Options{Seed: 13})
	w.Cloud.SeedLaunchDarklyFlag(sim.LaunchDarklyFlag{Project: "web", Key: "new-checkout",
		Variations: []sim.LaunchDarklyVariation{{Value: true}, {Value: false}},
		Environments: map[string]*sim.LaunchDarklyEnv{
			"preview":    {On: true, Targets: []sim.LaunchDarklyTarget{{ContextKind: "user", Variation: 1, Values: []string{"qa-bot"}}}},
			"production": {On: true, ApprovalRequired: true},
		}})
	w.Cloud.SeedLaunchDarklyFlag(sim.LaunchDarklyFlag{Project: "web", Key: "theme",
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
