package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/scope"
)

var cbParent = receipt.ParentTarget(optest.ListLock("p1", "callbacks"))

// leakyItem is fake.item whose LockOn puts a secret into the identity (an
// adapter bug the engine must catch: identities go to receipts and
// messages).
type leakyItem struct {
	*optest.ItemOp
	secret func() string
}

func (l leakyItem) LockOn(params map[string]any, provider adapter.Provider) string {
	return "fake:client:" + l.secret()
}

func TestParentIdentityWithASecretIsRefused(t *testing.T) {
	w, _ := basic(t)
	w.eng.Ops = adapter.NewRegistry(w.cloud.ObjectOp(), leakyItem{ItemOp: w.cloud.ItemOp(), secret: func() string { return w.env["API_KEY"] }})
	p := mustPlan(t, basicPlan)
	pres, err := w.eng.Plan(context.Background(), p, prCtx(12), Options{})
	if errs.CodeOf(err) != errs.INTERNAL || pres.Lines[2].Error == nil || pres.Lines[2].Error.Code != errs.INTERNAL {
		t.Fatalf("plan: %v %s", err, dump(pres))
	}
	// Apply's preflight tells the identity from the line's literal
	// parameters and refuses the run before any lease, read or write.
	res, err := w.apply(p, prCtx(12), Options{})
	if errs.CodeOf(err) != errs.SECRET_IN_STRUCTURE || errs.ExitCode(err) != errs.ExitRefused || !strings.Contains(err.Error(), "parent object") {
		t.Fatalf("err %v", err)
	}
	if n := writes(w.cloud); n != 0 {
		t.Errorf("%d provider writes", n)
	}
	if n := w.cloud.Calls()["fake.item.create"]; n != 0 {
		t.Errorf("the item was written (%d creates)", n)
	}
	if locks, _ := w.store.Locks(context.Background()); len(locks) != 0 {
		t.Errorf("a lease was taken on the identity: %v", locks)
	}
	for _, s := range []string{dump(res), err.Error(), w.progress.String(), string(w.store.Raw("preview", "pr-12"))} {
		if strings.Contains(s, theSecret) {
			t.Fatal("I1: the secret leaked")
		}
	}
}

// LockOn is pure: called with the resolved params and the provider block,
// it makes no provider call.
func TestLockOnIsPure(t *testing.T) {
	c := optest.New()
	before := c.Calls()
	id := c.ItemOp().LockOn(map[string]any{"list": "callbacks", "item": "x"}, adapter.Provider{"project": "p1"})
	if id != optest.ListLock("p1", "callbacks") || len(c.Calls()) != len(before) {
		t.Fatalf("LockOn = %q, calls %v", id, c.Calls())
	}
}

// acquireHook calls fn (once per Acquire, before it) with the target.
type acquireHook struct {
	receipt.Store
	mu sync.Mutex
	fn func(receipt.Target)
}

func (h *acquireHook) Acquire(ctx context.Context, t receipt.Target, o receipt.Owner, ttl time.Duration) (receipt.Lease, *receipt.Lease, error) {
	h.mu.Lock()
	fn := h.fn
	h.mu.Unlock()
	if fn != nil {
		fn(t)
	}
	return h.Store.Acquire(ctx, t, o, ttl)
}

// onFirstParent runs fn when the first parent lease is asked for.
func (h *acquireHook) onFirstParent(fn func()) {
	var once sync.Once
	h.fn = func(t receipt.Target) {
		if t.IsParent() {
			once.Do(fn)
		}
	}
}

// The read made before the lock may be stale: under the lease the line is
// inspected again, and written from that fresh state.
func TestParentLineInspectedAgainUnderTheLease(t *testing.T) {
	w, _ := basic(t)
	hs := &acquireHook{Store: w.store}
	w.eng.Store = hs
	// Between the first read and the lease someone adds the very item.
	hs.onFirstParent(func() { w.cloud.AddItem("p1", "callbacks", "https://app-pr-12.fake.test") })
	res := w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{})
	if n := w.cloud.Calls()["fake.item.create"]; n != 0 {
		t.Fatalf("wrote from the stale read: %d creates", n)
	}
	if l := res.Receipt.Lines["cb"]; l.Status != LineUnchanged {
		t.Errorf("cb %+v", l)
	}
	st := w.stored(prCtx(12))
	i := st.Ledger.Index(receipt.ResourceRef{Adapter: "fake", Op: "item", Provider: map[string]any{"project": "p1"}, Key: keyCB})
	if i < 0 || st.Ledger[i].CreatedBy != receipt.CreatedByAdopted || st.Ledger[i].Parent != cbParent.Identity {
		t.Fatalf("ledger %s", dump(st.Ledger))
	}
}

