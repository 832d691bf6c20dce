package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/localstore"
)

// The engine against the file store: receipts round-trip through real
// files (I6), leases exclude, and a destroy leaves nothing (I8).
func TestLocalStoreLifecycle(t *testing.T) {
	w := newWorld(t)
	w.env["API_KEY"] = theSecret
	st := localstore.New(t.TempDir(), w.tm)
	w.eng = w.engine(st)
	p := mustPlan(t, basicPlan)
	res := w.mustApply(p, prCtx(12), Options{})
	got, _, err := st.Read(context.Background(), "preview", "pr-12")
	if err != nil || got.RunID != res.Receipt.RunID || !slices.Equal(ledgerKeys(got), []string{keyDB, keyApp, keyCB}) {
		t.Fatalf("read back: %v %s", err, dump(got))
	}
	w.cloud.ResetWrites()
	w.mustApply(p, prCtx(12), Options{})
	if len(w.cloud.Writes()) != 0 {
		t.Errorf("steady state wrote %v", w.cloud.Writes())
	}
	if _, _, err := st.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-12"), own("x"), testTTL); err != nil {
		t.Fatal(err)
	}
	if _, err := w.apply(p, prCtx(12), Options{}); errs.CodeOf(err) != errs.LOCK_HELD {
		t.Fatalf("err %v", err)
	}
	w.tm.Advance(testTTL)
	res, err = w.eng.Destroy(context.Background(), prCtx(12), Options{})
	if err != nil || !res.Receipt.Destroyed || res.Receipt.LockPreempted == nil {
		t.Fatalf("destroy: %v %s", err, dump(res))
	}
	if len(w.cloud.Keys()) != 0 {
		t.Errorf("left %v", w.cloud.Keys())
	}
	hist, _ := st.History(context.Background(), receipt.ScopeTarget("preview", "pr-12"))
	if len(hist) < 3 {
		t.Errorf("history %d events", len(hist))
	}
}
