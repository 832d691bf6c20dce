package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// onceObject is fake.object whose token is a once-only output, as a
// provider's password: the create answers it, reads never do.
type onceObject struct{ *optest.ObjectOp }

func (o onceObject) Spec() adapter.Spec {
	s := o.ObjectOp.Spec()
	s.Outputs = slices.Clone(s.Outputs)
	for i := range s.Outputs {
		if s.Outputs[i].Name == "token" {
			s.Outputs[i].Once = true
		}
	}
	return s
}

func (o onceObject) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	live, err := o.ObjectOp.Read(ctx, req)
	if live != nil {
		delete(live.Outputs, "token")
		for i := range live.Resources {
			delete(live.Resources[i].Outputs, "token")
		}
	}
	return live, err
}

const oncePlan = `
version: 1
providers:
  fake: { project: p1 }
changes:
  - id: pass
    adapter: fake
    op: object
    name: pass-${ctx.scope}
    fields: { size: 1 }
  - id: app
    adapter: fake
    op: object
    name: app-${ctx.scope}
    fields:
      password: { from: pass.token }
      scope: ${ctx.scope}
`

const (
	keyPass    = "object:p1:pass-pr-12"
	keyOnceApp = "object:p1:app-pr-12"
)

func onceWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	w.eng.Ops = adapter.NewRegistry(onceObject{w.cloud.ObjectOp()}, w.cloud.ItemOp())
	return w
}

// passFingerprint is the receipt's fingerprint of pass.token, checked to be
// the keyed hash of the value the app holds.
func (w *world) passFingerprint() string {
	w.t.Helper()
	st := w.stored(prCtx(12))
	for _, en := range st.Ledger {
		if en.Line == "pass" {
			app, _ := w.cloud.Object("p1", "app-pr-12")
			c, _ := adapter.Canonical(app.Fields["password"])
			if en.Fingerprints["token"] == "" || en.Fingerprints["token"] != receipt.HashValue(st.HashKey, c) {
				w.t.Fatalf("fingerprints %v, app holds %v", en.Fingerprints, app.Fields["password"])
			}
			return en.Fingerprints["token"]
		}
	}
	w.t.Fatal("no ledger entry of pass")
	return ""
}

// planLine plans src and returns line id, blocked or not.
func (w *world) planLine(src, id string) PlanLine {
	w.t.Helper()
	res, err := w.eng.Plan(context.Background(), mustPlan(w.t, src), prCtx(12), Options{})
	if res == nil {
		w.t.Fatalf("plan: %v", err)
	}
	for _, l := range res.Lines {
		if l.ID == id {
			return l
		}
	}
	w.t.Fatalf("no line %s in the plan", id)
	return PlanLine{}
}

// TestOnceOnlyRecreate: the receipt keeps a fingerprint of the once-only
// value, never the value; a second apply keeps what the first wrote;
// --recreate of the line using it is refused before anything is deleted,
// naming the producer; --recreate of the producer writes its users again
// with the new value in the same run.
func TestOnceOnlyRecreate(t *testing.T) {
	w := onceWorld(t)
	w.mustApply(mustPlan(t, oncePlan), prCtx(12), Options{})
	fp := w.passFingerprint()
	app1, _ := w.cloud.Object("p1", "app-pr-12")
	if strings.Contains(dump(w.stored(prCtx(12))), app1.Fields["password"].(string)) {
		t.Fatal("the once-only value is in the receipt")
	}

	res := w.mustApply(mustPlan(t, oncePlan), prCtx(12), Options{})
	if res.Receipt.Lines["app"].Status != LineUnchanged || w.passFingerprint() != fp {
		t.Fatalf("second apply: %s", dump(res.Receipt.Lines))
	}

	before := writes(w.cloud)
	_, err := w.apply(mustPlan(t, oncePlan), prCtx(12), Options{Recreate: []string{"app"}})
	if errs.CodeOf(err) != errs.OUTPUT_UNAVAILABLE || !strings.Contains(errs.Coded(err).Hint, "--recreate pass") {
		t.Fatalf("--recreate app: %v", err)
	}
	if writes(w.cloud) != before || !w.cloud.Exists(keyOnceApp) {
		t.Fatalf("the refused run wrote: %v", w.cloud.Writes())
	}

	res = w.mustApply(mustPlan(t, oncePlan), prCtx(12), Options{Recreate: []string{"pass"}})
	if res.Receipt.Lines["pass"].Status != LineCreated || res.Receipt.Lines["app"].Status != LineCreated {
		t.Fatalf("--recreate pass: %s", dump(res.Receipt.Lines))
	}
	app2, _ := w.cloud.Object("p1", "app-pr-12")
	if app2.Fields["password"] == app1.Fields["password"] || w.passFingerprint() == fp {
		t.Errorf("the app kept the old value: %v", app2.Fields)
	}
}