// With Wait, a held parent lease is waited for (bounded), with progress.
func TestParentLockWait(t *testing.T) {
	t.Run("released in time", func(t *testing.T) {
		w, _ := basic(t)
		other, _, err := w.store.Acquire(context.Background(), cbParent, own("pr-99-run"), testTTL)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		w.eng.Clock = onSleep(w.tm, func(ctx context.Context, d time.Duration) error {
			if n++; n == 3 {
				w.store.Release(ctx, other)
			}
			return w.tm.Sleep(ctx, d)
		})
		res := w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{Wait: true})
		if res.Receipt.Lines["cb"].Status != LineCreated || !w.cloud.Exists(keyCB) {
			t.Fatalf("%s", dump(res.Receipt.Lines))
		}
		if !strings.Contains(w.progress.String(), "waiting for lock on parent fake:p1:list:callbacks held by run pr-99-run") {
			t.Errorf("progress %q", w.progress.String())
		}
	})
	t.Run("timeout fails the line and the run rolls back", func(t *testing.T) {
		w, _ := basic(t)
		if _, _, err := w.store.Acquire(context.Background(), cbParent, own("pr-99-run"), testTTL); err != nil {
			t.Fatal(err)
		}
		res, err := w.apply(mustPlan(t, basicPlan), prCtx(12), Options{Wait: true, WaitTimeout: 2 * time.Minute})
		if errs.CodeOf(err) != errs.WAIT_TIMEOUT || errs.ExitCode(err) != 1 {
			t.Fatalf("err %v", err)
		}
		if l := res.Receipt.Lines["cb"]; l.Status != LineFailed || l.ErrorCode != errs.WAIT_TIMEOUT {
			t.Errorf("cb %+v", l)
		}
		if len(w.cloud.Keys()) != 0 {
			t.Errorf("not rolled back: %v", w.cloud.Keys())
		}
		if _, slept := w.tm.Sleeps(); slept > 2*time.Minute+time.Second {
			t.Errorf("waited %s, more than the timeout", slept)
		}
	})
}

// Losing the parent lease fails the line (LOCK_LOST with a parent detail),
// not the run: the run fails (RUN_FAILED, exit 1, not 3), rolls back, and
// its receipt is still its own.
func TestParentLeaseLostFailsTheLineNotTheRun(t *testing.T) {
	for _, when := range []string{"before the write", "during the write"} {
		t.Run(when, func(t *testing.T) {
			w, _ := basic(t)
			hs := &acquireHook{Store: w.store}
			w.eng.Store = hs
			lose := func(advance time.Duration, err error) {
				w.store.Inject(memstore.Fault{Method: memstore.MethodRenew, Target: &cbParent, Err: err, Times: -1})
				w.tm.Advance(advance)
			}
			if when == "before the write" {
				// The read under the lease stalls past the holder's deadline
				// while renewals fail: the create must not be sent.
				hs.onFirstParent(func() {
					w.cloud.OnCall(optest.Match{Key: keyCB, Method: optest.MethodRead}, func() {
						lose(13*time.Minute, errs.New(errs.STORE_UNAVAILABLE, "partition"))
					})
				})
			} else {
				// The lease is taken over while the item is being written.
				w.cloud.OnCall(optest.Match{Key: keyCB, Method: optest.MethodCreate}, func() {
					lose(8*time.Minute, errs.New(errs.LOCK_LOST, "taken over"))
				})
			}
			res, err := w.apply(mustPlan(t, basicPlan), prCtx(12), Options{})
			if errs.CodeOf(err) != errs.RUN_FAILED || !errors.Is(err, errs.LOCK_LOST) || errs.ExitCode(err) != 1 {
				t.Fatalf("err %v (exit %d)", err, errs.ExitCode(err))
			}
			l := res.Receipt.Lines["cb"]
			if l.Status != LineFailed || l.ErrorCode != errs.LOCK_LOST || !strings.Contains(l.Error, "parent object") {
				t.Fatalf("cb %+v", l)
			}
			if got := w.stored(prCtx(12)); got.RunID != res.Receipt.RunID {
				t.Error("the run's receipt was not written: the scope lease was treated as lost")
			}
			if len(w.cloud.Keys()) != 0 {
				t.Errorf("not rolled back: %v", w.cloud.Keys())
			}
			if when == "before the write" && w.cloud.Calls()["fake.item.create"] != 0 {
				t.Error("the create was sent after the parent lease was lost")
			}
			w.store.ClearFaults()
			if locks, _ := w.store.Locks(context.Background()); len(locks) != 0 {
				t.Errorf("leases left: %v", locks)
			}
		})
	}
}

