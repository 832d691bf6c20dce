package gitstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/receipt"
)

// benchSizes are the numbers of scope branches the benchmarks run at
// (stores.md, "Cost and scale"). Each remote also holds as many parent-lock
// branches, so the ref advertisement carries twice as many refs.
var benchSizes = []int{1, 100, 1000, 5000}

// BenchmarkStore measures one fenced write, Read and List(env) at 1, 100,
// 1,000 and 5,000 scope branches over file:// and loopback HTTP, and
// reports the network round trips each takes (round-trips/op) and the size
// of the remote's ref advertisement (adv-bytes).
//
//	go test ./pkg/gitstore -run '^$' -bench . -benchtime 3x
func BenchmarkStore(b *testing.B) {
	for _, tr := range transports {
		for _, n := range benchSizes {
			rem := newRemote(b, tr)
			seed(b, rem.dir, "preview", n, true)
			ctx := context.Background()
			target := receipt.ScopeTarget("preview", "pr-1")
			advBytes := float64(len(advertisedRefs(b, rem.dir)))

			b.Run(fmt.Sprintf("%s/branches=%d/Write", tr, n), func(b *testing.B) {
				s := newStore(b, rem.url, nil)
				l, _, err := s.Acquire(ctx, target, owner("bench"), time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Release(ctx, l)
				r := newReceipt("preview", "pr-1", "bench", "a", "b")
				b.ResetTimer()
				rt := s.RoundTrips()
				for i := 0; i < b.N; i++ {
					r.Status = receipt.Status(fmt.Sprintf("step-%d", i))
					if err := s.Write(ctx, r, l); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(s.RoundTrips()-rt)/float64(b.N), "round-trips/op")
				b.ReportMetric(advBytes, "adv-bytes")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/Read", tr, n), func(b *testing.B) {
				s := newStore(b, rem.url, nil)
				if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil { // warm: the tip is in memory
					b.Fatal(err)
				}
				b.ResetTimer()
				rt := s.RoundTrips()
				for i := 0; i < b.N; i++ {
					if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(s.RoundTrips()-rt)/float64(b.N), "round-trips/op")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/ReadCold", tr, n), func(b *testing.B) {
				rt := int64(0)
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					s := newStore(b, rem.url, nil)
					before := s.RoundTrips()
					b.StartTimer()
					if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil {
						b.Fatal(err)
					}
					rt += s.RoundTrips() - before
				}
				b.ReportMetric(float64(rt)/float64(b.N), "round-trips/op")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/ListCold", tr, n), func(b *testing.B) {
				rt := int64(0)
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					s := newStore(b, rem.url, nil)
					before := s.RoundTrips()
					b.StartTimer()
					list, err := s.List(ctx, "preview")
					if err != nil || len(list) != n {
						b.Fatalf("List: %d receipts, %v", len(list), err)
					}
					rt += s.RoundTrips() - before
				}
				b.ReportMetric(float64(rt)/float64(b.N), "round-trips/op")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/ListWarm", tr, n), func(b *testing.B) {
				s := newStore(b, rem.url, nil)
				if _, err := s.List(ctx, "preview"); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				rt := s.RoundTrips()
				for i := 0; i < b.N; i++ {
					if _, err := s.List(ctx, "preview"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(s.RoundTrips()-rt)/float64(b.N), "round-trips/op")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/Advertisement", tr, n), func(b *testing.B) {
				// The floor under every operation: one ref listing and
				// nothing else.
				s := newStore(b, rem.url, nil)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.fetch(ctx, func(string) bool { return false }, fetchNone); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(1, "round-trips/op")
			})
		}
	}
}
