package engine

import (
	"context"
	"testing"

	"github.com/sponson/apply/internal/fakeop"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/receipt"
)

// externalOnlyByAwait is fake.object as a real provider behaves: Read does
// not report external outputs; only AwaitExternal finds them (Vercel's
// preview_url comes from its deployments, not from the env variables).
type externalOnlyByAwait struct{ *fakeop.ObjectOp }

func (o externalOnlyByAwait) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	live, err := o.ObjectOp.Read(ctx, req)
	if live != nil {
		delete(live.Outputs, "deploy_url")
		delete(live.Outputs, "deploy_id")
		for i := range live.Resources {
			delete(live.Resources[i].Outputs, "deploy_url")
			delete(live.Resources[i].Outputs, "deploy_id")
		}
	}
	return live, err
}

// The run after a partial one finishes the waiting line without --wait
// once the event has happened: it looks for the external output once.
func TestNextApplyFinishesWaitingLine(t *testing.T) {
	w := newWorld(t)
	reg := w.cloud.Registry()
	reg.Register(externalOnlyByAwait{w.cloud.ObjectOp()})
	w.eng.Ops = reg
	p := mustPlan(t, deployPlan)

	res := w.mustApply(p, prCtx(3), Options{})
	if res.Receipt.Status != receipt.StatusPartial || res.Receipt.Lines["cb"].Status != LineWaiting {
		t.Fatalf("first apply: %s", dump(res.Receipt))
	}
	res = w.mustApply(p, prCtx(3), Options{})
	if res.Receipt.Status != receipt.StatusPartial {
		t.Fatalf("nothing deployed yet, still partial: %s", dump(res.Receipt))
	}
	w.cloud.Deploy(fakeop.ObjectKey("default", "app-pr-3"), fakeop.DeployReady)
	res = w.mustApply(p, prCtx(3), Options{})
	if res.Receipt.Status != receipt.StatusComplete || res.Receipt.Lines["cb"].Status != LineCreated {
		t.Fatalf("after the deploy: %s", dump(res.Receipt))
	}
}

// A deployment that failed fails the waiting line without --wait too.
func TestNextApplySeesFailedDeploy(t *testing.T) {
	w := newWorld(t)
	reg := w.cloud.Registry()
	reg.Register(externalOnlyByAwait{w.cloud.ObjectOp()})
	w.eng.Ops = reg
	p := mustPlan(t, deployPlan)
	w.mustApply(p, prCtx(3), Options{})
	w.cloud.Deploy(fakeop.ObjectKey("default", "app-pr-3"), fakeop.DeployFailed)
	res, err := w.apply(p, prCtx(3), Options{})
	if err == nil || res.Receipt.Lines["cb"].ErrorCode != "EXTERNAL_FAILED" {
		t.Fatalf("err %v, cb %+v", err, res.Receipt.Lines["cb"])
	}
}
