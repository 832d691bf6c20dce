package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
)

// The agent's branch and its pull request: same head branch.
func branchCtx() scope.Ctx {
	c := prCtx(12)
	c.Scope, c.PR = "branch-feat-x", scope.PR{}
	return c
}

// succPlan names its resources without ${ctx.scope}: the pull request
// declares exactly what the branch created.
const succPlan = `
version: 1
providers:
  fake: { project: p1 }
changes:
  - { id: db, adapter: fake, op: object, name: feat-x-db, fields: { size: 1 } }
  - { id: cb, adapter: fake, op: item, list: callbacks, item: { from: db.url } }
`

var succKeys = []string{"object:p1:feat-x-db", "item:p1:callbacks:https://feat-x-db.fake.test"}

// ownersChecker asserts the succession rule after every receipt write: each
// watched resource has exactly one owner at every observable moment (none
// only once it is gone at the provider: destroyed).
type ownersChecker struct {
	receipt.Store
	t      *testing.T
	watch  map[string]string // identity → key
	exists func(key string) bool
	seen   int // writes observed
}

func (o *ownersChecker) after(ctx context.Context) {
	o.seen++
	stored, err := o.Store.List(ctx, "preview")
	if err != nil {
		o.t.Errorf("list: %v", err)
		return
	}
	owners := Owners(stored)
	for id, key := range o.watch {
		if n := len(owners[id]); n > 1 || n == 0 && o.exists(key) {
			o.t.Errorf("after write %d: %s has %d owners %v", o.seen, id, n, owners[id])
		}
	}
}

func (o *ownersChecker) Write(ctx context.Context, r *receipt.Receipt, l receipt.Lease) error {
	err := o.Store.Write(ctx, r, l)
	o.after(ctx)
	return err
}

func (o *ownersChecker) WriteMany(ctx context.Context, ws []receipt.Write) error {
	err := o.Store.WriteMany(ctx, ws)
	o.after(ctx)
	return err
}

func (w *world) checkOwners(t *testing.T, st receipt.Store, r *receipt.Receipt) *ownersChecker {
	c := &ownersChecker{Store: st, t: t, watch: map[string]string{}, exists: w.cloud.Exists}
	for _, en := range r.Ledger {
		c.watch[en.Ref().Identity()] = en.Key
	}
	return c
}

func TestSucceedMovesTheLedger(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
			w := newWorld(t)
			if !atomic {
				w.store = memstore.New(w.tm, memstore.NonAtomicMulti())
				w.eng.Store = w.store
			}
			w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
			pred := w.stored(branchCtx())
			chk := w.checkOwners(t, w.store, pred)
			w.eng.Store = chk
			res, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-12", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Moved) != 2 || res.Repaired || res.Successor == nil || res.Predecessor.SupersededBy != "pr-12" {
				t.Fatalf("%s", dump(res))
			}
			if atomic && (w.store.Calls(memstore.MethodWriteMany) != 1 || chk.seen != 1) {
				t.Errorf("an atomic store got %d WriteMany, %d writes in all", w.store.Calls(memstore.MethodWriteMany), chk.seen)
			}
			if !atomic && chk.seen != 3 {
				t.Errorf("%d writes, want 3 (mark, successor, predecessor)", chk.seen)
			}
			succ, pre := w.stored(prCtx(12)), w.stored(branchCtx())
			if !slices.Equal(ledgerKeys(succ), succKeys) || len(pre.Ledger) != 0 || pre.SupersededBy != "pr-12" {
				t.Fatalf("successor %v, predecessor %s", ledgerKeys(succ), dump(pre))
			}
			if succ.HashKey != pred.HashKey || succ.Branch != "feat/x" || succ.Operation != receipt.OpSuccession {
				t.Errorf("successor %s", dump(succ))
			}
			// Idempotent: nothing left to move, nothing written.
			before := chk.seen
			again, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-12", Options{})
			if err != nil || len(again.Moved) != 0 || chk.seen != before {
				t.Fatalf("again: %v %s (%d writes)", err, dump(again), chk.seen-before)
			}
			// The pull request's apply finds everything unchanged.
			w.cloud.ResetWrites()
			ares := w.mustApply(mustPlan(t, succPlan), prCtx(12), Options{})
			if len(w.cloud.Writes()) != 0 || ares.Receipt.Lines["db"].Status != LineUnchanged {
				t.Fatalf("apply after succession wrote %v: %s", w.cloud.Writes(), dump(ares.Receipt.Lines))
			}
			// Destroying the predecessor cannot delete what the successor owns.
			if _, err := w.eng.Destroy(context.Background(), branchCtx(), Options{}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(w.cloud.Keys(), []string{succKeys[1], succKeys[0]}) {
				t.Fatalf("the predecessor's destroy removed the successor's resources: %v", w.cloud.Keys())
			}
			if _, err := w.eng.Destroy(context.Background(), prCtx(12), Options{}); err != nil {
				t.Fatal(err)
			}
			if len(w.cloud.Keys()) != 0 {
				t.Errorf("left %v", w.cloud.Keys())
			}
		})
	}
}

