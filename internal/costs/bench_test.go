package costs_test

import (
	"context"
	"testing"

	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

// BenchmarkSteadyApply is `sponson apply` of the 20-line plan when nothing
// changed, through the CLI, against the fake cloud and git http-backend.
func BenchmarkSteadyApply(b *testing.B) {
	w := newWorld(b, plan20)
	w.run("apply", "--pr", "1")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.run("apply", "--pr", "1")
	}
}

// BenchmarkPlan is `sponson plan` of the same scope.
func BenchmarkPlan(b *testing.B) {
	w := newWorld(b, plan20)
	w.run("apply", "--pr", "1")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.run("plan", "--pr", "1")
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
	_ = receipt.FormatVersion
}
