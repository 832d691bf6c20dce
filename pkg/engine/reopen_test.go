package engine

import (
	"context"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

// Reopen clears a closed scope's tombstone (the bot, when a pull request
// reopens) and nothing else; an apply then needs no --reopen. Reopening a
// scope that is not closed writes nothing and takes no lease.
func TestReopenClearsTheTombstoneOnly(t *testing.T) {
	w, apply := basic(t)
	apply()
	tomb := &receipt.Tombstone{By: "sponson-bot", At: t0, HeadSHA: "cccccccccccccccccccccccccccccccccccccccc"}
	if _, err := w.eng.Destroy(context.Background(), prCtx(12), Options{Close: tomb}); err != nil {
		t.Fatal(err)
	}
	before := w.stored(prCtx(12))
	ok, err := w.eng.Reopen(context.Background(), "preview", "pr-12", Options{})
	if err != nil || !ok {
		t.Fatalf("reopen: %v %v", ok, err)
	}
	after := w.stored(prCtx(12))
	if after.Closed != nil || after.Operation != receipt.OpReopen || len(after.Warnings) != 1 || after.Warnings[0].Code != errs.SCOPE_REOPENED {
		t.Fatalf("after reopen: closed %+v op %s warnings %+v", after.Closed, after.Operation, after.Warnings)
	}
	if len(after.History) != len(before.History) || after.HashKey != before.HashKey || after.Destroyed != before.Destroyed {
		t.Errorf("reopen changed more than the tombstone")
	}
	writes, acquires := w.store.Calls(memstore.MethodWrite), w.store.Calls(memstore.MethodAcquire)
	if ok, err := w.eng.Reopen(context.Background(), "preview", "pr-12", Options{}); err != nil || ok {
		t.Fatalf("second reopen: %v %v", ok, err)
	}
	if ok, err := w.eng.Reopen(context.Background(), "preview", "pr-99", Options{}); err != nil || ok {
		t.Fatalf("reopen of a scope without a receipt: %v %v", ok, err)
	}
	if w.store.Calls(memstore.MethodWrite) != writes || w.store.Calls(memstore.MethodAcquire) != acquires {
		t.Errorf("a reopen with nothing to do wrote or took a lease")
	}
	w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{})
}
