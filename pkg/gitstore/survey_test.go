package gitstore

import (
	"context"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
)

// A survey sees every scope branch's shape (receipt, lease, age) with no
// receipt's blob; ReadSurveyed reads the scopes asked for, with their
// leases, in one packfile request on the survey's listing over HTTP; and
// PruneSurveyed deletes only the old tombstones among them, asking
// nothing when there are none.
func TestSurveyReadsOnlyWhatItIsAskedFor(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctx := context.Background()
			rem := newRemote(t, tr)
			clock := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
			w := newStore(t, rem.url, clock)
			for _, sc := range []string{"pr-1", "pr-2", "pr-3"} {
				l := mustLease(t, w, receipt.ScopeTarget("preview", sc), "run-"+sc, time.Hour)
				r := newReceipt("preview", sc, "run-"+sc, "k-"+sc)
				if sc == "pr-3" {
					r.Ledger, r.Closed = nil, &receipt.Tombstone{By: "test", At: clock.Now()}
				}
				if sc == "pr-2" {
					if err := w.Write(ctx, r, l); err != nil { // pr-2 keeps its lease
						t.Fatal(err)
					}
					continue
				}
				if err := w.WriteRelease(ctx, r, l); err != nil {
					t.Fatal(err)
				}
			}
			clock.Advance(20 * 24 * time.Hour)

			s := newStore(t, rem.url, clock)
			sv, err := s.Survey(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(sv.Scopes) != 3 {
				t.Fatalf("surveyed %+v, want 3 scopes", sv.Scopes)
			}
			for _, sc := range sv.Scopes {
				if !sc.HasReceipt || sc.Locked != (sc.Scope == "pr-2") || clock.Now().Sub(sc.At) < 19*24*time.Hour {
					t.Errorf("surveyed %s: receipt %v, locked %v, written %v", sc.Scope, sc.HasReceipt, sc.Locked, sc.At)
				}
			}
			before := s.wire.RoundTrips()
			states, err := s.ReadSurveyed(ctx, sv, []receipt.Target{receipt.ScopeTarget("preview", "pr-2"), receipt.ScopeTarget("preview", "pr-3")})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.wire.RoundTrips() - before; tr == "http" && got != 1 {
				t.Errorf("ReadSurveyed: %d round trips, want 1 (the packfile, on the survey's listing)", got)
			}
			if len(states) != 2 || states[0].Scope != "pr-2" || states[0].Lease == nil || states[0].Receipt == nil ||
				states[1].Scope != "pr-3" || states[1].Lease != nil || !Tombstoned(states[1].Receipt) {
				t.Fatalf("states: %+v", states)
			}
			before = s.wire.RoundTrips()
			if pruned, err := s.PruneSurveyed(ctx, states[:1], 14*24*time.Hour); err != nil || len(pruned) != 0 || s.wire.RoundTrips() != before {
				t.Errorf("prune of a live scope: %v, %v, %d round trips", pruned, err, s.wire.RoundTrips()-before)
			}
			pruned, err := s.PruneSurveyed(ctx, states, 14*24*time.Hour)
			if err != nil || len(pruned) != 1 || pruned[0].Scope != "pr-3" {
				t.Fatalf("pruned %+v, %v; want pr-3", pruned, err)
			}
			if refs, err := s.Scopes(ctx); err != nil || len(refs) != 2 {
				t.Errorf("scopes after pruning: %+v, %v", refs, err)
			}
		})
	}
}
