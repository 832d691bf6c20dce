package gitstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

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
	rem := newRemote(t, "http")
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
	clock := receipt.NewFakeClock(start)
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
			clock := receipt.NewFakeClock(start)
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
	s := newStore(t, rem.url, receipt.NewFakeClock(start))
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
		fresh := newStore(t, rem.url, receipt.NewFakeClock(start))
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
			commits := 0
			fresh.objects.mu.RLock()
			for _, o := range fresh.objects.objs {
				if o.Type() == plumbing.CommitObject {
					commits++
				}
			}
			fresh.objects.mu.RUnlock()
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
