package costs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/gitstore"
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
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
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
}

// BenchmarkApply12Independent applies, from nothing, 12 independent
// http.resource lines against the fake cloud with 20 ms on every provider
// request and the receipts on git http-backend, at the default
// parallelism and with every line at once. Its critical path is one line:
// a read and a create (40 ms), the lease with the intents (one commit) and
// the final write.
func BenchmarkApply12Independent(b *testing.B) {
	for _, par := range []string{"4", "12"} {
		b.Run("parallelism="+par, func(b *testing.B) {
			w := newWorld(b, independentPlan(12))
			w.cloud.MustAddRule(sim.Rule{Kind: sim.KindLatency, Provider: sim.ProviderHTTP, Latency: sim.Duration(20 * time.Millisecond)})
			b.ResetTimer()
			commits := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c0 := w.commits()
				b.StartTimer()
				w.run("apply", "--pr", fmt.Sprint(i+1), "--parallelism", par)
				b.StopTimer()
				commits += w.commits() - c0
				b.StartTimer()
			}
			// The lease with the intent checkpoints, then the final write:
			// with every line's intent in the lease's commit, 2
			// (TestIndependentCreatesCosts).
			b.ReportMetric(float64(commits)/float64(b.N), "commits/op")
		})
	}
}
