package sweep

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSweep500Scopes sweeps a repository with 500 scopes in the
// memory store: 400 pull requests still open (found in one listing of the
// open pull requests, nothing touched), 50 branch scopes whose branch
// still exists (one question each), and 50 closed pull requests. The first sweep destroys
// the closed ones (two questions and one teardown of two resources each,
// four at a time, sharing one parent list): reported as first-sweep-ms.
// The timed loop is the steady state: every later sweep, which judges all
// 500 and touches nothing. Setup (the applies) is not timed.
func BenchmarkSweep500Scopes(b *testing.B) {
	w := memWorld(b)
	for i := 1; i <= 450; i++ {
		w.apply("preview", i, fmt.Sprintf("feat/%d", i))
		if i > 400 {
			w.close(i)
		}
	}
	for i := 1; i <= 50; i++ {
		w.apply("preview", 0, fmt.Sprintf("keep/%d", i))
	}
	s := &Sweeper{Clock: w.tm, Concurrency: DefaultConcurrency, Retention: -1}
	start := time.Now()
	rep, err := s.Sweep(context.Background(), w.repo())
	first := time.Since(start)
	if err != nil || rep.Scopes != 500 || rep.Count(ClosedPR) != 50 {
		b.Fatalf("first sweep: %d scopes, %d destroyed, %v: %s", rep.Scopes, rep.Count(ClosedPR), err, kinds(rep))
	}
	w.gh.asks, w.gh.lists = 0, 0
	sweeps := 0
	for b.Loop() {
		rep, err := s.Sweep(context.Background(), w.repo())
		if err != nil || len(rep.Findings) != 0 {
			b.Fatalf("steady sweep: %v %s", err, kinds(rep))
		}
		sweeps++
	}
	b.ReportMetric(float64(first.Microseconds())/1000, "first-sweep-ms")
	b.ReportMetric(float64(w.gh.asks)/float64(sweeps), "pr-questions/sweep")
	b.ReportMetric(float64(w.gh.lists)/float64(sweeps), "open-pr-listings/sweep")
}
