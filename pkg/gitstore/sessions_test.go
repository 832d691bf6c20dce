package gitstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// A run's exchanges with the remote at their floor, counted at the HTTP
// server: New's one exchange (whose listing serves the first read), View
// (one packfile request), AcquireAt from View's tip (one push: two
// requests), WriteRelease (one push, one commit). A run that writes
// nothing records itself with one WriteAt (one push) and no lease.
func TestSessionRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rem := newRemote(t, "http", gittest.WithProtocolV0()) // v2's counts: protocol_test.go
	seed(t, rem.dir, "preview", 20, true)
	target := receipt.ScopeTarget("preview", "pr-1")
	count := func(what string, want int64, fn func(s *Store) error, s *Store) {
		t.Helper()
		before := rem.srv.Requests()
		if err := fn(s); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := rem.srv.Requests() - before; got != want {
			t.Errorf("%s: %d requests, want %d: %v", what, got, want, rem.srv.Log()[before:])
		}
	}
	clock := clock.NewFake(start)
	var s *Store
	count("New", 1, func(*Store) (err error) { s, err = New(ctx, Options{URL: rem.url, Clock: clock}); return }, nil)
	var v *receipt.View
	count("View (first operation)", 1, func(s *Store) (err error) { v, err = s.View(ctx, "preview", "pr-1"); return }, s)
	if v.Receipt == nil || v.Lease != nil || len(v.Others) != 19 {
		t.Fatalf("View = receipt %v, lease %v, %d others; want a receipt, no lease, 19 others", v.Receipt != nil, v.Lease, len(v.Others))
	}
	var l receipt.Lease
	count("AcquireAt", 2, func(s *Store) (err error) {
		l, _, err = s.AcquireAt(ctx, target, owner("run-1"), time.Minute, v.Version)
		return
	}, s)
	count("WriteRelease", 2, func(s *Store) error { return s.WriteRelease(ctx, newReceipt("preview", "pr-1", "run-1"), l) }, s)
	if cur, err := s.Lease(ctx, target); err != nil || cur != nil {
		t.Fatalf("after WriteRelease the lease is %v, %v", cur, err)
	}
	r, ver, err := s.Read(ctx, "preview", "pr-1")
	if err != nil || r.RunID != "run-1" {
		t.Fatalf("Read after WriteRelease = %v, %v", r, err)
	}
	// The next run writes nothing: one View, one WriteAt, no lease.
	s2, err := New(ctx, Options{URL: rem.url, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	count("View", 1, func(s *Store) (err error) { v, err = s.View(ctx, "preview", "pr-1"); return }, s2)
	if v.Version != ver {
		t.Fatalf("View's version %s, Read's %s", v.Version, ver)
	}
	count("WriteAt", 2, func(s *Store) error { return s.WriteAt(ctx, newReceipt("preview", "pr-1", "run-2"), v.Version) }, s2)
	if h, err := s.History(ctx, target); err != nil || len(h) == 0 || h[len(h)-1].RunID != "run-2" {
		t.Fatalf("History = %+v, %v", h, err)
	}
}

// AcquireAt and WriteAt refuse a scope that changed since the version
// given — another receipt written, or a lease taken — with STORE_CONTENDED
// naming the move, and write nothing.
func TestSessionsRefuseAMovedScope(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rem := newRemote(t, tr)
			clock := clock.NewFake(start)
			a, b := newStore(t, rem.url, clock), newStore(t, rem.url, clock)
			target := receipt.ScopeTarget("preview", "pr-1")
			v, err := a.View(ctx, "preview", "pr-1")
			if err != nil || v.Version != "" {
				t.Fatalf("View of nothing = %+v, %v", v, err)
			}
			// b writes a receipt after a's read.
			l := mustLease(t, b, target, "run-b", time.Minute)
			if err := b.WriteRelease(ctx, newReceipt("preview", "pr-1", "run-b"), l); err != nil {
				t.Fatal(err)
			}
			wantMoved := func(err error, what string) {
				t.Helper()
				e := wantCode(t, err, errs.STORE_CONTENDED, what)
				if e.Details["detail"] != receipt.DetailMoved {
					t.Errorf("%s: details %v", what, e.Details)
				}
			}
			_, _, err = a.AcquireAt(ctx, target, owner("run-a"), time.Minute, v.Version)
			wantMoved(err, "AcquireAt after another run's write")
			wantMoved(a.WriteAt(ctx, newReceipt("preview", "pr-1", "run-a"), v.Version), "WriteAt after another run's write")
			if r, _, _ := a.Read(ctx, "preview", "pr-1"); r == nil || r.RunID != "run-b" {
				t.Fatalf("the other run's receipt was replaced: %+v", r)
			}
			// Read again: now a lease taken after the read makes WriteAt fail.
			v, err = a.View(ctx, "preview", "pr-1")
			if err != nil {
				t.Fatal(err)
			}
			l = mustLease(t, b, target, "run-c", time.Minute)
			wantMoved(a.WriteAt(ctx, newReceipt("preview", "pr-1", "run-a"), v.Version), "WriteAt under another run's lease")
			_, _, err = a.AcquireAt(ctx, target, owner("run-a"), time.Minute, v.Version)
			if !errors.Is(err, errs.LOCK_HELD) {
				t.Fatalf("AcquireAt of a held lease: %v, want LOCK_HELD", err)
			}
			if err := b.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			// The version of the read after the release is current again.
			v, _ = a.View(ctx, "preview", "pr-1")
			if err := a.WriteAt(ctx, newReceipt("preview", "pr-1", "run-a"), v.Version); err != nil {
				t.Fatalf("WriteAt at the current version: %v", err)
			}
		})
	}
}