// TestOnceOnlyFingerprintCompared: a line whose copy of a once-only value
// was changed outside Sponson is blocked OUTPUT_UNAVAILABLE in plan and
// apply (even with --reconcile, which would write the changed value back),
// naming the producer to recreate; a line added later that needs the value
// is blocked the same way before it writes. --recreate of the producer
// mends both.
func TestOnceOnlyFingerprintCompared(t *testing.T) {
	w := onceWorld(t)
	w.mustApply(mustPlan(t, oncePlan), prCtx(12), Options{})
	if l := w.planLine(oncePlan, "app"); l.Status != PlanUnchanged {
		t.Fatalf("plan after apply: %s", dump(l))
	}

	if err := w.cloud.Edit(keyOnceApp, map[string]any{"password": "typed-by-hand", "scope": "pr-12"}); err != nil {
		t.Fatal(err)
	}
	l := w.planLine(oncePlan, "app")
	if l.Status != PlanBlocked || l.Error == nil || l.Error.Code != errs.OUTPUT_UNAVAILABLE || !strings.Contains(l.Error.Hint, "--recreate pass") {
		t.Fatalf("plan of the changed copy: %s", dump(l))
	}
	before := writes(w.cloud)
	res, err := w.apply(mustPlan(t, oncePlan), prCtx(12), Options{Reconcile: true})
	// A line blocked after the run started fails the run (RUN_FAILED); the
	// line's own code and hint stay in the chain.
	if err == nil || !strings.Contains(err.Error(), "OUTPUT_UNAVAILABLE") || !strings.Contains(errs.Coded(err).Hint, "--recreate pass") ||
		res.Receipt.Lines["app"].Status != LineBlocked {
		t.Fatalf("apply --reconcile of the changed copy: %v %s", err, dump(res.Receipt.Lines))
	}
	if app, _ := w.cloud.Object("p1", "app-pr-12"); writes(w.cloud) != before || app.Fields["password"] != "typed-by-hand" {
		t.Fatalf("the blocked line was written: %v", w.cloud.Writes())
	}

	added := oncePlan + `
  - id: worker
    adapter: fake
    op: object
    name: worker-${ctx.scope}
    fields:
      password: { from: pass.token }
`
	if l := w.planLine(added, "worker"); l.Status != PlanBlocked || l.Error == nil || l.Error.Code != errs.OUTPUT_UNAVAILABLE {
		t.Fatalf("plan of a new user of the value: %s", dump(l))
	}

	w.mustApply(mustPlan(t, added), prCtx(12), Options{Recreate: []string{"pass"}})
	app, _ := w.cloud.Object("p1", "app-pr-12")
	worker, _ := w.cloud.Object("p1", "worker-pr-12")
	if app.Fields["password"] == "typed-by-hand" || worker.Fields["password"] != app.Fields["password"] {
		t.Errorf("after --recreate pass: app %v, worker %v", app.Fields, worker.Fields)
	}
	w.passFingerprint()
	if l := w.planLine(added, "worker"); l.Status != PlanUnchanged {
		t.Errorf("plan after the mend: %s", dump(l))
	}
}

// TestOnceOnlyInputIsKeptNotPending: once the once-only value was written
// by an earlier run, a plan shows the line using it unchanged, its input
// kept (what that run wrote stays), not pending on an apply that will
// never answer it; before any run it is pending on the apply.
func TestOnceOnlyInputIsKeptNotPending(t *testing.T) {
	w := onceWorld(t)
	input := func(l PlanLine) Input {
		t.Helper()
		for _, in := range l.Inputs {
			if in.Path == "fields.password" {
				return in
			}
		}
		t.Fatalf("no input fields.password: %+v", l.Inputs)
		return Input{}
	}
	if in := input(w.planLine(oncePlan, "app")); in.State != StatePending || in.WaitingFor != "apply" {
		t.Errorf("before any run: %+v, want pending on apply", in)
	}
	w.mustApply(mustPlan(t, oncePlan), prCtx(12), Options{})
	l := w.planLine(oncePlan, "app")
	if in := input(l); in.State != StateKept || in.Ref != "pass.token" || in.Value != nil {
		t.Errorf("after the apply: %+v, want kept, from pass.token, no value", in)
	}
	if l.Status != PlanUnchanged || len(l.WaitingOn) != 0 {
		t.Errorf("after the apply the line is %s waiting on %v, want unchanged, waiting on nothing", l.Status, l.WaitingOn)
	}
}
