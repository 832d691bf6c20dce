package planetscale_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/adapters/planetscale"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

var block = adapter.Provider{"organization": "acme", "database": "shop"}

func newWorld(t *testing.T) *simtest.World {
	w := simtest.New(t, sim.Options{Seed: 11})
	w.Cloud.Console.SeedPlanetScaleDatabase("acme", "shop", "staging")
	return w
}

func secrets(w *simtest.World) []string {
	return []string{w.Env[planetscale.TokenVar], w.Env[planetscale.TokenIDVar], "pscale_tkn_wrong"}
}

func TestBranchConformance(t *testing.T) {
	w := newWorld(t)
	req := func(name string) adapter.Request {
		return adapter.Request{Line: "db", Params: map[string]any{"name": name}, Provider: block}
	}
	adaptertest.Run(t, adaptertest.Case{
		Op:            planetscale.NewBranch(w.With(nil), w.Client),
		Request:       req("sponson-preview-pr-7"),
		Other:         req("sponson-preview-pr-8"),
		World:         adaptertest.World{Writes: w.Writes, Secrets: secrets(w)},
		Unauthorized:  planetscale.NewBranch(w.With(map[string]string{planetscale.TokenVar: "pscale_tkn_wrong"}), w.Client),
		NoCredential:  planetscale.NewBranch(w.With(map[string]string{planetscale.TokenVar: ""}), w.Client),
		CredentialVar: planetscale.TokenVar,
	})
}

func TestPasswordConformance(t *testing.T) {
	w := newWorld(t)
	req := func(name string) adapter.Request {
		return adapter.Request{Line: "pw", Params: map[string]any{"branch": "staging", "name": name, "role": "readwriter"}, Provider: block}
	}
	adaptertest.Run(t, adaptertest.Case{
		Op:            planetscale.NewPassword(w.With(nil), w.Client),
		Request:       req("pr-7"),
		Other:         req("pr-8"),
		World:         adaptertest.World{Writes: w.Writes, Secrets: secrets(w)},
		Unauthorized:  planetscale.NewPassword(w.With(map[string]string{planetscale.TokenIDVar: "someone-else"}), w.Client),
		NoCredential:  planetscale.NewPassword(w.With(map[string]string{planetscale.TokenIDVar: ""}), w.Client),
		CredentialVar: planetscale.TokenIDVar,
	})
}

func intendOK(...string) error { return nil }

// A new branch is polled until ready; a password on it carries its secret
// once, in a connection string with the parameters asked for.
func TestBranchThenPassword(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	run := adapter.RunCtx{Env: "preview", Scope: "pr-7"}
	bop := planetscale.NewBranch(w.With(nil), w.Client)
	params, err := bop.Defaults(map[string]any{}, block, run)
	if err != nil || params["name"] != "sponson-preview-pr-7" || params["parent"] != "main" {
		t.Fatalf("branch defaults = %v, %v", params, err)
	}
	res, err := bop.Apply(ctx, adapter.Request{Params: params, Provider: block, Run: run}, nil, intendOK)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := findDB(w.Cloud.State(), "shop")
	if b := branchOf(db, "sponson-preview-pr-7"); b == nil || !b.Ready || b.Parent != "main" || len(res.Created) != 1 {
		t.Fatalf("branch after apply = %+v (result %+v), want ready from main", b, res)
	}
	pop := planetscale.NewPassword(w.With(nil), w.Client)
	pparams, err := pop.Defaults(map[string]any{"connection_params": map[string]any{"sslaccept": "strict"}}, block, run)
	if err != nil {
		t.Fatal(err)
	}
	preq := adapter.Request{Params: pparams, Provider: block, Run: run}
	pres, err := pop.Apply(ctx, preq, nil, intendOK)
	if err != nil {
		t.Fatal(err)
	}
	db, _ = findDB(w.Cloud.State(), "shop")
	pw := branchOf(db, "sponson-preview-pr-7").Passwords[0]
	out := pres.Outputs
	want := "mysql://" + pw.Username + ":" + pw.PlainText + "@aws.connect.psdb.cloud/shop?sslaccept=strict"
	if out["password"] != pw.PlainText || out["connection_string"] != want || out["role"] != "admin" || out["id"] != pw.ID {
		t.Errorf("outputs = %v, want the password and %s", out, want)
	}
	for _, r := range pres.Resources {
		if strings.Contains(strings.Join([]string{r.Key, r.ID}, " "), pw.PlainText) {
			t.Errorf("resource %+v holds the secret outside its outputs", r)
		}
	}
	// A later read has no secret: it was answered once.
	live, err := pop.Read(ctx, preq)
	if err != nil || live.Outputs["password"] != nil || live.Outputs["username"] != pw.Username {
		t.Errorf("re-read outputs = %v, %v", live.Outputs, err)
	}
	// A role change asks for a new name.
	preq.Params["role"] = "reader"
	if _, err := pop.Diff(live, preq); errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), "cannot change") {
		t.Errorf("role change: %v, want PARAM_INVALID", err)
	}
}

