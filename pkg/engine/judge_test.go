package engine

import (
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

func TestJudgementTable(t *testing.T) {
	ours := &receipt.LedgerEntry{Key: "k", ID: "id1", Hash: "h1", CreatedBy: receipt.CreatedBySponson}
	adopted := &receipt.LedgerEntry{Key: "k", ID: "id1", Hash: "h1", CreatedBy: receipt.CreatedByAdopted}
	intent := &receipt.LedgerEntry{Key: "k", CreatedBy: receipt.CreatedByIntent}
	live := &adapter.Resource{Key: "k", ID: "id1"}
	replaced := &adapter.Resource{Key: "k", ID: "id2"}
	cases := []struct {
		name string
		in   judgeIn
		want verdict
	}{
		{"new: create", judgeIn{Action: adapter.Create}, verdict{}},
		{"foreign, unchanged: rely on it", judgeIn{Foreign: "pr-2", Live: live, Action: adapter.Unchanged}, verdict{Foreign: true}},
		{"foreign, update: refused", judgeIn{Foreign: "pr-2", Live: live, Action: adapter.Update}, verdict{Block: errs.OWNED_BY_OTHER_SCOPE}},
		{"foreign intent, create: refused", judgeIn{Foreign: "pr-2", Action: adapter.Create}, verdict{Block: errs.OWNED_BY_OTHER_SCOPE}},
		{"unmanaged live equal to plan: adopt", judgeIn{Live: live, LiveHash: "h", Action: adapter.Unchanged}, verdict{Adopt: true}},
		{"unmanaged live, keep: adopt", judgeIn{Live: live, Action: adapter.Update, Keep: true}, verdict{Adopt: true}},
		{"unmanaged live, update: never touched", judgeIn{Live: live, Action: adapter.Update}, verdict{Block: errs.PROVIDER_CONFLICT}},
		{"intent, live: the create landed", judgeIn{Entry: intent, Live: live, LiveHash: "x", Action: adapter.Unchanged}, verdict{}},
		{"intent, not live: create", judgeIn{Entry: intent, Action: adapter.Create}, verdict{}},
		{"ours, gone: missing", judgeIn{Entry: ours, Action: adapter.Create}, verdict{Drift: DriftMissing}},
		{"adopted, gone: missing", judgeIn{Entry: adopted, Action: adapter.Create}, verdict{Drift: DriftMissing}},
		{"ours, same: nothing", judgeIn{Entry: ours, Live: live, LiveHash: "h1", Action: adapter.Unchanged}, verdict{}},
		{"ours, plan changed: update", judgeIn{Entry: ours, Live: live, LiveHash: "h1", Action: adapter.Update}, verdict{}},
		{"ours, edited to the plan: quiet", judgeIn{Entry: ours, Live: live, LiveHash: "h2", Action: adapter.Unchanged}, verdict{Quiet: true}},
		{"ours, edited: changed", judgeIn{Entry: ours, Live: live, LiveHash: "h2", Action: adapter.Update}, verdict{Block: errs.DRIFT_CHANGED, Drift: DriftChanged}},
		{"ours, edited, reconcile", judgeIn{Entry: ours, Live: live, LiveHash: "h2", Action: adapter.Update, Reconcile: true}, verdict{Drift: DriftChanged}},
		{"ours, replaced: changed", judgeIn{Entry: ours, Live: replaced, LiveHash: "h1", Action: adapter.Unchanged}, verdict{Block: errs.DRIFT_CHANGED, Drift: DriftChanged}},
		{"ours, replaced, reconcile: adopted", judgeIn{Entry: ours, Live: replaced, LiveHash: "h1", Action: adapter.Unchanged, Reconcile: true}, verdict{Drift: DriftChanged, Adopt: true}},
		{"ours and foreign: ours wins", judgeIn{Entry: ours, Foreign: "pr-2", Live: live, LiveHash: "h1", Action: adapter.Update}, verdict{}},
		{"unknown hash: no drift", judgeIn{Entry: ours, Live: live, Action: adapter.Update}, verdict{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(tc.in)
			got.Message = ""
			if got != tc.want {
				t.Errorf("judge = %+v, want %+v", got, tc.want)
			}
			if (got.Block != "" || got.Drift != "") && judge(tc.in).Message == "" {
				t.Error("a refusal or drift without a message")
			}
		})
	}
}