// RecentHistory returns the newest runs as History does, without fetching
// the whole branch when a shallow fetch holds them.
func TestRecentHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rem := newRemote(t, "http")
	s := newStore(t, rem.url, clock.NewFake(start))
	target := receipt.ScopeTarget("preview", "pr-1")
	for i := 0; i < 12; i++ {
		run := fmt.Sprintf("run-%02d", i)
		if i%3 == 0 { // some runs take the lease: three commits
			l := mustLease(t, s, target, run, time.Minute)
			if err := s.WriteRelease(ctx, newReceipt("preview", "pr-1", run), l); err != nil {
				t.Fatal(err)
			}
			continue
		}
		v, err := s.View(ctx, "preview", "pr-1")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteAt(ctx, newReceipt("preview", "pr-1", run), v.Version); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.History(ctx, target)
	if err != nil || len(all) != 12 {
		t.Fatalf("History: %d events, %v", len(all), err)
	}
	for _, n := range []int{1, 5, 11, 12, 40, 0} {
		fresh := newStore(t, rem.url, clock.NewFake(start))
		got, more, err := fresh.RecentHistory(ctx, target, n)
		if err != nil {
			t.Fatal(err)
		}
		want := all
		if n > 0 && n < len(all) {
			want = all[len(all)-n:]
		}
		if len(got) != len(want) || more != (n > 0 && n < len(all)) {
			t.Fatalf("RecentHistory(%d) = %d events, more %v; want %d", n, len(got), more, len(want))
		}
		if n == 1 {
			// Read what it prints: a shallow fetch, not the branch.
			commits := fresh.objects.Count(plumbing.CommitObject)
			if commits > 4*n+4 {
				t.Errorf("RecentHistory(1) fetched %d commits of the branch", commits)
			}
		}
		for i := range want {
			if got[i].RunID != want[i].RunID || got[i].Version != want[i].Version {
				t.Fatalf("RecentHistory(%d)[%d] = %+v, want %+v", n, i, got[i], want[i])
			}
		}
	}
}

