package costs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/sim"
)

// BenchmarkSteadyApply is `sponson apply` of the 20-line plan when nothing
// changed, through the CLI, against the fake cloud and git http-backend.
func BenchmarkSteadyApply(b *testing.B) { benchApplied(b, "apply") }

// BenchmarkPlan is `sponson plan` of the same scope.
func BenchmarkPlan(b *testing.B) { benchApplied(b, "plan") }

// benchApplied times command on the scope of the 20-line plan, applied
// once before the timer starts.
func benchApplied(b *testing.B, command string) {
	w := newWorld(b, plan20)
	w.run("apply", "--pr", "1")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.run(command, "--pr", "1")
	}
}

// BenchmarkStoreFloor is what any apply must pay the receipts remote: one
// fetch of the scope and one conditional push of its receipt (a new store,
// one View, one WriteAt: four HTTP requests), on the same remote.
func BenchmarkStoreFloor(b *testing.B) {
	w := newWorld(b, plan20)
	w.run("apply", "--pr", "1")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		storeFloor(b, w)
	}
}

// storeFloor is one fetch of pr-1 and one conditional push of its receipt.
func storeFloor(b *testing.B, w *world) {
	ctx := context.Background()
	s, err := gitstore.New(ctx, gitstore.Options{URL: w.git.URL})
	if err != nil {
		b.Fatal(err)
	}
	v, err := s.View(ctx, "preview", "pr-1")
	if err != nil {
		b.Fatal(err)
	}
	r, _ := v.Receipt.Clone()
	r.RunID = "bench"
	if err := s.WriteAt(ctx, r, v.Version); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSteadyOverFloor times a steady apply and the store's floor in
// turn, pair by pair in one loop, so that the machine's drift falls on
// both alike: ratio is the steady applies' time over the floors'.
func BenchmarkSteadyOverFloor(b *testing.B) {
	w := newWorld(b, plan20)
	w.run("apply", "--pr", "1")
	var steady, floor time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		w.run("apply", "--pr", "1")
		t1 := time.Now()
		storeFloor(b, w)
		steady, floor = steady+t1.Sub(t0), floor+time.Since(t1)
	}
	b.ReportMetric(float64(steady.Microseconds())/1000/float64(b.N), "steady-ms")
	b.ReportMetric(float64(floor.Microseconds())/1000/float64(b.N), "floor-ms")
	b.ReportMetric(float64(steady)/float64(floor), "ratio")
}

// BenchmarkApply12Independent applies, from nothing, 12 independent
// http.resource lines against the fake cloud with 20 ms on every provider
// request and the receipts on git http-backend, at the default
// parallelism and with every line at once. Its critical path is one line:
// a read and a create (40 ms), the lease with the intents (one commit) and
// the final write.
//
// Between the applies, untimed, it times one fenced write (a receipt of
// the same plan written under a lease held, by a store that knows the
// branch's tip: one push) on the same remote, and reports x-bound: the apply's time over
// issue 11's bound, 1.3 × (depth × 40 ms + (depth + 1) × one fenced
// write), where depth is the waves of the schedule (1 with every line at
// once, 3 four at a time) — each apply against the writes timed beside it.
func BenchmarkApply12Independent(b *testing.B) {
	for _, par := range []int{4, 12} {
		b.Run(fmt.Sprint("parallelism=", par), func(b *testing.B) {
			w := newWorld(b, independentPlan(12))
			w.cloud.MustAddRule(sim.Rule{Kind: sim.KindLatency, Provider: sim.ProviderHTTP, Latency: sim.Duration(20 * time.Millisecond)})
			// One apply first: its receipt is the one the fence writes.
			w.run("apply", "--pr", "1000", "--parallelism", fmt.Sprint(par))
			fence := newFence(b, w, "pr-1000")
			b.ResetTimer()
			commits := 0
			var applied, fenced time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				fenced += fence()
				c0 := w.commits()
				b.StartTimer()
				t0 := time.Now()
				w.run("apply", "--pr", fmt.Sprint(i+1), "--parallelism", fmt.Sprint(par))
				applied += time.Since(t0)
				b.StopTimer()
				commits += w.commits() - c0
				b.StartTimer()
			}
			// The lease with the intent checkpoints, then the final write:
			// with every line's intent in the lease's commit, 2
			// (TestIndependentCreatesCosts).
			b.ReportMetric(float64(commits)/float64(b.N), "commits/op")
			write := fenced / time.Duration(b.N)
			b.ReportMetric(float64(write.Microseconds())/1000, "fenced-write-ms")
			waves := time.Duration((12 + par - 1) / par) // the lines par at a time: the schedule's depth
			bound := 1.3 * float64(waves*40*time.Millisecond+(waves+1)*write)
			b.ReportMetric(float64(applied)/float64(b.N)/bound, "x-bound")
		})
	}
}

// newFence returns a function that writes the receipt of scope like (of
// the environment preview) again, under a lease held on a scope of its
// own, by one store that knows the tip (one push), and returns how long
// the write took.
func newFence(b *testing.B, w *world, like string) func() time.Duration {
	ctx := context.Background()
	s, err := gitstore.New(ctx, gitstore.Options{URL: w.git.URL})
	if err != nil {
		b.Fatal(err)
	}
	r, _, err := s.Read(ctx, "preview", like)
	if err != nil || r == nil {
		b.Fatalf("read %s: %v, %v", like, r, err)
	}
	r.Env, r.Scope, r.RunID = "fence", "main", "fence"
	target := r.Target()
	l, _, err := s.Acquire(ctx, target, receipt.Owner{RunID: "fence", Kind: receipt.KindCLI}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	return func() time.Duration {
		t0 := time.Now()
		if err := s.Write(ctx, r, l); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
}

// BenchmarkPlan20Latency plans the 20-line plan, applied, with 100 ms on
// every provider request (the fake cloud's chaos latency), at
// parallelism 1 (one line at a time, as plan used to read), 4 (apply's
// default) and the default (no --parallelism: plan's own,
// engine.DefaultPlanParallelism). Each line reads with one request and
// the four list items share one read of their parent, so the plan's
// critical path is two requests: a resource, then the list its item
// depends on. It reports x-critical: the plan's time over that path,
// 2 × 100 ms plus the floor, the same plan without the latency (the
// store's reads and the work in this process), timed beside it.
func BenchmarkPlan20Latency(b *testing.B) {
	for _, par := range []string{"1", "4", "default"} {
		b.Run("parallelism="+par, func(b *testing.B) {
			w := newWorld(b, plan20)
			w.run("apply", "--pr", "1")
			args := []string{"plan", "--pr", "1"}
			if par != "default" {
				args = append(args, "--parallelism", par)
			}
			b.ResetTimer()
			var planned, floor time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				t0 := time.Now()
				w.run(args...)
				floor += time.Since(t0)
				id := w.cloud.MustAddRule(sim.Rule{Kind: sim.KindLatency, Provider: sim.ProviderHTTP, Latency: sim.Duration(100 * time.Millisecond)})
				b.StartTimer()
				t0 = time.Now()
				w.run(args...)
				planned += time.Since(t0)
				b.StopTimer()
				w.cloud.Release(id)
				b.StartTimer()
			}
			n := time.Duration(b.N)
			critical := 2*100*time.Millisecond + floor/n
			b.ReportMetric(float64((planned/n).Microseconds())/1000, "plan-ms")
			b.ReportMetric(float64((floor/n).Microseconds())/1000, "floor-ms")
			b.ReportMetric(float64(planned/n)/float64(critical), "x-critical")
		})
	}
}