// A password create whose answer is lost is replaced: its secret is gone.
func TestLostPasswordCreateReplaced(t *testing.T) {
	w := newWorld(t)
	if _, err := w.Cloud.AddRule(sim.Rule{Kind: sim.KindDrop, Provider: sim.ProviderPlanetScale, Method: "POST", Path: "/organizations/acme/databases/shop/branches/staging/passwords", Count: 1}); err != nil {
		t.Fatal(err)
	}
	pop := planetscale.NewPassword(w.With(nil), w.Client)
	req := adapter.Request{Params: map[string]any{"branch": "staging", "name": "ci"}, Provider: block}
	res, err := pop.Apply(context.Background(), req, nil, intendOK)
	if err != nil {
		t.Fatal(err)
	}
	db, _ := findDB(w.Cloud.State(), "shop")
	pws := branchOf(db, "staging").Passwords
	if len(pws) != 1 || res.Outputs["password"] != pws[0].PlainText || len(res.Created) != 1 {
		t.Errorf("passwords %+v, outputs %v: want one, whose secret Sponson has", pws, res.Outputs)
	}
}

func TestMissingBranch(t *testing.T) {
	w := newWorld(t)
	pop := planetscale.NewPassword(w.With(nil), w.Client)
	_, err := pop.Apply(context.Background(), adapter.Request{Params: map[string]any{"branch": "nope", "name": "x"}, Provider: block}, nil, intendOK)
	if errs.CodeOf(err) != errs.PROVIDER_NOT_FOUND || w.Writes() != 0 {
		t.Errorf("err = %v with %d writes, want PROVIDER_NOT_FOUND and nothing written", err, w.Writes())
	}
}

func findDB(s sim.Snapshot, name string) (sim.PlanetScaleDatabase, bool) {
	for _, d := range s.PlanetScale {
		if d.Name == name {
			return d, true
		}
	}
	return sim.PlanetScaleDatabase{}, false
}

func branchOf(d sim.PlanetScaleDatabase, name string) *sim.PlanetScaleBranch {
	for i := range d.Branches {
		if d.Branches[i].Name == name {
			return &d.Branches[i]
		}
	}
	return nil
}

// A branch made by hand from another parent is a Replace for a line that
// names main, and adopted as it is by a line whose parent is {keep: true}:
// Diff unchanged, Apply writes nothing and answers the branch.
func TestKeepParentAdoptsABranchMadeByHand(t *testing.T) {
	w := simtest.New(t, sim.Options{Seed: 11})
	w.Cloud.Console.SeedPlanetScaleDatabase("acme", "shop", "dev-alice")
	op := planetscale.NewBranch(w.With(nil), w.Client)
	ctx := context.Background()
	// By hand: sponson-preview-pr-99 from dev-alice.
	made := adapter.Request{Line: "db", Params: map[string]any{"name": "sponson-preview-pr-99", "parent": "dev-alice"}, Provider: block}
	if _, err := op.Apply(ctx, made, nil, intendOK); err != nil {
		t.Fatal(err)
	}
	named := adapter.Request{Line: "db", Params: map[string]any{"name": "sponson-preview-pr-99", "parent": "main"}, Provider: block}
	kept := adapter.Request{Line: "db", Params: map[string]any{"name": "sponson-preview-pr-99", "parent": adapter.Marker{Kind: adapter.Keep}}, Provider: block}
	for _, c := range []struct {
		req  adapter.Request
		want adapter.Action
	}{{named, adapter.Replace}, {kept, adapter.Unchanged}} {
		live, err := op.Read(ctx, c.req)
		if err != nil {
			t.Fatal(err)
		}
		d, err := op.Diff(live, c.req)
		if err != nil || len(d) != 1 || d[0].Action != c.want {
			t.Errorf("parent %v: diff %+v %v, want %s", c.req.Params["parent"], d, err, c.want)
		}
	}
	before := len(w.Cloud.Writes())
	res, err := op.Apply(ctx, kept, nil, intendOK)
	if err != nil || len(res.Created) != 0 || len(w.Cloud.Writes()) != before {
		t.Fatalf("apply with parent kept: %+v %v, %d writes", res, err, len(w.Cloud.Writes())-before)
	}
	if v := res.Resources[0].Value.(map[string]any); v["parent"] != "dev-alice" {
		t.Errorf("adopted %v, want the branch from dev-alice", v)
	}
}
