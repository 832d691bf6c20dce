package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

// Destroy with Options.Close leaves a tombstone (who, when, head sha); an
// apply is then SCOPE_CLOSED (exit 2, nothing touched) unless
// Options.Reopen, which clears it and records the reopening; a destroy
// again keeps it.
func TestTombstone(t *testing.T) {
	w, apply := basic(t)
	apply()
	tomb := &receipt.Tombstone{By: "sponson-bot", At: t0, HeadSHA: "cccccccccccccccccccccccccccccccccccccccc"}
	res, err := w.eng.Destroy(context.Background(), prCtx(12), Options{Close: tomb})
	if err != nil {
		t.Fatal(err)
	}
	if c := w.stored(prCtx(12)).Closed; c == nil || *c != *tomb || !res.Receipt.Destroyed {
		t.Fatalf("tombstone %+v", c)
	}
	// A second destroy (the sweep) keeps it.
	if _, err := w.eng.Destroy(context.Background(), prCtx(12), Options{}); err != nil {
		t.Fatal(err)
	}
	if c := w.stored(prCtx(12)).Closed; c == nil || *c != *tomb {
		t.Fatalf("a destroy without Close dropped the tombstone: %+v", c)
	}
	w.cloud.ResetCalls()
	writes := w.store.Calls(memstore.MethodWrite)
	_, err = w.apply(mustPlan(t, basicPlan), prCtx(12), Options{})
	if errs.CodeOf(err) != errs.SCOPE_CLOSED || errs.ExitCode(err) != 2 || !strings.Contains(err.Error(), "closed by sponson-bot") {
		t.Fatalf("err %v", err)
	}
	if len(w.cloud.Calls()) != 0 || w.store.Calls(memstore.MethodWrite) != writes {
		t.Error("an apply of a closed scope touched something")
	}
	pres, err := w.eng.Plan(context.Background(), mustPlan(t, basicPlan), prCtx(12), Options{})
	if err != nil || !slices.ContainsFunc(pres.Warnings, func(x Warning) bool { return x.Code == errs.SCOPE_CLOSED }) {
		t.Errorf("plan: %v %s", err, dump(pres.Warnings))
	}
	res = w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{Reopen: true})
	st := w.stored(prCtx(12))
	if st.Closed != nil || res.Receipt.Status != receipt.StatusComplete {
		t.Fatalf("%s", dump(st))
	}
	if !slices.ContainsFunc(st.Warnings, func(x Warning) bool {
		return strings.Contains(x.Message, "closed by sponson-bot") && strings.Contains(x.Message, "reopened")
	}) {
		t.Errorf("the reopening is not recorded: %s", dump(st.Warnings))
	}
}

// A pull request that closed before anything was applied still gets its
// tombstone: nothing is rebuilt for it later (I12).
func TestCloseWithoutReceipt(t *testing.T) {
	w, _ := basic(t)
	if _, err := w.eng.Destroy(context.Background(), prCtx(40), Options{Close: &receipt.Tombstone{By: "bot", At: t0}}); err != nil {
		t.Fatal(err)
	}
	if st := w.stored(prCtx(40)); st == nil || st.Closed == nil || !st.Destroyed {
		t.Fatalf("%s", dump(st))
	}
	if _, err := w.apply(mustPlan(t, basicPlan), prCtx(40), Options{}); errs.CodeOf(err) != errs.SCOPE_CLOSED {
		t.Fatalf("err %v", err)
	}
}