func TestSucceedRefusals(t *testing.T) {
	w := newWorld(t)
	w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
	if _, err := w.eng.Succeed(context.Background(), "preview", "pr-3", "pr-12", Options{}); errs.CodeOf(err) != errs.USAGE {
		t.Errorf("from a PR scope: %v", err)
	}
	if _, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "main", Options{}); errs.CodeOf(err) != errs.USAGE {
		t.Errorf("into main: %v", err)
	}
	// The successor records another head branch.
	other := prCtx(13)
	other.Git.Branch = "feat/y"
	w.mustApply(mustPlan(t, "version: 1\nchanges:\n  - { id: o, adapter: fake, op: object, name: y }\n"), other, Options{})
	if _, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-13", Options{}); errs.CodeOf(err) != errs.SCOPE_COLLISION {
		t.Errorf("collision: %v", err)
	}
	// A closed successor: SCOPE_CLOSED unless reopened.
	if _, err := w.eng.Destroy(context.Background(), prCtx(12), Options{Close: &receipt.Tombstone{By: "bot", At: t0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-12", Options{}); errs.CodeOf(err) != errs.SCOPE_CLOSED {
		t.Errorf("closed: %v", err)
	}
	if len(w.stored(branchCtx()).Ledger) != 2 {
		t.Fatal("a refused succession moved something")
	}
	res, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-12", Options{Reopen: true})
	if err != nil || len(res.Moved) != 2 || res.Successor.Closed != nil {
		t.Fatalf("reopen: %v %s", err, dump(res))
	}
	// A branch being handed to pr-12 cannot go to pr-14 meanwhile.
	w.mustApply(mustPlan(t, strings.ReplaceAll(succPlan, "feat-x-db", "feat-x-db2")), branchCtx(), Options{})
	st := w.stored(branchCtx())
	st.SupersededBy = "pr-12"
	l, _, _ := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "branch-feat-x"), own("fix"), testTTL)
	w.store.Write(context.Background(), st, l)
	w.store.Release(context.Background(), l)
	if _, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-14", Options{}); errs.CodeOf(err) != errs.OWNED_BY_OTHER_SCOPE {
		t.Errorf("in transit elsewhere: %v", err)
	}
}

