package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

var t0 = time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)

const testTTL = 15 * time.Minute

// hookStore wraps a store to slow down or observe lease calls.
type hookStore struct {
	receipt.Store
	mu        sync.Mutex
	onRenew   func()
	onAcquire func()
	leaseRead int
}

func (h *hookStore) Renew(ctx context.Context, l receipt.Lease) (receipt.Lease, error) {
	h.mu.Lock()
	f := h.onRenew
	h.mu.Unlock()
	if f != nil {
		f()
	}
	return h.Store.Renew(ctx, l)
}

func (h *hookStore) Acquire(ctx context.Context, t receipt.Target, o receipt.Owner, ttl time.Duration) (receipt.Lease, *receipt.Lease, error) {
	h.mu.Lock()
	f := h.onAcquire
	h.mu.Unlock()
	if f != nil {
		f()
	}
	return h.Store.Acquire(ctx, t, o, ttl)
}

func (h *hookStore) Lease(ctx context.Context, t receipt.Target) (*receipt.Lease, error) {
	h.mu.Lock()
	h.leaseRead++
	h.mu.Unlock()
	return h.Store.Lease(ctx, t)
}

var scopeT = receipt.ScopeTarget("preview", "pr-12")

func leaseCfg(tm *enginetest.Time, s receipt.Leases) LeaseConfig {
	return LeaseConfig{Store: s, Clock: tm, TTL: testTTL}
}

func own(run string) receipt.Owner {
	return receipt.Owner{RunID: run, Kind: receipt.KindCLI, Host: "h", PID: 7, Operation: receipt.OpApply}
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error code %q, want %s (err: %v)", got, code, err)
	}
}

func TestLeaseRenewsEveryThirdOfTTL(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	k, err := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release(context.Background())
	for i := 1; i <= 4; i++ {
		if !tm.WaitTimers(1) {
			t.Fatal("the keeper scheduled no renewal")
		}
		tm.Advance(testTTL/3 - time.Second)
		if got := st.Calls(memstore.MethodRenew); got != i-1 {
			t.Fatalf("renewed %d times before the interval passed, want %d", got, i-1)
		}
		tm.Advance(time.Second)
		waitFor(t, func() bool { return k.Renewals() == i })
	}
	if got, want := k.Deadline(), tm.Now().Add(testTTL); !got.Equal(want) {
		t.Errorf("deadline %v, want %v", got, want)
	}
	if err := k.Check(); err != nil {
		t.Errorf("Check on a healthy lease: %v", err)
	}
}

func TestLeaseRenewalScheduledAfterThePreviousFinished(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := &hookStore{Store: memstore.New(tm)}
	k, err := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release(context.Background())
	block := make(chan struct{})
	entered := make(chan struct{}, 10)
	st.mu.Lock()
	st.onRenew = func() { entered <- struct{}{}; <-block }
	st.mu.Unlock()
	tm.WaitTimers(1)
	tm.Advance(testTTL / 3)
	<-entered
	// The store is slow: time passes three intervals while the renewal hangs.
	tm.Advance(testTTL / 3)
	tm.Advance(testTTL / 3)
	if n := tm.Timers(); n != 0 {
		t.Fatalf("%d renewals queued while one was still in flight", n)
	}
	st.mu.Lock()
	st.onRenew = nil
	st.mu.Unlock()
	close(block)
	if !tm.WaitTimers(1) {
		t.Fatal("no renewal scheduled after the slow one finished")
	}
	if k.Renewals() != 1 {
		t.Fatalf("renewals %d, want 1", k.Renewals())
	}
	select {
	case <-entered:
		t.Fatal("a second renewal ran without waiting a full interval")
	default:
	}
}

func TestLeaseDeadlineMeasuredFromSend(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := &hookStore{Store: memstore.New(tm)}
	// The answer to the acquire arrives two minutes after it was sent.
	st.onAcquire = func() { tm.Advance(2 * time.Minute) }
	k, err := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release(context.Background())
	if got := k.Deadline(); !got.Equal(t0.Add(testTTL)) {
		t.Fatalf("deadline %v, want send time + TTL = %v", got, t0.Add(testTTL))
	}
	if exp := k.Lease().ExpiresAt; !exp.After(k.Deadline()) {
		t.Fatalf("test is vacuous: the store's expiry %v is not later than the deadline", exp)
	}
}