// Rollback and destroy lock the object named in the LEDGER, so an entry
// whose line is gone from the plan is still removed under the lock.
func TestDestroyLocksTheParentFromTheLedger(t *testing.T) {
	w, apply := basic(t)
	apply()
	short := mustPlan(t, strings.Split(basicPlan, "  - id: cb")[0])
	w.mustApply(short, prCtx(12), Options{})
	st := w.stored(prCtx(12))
	if i := slices.IndexFunc(st.Ledger, func(e receipt.LedgerEntry) bool { return e.Key == keyCB }); i < 0 || !st.Ledger[i].Orphan || st.Ledger[i].Parent != cbParent.Identity {
		t.Fatalf("ledger %s", dump(st.Ledger))
	}
	holder := ""
	w.cloud.OnCall(optest.Match{Key: keyCB, Method: optest.MethodDelete}, func() {
		if l, _ := w.store.Lease(context.Background(), cbParent); l != nil {
			holder = l.Holder
		}
	})
	res, err := w.eng.Destroy(context.Background(), prCtx(12), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if holder != res.Receipt.RunID+"/destroy" {
		t.Fatalf("the orphan item was deleted under the lease of %q", holder)
	}
}

// The intent written before an item's create carries the parent identity
// (a crash right after it leaves an intent rollback or destroy can lock).
func TestIntentCarriesTheParent(t *testing.T) {
	w, _ := basic(t)
	w.cloud.CrashAfter(optest.Match{Key: keyCB, Method: optest.MethodCreate}, func() { panic("SIGKILL") })
	func() {
		defer func() { recover() }()
		w.apply(mustPlan(t, basicPlan), prCtx(12), Options{})
	}()
	st := w.stored(prCtx(12))
	i := slices.IndexFunc(st.Ledger, func(e receipt.LedgerEntry) bool { return e.Key == keyCB })
	if i < 0 || st.Ledger[i].CreatedBy != receipt.CreatedByIntent || st.Ledger[i].Parent != cbParent.Identity {
		t.Fatalf("checkpoint %s", dump(st.Ledger))
	}
	w.tm.Advance(testTTL + time.Second)
	holder := ""
	w.cloud.OnCall(optest.Match{Key: keyCB, Method: optest.MethodDelete}, func() {
		if l, _ := w.store.Lease(context.Background(), cbParent); l != nil {
			holder = l.Holder
		}
	})
	res, err := w.eng.Destroy(context.Background(), prCtx(12), Options{})
	if err != nil || !strings.HasSuffix(holder, "/destroy") || holder != res.Receipt.RunID+"/destroy" {
		t.Fatalf("destroy of the intent: %v, holder %q", err, holder)
	}
	if len(w.cloud.Keys()) != 0 {
		t.Errorf("left %v", w.cloud.Keys())
	}
}

const boomPlan = basicPlan + `
  - id: boom
    adapter: fake
    op: object
    name: boom-${ctx.scope}
    depends_on: [cb]
`

// Rollback always waits for a parent lease (bounded), even without Wait:
// giving up would leave resources behind.
func TestRollbackWaitsForTheParent(t *testing.T) {
	setup := func(t *testing.T) (*world, *receipt.Lease) {
		w, _ := basic(t)
		var other receipt.Lease
		w.cloud.OnCall(optest.Match{Key: "object:p1:boom-pr-12", Method: optest.MethodCreate}, func() {
			var err error
			if other, _, err = w.store.Acquire(context.Background(), cbParent, own("pr-99-run"), testTTL); err != nil {
				t.Errorf("acquire: %v", err)
			}
		})
		w.cloud.FailNext(optest.Match{Key: "object:p1:boom-pr-12", Method: optest.MethodCreate}, nil, 1)
		return w, &other
	}
	t.Run("released", func(t *testing.T) {
		w, other := setup(t)
		n := 0
		w.eng.Clock = onSleep(w.tm, func(ctx context.Context, d time.Duration) error {
			if n++; n == 2 {
				w.store.Release(ctx, *other)
			}
			return w.tm.Sleep(ctx, d)
		})
		res, err := w.apply(mustPlan(t, boomPlan), prCtx(12), Options{})
		if errs.CodeOf(err) != errs.PROVIDER_TRANSIENT {
			t.Fatalf("err %v", err)
		}
		if len(w.cloud.Keys()) != 0 || res.Receipt.Lines["cb"].Status != LineRolledBack {
			t.Fatalf("keys %v lines %s", w.cloud.Keys(), dump(res.Receipt.Lines))
		}
		if n < 2 {
			t.Errorf("rollback did not wait (%d sleeps)", n)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		w, _ := setup(t)
		res, err := w.apply(mustPlan(t, boomPlan), prCtx(12), Options{WaitTimeout: time.Minute})
		if errs.CodeOf(err) != errs.ROLLBACK_FAILED || !strings.Contains(err.Error(), keyCB) {
			t.Fatalf("err %v", err)
		}
		if l := res.Receipt.Lines["cb"]; l.Status != LineRollbackFailed {
			t.Errorf("cb %+v", l)
		}
		if got := ledgerKeys(w.stored(prCtx(12))); !slices.Contains(got, keyCB) {
			t.Errorf("the item rollback left is not recorded: %v", got)
		}
	})
}

// parentAudit wraps a store to watch parent leases: how many one run holds
// at once, and whether a scope lease is asked for while one is held.
type parentAudit struct {
	receipt.Store
	mu        sync.Mutex
	held      map[string]int // run id → parent leases held
	max       int
	violation string
}

func runOf(holder string) string { r, _, _ := strings.Cut(holder, "/"); return r }

func (p *parentAudit) Acquire(ctx context.Context, t receipt.Target, o receipt.Owner, ttl time.Duration) (receipt.Lease, *receipt.Lease, error) {
	p.mu.Lock()
	if !t.IsParent() && p.held[runOf(o.RunID)] > 0 && p.violation == "" {
		p.violation = "run " + o.RunID + " asked for scope lease " + t.String() + " while holding a parent lease"
	}
	p.mu.Unlock()
	l, pre, err := p.Store.Acquire(ctx, t, o, ttl)
	if err == nil && t.IsParent() {
		p.mu.Lock()
		p.held[runOf(o.RunID)]++
		p.max = max(p.max, p.held[runOf(o.RunID)])
		p.mu.Unlock()
	}
	return l, pre, err
}

func (p *parentAudit) Release(ctx context.Context, l receipt.Lease) error {
	if l.Target.IsParent() {
		p.mu.Lock()
		p.held[runOf(l.Holder)]--
		p.mu.Unlock()
	}
	return p.Store.Release(ctx, l)
}

const fanPlan = `
version: 1
providers:
  fake: { project: p1 }
changes:
  - { id: a, adapter: fake, op: item, list: callbacks, item: "https://a-${ctx.scope}.example" }
  - { id: b, adapter: fake, op: item, list: callbacks, item: "https://b-${ctx.scope}.example" }
  - { id: c, adapter: fake, op: item, list: origins, item: "https://c-${ctx.scope}.example" }
  - { id: d, adapter: fake, op: item, list: logout, item: "https://d-${ctx.scope}.example" }
  - { id: e, adapter: fake, op: item, list: web, item: "https://e-${ctx.scope}.example" }
  - { id: f, adapter: fake, op: object, name: "f-${ctx.scope}" }
`

// A worker holds at most one parent lease, only while it writes one line;
// no scope lease is asked for while a parent lease is held (succession
// included); two lines of one run on the same list take turns instead of
// failing each other with LOCK_HELD.
func TestParentLeasesPerWorker(t *testing.T) {
	w := newWorld(t)
	audit := &parentAudit{Store: w.store, held: map[string]int{}}
	w.eng.Store = audit
	w.cloud.SetLatency(optest.OpItem, 3*time.Millisecond)
	p := mustPlan(t, fanPlan)
	// A predecessor with a ledger, so the PR's apply takes a second scope
	// lease (succession) in the same run.
	branch := prCtx(12)
	branch.Scope, branch.PR = "branch-feat-x", scope.PR{}
	w.mustApply(mustPlan(t, strings.Replace(fanPlan, "${ctx.scope}", "pre", -1)), branch, Options{})
	res := w.mustApply(p, prCtx(12), Options{Parallelism: 4})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if st := res.Receipt.Lines[id].Status; st != LineCreated {
			t.Errorf("line %s: %s", id, st)
		}
	}
	if audit.violation != "" {
		t.Fatal(audit.violation)
	}
	if audit.max > 4 {
		t.Errorf("a run held %d parent leases at once with parallelism 4", audit.max)
	}
	if locks, _ := w.store.Locks(context.Background()); len(locks) != 0 {
		t.Errorf("leases left: %v", locks)
	}
	if got := w.cloud.List("p1", "callbacks"); len(got) != 4 {
		t.Errorf("callbacks %v", got)
	}
}

// A run taken over by force (`sponson unlock`) while it runs may not have
// noticed: before rollback destroys anything it confirms its lease, and
// stops (LOCK_LOST) rather than undo what its successor's receipt records.
func TestRollbackConfirmsTheLeaseFirst(t *testing.T) {
	w, _ := basic(t)
	var intruder receipt.Lease
	w.cloud.OnCall(optest.Match{Key: "object:p1:boom-pr-12", Method: optest.MethodCreate}, func() {
		ctx := context.Background()
		w.store.ForceRelease(ctx, scopeT, "stuck run", "alice")
		var err error
		if intruder, _, err = w.store.Acquire(ctx, scopeT, own("successor"), testTTL); err != nil {
			t.Fatal(err)
		}
		r, _, _ := w.store.Read(ctx, "preview", "pr-12")
		r.RunID = "successor"
		w.store.Write(ctx, r, intruder)
	})
	w.cloud.FailNext(optest.Match{Key: "object:p1:boom-pr-12", Method: optest.MethodCreate}, nil, 1)
	_, err := w.apply(mustPlan(t, boomPlan), prCtx(12), Options{Parallelism: 1})
	if errs.CodeOf(err) != errs.LOCK_LOST || errs.ExitCode(err) != 3 {
		t.Fatalf("err %v", err)
	}
	if got := w.cloud.Keys(); len(got) != 3 {
		t.Fatalf("the run rolled back after losing its lease: %v", got)
	}
	if st := w.stored(prCtx(12)); st.RunID != "successor" || len(st.Ledger) < 3 {
		t.Fatalf("stored %s", dump(st))
	}
}

// LockWait waits for a held lease without --wait, but not for external
// events: the line on the shared list takes its turn, and a line waiting on
// a deploy still ends the run partial.
func TestLockWaitWaitsForLeasesOnly(t *testing.T) {
	w := newWorld(t)
	p := mustPlan(t, `
version: 1
changes:
  - { id: app, adapter: fake, op: object, name: "app-${ctx.scope}", deploy: true }
  - { id: cb, adapter: fake, op: item, list: callbacks, item: "https://${ctx.scope}.example.dev/cb" }
  - { id: origin, adapter: fake, op: item, list: origins, item: { from: app.deploy_url } }
`)
	held := receipt.ParentTarget(optest.ListLock("default", "callbacks"))
	other, _, err := w.store.Acquire(context.Background(), held, own("pr-99-run"), testTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.apply(p, prCtx(12), Options{}); errs.CodeOf(err) != errs.RUN_FAILED || !errors.Is(err, errs.LOCK_HELD) {
		t.Fatalf("without LockWait the held list fails the run: %v", err)
	}
	n := 0
	w.eng.Clock = onSleep(w.tm, func(ctx context.Context, d time.Duration) error {
		if n++; n == 2 {
			w.store.Release(ctx, other)
		}
		return w.tm.Sleep(ctx, d)
	})
	res := w.mustApply(p, prCtx(12), Options{LockWait: time.Minute})
	l := res.Receipt.Lines
	if res.Receipt.Status != receipt.StatusPartial || l["cb"].Status != LineCreated || l["origin"].Status != LineWaiting {
		t.Fatalf("with LockWait: %s", dump(res.Receipt))
	}
	if n < 2 {
		t.Errorf("the run did not wait for the lease (%d sleeps)", n)
	}
}