// AcquireAtWith takes the lease and writes the run's receipt in one commit
// (one push after a View): both land or neither. A scope that moved since
// the read, or a live lease of another run, refuses it and leaves the
// branch as it was; a live lease of the same run is this very step landed
// (its answer lost), reported as LOCK_HELD naming the run, whatever the
// version; an expired lease is taken over.
func TestAcquireAtWith(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rem := newRemote(t, "http")
	clock := clock.NewFake(start)
	s := newStore(t, rem.url, clock)
	target := receipt.ScopeTarget("preview", "pr-1")
	ref := refOf(target).String()
	v, err := s.View(ctx, "preview", "pr-1")
	if err != nil {
		t.Fatal(err)
	}
	before := rem.srv.Requests()
	ck := newReceipt("preview", "pr-1", "run-1", "k1")
	ck.Status = receipt.StatusFailed // a checkpoint: the run is not over
	ck.Ledger[0].CreatedBy = receipt.CreatedByIntent
	l, pre, err := s.AcquireAtWith(ctx, target, owner("run-1"), time.Minute, v.Version, ck)
	if err != nil || pre != nil || l.Holder != "run-1" {
		t.Fatalf("AcquireAtWith = %+v, %v, %v", l, pre, err)
	}
	if got := rem.srv.Requests() - before; got != 2 {
		t.Errorf("AcquireAtWith after a View: %d requests, want one push (2): %v", got, rem.srv.Log()[before:])
	}
	if n := reachable(t, rem.dir, ref); n != 1 {
		t.Errorf("the branch has %d commits, want 1 (the lease and the receipt)", n)
	}
	r, ver, err := s.Read(ctx, "preview", "pr-1")
	if err != nil || r == nil || r.RunID != "run-1" || len(r.Ledger) != 1 || r.Ledger[0].CreatedBy != receipt.CreatedByIntent {
		t.Fatalf("Read after AcquireAtWith = %+v, %v", r, err)
	}
	if cur, err := s.Lease(ctx, target); err != nil || cur == nil || !cur.Same(l) {
		t.Fatalf("the stored lease = %+v, %v; want %+v", cur, err, l)
	}
	h, err := s.History(ctx, target)
	if err != nil || len(h) != 1 || h[0].RunID != "run-1" || h[0].Generation != l.Generation {
		t.Fatalf("History = %+v, %v; want run-1's checkpoint at generation %d", h, err, l.Generation)
	}

	// The same step again (its answer was lost, the run cannot tell): the
	// run's own live lease, although the version moved.
	_, _, err = s.AcquireAtWith(ctx, target, owner("run-1"), time.Minute, v.Version, ck)
	if held, ok := receipt.HeldLease(err); !ok || held.Holder != "run-1" || held.Generation != l.Generation {
		t.Fatalf("AcquireAtWith of the run's own lease: %v, want LOCK_HELD naming run-1", err)
	}
	// Another run, at the version it read, under run-1's live lease.
	_, _, err = s.AcquireAtWith(ctx, target, owner("run-2"), time.Minute, ver, newReceipt("preview", "pr-1", "run-2"))
	wantCode(t, err, errs.LOCK_HELD, "AcquireAtWith under another run's lease")
	// At a version that is not the receipt's any more.
	if err := s.WriteRelease(ctx, newReceipt("preview", "pr-1", "run-1"), l); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.AcquireAtWith(ctx, target, owner("run-2"), time.Minute, ver, newReceipt("preview", "pr-1", "run-2"))
	if e := wantCode(t, err, errs.STORE_CONTENDED, "AcquireAtWith after another run's write"); e.Details["detail"] != receipt.DetailMoved {
		t.Errorf("details %v", e.Details)
	}
	if r, _, _ := s.Read(ctx, "preview", "pr-1"); r == nil || r.RunID != "run-1" {
		t.Fatalf("a refused AcquireAtWith wrote its receipt: %+v", r)
	}
	if cur, _ := s.Lease(ctx, target); cur != nil {
		t.Fatalf("a refused AcquireAtWith took the lease: %+v", cur)
	}
	if n := reachable(t, rem.dir, ref); n != 2 {
		t.Errorf("the branch has %d commits, want 2: nothing refused was written", n)
	}

	// An expired lease is taken over, the receipt written with the new one.
	_, ver, _ = s.Read(ctx, "preview", "pr-1")
	dead := mustLease(t, s, target, "run-dead", time.Minute)
	clock.Advance(2 * time.Minute)
	l3, pre, err := s.AcquireAtWith(ctx, target, owner("run-3"), time.Minute, ver, newReceipt("preview", "pr-1", "run-3"))
	if err != nil || pre == nil || !pre.Same(dead) || l3.Generation <= dead.Generation {
		t.Fatalf("AcquireAtWith over an expired lease = %+v, %+v, %v", l3, pre, err)
	}
	if r, _, _ := s.Read(ctx, "preview", "pr-1"); r == nil || r.RunID != "run-3" {
		t.Fatalf("Read after the takeover = %+v", r)
	}
	// A receipt of another scope is refused before anything is sent.
	_, _, err = s.AcquireAtWith(ctx, receipt.ScopeTarget("preview", "pr-2"), owner("run-4"), time.Minute, "", newReceipt("preview", "pr-1", "run-4"))
	wantCode(t, err, errs.INTERNAL, "AcquireAtWith of another scope's receipt")
}
