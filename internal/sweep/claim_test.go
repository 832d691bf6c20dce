package sweep

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/receipt"
)

// Two sweepers with a claim on one store: the first sweeps and keeps the
// claim, the second is skipped without judging anything, and once the
// claim's TTL has passed the next sweep (either's) is done again. The
// claim is the parent object sponson-sweep's lease, seen by `sponson
// locks`.
func TestClaimGivesTheSweepToOne(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 3, "feat/a")
	w.close(3)
	ttl := ClaimTTL(15 * time.Minute)
	a, b := &Sweeper{Clock: w.tm, Claim: ttl}, &Sweeper{Clock: w.tm, Claim: ttl}

	rep, err := a.Sweep(context.Background(), w.repo())
	if err != nil || rep.Skipped || rep.Count(ClosedPR) != 1 {
		t.Fatalf("first: %+v %v", rep, err)
	}
	w.tm.Advance(5 * time.Minute)
	rep, err = b.Sweep(context.Background(), w.repo())
	if err != nil || !rep.Skipped || len(rep.Findings) != 0 || rep.Scopes != 0 {
		t.Fatalf("second, within the interval: %+v %v", rep, err)
	}
	l, err := w.store.Lease(context.Background(), receipt.ParentTarget(ClaimIdentity))
	if err != nil || l == nil || l.TTL != ttl {
		t.Fatalf("the claim's lease: %+v %v", l, err)
	}
	w.tm.Advance(10 * time.Minute)
	rep, err = b.Sweep(context.Background(), w.repo())
	if err != nil || rep.Skipped {
		t.Fatalf("next interval: %+v %v", rep, err)
	}
	if ClaimTTL(15*time.Minute) >= 15*time.Minute {
		t.Errorf("the claim outlives the interval")
	}
}

// A claim whose holder is certainly gone (HolderGone says why) is taken
// over at once; one whose holder may live is left.
func TestClaimOfAGoneHolderIsTakenOver(t *testing.T) {
	w := memWorld(t)
	ttl := ClaimTTL(15 * time.Minute)
	s := &Sweeper{Clock: w.tm, Claim: ttl}
	if rep, err := s.Sweep(context.Background(), w.repo()); err != nil || rep.Skipped {
		t.Fatalf("first: %+v %v", rep, err)
	}
	r := w.repo()
	r.HolderGone = func(context.Context, receipt.Lease) (string, error) { return "", nil }
	if rep, err := s.Sweep(context.Background(), r); err != nil || !rep.Skipped {
		t.Fatalf("a holder that may live: %+v %v", rep, err)
	}
	r.HolderGone = func(context.Context, receipt.Lease) (string, error) { return "process 42 is gone", nil }
	if rep, err := s.Sweep(context.Background(), r); err != nil || rep.Skipped {
		t.Fatalf("a gone holder: %+v %v", rep, err)
	}
}

// A sweep longer than its claim renews it (every third of the TTL, on the
// sweeper's clock): another replica that looks after the claim's first
// TTL has passed still finds it held. A claim lost meanwhile (released by
// force and taken by another) stops the sweep from judging more.
func TestClaimIsRenewedWhileSweeping(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 3, "feat/a")
	w.close(3)
	ttl := ClaimTTL(15 * time.Minute)
	ck := &watchedClock{Time: w.tm, afters: make(chan time.Duration, 100)}
	a, b := &Sweeper{Clock: ck, Claim: ttl}, &Sweeper{Clock: w.tm, Claim: ttl}
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.gh.onAsk = func(int) {
		once.Do(func() { close(asked) })
		<-release
	}
	done := make(chan Report)
	go func() {
		rep, err := a.Sweep(context.Background(), w.repo())
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	<-asked
	for range 5 { // well past the claim's TTL
		if d := <-ck.afters; d != ttl/3 {
			t.Fatalf("the renewer waits %s, want a third of the claim's %s", d, ttl)
		}
		w.tm.Advance(ttl / 3)
	}
	<-ck.afters // renewed for the fifth time, and waiting again
	rep, err := b.Sweep(context.Background(), w.repo())
	if err != nil || !rep.Skipped {
		t.Fatalf("another replica while the long sweep runs: %+v %v", rep, err)
	}
	l, err := w.store.Lease(context.Background(), receipt.ParentTarget(ClaimIdentity))
	if err != nil || l == nil || !l.ExpiresAt.After(w.tm.Now()) || l.RenewedAt.IsZero() {
		t.Fatalf("the claim after renewals: %+v %v", l, err)
	}
	close(release)
	if rep := <-done; rep.Skipped || rep.ClaimLost || rep.Count(ClosedPR) != 1 {
		t.Fatalf("the long sweep: %+v", rep)
	}
}

func TestLostClaimStopsTheSweep(t *testing.T) {
	w := memWorld(t)
	w.apply("preview", 3, "feat/a")
	w.apply("preview", 4, "feat/b")
	w.close(3)
	w.close(4)
	ttl := ClaimTTL(15 * time.Minute)
	logged := &syncBuffer{}
	ck := &watchedClock{Time: w.tm, afters: make(chan time.Duration, 100)}
	a := &Sweeper{Clock: ck, Claim: ttl, Concurrency: 1, Log: slog.New(slog.NewTextHandler(logged, nil))}
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.gh.onAsk = func(int) {
		once.Do(func() {
			close(asked)
			<-release
		})
	}
	done := make(chan Report)
	go func() {
		rep, _ := a.Sweep(context.Background(), w.repo())
		done <- rep
	}()
	<-asked
	ctx := context.Background()
	if _, err := w.store.ForceRelease(ctx, receipt.ParentTarget(ClaimIdentity), "test", "someone"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.store.Acquire(ctx, receipt.ParentTarget(ClaimIdentity), receipt.Owner{Kind: receipt.KindBot, RunID: "other"}, ttl); err != nil {
		t.Fatal(err)
	}
	<-ck.afters
	w.tm.Advance(ttl / 3)
	for !strings.Contains(logged.String(), "claim was lost") {
		runtime.Gosched()
	}
	close(release)
	rep := <-done
	if !rep.ClaimLost || len(rep.Findings) != 1 || len(w.keys("pr-3"))+len(w.keys("pr-4")) != 2 {
		t.Fatalf("a lost claim: lost %v, findings %s, resources left %d", rep.ClaimLost, kinds(rep), len(w.keys("pr-3"))+len(w.keys("pr-4")))
	}
}

// syncBuffer is a log's buffer that a test reads while the sweep writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// watchedClock is the test's clock that says each time the sweeper waits
// on it (only the claim's renewer does), so the test advances time once
// the renewer waits, never before.
type watchedClock struct {
	*enginetest.Time
	afters chan time.Duration
}

func (c *watchedClock) After(d time.Duration) <-chan time.Time {
	ch := c.Time.After(d)
	c.afters <- d
	return ch
}