// A crash between two writes of a non-atomic hand-over: at every moment
// each resource has one owner, and what runs next repairs it.
func TestSuccessionCrashRepaired(t *testing.T) {
	for _, crashAfter := range []int{1, 2} {
		for _, next := range []string{"succeed", "apply PR", "destroy PR", "destroy branch", "apply branch"} {
			t.Run(fmt.Sprintf("after write %d then %s", crashAfter, next), func(t *testing.T) {
				w := newWorld(t)
				w.store = memstore.New(w.tm, memstore.NonAtomicMulti())
				w.eng.Store = w.store
				w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
				chk := w.checkOwners(t, w.store, w.stored(branchCtx()))
				w.eng.Store = chk
				w.store.Inject(memstore.Fault{Method: memstore.MethodWrite, Skip: crashAfter, Err: errs.New(errs.STORE_UNAVAILABLE, "the process died")})
				if _, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-12", Options{}); errs.CodeOf(err) != errs.STORE_UNAVAILABLE {
					t.Fatalf("crash: %v", err)
				}
				w.store.ClearFaults()
				if pre := w.stored(branchCtx()); pre.SupersededBy != "pr-12" || len(pre.Ledger) != 2 {
					t.Fatalf("after the crash: %s", dump(pre))
				}
				keys := w.cloud.Keys()
				switch next {
				case "succeed":
					res, err := w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-12", Options{})
					if err != nil || !res.Repaired || len(res.Moved) != 2 {
						t.Fatalf("retry: %v %s", err, dump(res))
					}
				case "apply PR":
					res := w.mustApply(mustPlan(t, succPlan), prCtx(12), Options{})
					if len(res.Receipt.Ledger) != 2 || res.Receipt.Lines["db"].Status != LineUnchanged {
						t.Fatalf("%s", dump(res.Receipt))
					}
				case "destroy PR":
					if _, err := w.eng.Destroy(context.Background(), prCtx(12), Options{}); err != nil {
						t.Fatal(err)
					}
					if len(w.cloud.Keys()) != 0 {
						t.Fatalf("the PR's destroy left what was in transit to it: %v", w.cloud.Keys())
					}
				case "destroy branch":
					res, err := w.eng.Destroy(context.Background(), branchCtx(), Options{})
					if err != nil || !res.Receipt.Destroyed {
						t.Fatal(err)
					}
					if !slices.Equal(w.cloud.Keys(), keys) {
						t.Fatalf("the branch's destroy deleted what it had handed over: %v", w.cloud.Keys())
					}
				case "apply branch":
					res := w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
					if len(res.Receipt.Ledger) != 0 || res.Receipt.SupersededBy != "" {
						t.Fatalf("%s", dump(res.Receipt))
					}
				}
				if pre := w.stored(branchCtx()); len(pre.Ledger) != 0 {
					t.Fatalf("the predecessor still holds %v", ledgerKeys(pre))
				}
				if next != "destroy PR" {
					if got := ledgerKeys(w.stored(prCtx(12))); !slices.Equal(got, succKeys) {
						t.Fatalf("the successor holds %v", got)
					}
				}
			})
		}
	}
}

// A run of the branch scope finds its ledger in transit and the successor's
// lease held: it never waits for it (fixed order: successor first) and
// touches nothing.
func TestBranchRunWithHandOverInTransitAndSuccessorBusy(t *testing.T) {
	w := newWorld(t)
	w.store = memstore.New(w.tm, memstore.NonAtomicMulti())
	w.eng.Store = w.store
	w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
	w.store.Inject(memstore.Fault{Method: memstore.MethodWrite, Skip: 1, Err: errs.New(errs.STORE_UNAVAILABLE, "the process died")})
	w.eng.Succeed(context.Background(), "preview", "branch-feat-x", "pr-12", Options{})
	w.store.ClearFaults()
	if _, _, err := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-12"), own("pr-run"), testTTL); err != nil {
		t.Fatal(err)
	}
	before := string(w.store.Raw("preview", "branch-feat-x"))
	_, err := w.apply(mustPlan(t, succPlan), branchCtx(), Options{Wait: true})
	if errs.CodeOf(err) != errs.LOCK_HELD || !strings.Contains(err.Error(), "handed over to pr-12") {
		t.Fatalf("err %v", err)
	}
	if _, err := w.eng.Destroy(context.Background(), branchCtx(), Options{}); errs.CodeOf(err) != errs.LOCK_HELD {
		t.Fatalf("destroy: %v", err)
	}
	if string(w.store.Raw("preview", "branch-feat-x")) != before || len(w.cloud.Writes()) != 2 {
		t.Error("a refused run changed something")
	}
}

// Apply of a PR scope inherits its head branch's ledger with a warning;
// then the branch applied again starts anew and finds the resources
// foreign.
func TestApplyOfPRInheritsFromItsBranch(t *testing.T) {
	w := newWorld(t)
	w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
	w.cloud.ResetWrites()
	res := w.mustApply(mustPlan(t, succPlan), prCtx(12), Options{})
	if len(w.cloud.Writes()) != 0 {
		t.Fatalf("the PR's first apply wrote %v", w.cloud.Writes())
	}
	if !slices.ContainsFunc(res.Warnings, func(x Warning) bool {
		return strings.Contains(x.Message, "inherited 2 resource(s) from scope branch-feat-x")
	}) {
		t.Errorf("warnings %s", dump(res.Warnings))
	}
	if got := ledgerKeys(res.Receipt); !slices.Equal(got, succKeys) {
		t.Fatalf("ledger %v", got)
	}
	if pre := w.stored(branchCtx()); pre.SupersededBy != "pr-12" || len(pre.Ledger) != 0 {
		t.Fatalf("predecessor %s", dump(pre))
	}
	res = w.mustApply(mustPlan(t, succPlan), prCtx(12), Options{})
	if len(res.Warnings) != 0 {
		t.Errorf("a second apply warned: %s", dump(res.Warnings))
	}
	// The agent applies the branch again, outside the pull request.
	bres := w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
	if bres.Receipt.SupersededBy != "" || len(bres.Receipt.Ledger) != 0 || len(w.cloud.Writes()) != 0 {
		t.Fatalf("branch again: %s", dump(bres.Receipt))
	}
}