func TestLeaseOwnDeadlineStopsBeforeTakeover(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	k, err := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release(context.Background())
	// Every renewal fails: the store is unreachable.
	st.Inject(memstore.Fault{Method: memstore.MethodRenew, Err: errs.New(errs.STORE_UNAVAILABLE, "down"), Times: -1})
	step := 30 * time.Second
	for tm.Now().Before(t0.Add(testTTL - testTTL/5)) {
		if err := k.Check(); err != nil {
			t.Fatalf("at %v (%v left) Check failed: %v", tm.Now(), t0.Add(testTTL).Sub(tm.Now()), err)
		}
		tm.Advance(step)
	}
	if err := k.Check(); err != nil {
		t.Fatalf("exactly TTL/5 left is still enough: %v", err)
	}
	tm.Advance(time.Second)
	err = k.Check()
	wantCode(t, err, errs.LOCK_LOST)
	if !strings.Contains(err.Error(), "own deadline") {
		t.Errorf("message does not say why: %v", err)
	}
	// Nobody could have taken it over yet: the lease is still the store's.
	if cur, _ := st.Lease(context.Background(), scopeT); cur == nil || cur.Expired(tm.Now()) {
		t.Errorf("the holder stopped only after the lease was takeable: %+v", cur)
	}
	// Once lost, always lost, even if the store comes back.
	st.ClearFaults()
	wantCode(t, k.Check(), errs.LOCK_LOST)
}

func TestLeaseTakeoverFencesTheOldHolder(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	a, err := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(context.Background())
	st.Inject(memstore.Fault{Method: memstore.MethodRenew, Err: errs.New(errs.STORE_UNAVAILABLE, "partition"), Times: -1})
	tm.Advance(testTTL + time.Second)
	b, err := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("b"))
	if err != nil {
		t.Fatalf("takeover of an expired lease: %v", err)
	}
	defer b.Release(context.Background())
	pre := b.Preempted()
	if pre == nil || pre.Holder != "a" {
		t.Fatalf("preempted = %+v, want a's lease", pre)
	}
	if b.Lease().Generation <= a.Lease().Generation {
		t.Errorf("generation did not grow: %d then %d", a.Lease().Generation, b.Lease().Generation)
	}
	st.ClearFaults()
	wantCode(t, a.Check(), errs.LOCK_LOST)
	// I10: the old holder's fenced write is refused and b's receipt stands.
	rb := &receipt.Receipt{Env: "preview", Scope: "pr-12", RunID: "b", Operation: receipt.OpApply, Status: receipt.StatusComplete}
	if err := st.Write(context.Background(), rb, b.Lease()); err != nil {
		t.Fatal(err)
	}
	ra := &receipt.Receipt{Env: "preview", Scope: "pr-12", RunID: "a", Operation: receipt.OpApply, Status: receipt.StatusComplete}
	wantCode(t, st.Write(context.Background(), ra, a.Lease()), errs.LOCK_LOST)
	got, _, _ := st.Read(context.Background(), "preview", "pr-12")
	if got.RunID != "b" {
		t.Errorf("stored receipt is run %s's, want b's", got.RunID)
	}
	// a's release is a no-op for b.
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cur, _ := st.Lease(context.Background(), scopeT); cur == nil || cur.Holder != "b" {
		t.Errorf("a's release removed b's lease: %+v", cur)
	}
}

func TestLeaseHeldWithoutWait(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	a, _ := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
	defer a.Release(context.Background())
	_, err := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("b"))
	wantCode(t, err, errs.LOCK_HELD)
	if l, ok := receipt.HeldLease(err); !ok || l.Holder != "a" {
		t.Errorf("LOCK_HELD does not carry the holder: %v", err)
	}
}

func TestLeaseWaitBacksOffAndTimesOut(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := &hookStore{Store: memstore.New(tm)}
	a, _ := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, receipt.Owner{RunID: "a", Kind: receipt.KindAction, Actor: "octocat"})
	defer a.Release(context.Background())
	var sleeps []time.Duration
	var lines []string
	cfg := leaseCfg(tm, st)
	cfg.Wait, cfg.WaitTimeout = true, 3*time.Minute
	cfg.Clock = onSleep(tm, func(ctx context.Context, d time.Duration) error { sleeps = append(sleeps, d); return tm.Sleep(ctx, d) })
	cfg.Progress = func(s string) { lines = append(lines, s) }
	_, err := AcquireLease(context.Background(), cfg, scopeT, own("b"))
	wantCode(t, err, errs.WAIT_TIMEOUT)
	if !errors.Is(err, errs.LOCK_HELD) {
		t.Errorf("the timeout does not carry the LOCK_HELD: %v", err)
	}
	if len(sleeps) < 5 {
		t.Fatalf("only %d attempts in 3 minutes", len(sleeps))
	}
	var total time.Duration
	for i, d := range sleeps {
		total += d
		if i > 0 && i < 5 && d < sleeps[i-1] {
			t.Errorf("backoff shrank: %v", sleeps)
		}
		if d > leaseBackoffMax {
			t.Errorf("sleep %v above the cap", d)
		}
	}
	if total != 3*time.Minute {
		t.Errorf("slept %v in all, want exactly the 3m timeout", total)
	}
	if len(lines) == 0 || len(lines) > 4 {
		t.Fatalf("progress lines: %q", lines)
	}
	want := "waiting for lock on preview/pr-12 held by run a (action, actor octocat) of PR #12 since 14:02, 15 min left on its lease"
	if lines[0] != want {
		t.Errorf("progress\n got %q\nwant %q", lines[0], want)
	}
	if st.leaseRead != 0 {
		t.Errorf("the wait read the holder %d times; retrying must not depend on it", st.leaseRead)
	}
}

