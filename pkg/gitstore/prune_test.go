package gitstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
)

func TestPrune(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rem := newRemote(t, tr)
			clock := clock.NewFake(start)
			s := newStore(t, rem.url, clock)
			write := func(scope string, mutate func(*receipt.Receipt), keep bool) receipt.Lease {
				t.Helper()
				l := mustLease(t, s, receipt.ScopeTarget("preview", scope), "run-"+scope, time.Hour)
				r := newReceipt("preview", scope, "run-"+scope)
				mutate(r)
				if err := s.Write(ctx, r, l); err != nil {
					t.Fatal(err)
				}
				if !keep {
					if err := s.Release(ctx, l); err != nil {
						t.Fatal(err)
					}
				}
				return l
			}
			closed := func(r *receipt.Receipt) { r.Closed = &receipt.Tombstone{By: "bot", At: clock.Now()} }
			destroyed := func(r *receipt.Receipt) { r.Destroyed, r.Operation = true, receipt.OpDestroy }
			write("closed", closed, false)
			write("destroyed", destroyed, false)
			write("destroyed-leftovers", func(r *receipt.Receipt) {
				destroyed(r)
				r.Ledger = receipt.Ledger{{Adapter: "neon", Op: "branch", Key: "left", CreatedBy: receipt.CreatedBySponson}}
			}, false)
			write("open", func(*receipt.Receipt) {}, false)
			write("live-lease", closed, true)
			clock.Advance(-time.Hour) // this lease expired long before the sweep
			write("expired-lease", closed, true)
			clock.Advance(time.Hour)
			write("moved", closed, false)
			clock.Advance(10 * 24 * time.Hour)
			write("recent", closed, false)
			// The live lease is renewed: it is still held at the sweep.
			live, err := s.Lease(ctx, receipt.ScopeTarget("preview", "live-lease"))
			if err != nil || live == nil {
				t.Fatal(live, err)
			}
			if _, err := s.Renew(ctx, *live); err != nil {
				t.Fatal(err)
			}
			clock.Advance(5 * 24 * time.Hour)
			_ = mustLease(t, s, receipt.ParentTarget("auth0:t:client:c"), "run-p", time.Minute)

			// "moved" is written by someone else between the sweep's read
			// and its delete: the compare-and-swap keeps it.
			moveOnceHook(t, rem.dir, refOf(receipt.ScopeTarget("preview", "moved")).String())
			pruned, err := s.Prune(ctx, 14*24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pruned {
				got = append(got, p.Scope)
			}
			if want := []string{"closed", "destroyed", "expired-lease"}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("pruned %v, want %v", got, want)
			}
			if movedTo(t, rem.dir) == "" {
				t.Fatal("the hook did not run")
			}
			refs := gittest.Refs(t, rem.dir, RefPrefix)
			for _, scope := range []string{"closed", "destroyed", "expired-lease"} {
				if _, ok := refs[refOf(receipt.ScopeTarget("preview", scope)).String()]; ok {
					t.Errorf("%s was reported pruned but its branch is still there", scope)
				}
			}
			for _, scope := range []string{"destroyed-leftovers", "open", "live-lease", "moved", "recent"} {
				if _, ok := refs[refOf(receipt.ScopeTarget("preview", scope)).String()]; !ok {
					t.Errorf("%s was deleted", scope)
				}
			}
			if _, ok := refs[refOf(receipt.ParentTarget("auth0:t:client:c")).String()]; !ok {
				t.Error("a parent lock branch was deleted")
			}
			// The next sweep judges the moved branch again: still
			// tombstoned, old and free, it goes.
			if again, err := s.Prune(ctx, 14*24*time.Hour); err != nil || len(again) != 1 || again[0].Scope != "moved" {
				t.Errorf("second Prune = %v, %v; want [moved]", again, err)
			}
			if again, err := s.Prune(ctx, 14*24*time.Hour); err != nil || len(again) != 0 {
				t.Errorf("third Prune = %v, %v; want nothing", again, err)
			}
			gittest.Fsck(t, rem.dir)
		})
	}
}

func TestTombstoned(t *testing.T) {
	t.Parallel()
	cases := []struct {
		r    *receipt.Receipt
		want bool
	}{
		{nil, false},
		{&receipt.Receipt{}, false},
		{&receipt.Receipt{Closed: &receipt.Tombstone{By: "bot"}}, true},
		{&receipt.Receipt{Destroyed: true}, true},
		{&receipt.Receipt{Destroyed: true, Ledger: receipt.Ledger{{Key: "x"}}}, false},
	}
	for i, c := range cases {
		if got := Tombstoned(c.r); got != c.want {
			t.Errorf("case %d: Tombstoned = %v, want %v", i, got, c.want)
		}
	}
}
