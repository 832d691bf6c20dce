package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

func ghOwner(run string, ghRun int64) receipt.Owner {
	return receipt.Owner{RunID: run, Kind: receipt.KindAction, Operation: receipt.OpApply, GitHubRunID: ghRun, GitHubRunAttempt: 1, Repository: "acme/shop"}
}

// goneIf is a HolderGone that says the holder is gone when its GitHub run
// is in gone, and counts its calls.
type goneIf struct {
	gone  map[int64]string
	err   error
	calls int
}

func (g *goneIf) ask(_ context.Context, held receipt.Lease) (string, error) {
	g.calls++
	if g.err != nil {
		return "", g.err
	}
	return g.gone[held.Owner.GitHubRunID], nil
}

// A live lease whose GitHub run is over is taken over at once, without
// waiting and long before its TTL; the force-release and its reason are in
// the history, and the old holder is fenced out.
func TestHolderGoneTakesOverAtOnce(t *testing.T) {
	tm := enginetest.NewTime(t0)
	st := memstore.New(tm)
	a, err := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, ghOwner("a", 77))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(context.Background())
	g := &goneIf{gone: map[int64]string{77: "GitHub run 77 of acme/shop was cancelled"}}
	cfg := leaseCfg(tm, st)
	cfg.HolderGone = g.ask
	b, err := AcquireLease(context.Background(), cfg, scopeT, ghOwner("b", 78))
	if err != nil {
		t.Fatalf("no takeover of a gone holder's lease: %v", err)
	}
	defer b.Release(context.Background())
	if !tm.Now().Equal(t0) {
		t.Errorf("the takeover waited until %s", tm.Now())
	}
	if pre := b.Preempted(); pre == nil || pre.Holder != "a" || b.TakeoverReason() != "GitHub run 77 of acme/shop was cancelled" {
		t.Fatalf("preempted %+v, reason %q", pre, b.TakeoverReason())
	}
	hist, err := st.History(context.Background(), scopeT)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || hist[0].Operation != receipt.OpUnlock || hist[0].Reason != "GitHub run 77 of acme/shop was cancelled" || !strings.Contains(hist[0].By, "run b") {
		t.Errorf("history %+v", hist)
	}
	rc := &receipt.Receipt{Env: "preview", Scope: "pr-12", RunID: "a", Operation: receipt.OpApply, Status: receipt.StatusComplete}
	wantCode(t, st.Write(context.Background(), rc, a.Lease()), errs.LOCK_LOST)
	wantCode(t, a.confirm(), errs.LOCK_LOST)
}

// A holder that is not gone, or that cannot be looked up, keeps its lease
// until its TTL; HolderGone is asked once per lease however long the wait.
func TestHolderGoneHonoursLiveOrUnknownHolders(t *testing.T) {
	for name, g := range map[string]*goneIf{
		"running":   {gone: map[int64]string{}},
		"api error": {err: errors.New("502 from the API")},
	} {
		t.Run(name, func(t *testing.T) {
			tm := enginetest.NewTime(t0)
			st := memstore.New(tm)
			a, _ := AcquireLease(context.Background(), leaseCfg(tm, st), scopeT, ghOwner("a", 77))
			defer a.Release(context.Background())
			cfg := leaseCfg(tm, st)
			cfg.HolderGone = g.ask
			_, err := AcquireLease(context.Background(), cfg, scopeT, ghOwner("b", 78))
			wantCode(t, err, errs.LOCK_HELD)
			cfg.Wait, cfg.WaitTimeout = true, 3*time.Minute
			_, err = AcquireLease(context.Background(), cfg, scopeT, ghOwner("c", 79))
			wantCode(t, err, errs.WAIT_TIMEOUT)
			if g.calls != 2 {
				t.Errorf("HolderGone asked %d times, want once per acquire", g.calls)
			}
			if cur, _ := st.Lease(context.Background(), scopeT); cur == nil || cur.Holder != "a" {
				t.Errorf("the live lease was touched: %+v", cur)
			}
		})
	}
}

// Through the engine: the apply that takes over records the preempted
// lease and why on its receipt.
func TestApplyRecordsWhyItTookTheLease(t *testing.T) {
	w, _ := basic(t)
	if _, _, err := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-12"), ghOwner("dead", 41), 0); err != nil {
		t.Fatal(err)
	}
	g := &goneIf{gone: map[int64]string{41: "GitHub run 41 of acme/shop has completed"}}
	w.eng.HolderGone = g.ask
	res := w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{})
	rc := w.stored(prCtx(12))
	if rc.LockPreempted == nil || rc.LockPreempted.Holder != "dead" {
		t.Fatalf("lock_preempted %+v", rc.LockPreempted)
	}
	found := false
	for _, wn := range rc.Warnings {
		found = found || wn.Code == errs.LEASE_TAKEN_OVER && strings.Contains(wn.Message, "has completed")
	}
	if !found || res.Receipt.Status != receipt.StatusComplete {
		t.Errorf("status %s, warnings %+v", res.Receipt.Status, rc.Warnings)
	}
}
