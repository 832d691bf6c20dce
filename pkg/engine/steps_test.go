package engine

import (
	"context"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/manual"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

const stepPlan = `
version: 1
changes:
  - { id: obj, adapter: fake, op: object, name: "o-${ctx.scope}" }
  - id: dns
    adapter: manual
    op: step
    title: Add the TXT record
    instructions: "In the **DNS console**, add the record."
    undo: Remove the TXT record.
    depends_on: [obj]
`

// stepWorld is a world whose registry has manual.step beside the fake
// ops, stamping confirmations with the world's fake clock.
func stepWorld(t *testing.T) *world {
	w := newWorld(t)
	ops := append(w.cloud.Ops(), manual.NewStep(httpclient.New(httpclient.Config{}), w.tm.Now))
	w.eng.Ops = adapter.NewRegistry(ops...)
	return w
}

func lineOf(t *testing.T, res *RunResult, id string) receipt.LineResult {
	t.Helper()
	l, ok := res.Receipt.Lines[id]
	if !ok {
		t.Fatalf("no line %s in %v", id, res.Receipt.Lines)
	}
	return l
}

// stepOutputs are the outputs the ledger records for step:dns.
func stepOutputs(t *testing.T, res *RunResult) map[string]any {
	t.Helper()
	for _, en := range res.Receipt.Ledger {
		if en.Key == "step:dns" {
			return en.Outputs
		}
	}
	t.Fatalf("no step:dns in the ledger:\n%s", dump(res))
	return nil
}

// TestConfirmerIsApproverElseGitIdentity: a confirm records the approver,
// else the git identity the caller read, and with neither is refused
// before the store is touched; never "unknown".
func TestConfirmerIsApproverElseGitIdentity(t *testing.T) {
	w := stepWorld(t)
	p, c := mustPlan(t, stepPlan), prCtx(3)
	if res := w.mustApply(p, c, Options{}); res.Receipt.Status != receipt.StatusPartial || lineOf(t, res, "dns").Status != LineWaiting ||
		len(res.Todos) != 1 || res.Todos[0].Undo != "Remove the TXT record." {
		t.Fatalf("unconfirmed: %s", dump(res))
	}
	reads := w.store.Calls(memstore.MethodRead)
	res, err := w.apply(p, c, Options{Confirm: []string{"dns"}})
	if errs.CodeOf(err) != errs.USAGE || res != nil || w.store.Calls(memstore.MethodRead) != reads {
		t.Fatalf("confirm with nobody: %v, %v (store read %d times more)", res, err, w.store.Calls(memstore.MethodRead)-reads)
	}
	w.tm.Advance(90 * time.Second)
	res = w.mustApply(p, c, Options{Confirm: []string{"dns"}, ConfirmedBy: "Ada Lovelace <ada@example.com>"})
	out := stepOutputs(t, res)
	if res.Receipt.Status != receipt.StatusComplete || out["confirmed_by"] != "Ada Lovelace <ada@example.com>" ||
		out["confirmed_at"] != t0.Add(90*time.Second).Format(time.RFC3339) {
		t.Fatalf("confirmed by the git identity: %v\n%s", out, dump(res))
	}

	// The approver wins over the git identity.
	w2 := stepWorld(t)
	w2.mustApply(p, c, Options{})
	res = w2.mustApply(p, c, Options{Confirm: []string{"dns"}, ApprovedBy: "grace", ConfirmedBy: "Ada"})
	if got := stepOutputs(t, res)["confirmed_by"]; got != "grace" {
		t.Errorf("confirmed_by = %v, want the approver", got)
	}
}

// TestDestroyWaitsOnTheUndo: destroy destroys what providers hold, shows
// a confirmed step's undo and waits on it (partial, the entry kept, the
// scope not destroyed) run after run, until --confirm names it; then it
// records who undid it and when, and the scope is destroyed.
func TestDestroyWaitsOnTheUndo(t *testing.T) {
	w := stepWorld(t)
	p, c := mustPlan(t, stepPlan), prCtx(4)
	w.mustApply(p, c, Options{})
	w.mustApply(p, c, Options{Confirm: []string{"dns"}, ApprovedBy: "grace"})
	ctx := context.Background()
	for range 2 { // a second destroy waits the same way
		res, err := w.eng.Destroy(ctx, c, Options{})
		if err != nil {
			t.Fatalf("destroy: %v", err)
		}
		rc := res.Receipt
		if rc.Status != receipt.StatusPartial || rc.Destroyed || len(rc.Ledger) != 1 || rc.Ledger[0].Key != "step:dns" ||
			lineOf(t, res, "dns").Status != LineWaiting {
			t.Fatalf("destroy did not wait on the undo:\n%s", dump(res))
		}
		if len(res.Todos) != 1 || res.Todos[0].Line != "dns" || res.Todos[0].Title != "Add the TXT record" ||
			res.Todos[0].Undo != "Remove the TXT record." || res.Todos[0].ConfirmedBy != "grace" {
			t.Fatalf("todos = %+v", res.Todos)
		}
		if len(w.cloud.Keys()) != 0 {
			t.Fatalf("the object is still at the provider: %v", w.cloud.Keys())
		}
	}
	for name, o := range map[string]Options{
		"nobody to record":  {Confirm: []string{"dns"}},
		"no such step":      {Confirm: []string{"obj"}, ApprovedBy: "grace"},
		"no line of ledger": {Confirm: []string{"nope"}, ApprovedBy: "grace"},
	} {
		if res, err := w.eng.Destroy(ctx, c, o); errs.CodeOf(err) != errs.USAGE || res != nil {
			t.Errorf("%s: %v, %v, want USAGE", name, res, err)
		}
	}
	w.tm.Advance(time.Hour)
	res, err := w.eng.Destroy(ctx, c, Options{Confirm: []string{"dns"}, ConfirmedBy: "Ada <ada@example.com>"})
	if err != nil {
		t.Fatal(err)
	}
	dns := lineOf(t, res, "dns")
	if res.Receipt.Status != receipt.StatusComplete || !res.Receipt.Destroyed || len(res.Receipt.Ledger) != 0 || dns.Status != LineDestroyed ||
		dns.Outputs["undone_by"] != "Ada <ada@example.com>" || dns.Outputs["undone_at"] != t0.Add(time.Hour).Format(time.RFC3339) || len(res.Todos) != 0 {
		t.Fatalf("confirmed undo:\n%s", dump(res))
	}
	if !w.eng.OnlySteps(receipt.Ledger{{Adapter: "manual", Op: "step", Key: "step:x"}}) || w.eng.OnlySteps(nil) ||
		w.eng.OnlySteps(receipt.Ledger{{Adapter: "manual", Op: "step"}, {Adapter: "fake", Op: "object"}}) {
		t.Error("OnlySteps")
	}
}
