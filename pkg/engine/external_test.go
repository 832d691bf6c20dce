package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

// externalOnlyByAwait is fake.object as a real provider behaves: Read does
// not report external outputs; only AwaitExternal finds them (Vercel's
// preview_url comes from its deployments, not from the env variables).
type externalOnlyByAwait struct{ *optest.ObjectOp }

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
	w.cloud.Deploy(optest.ObjectKey("default", "app-pr-3"), optest.DeployReady)
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
	w.cloud.Deploy(optest.ObjectKey("default", "app-pr-3"), optest.DeployFailed)
	res, err := w.apply(p, prCtx(3), Options{})
	if err == nil || res.Receipt.Lines["cb"].ErrorCode != "EXTERNAL_FAILED" {
		t.Fatalf("err %v, cb %+v", err, res.Receipt.Lines["cb"])
	}
}

// A create the provider refused (someone made the same name between the
// read and the create) is not this run's: rollback neither claims nor
// deletes what is there (I5), and the ledger does not record it.
func TestRefusedCreateIsNeverClaimed(t *testing.T) {
	w := newWorld(t)
	p := mustPlan(t, `
version: 1
changes:
  - { id: app, adapter: fake, op: object, name: "app-${ctx.scope}", fields: { a: 1 } }
  - { id: other, adapter: fake, op: object, name: "other-${ctx.scope}", depends_on: [app] }
`)
	key := optest.ObjectKey("default", "app-pr-3")
	w.cloud.OnCall(optest.Match{Op: optest.OpObject, Method: optest.MethodCreate, Key: key}, func() {
		w.cloud.SeedObject("default", "app-pr-3", map[string]any{"a": "console"}, nil)
	})
	res, err := w.apply(p, prCtx(3), Options{})
	if errs.CodeOf(err) != errs.PROVIDER_CONFLICT {
		t.Fatalf("err %v", err)
	}
	if !w.cloud.Exists(key) || !w.cloud.IsSeeded(key) {
		t.Fatal("the console's object was deleted")
	}
	for _, e := range res.Receipt.Ledger {
		if e.Key == key {
			t.Errorf("the ledger records the console's object: %+v", e)
		}
	}
	if got := w.stored(prCtx(3)); got != nil {
		for _, e := range got.Ledger {
			if e.Key == key {
				t.Errorf("the stored ledger records the console's object: %+v", e)
			}
		}
	}
}

// refStore is a memory store that also keeps unsaved receipts, as the git
// store does on side refs.
type refStore struct {
	*memstore.Store
	saved map[string]*receipt.Receipt
}

func (s *refStore) SaveUnsaved(ctx context.Context, r *receipt.Receipt) (string, error) {
	ref := "sponson-receipts/_unsaved/" + r.Env + "/" + r.Scope + "/" + r.RunID
	s.saved[ref] = r
	return ref, nil
}

func (s *refStore) LoadUnsaved(ctx context.Context, ref string) (*receipt.Receipt, error) {
	return s.saved[ref], nil
}

// A store that can keep unsaved receipts gets a copy too, and the run says
// where: a CI job that ends now loses nothing.
func TestUnsavedReceiptKeptInTheStore(t *testing.T) {
	w, _ := basic(t)
	st := &refStore{Store: w.store, saved: map[string]*receipt.Receipt{}}
	w.eng.Store = st
	w.store.Inject(memstore.Fault{Method: memstore.MethodWrite, Skip: 3, Err: errs.New(errs.STORE_UNAVAILABLE, "remote hung up")})
	res, err := w.apply(mustPlan(t, basicPlan), prCtx(12), Options{})
	if errs.CodeOf(err) != errs.STORE_UNAVAILABLE || res.Unsaved == nil {
		t.Fatalf("err %v unsaved %v", err, res)
	}
	kept := st.saved[res.Unsaved.Ref]
	if res.Unsaved.Ref == "" || kept == nil || len(kept.Ledger) == 0 {
		t.Fatalf("the store kept no copy: %s", dump(res.Unsaved))
	}
}

// A secret already written is unchanged in plan; a secret whose value
// changed is an update, shown by its state, never its value.
func TestPlanKnowsAWrittenSecret(t *testing.T) {
	w, apply := basic(t)
	apply()
	before := writes(w.cloud)
	p := mustPlan(t, basicPlan)
	res, err := w.eng.Plan(context.Background(), p, prCtx(12), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Lines {
		if l.Status != PlanUnchanged {
			t.Errorf("line %s is %s after apply", l.ID, l.Status)
		}
	}
	w.env["API_KEY"] = "sk-a-rotated-api-key-value-5678"
	res, err = w.eng.Plan(context.Background(), p, prCtx(12), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rotatedShown(res) {
		t.Errorf("a rotated secret is not an update shown by its state and reference:\n%s", dump(res))
	}
	if strings.Contains(dump(res), "rotated") {
		t.Error("the plan shows the secret's value")
	}
	if n := writes(w.cloud); n != before {
		t.Errorf("plan wrote %d times (I4)", n-before)
	}
}

// rotatedShown reports whether line app of res is an update whose api_key
// field is shown as the secret env://API_KEY, its value null.
func rotatedShown(res *PlanResult) bool {
	for _, l := range res.Lines {
		if l.ID != "app" || l.Status != PlanUpdate {
			continue
		}
		for _, d := range l.Diffs {
			for _, f := range d.Fields {
				if f.Path == "fields.api_key" && f.After == nil && f.AfterState == StateSecret && f.AfterRef == "env://API_KEY" {
					return true
				}
			}
		}
	}
	return false
}