func TestLeaseWaitGetsItWhenReleased(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	a, _ := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
	cfg := leaseCfg(tm, st)
	cfg.Wait = true
	n := 0
	cfg.Clock = onSleep(tm, func(ctx context.Context, d time.Duration) error {
		if n++; n == 3 {
			a.Release(context.Background())
		}
		return tm.Sleep(ctx, d)
	})
	b, err := AcquireLease(context.Background(), cfg, scopeT, own("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(context.Background())
	if b.Lease().Holder != "b" || n != 3 {
		t.Errorf("got %+v after %d sleeps", b.Lease(), n)
	}
}

func TestLeaseLostAnswerOfOwnAcquire(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	st.Inject(memstore.Fault{Method: memstore.MethodAcquire, Lost: true, Err: errs.New(errs.STORE_UNAVAILABLE, "connection reset")})
	cfg := leaseCfg(tm, st)
	cfg.Wait = true
	k, err := AcquireLease(context.Background(), cfg, scopeT, own("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Release(context.Background())
	if k.Lease().Holder != "a" || k.Lease().Generation != 1 {
		t.Errorf("lease %+v", k.Lease())
	}
}

func TestLeaseReleaseEveryPath(t *testing.T) {
	t.Run("panic", func(t *testing.T) {
		tm := enginetest.NewTime(t0)
		st := memstore.New(tm)
		func() {
			defer func() { _ = recover() }()
			k, _ := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
			defer k.Release(context.Background())
			panic("boom")
		}()
		if cur, _ := st.Lease(context.Background(), scopeT); cur != nil {
			t.Errorf("lease still held after a panic: %+v", cur)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		tm := enginetest.NewTime(t0)
		st := memstore.New(tm)
		ctx, cancel := context.WithCancel(context.Background())
		k, _ := AcquireLease(ctx, leaseCfg(tm, st), scopeT, own("a"))
		cancel()
		if err := k.Release(context.WithoutCancel(ctx)); err != nil {
			t.Fatal(err)
		}
		if cur, _ := st.Lease(context.Background(), scopeT); cur != nil {
			t.Errorf("lease still held after cancel: %+v", cur)
		}
	})
	t.Run("idempotent", func(t *testing.T) {
		tm := enginetest.NewTime(t0)
		st := memstore.New(tm)
		k, _ := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
		k.Release(context.Background())
		k.Release(context.Background())
		if got := st.Calls(memstore.MethodRelease); got != 1 {
			t.Errorf("released %d times", got)
		}
	})
	t.Run("failing", func(t *testing.T) {
		tm := enginetest.NewTime(t0)
		st := memstore.New(tm)
		k, _ := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, own("a"))
		st.Inject(memstore.Fault{Method: memstore.MethodRelease, Err: errs.New(errs.STORE_UNAVAILABLE, "down"), Times: -1})
		err := k.Release(context.Background())
		wantCode(t, err, errs.LEASE_NOT_RELEASED)
		if !errors.Is(err, errs.STORE_UNAVAILABLE) {
			t.Errorf("the store's error is not the cause: %v", err)
		}
		if got := st.Calls(memstore.MethodRelease); got != releaseAttempts {
			t.Errorf("release tried %d times, want %d", got, releaseAttempts)
		}
		for _, s := range []string{"preview/pr-12", "stays held until 2026-11-30T14:17:00Z", "sponson unlock preview pr-12"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("warning %q lacks %q", err, s)
			}
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // generous: a met condition returns at once
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 2 minutes")
		}
		time.Sleep(100 * time.Microsecond)
	}
}
