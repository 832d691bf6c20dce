package gitstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
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
				rt := s.wire.RoundTrips()
				for i := 0; i < b.N; i++ {
					r.Status = receipt.Status(fmt.Sprintf("step-%d", i))
					if err := s.Write(ctx, r, l); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(s.wire.RoundTrips()-rt)/float64(b.N), "round-trips/op")
				b.ReportMetric(advBytes, "adv-bytes")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/Read", tr, n), func(b *testing.B) {
				s := newStore(b, rem.url, nil)
				if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil { // warm: the tip is in memory
					b.Fatal(err)
				}
				b.ResetTimer()
				rt := s.wire.RoundTrips()
				for i := 0; i < b.N; i++ {
					if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(s.wire.RoundTrips()-rt)/float64(b.N), "round-trips/op")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/ReadCold", tr, n), func(b *testing.B) {
				rt := int64(0)
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					s := newStore(b, rem.url, nil)
					before := s.wire.RoundTrips()
					b.StartTimer()
					if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil {
						b.Fatal(err)
					}
					rt += s.wire.RoundTrips() - before
				}
				b.ReportMetric(float64(rt)/float64(b.N), "round-trips/op")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/ListCold", tr, n), func(b *testing.B) {
				rt := int64(0)
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					s := newStore(b, rem.url, nil)
					before := s.wire.RoundTrips()
					b.StartTimer()
					list, err := s.List(ctx, "preview")
					if err != nil || len(list) != n {
						b.Fatalf("List: %d receipts, %v", len(list), err)
					}
					rt += s.wire.RoundTrips() - before
				}
				b.ReportMetric(float64(rt)/float64(b.N), "round-trips/op")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/ListWarm", tr, n), func(b *testing.B) {
				s := newStore(b, rem.url, nil)
				if _, err := s.List(ctx, "preview"); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				rt := s.wire.RoundTrips()
				for i := 0; i < b.N; i++ {
					if _, err := s.List(ctx, "preview"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(s.wire.RoundTrips()-rt)/float64(b.N), "round-trips/op")
			})
			b.Run(fmt.Sprintf("%s/branches=%d/Advertisement", tr, n), func(b *testing.B) {
				// The floor under every operation: one ref listing and
				// nothing else.
				s := newStore(b, rem.url, nil)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.wire.Fetch(ctx, storeRefs(func(string) bool { return false }), fetchNone); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(1, "round-trips/op")
			})
		}
	}
}

// packBytes is the size of the packfile that holds everything reachable
// from ref in repository dir: what a fetch of the branch's whole history
// (History, Recorded) receives.
func packBytes(t testing.TB, dir, ref string) int {
	t.Helper()
	objs := gittest.Run(t, dir, "rev-list", "--objects", ref)
	return len(gittest.RunInput(t, dir, []byte(objs), "pack-objects", "--stdout", "-q"))
}

// BenchmarkBranchAt10000Runs measures a scope's branch at 10,000 runs
// (issue 11). Before: a branch from before compaction, 10,000 commits built
// with git fast-import. Compact: the first write of this store on it (a
// fresh such branch each iteration), which squashes it. After: that branch
// written on until it is at its bound again (DefaultMaxDepth commits, its
// largest), then: History (the whole-history read), a steady write, and
// the commits reachable from the tip (commits) and the size of a fetch of
// its whole history (fetch-bytes). round-trips/op counts the network round
// trips of the write alone.
//
//	go test ./pkg/gitstore -run '^$' -bench BranchAt10000Runs -benchtime 3x
func BenchmarkBranchAt10000Runs(b *testing.B) {
	const runs = 10000
	ctx := context.Background()
	target := receipt.ScopeTarget("preview", "pr-1")
	ref := refOf(target).String()
	write := func(b *testing.B, s *Store, run string) int64 {
		_, v, err := s.Read(ctx, "preview", "pr-1")
		if err != nil {
			b.Fatal(err)
		}
		rt := s.wire.RoundTrips()
		if err := s.WriteAt(ctx, newReceipt("preview", "pr-1", run, "a"), v); err != nil {
			b.Fatal(err)
		}
		return s.wire.RoundTrips() - rt
	}
	for _, tr := range transports {
		rem := newRemote(b, tr)
		seedRuns(b, rem.dir, "preview", "pr-1", runs)
		history := func(b *testing.B) {
			s := newStore(b, rem.url, nil)
			for i := 0; i < b.N; i++ {
				if _, err := s.History(ctx, target); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(reachable(b, rem.dir, ref)), "commits")
			b.ReportMetric(float64(packBytes(b, rem.dir, ref)), "fetch-bytes")
		}
		b.Run(fmt.Sprintf("%s/runs=%d/before/History", tr, runs), history)
		b.Run(fmt.Sprintf("%s/runs=%d/before/Compact", tr, runs), func(b *testing.B) {
			var rt int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				old := newRemote(b, tr)
				seedRuns(b, old.dir, "preview", "pr-1", runs)
				s := newStore(b, old.url, nil)
				if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				rt += write(b, s, "compact")
				b.StopTimer()
				if c := reachable(b, old.dir, ref); c != 2 {
					b.Fatalf("after the compacting write the branch reaches %d commits, want 2", c)
				}
			}
			b.ReportMetric(float64(rt)/float64(b.N), "round-trips/op")
		})
		// The shared remote: compacted, then written on up to its bound.
		s := newStore(b, rem.url, nil)
		write(b, s, "compact")
		for i := 0; reachable(b, rem.dir, ref) < DefaultMaxDepth; i++ {
			write(b, s, fmt.Sprintf("fill-%d", i))
		}
		b.Run(fmt.Sprintf("%s/runs=%d/after/History", tr, runs), history)
		b.Run(fmt.Sprintf("%s/runs=%d/after/Write", tr, runs), func(b *testing.B) {
			// Steady writes; one in DefaultMaxDepth compacts again (its
			// fetch is in the average).
			var rt int64
			for i := 0; i < b.N; i++ {
				rt += write(b, s, fmt.Sprintf("steady-%d", i))
			}
			b.ReportMetric(float64(rt)/float64(b.N), "round-trips/op")
			if c := reachable(b, rem.dir, ref); c > DefaultMaxDepth {
				b.Fatalf("the branch reaches %d commits, bound %d", c, DefaultMaxDepth)
			}
		})
	}
}
