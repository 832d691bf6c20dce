package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/progress"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

type eventLog struct {
	mu sync.Mutex
	ev []progress.Event
}

func (l *eventLog) sink(e progress.Event) { l.mu.Lock(); l.ev = append(l.ev, e); l.mu.Unlock() }

func (l *eventLog) all() []progress.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]progress.Event(nil), l.ev...)
}

// A lease wait reports every attempt with the holder, its lease's end and
// the wait's deadline, then exactly one Done event when it gets the lease.
func TestLeaseWaitReportsProgress(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	a, _ := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, receipt.Owner{RunID: "a", Kind: receipt.KindAction, Actor: "octocat"})
	cfg := leaseCfg(tm, st)
	cfg.Wait, cfg.WaitTimeout = true, 10*time.Minute
	n := 0
	cfg.Clock = onSleep(tm, func(ctx context.Context, d time.Duration) error {
		if n++; n == 3 {
			a.Release(context.Background())
		}
		return tm.Sleep(ctx, d)
	})
	var log eventLog
	ctx := progress.With(context.Background(), log.sink)
	b, err := AcquireLease(ctx, cfg, scopeT, own("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(context.Background())
	ev := log.all()
	if len(ev) != 4 {
		t.Fatalf("%d events, want 3 waits and 1 done: %+v", len(ev), ev)
	}
	for i, e := range ev[:3] {
		if e.Kind != progress.Lease || e.Target != "preview/pr-12" || e.Done || e.Attempt != i+1 {
			t.Errorf("event %d = %+v", i, e)
		}
		if e.Holder == "" || !e.HolderUntil.Equal(t0.Add(testTTL)) || !e.Deadline.Equal(t0.Add(10*time.Minute)) || !e.Started.Equal(t0) {
			t.Errorf("event %d lacks holder, lease end or deadline: %+v", i, e)
		}
	}
	if ev[1].Elapsed() <= ev[0].Elapsed() {
		t.Errorf("elapsed does not grow: %v then %v", ev[0].Elapsed(), ev[1].Elapsed())
	}
	if last := ev[3]; !last.Done || !last.OK {
		t.Errorf("last event %+v, want done and ok", last)
	}
}

// A wait that times out ends with a Done event that is not OK; a lease
// that is free at once reports nothing; a parent object's wait says so.
func TestLeaseWaitProgressTimeoutAndParent(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	parent := receipt.ParentTarget("auth0:example.eu.auth0.com:client:AbCd")
	if _, err := AcquireLease(context.Background(), leaseCfg(tm, st), parent, own("a")); err != nil {
		t.Fatal(err)
	}
	var log eventLog
	ctx := progress.With(context.Background(), log.sink)
	if k, err := AcquireLease(ctx, leaseCfg(tm, st), scopeT, own("c")); err != nil {
		t.Fatal(err)
	} else {
		k.Release(context.Background())
	}
	if ev := log.all(); len(ev) != 0 {
		t.Fatalf("a free lease reported %+v", ev)
	}
	cfg := leaseCfg(tm, st)
	cfg.Wait, cfg.WaitTimeout = true, 30*time.Second
	if _, err := AcquireLease(ctx, cfg, parent, own("b")); err == nil {
		t.Fatal("got a held lease")
	}
	ev := log.all()
	if len(ev) < 2 {
		t.Fatalf("events %+v", ev)
	}
	for _, e := range ev {
		if e.Kind != progress.ParentLock || e.Target != parent.Identity {
			t.Errorf("event %+v", e)
		}
	}
	if last := ev[len(ev)-1]; !last.Done || last.OK {
		t.Errorf("last event %+v, want done and not ok", last)
	}
	for _, e := range ev[:len(ev)-1] {
		if e.Done {
			t.Errorf("done before the end: %+v", e)
		}
	}
}

// Engine.Events receives a deploy wait as it happens, through the engine's
// own entry point: each poll, then one Done that says whether it arrived.
func TestExternalWaitReportsProgress(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome string
		ok      bool
	}{{"arrives", optest.DeployReady, true}, {"fails", optest.DeployFailed, false}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			var log eventLog
			w.eng.Events = log.sink
			n := 0
			w.eng.Clock = onSleep(w.tm, func(ctx context.Context, d time.Duration) error {
				if n++; n == 3 {
					w.cloud.Deploy("object:default:app-pr-3", tc.outcome)
				}
				return w.tm.Sleep(ctx, d)
			})
			w.apply(mustPlan(t, deployPlan), prCtx(3), Options{Wait: true, WaitTimeout: 2 * time.Minute})
			var waits []progress.Event
			for _, e := range log.all() {
				if e.Kind == progress.External {
					waits = append(waits, e)
				}
			}
			if len(waits) != 4 {
				t.Fatalf("%d external events, want 3 polls and 1 done: %+v", len(waits), waits)
			}
			for _, e := range waits[:3] {
				if e.Done || e.Line != "app" || !strings.Contains(e.Target, `deploy of line "app"`) || !e.Deadline.Equal(e.Started.Add(2*time.Minute)) {
					t.Errorf("poll event %+v", e)
				}
			}
			if last := waits[3]; !last.Done || last.OK != tc.ok {
				t.Errorf("last event %+v, want done, ok %v", last, tc.ok)
			}
		})
	}
}

// A wait bounded by LockWait that times out names --lock-wait, not
// --wait-timeout (which bounds --wait).
func TestLockWaitTimeoutNamesLockWait(t *testing.T) {
	w, _ := basic(t) // the plan's secret is set: the lease is what blocks
	if _, _, err := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-12"), own("other"), time.Hour); err != nil {
		t.Fatal(err)
	}
	_, err := w.apply(mustPlan(t, basicPlan), prCtx(12), Options{LockWait: 20 * time.Second})
	if errs.CodeOf(err) != errs.WAIT_TIMEOUT || !strings.Contains(errs.Coded(err).HintText(), "--lock-wait") {
		t.Fatalf("err %v, hint %q", err, errs.Coded(err).HintText())
	}
	_, err = w.apply(mustPlan(t, basicPlan), prCtx(12), Options{Wait: true, WaitTimeout: 20 * time.Second})
	if errs.CodeOf(err) != errs.WAIT_TIMEOUT || !strings.Contains(errs.Coded(err).HintText(), "--wait-timeout") {
		t.Fatalf("err %v, hint %q", err, errs.Coded(err).HintText())
	}
}
