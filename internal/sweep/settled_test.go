package sweep

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/manual"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// TestSettled: a scope whose destroy left only manual steps waiting on
// their undo is not destroyed again by the sweep or the bot; a scope
// applied with only steps, or holding anything else, still is.
func TestSettled(t *testing.T) {
	cloud := optest.New()
	eng := &engine.Engine{Ops: adapter.NewRegistry(append(cloud.Ops(), manual.NewStep(httpclient.New(httpclient.Config{}), nil))...)}
	step := receipt.LedgerEntry{Adapter: "manual", Op: "step", Key: "step:dns", Line: "dns"}
	obj := receipt.LedgerEntry{Adapter: "fake", Op: "object", Key: "object:p:x", Line: "x"}
	for _, tc := range []struct {
		name string
		d    Destroyer
		rec  receipt.Receipt
		want bool
	}{
		{"empty ledger", eng, receipt.Receipt{Operation: receipt.OpApply}, true},
		{"only steps after a destroy", eng, receipt.Receipt{Operation: receipt.OpDestroy, Ledger: receipt.Ledger{step}}, true},
		{"only steps after an apply", eng, receipt.Receipt{Operation: receipt.OpApply, Ledger: receipt.Ledger{step}}, false},
		{"a step and a resource after a destroy", eng, receipt.Receipt{Operation: receipt.OpDestroy, Ledger: receipt.Ledger{step, obj}}, false},
		{"a destroyer that cannot tell", destroyerOnly{eng}, receipt.Receipt{Operation: receipt.OpDestroy, Ledger: receipt.Ledger{step}}, false},
	} {
		if got := settled(tc.d, &tc.rec); got != tc.want {
			t.Errorf("%s: settled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// destroyerOnly hides every method but Destroy.
type destroyerOnly struct{ Destroyer }

// TestTeardownWaitsOnUndosOnce: a closed pull request whose scope holds a
// confirmed manual step is torn down once: its resources go, the step's
// undo is reported (TeardownEnv's Undo, which the bot's comment shows) and
// the step stays; a second sweep and a second teardown write nothing.
func TestTeardownWaitsOnUndosOnce(t *testing.T) {
	w := memWorld(t)
	w.eng.Ops = adapter.NewRegistry(append(w.cloud.Ops(), manual.NewStep(httpclient.New(httpclient.Config{}), w.tm.Now))...)
	p, err := plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(objPlan, "\n")+`  - { id: dns, adapter: manual, op: step, title: Add the record, instructions: Add it., undo: Remove the record. }
`))
	if err != nil {
		t.Fatal(err)
	}
	n := 4
	c := scope.Ctx{Env: "preview", Scope: scope.PRScope(n), PR: scope.PR{Number: &n}, Git: scope.Git{Branch: "feat/d", SHA: "1111111111111111111111111111111111111111"}, Repo: "acme/shop"}
	w.gh.set(PullRequest{Number: n, Open: true, HeadRef: "feat/d", HeadSHA: c.Git.SHA, HeadRepo: "acme/shop", BaseRepo: "acme/shop"})
	if _, err := w.eng.Apply(context.Background(), p, c, engine.Options{Env: "preview", Confirm: []string{"dns"}, ApprovedBy: "grace"}); err != nil {
		t.Fatal(err)
	}
	w.close(n)
	ts := &receipt.Tombstone{By: "sponson-test[bot]", At: t0}
	res := TeardownEnv(context.Background(), w.repo(), "preview", "pr-4", ts, c.Git.SHA)
	if res.Err != nil || res.Done || len(res.Destroyed) != 2 || len(res.Undo) != 1 || res.Undo[0].Undo != "Remove the record." {
		t.Fatalf("teardown: %+v", res)
	}
	if r := w.receipt("preview", "pr-4"); len(r.Ledger) != 1 || r.Destroyed || r.Status != receipt.StatusPartial || r.Closed == nil {
		t.Fatalf("after the teardown: %+v", r)
	}
	v := version(t, w.store, "preview", "pr-4")
	if rep := w.sweep(); len(rep.Findings) != 0 {
		t.Errorf("the sweep destroys again: %s", kinds(rep))
	}
	if again := TeardownEnv(context.Background(), w.repo(), "preview", "pr-4", ts, c.Git.SHA); !again.Done {
		t.Errorf("a second teardown: %+v", again)
	}
	if version(t, w.store, "preview", "pr-4") != v {
		t.Error("the receipt was written again")
	}
}
