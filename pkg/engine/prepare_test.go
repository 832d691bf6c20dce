package engine

import (
	"context"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/scope"
)

// Every refusal of prepare exits 2 before anything is read: no store call,
// no provider call (plan and apply alike).
func TestPrepareRefusals(t *testing.T) {
	cases := []struct {
		name string
		plan string
		ctx  func() scope.Ctx
		o    Options
		code errs.Code
	}{
		{"unknown env", `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: x }
`, nil, Options{Env: "staging"}, errs.ENV_UNKNOWN},
		{"unknown adapter", `
version: 1
changes:
  - { id: a, adapter: nope, op: object, name: x }
`, nil, Options{}, errs.ADAPTER_UNKNOWN},
		{"unknown op", `
version: 1
changes:
  - { id: a, adapter: fake, op: thing, name: x }
`, nil, Options{}, errs.OP_UNKNOWN},
		{"unknown output", `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: x }
  - { id: b, adapter: fake, op: item, list: l, item: { from: a.nope } }
`, nil, Options{}, errs.REF_OUTPUT_UNKNOWN},
		{"ctx null", `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: "x-${ctx.pr.number}" }
`, func() scope.Ctx { c := prCtx(1); c.PR.Number = nil; c.Scope = "branch-x"; return c }, Options{}, errs.CTX_NULL},
		{"param invalid", `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: 5 }
`, nil, Options{}, errs.PARAM_INVALID},
		{"unknown param", `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: x, colour: red }
`, nil, Options{}, errs.PARAM_INVALID},
		{"an op the registry lacks", `
version: 1
changes:
  - { id: a, adapter: neon, op: branch }
`, nil, Options{}, errs.ADAPTER_UNKNOWN},
		{"production env without approver (I7)", `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: x }
`, nil, Options{Env: "production"}, errs.ENV_NOT_APPROVED},
		{"an environment named like production without approver (I7)", `
version: 1
environments: [preview, prod-eu]
changes:
  - { id: a, adapter: fake, op: object, name: x }
`, nil, Options{Env: "prod-eu"}, errs.ENV_NOT_APPROVED},
		{"line writes production without approver (I7)", `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: x, production: true }
`, nil, Options{}, errs.ENV_NOT_APPROVED},
		{"no scope", `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: x }
`, func() scope.Ctx { return scope.Ctx{} }, Options{}, errs.USAGE},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := mustPlan(t, tc.plan)
			c := prCtx(1)
			if tc.ctx != nil {
				c = tc.ctx()
			}
			res, err := w.eng.Apply(context.Background(), p, c, tc.o)
			if errs.CodeOf(err) != tc.code || errs.ExitCode(err) != errs.ExitRefused || res != nil {
				t.Fatalf("apply: %v (exit %d, result %v), want %s exit 2", err, errs.ExitCode(err), res != nil, tc.code)
			}
			if tc.code != errs.ENV_NOT_APPROVED {
				pres, err := w.eng.Plan(context.Background(), p, c, tc.o)
				if errs.CodeOf(err) != tc.code || pres != nil {
					t.Fatalf("plan: %v, want %s", err, tc.code)
				}
			}
			for _, m := range []memstore.Method{memstore.MethodRead, memstore.MethodList, memstore.MethodAcquire, memstore.MethodLease} {
				if n := w.store.Calls(m); n != 0 {
					t.Errorf("store %s called %d times before the refusal", m, n)
				}
			}
			if calls := w.cloud.Calls(); len(calls) != 0 {
				t.Errorf("provider called before the refusal: %v", calls)
			}
		})
	}
}

func TestProductionWithApproverRuns(t *testing.T) {
	w := newWorld(t)
	p := mustPlan(t, `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: x, production: true }
`)
	res := w.mustApply(p, prCtx(1), Options{ApprovedBy: "alice"})
	if res.Receipt.Lines["a"].Status != LineCreated {
		t.Fatalf("%s", dump(res))
	}
	pres, err := w.eng.Plan(context.Background(), p, prCtx(1), Options{})
	if err != nil || !pres.ApprovalRequired {
		t.Fatalf("plan: %v, approval_required %v", err, pres != nil && pres.ApprovalRequired)
	}
}

// outputsOp is fake.object whose outputs also come from its parameters.
type outputsOp struct{ *optest.ObjectOp }

func (outputsOp) LineOutputs(params map[string]any) []string { return []string{"id", "url", "custom"} }

func TestLineOutputsFromParameters(t *testing.T) {
	w := newWorld(t)
	w.eng.Ops.Register(outputsOp{w.cloud.ObjectOp()})
	p := mustPlan(t, `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: x }
  - { id: b, adapter: fake, op: item, list: l, item: { from: a.custom } }
`)
	if _, err := w.eng.prepare(p, prCtx(1), Options{}); err != nil {
		t.Fatalf("an output the op derives from its parameters was refused: %v", err)
	}
	w.eng.Ops.Register(w.cloud.ObjectOp())
	if _, err := w.eng.prepare(p, prCtx(1), Options{}); errs.CodeOf(err) != errs.REF_OUTPUT_UNKNOWN {
		t.Fatalf("err %v", err)
	}
}
