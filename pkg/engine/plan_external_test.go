package engine

import (
	"context"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/receipt"
)

// After a complete apply, plan shows the line using a deployment's URL
// as it is, not as pending on the deployment: plan asks the source line's
// op, read-only, for the external outputs Read does not return. Before the
// deployment, and when the source line changes (its write starts a new
// deployment), the line is pending.
func TestPlanResolvesFinishedExternalOutputs(t *testing.T) {
	w := newWorld(t)
	reg := w.cloud.Registry()
	reg.Register(externalOnlyByAwait{w.cloud.ObjectOp()})
	w.eng.Ops = reg
	p := mustPlan(t, deployPlan)
	statusOf := func(res *PlanResult, id string) PlanLine {
		for _, l := range res.Lines {
			if l.ID == id {
				return l
			}
		}
		t.Fatalf("no line %q in %s", id, dump(res))
		return PlanLine{}
	}

	w.mustApply(p, prCtx(3), Options{})
	res, err := w.eng.Plan(context.Background(), p, prCtx(3), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cb := statusOf(res, "cb"); cb.Status != PlanPending || len(cb.WaitingOn) != 1 || cb.WaitingOn[0] != "app.deploy_url" {
		t.Fatalf("before the deployment, cb: %s", dump(cb))
	}

	w.cloud.Deploy(optest.ObjectKey("default", "app-pr-3"), optest.DeployReady)
	if r := w.mustApply(p, prCtx(3), Options{}); r.Receipt.Status != receipt.StatusComplete {
		t.Fatalf("after the deployment: %s", dump(r.Receipt))
	}
	res, err = w.eng.Plan(context.Background(), p, prCtx(3), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Lines {
		if l.Status != PlanUnchanged || len(l.WaitingOn) != 0 {
			t.Errorf("after a complete apply, line %s: %s", l.ID, dump(l))
		}
		for _, in := range l.Inputs {
			if in.State == StatePending {
				t.Errorf("line %s: input %s is pending", l.ID, in.Path)
			}
		}
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %s", dump(res.Warnings))
	}
}
