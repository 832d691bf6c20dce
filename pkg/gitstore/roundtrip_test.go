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

// List, Scopes and Locks take the same number of round trips at 1 and at 50
// branches: one ref listing and one packfile, never one per branch. Over
// HTTP the count is checked against the requests the server received.
func TestRoundTripsDoNotGrowWithBranches(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			counts := map[int]map[string]int64{}
			for _, n := range []int{1, 50} {
				rem := newRemote(t, tr, gittest.WithProtocolV0()) // v0's counts (v2's: protocol_test.go)
				seed(t, rem.dir, "preview", n, true)
				s := newStore(t, rem.url, clock.NewFake(start))
				counts[n] = map[string]int64{}
				measure := func(name string, fn func() error) {
					t.Helper()
					before, reqs := s.wire.RoundTrips(), int64(0)
					if rem.srv != nil {
						reqs = rem.srv.Requests()
					}
					if err := fn(); err != nil {
						t.Fatalf("%d branches: %s: %v", n, name, err)
					}
					got := s.wire.RoundTrips() - before
					counts[n][name] = got
					if rem.srv != nil {
						if http := rem.srv.Requests() - reqs; http != got {
							t.Errorf("%d branches: %s counted %d round trips, the server saw %d requests: %v", n, name, got, http, rem.srv.Log()[reqs:])
						}
					}
				}
				var list []receipt.Stored
				measure("List (cold)", func() (err error) { list, err = s.List(ctx, "preview"); return })
				measure("List (warm)", func() (err error) { list, err = s.List(ctx, "preview"); return })
				if len(list) != n {
					t.Fatalf("List returned %d receipts, want %d", len(list), n)
				}
				fresh := newStore(t, rem.url, clock.NewFake(start))
				s = fresh
				var scopes []receipt.ScopeRef
				var locks []receipt.Lease
				measure("Scopes (cold)", func() (err error) { scopes, err = s.Scopes(ctx); return })
				measure("Locks (warm)", func() (err error) { locks, err = s.Locks(ctx); return })
				if len(scopes) != n || len(locks) != n {
					t.Fatalf("%d scopes and %d locks, want %d each", len(scopes), len(locks), n)
				}
				s = newStore(t, rem.url, clock.NewFake(start))
				measure("Locks (cold)", func() (err error) { _, err = s.Locks(ctx); return })
				s = newStore(t, rem.url, clock.NewFake(start))
				measure("Read (cold)", func() error { _, _, err := s.Read(ctx, "preview", "pr-1"); return err })
				measure("Read (warm)", func() error { _, _, err := s.Read(ctx, "preview", "pr-1"); return err })
				var l receipt.Lease
				measure("Acquire", func() (err error) {
					l, _, err = s.Acquire(ctx, receipt.ScopeTarget("preview", "pr-1"), owner("run-1"), time.Minute)
					return
				})
				measure("Write", func() error { return s.Write(ctx, newReceipt("preview", "pr-1", "run-1"), l) })
				measure("Renew", func() (err error) { _, err = s.Renew(ctx, l); return })
				measure("Release", func() error { return s.Release(ctx, l) })
			}
			want := map[string]int64{
				"List (cold)": 2, "List (warm)": 1, "Scopes (cold)": 2, "Locks (warm)": 1, "Locks (cold)": 2,
				"Read (cold)": 2, "Read (warm)": 1,
				// Every mutation starts from the tip this store last saw
				// (here the Read's; then its own commits) and pushes:
				// advertisement + request. The push requires the remote to
				// be at that tip, so no read is needed first.
				"Acquire": 2, "Write": 2, "Renew": 2, "Release": 2,
			}
			if tr == "http" {
				// A new store's first read over HTTP uses the ref listing
				// of New's own exchange: only the packfile request is left.
				for _, cold := range []string{"List (cold)", "Scopes (cold)", "Locks (cold)", "Read (cold)"} {
					want[cold] = 1
				}
			}
			for name, w := range want {
				for _, n := range []int{1, 50} {
					if got := counts[n][name]; got != w {
						t.Errorf("%s at %d branches: %d round trips, want %d", name, n, got, w)
					}
				}
			}
			if testing.Verbose() {
				fmt.Printf("%s round trips at 1 and 50 branches: %v / %v\n", tr, counts[1], counts[50])
			}
		})
	}
}

// The store's count of round trips agrees with the server's for a fenced
// write over HTTP.
func TestRoundTripsMatchHTTPRequests(t *testing.T) {
	t.Parallel()
	rem := newRemote(t, "http")
	before := rem.srv.Requests()
	s := newStore(t, rem.url, clock.NewFake(start))
	l := mustLease(t, s, receipt.ScopeTarget("preview", "pr-1"), "run-1", time.Minute)
	if err := s.Write(context.Background(), newReceipt("preview", "pr-1", "run-1"), l); err != nil {
		t.Fatal(err)
	}
	if got, want := s.wire.RoundTrips(), rem.srv.Requests()-before; got != want {
		t.Fatalf("RoundTrips() = %d, the server saw %d requests:\n%v", got, want, rem.srv.Log())
	}
}
