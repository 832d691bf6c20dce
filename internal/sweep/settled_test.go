package sweep

import (
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/manual"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/receipt"
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
