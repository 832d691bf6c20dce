package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

const sharedItemPlan = `
version: 1
providers:
  fake: { project: p1 }
changes:
  - { id: cb, adapter: fake, op: item, list: callbacks, item: "https://shared.example", prefix: "https://" }
`

// Other scopes' ledgers come from ONE List(env) per run.
func TestForeignLedgersLoadedWithOneList(t *testing.T) {
	w := newWorld(t)
	for _, n := range []int{1, 2, 3} {
		w.mustApply(mustPlan(t, sharedItemPlan), prCtx(n), Options{})
	}
	before := w.store.Calls(memstore.MethodList)
	w.mustApply(mustPlan(t, sharedItemPlan), prCtx(4), Options{})
	if n := w.store.Calls(memstore.MethodList) - before; n != 1 {
		t.Errorf("apply made %d List calls", n)
	}
	before = w.store.Calls(memstore.MethodList)
	if _, err := w.eng.Plan(context.Background(), mustPlan(t, sharedItemPlan), prCtx(5), Options{}); err != nil {
		t.Fatal(err)
	}
	if n := w.store.Calls(memstore.MethodList) - before; n != 1 {
		t.Errorf("plan made %d List calls", n)
	}
}

// A line may rely on another scope's resource unchanged: no write, no
// lease on its parent, nothing in this scope's ledger; and destroying
// this scope leaves it.
func TestForeignReliedOnUnchanged(t *testing.T) {
	w := newWorld(t)
	w.mustApply(mustPlan(t, sharedItemPlan), prCtx(1), Options{})
	w.cloud.ResetWrites()
	acquires := w.store.Calls(memstore.MethodAcquire)
	res := w.mustApply(mustPlan(t, sharedItemPlan), prCtx(2), Options{})
	if res.Receipt.Lines["cb"].Status != LineUnchanged || len(res.Receipt.Ledger) != 0 || len(w.cloud.Writes()) != 0 {
		t.Fatalf("%s", dump(res.Receipt))
	}
	if n := w.store.Calls(memstore.MethodAcquire) - acquires; n != 1 {
		t.Errorf("%d leases taken, want only the scope's", n)
	}
	if _, err := w.eng.Destroy(context.Background(), prCtx(2), Options{}); err != nil {
		t.Fatal(err)
	}
	if !w.cloud.Exists("item:p1:callbacks:https://shared.example") {
		t.Fatal("scope 2's destroy removed scope 1's entry")
	}
}

// Intents count: another run is creating that resource right now, so no
// line of another scope may create it (OWNED_BY_OTHER_SCOPE), and it is
// not unmanaged.
func TestForeignIntentsCount(t *testing.T) {
	w := newWorld(t)
	w.cloud.Crash(optest.Match{Op: optest.OpItem, Method: optest.MethodCreate}, func() { panic("SIGKILL") })
	func() {
		defer func() { recover() }()
		w.apply(mustPlan(t, sharedItemPlan), prCtx(1), Options{})
	}()
	st := w.stored(prCtx(1))
	if len(st.Ledger) != 1 || st.Ledger[0].CreatedBy != receipt.CreatedByIntent {
		t.Fatalf("scope 1 %s", dump(st.Ledger))
	}
	w.tm.Advance(testTTL + time.Second) // the crashed run's lease expires
	res, err := w.apply(mustPlan(t, sharedItemPlan), prCtx(2), Options{})
	if errs.CodeOf(err) != errs.OWNED_BY_OTHER_SCOPE || errs.ExitCode(err) != 1 {
		t.Fatalf("err %v", err)
	}
	if l := res.Receipt.Lines["cb"]; l.Status != LineBlocked || !strings.Contains(l.Error, "scope pr-1") {
		t.Errorf("cb %+v", l)
	}
	if w.cloud.Calls()["fake.item.create"] != 1 {
		t.Error("scope 2 sent a create for scope 1's intent")
	}
}

// Foreign resources are never reported unmanaged; a stray one is.
func TestForeignNeverUnmanaged(t *testing.T) {
	w := newWorld(t)
	w.mustApply(mustPlan(t, sharedItemPlan), prCtx(1), Options{})
	w.mustApply(mustPlan(t, strings.ReplaceAll(sharedItemPlan, "shared.example", "pr-3.example")), prCtx(3), Options{})
	w.cloud.SeedItem("p1", "callbacks", "https://stray.example")
	pres, err := w.eng.Plan(context.Background(), mustPlan(t, strings.ReplaceAll(sharedItemPlan, "shared.example", "pr-2.example")), prCtx(2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var unmanaged []string
	for _, d := range pres.Drift {
		if d.Kind == DriftUnmanaged {
			unmanaged = append(unmanaged, d.Key)
		}
	}
	if !slices.Equal(unmanaged, []string{"item:p1:callbacks:https://stray.example"}) {
		t.Fatalf("unmanaged %v", unmanaged)
	}
}

// An entry in transit to a third scope is named after it.
func TestForeignOwnerFollowsTheSuccessionRule(t *testing.T) {
	w := newWorld(t)
	w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
	st := w.stored(branchCtx())
	st.SupersededBy = "pr-12" // a hand-over stopped after its first write
	l, _, _ := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "branch-feat-x"), own("x"), testTTL)
	w.store.Write(context.Background(), st, l)
	w.store.Release(context.Background(), l)
	other := prCtx(20)
	other.Git.Branch = "feat/other"
	_, err := w.apply(mustPlan(t, strings.Replace(succPlan, "size: 1", "size: 2", 1)), other, Options{})
	if errs.CodeOf(err) != errs.OWNED_BY_OTHER_SCOPE || !strings.Contains(err.Error(), "scope pr-12") {
		t.Fatalf("err %v", err)
	}
}