func TestApplyOfPRSkipsSuccessionWhenTheBranchIsBusy(t *testing.T) {
	w := newWorld(t)
	w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
	bl, _, _ := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "branch-feat-x"), own("agent"), testTTL)
	// Without --wait: not inherited this time; the resources are foreign,
	// relied on unchanged.
	res := w.mustApply(mustPlan(t, succPlan), prCtx(12), Options{})
	if len(res.Receipt.Ledger) != 0 || !slices.ContainsFunc(res.Warnings, func(x Warning) bool { return x.Code == errs.LOCK_HELD }) {
		t.Fatalf("%s", dump(res))
	}
	// With --wait it waits for the branch's run, then inherits.
	n := 0
	w.eng.Clock = onSleep(w.tm, func(ctx context.Context, d time.Duration) error {
		if n++; n == 2 {
			w.store.Release(ctx, bl)
		}
		return w.tm.Sleep(ctx, d)
	})
	res = w.mustApply(mustPlan(t, succPlan), prCtx(12), Options{Wait: true})
	if got := ledgerKeys(res.Receipt); !slices.Equal(got, succKeys) {
		t.Fatalf("ledger %v", got)
	}
}

// Succeed, the PR's apply and the branch's apply running at once in every
// order never deadlock, and never leave a resource with two owners.
func TestSuccessionConcurrentRunsDoNotDeadlock(t *testing.T) {
	for i := range 10 {
		cloud := optest.New()
		st := memstore.New(nil, memstore.NonAtomicMulti())
		eng := func() *Engine {
			return &Engine{Store: st, Ops: cloud.Registry(), Redactor: redact.New(), Clock: fastClock{}, UnsavedDir: t.TempDir()}
		}
		if _, err := eng().Apply(context.Background(), mustPlan(t, succPlan), branchCtx(), Options{}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errsOf := make([]error, 3)
		o := Options{Wait: true, WaitTimeout: 30 * time.Second}
		runs := []func() error{
			func() error {
				_, err := eng().Succeed(context.Background(), "preview", "branch-feat-x", "pr-12", o)
				return err
			},
			func() error {
				_, err := eng().Apply(context.Background(), mustPlan(t, succPlan), prCtx(12), o)
				return err
			},
			func() error {
				_, err := eng().Apply(context.Background(), mustPlan(t, succPlan), branchCtx(), o)
				return err
			},
		}
		for j := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errsOf[j] = runs[(i+j)%3]()
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("deadlock")
		}
		for _, err := range errsOf {
			if err != nil && errs.CodeOf(err) != errs.LOCK_HELD {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		stored, _ := st.List(context.Background(), "preview")
		for id, owners := range Owners(stored) {
			if len(owners) != 1 {
				t.Fatalf("round %d: %s owned by %v", i, id, owners)
			}
		}
		if locks, _ := st.Locks(context.Background()); len(locks) != 0 {
			t.Fatalf("leases left: %v", locks)
		}
	}
}

// Plan of the pull request says what its apply will do: the branch's
// resources judged as inherited (unchanged here), with a warning, and
// nothing written.
func TestPlanPreviewsSuccession(t *testing.T) {
	w := newWorld(t)
	w.mustApply(mustPlan(t, succPlan), branchCtx(), Options{})
	raw := string(w.store.Raw("preview", "branch-feat-x"))
	pres, err := w.eng.Plan(context.Background(), mustPlan(t, strings.Replace(succPlan, "size: 1", "size: 2", 1)), prCtx(12), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if pres.Lines[0].Status != PlanUpdate || pres.Lines[1].Status != PlanUnchanged {
		t.Fatalf("lines %s", dump(pres.Lines))
	}
	if !slices.ContainsFunc(pres.Warnings, func(x Warning) bool {
		return strings.Contains(x.Message, "inherit 2 resource(s) from scope branch-feat-x")
	}) {
		t.Errorf("warnings %s", dump(pres.Warnings))
	}
	if string(w.store.Raw("preview", "branch-feat-x")) != raw || w.stored(prCtx(12)) != nil {
		t.Error("plan wrote")
	}
}
