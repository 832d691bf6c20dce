package engine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/redact"
)

// plan20 is a 20-line plan: ten objects, each with an item in a shared
// list that takes its URL (a chain of pairs).
func plan20() string {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "  - { id: o%d, adapter: fake, op: object, name: \"o%d-${ctx.scope}\", fields: { v: %d, s: { secret: \"env://API_KEY\" } } }\n", i, i, i)
		fmt.Fprintf(&b, "  - { id: i%d, adapter: fake, op: item, list: callbacks, item: { from: o%d.url } }\n", i, i)
	}
	return b.String()
}

func benchWorld(b *testing.B) *world {
	w := &world{t: &testing.T{}, tm: enginetest.NewTime(t0), cloud: optest.New(), red: redact.New(),
		env: map[string]string{"API_KEY": theSecret}}
	w.store = memstore.New(w.tm)
	w.eng = w.engine(w.store)
	w.eng.UnsavedDir = b.TempDir()
	w.eng.Progress = nil
	return w
}

func BenchmarkApply20Steady(b *testing.B) {
	w := benchWorld(b)
	p := mustPlanB(b, plan20())
	if _, err := w.eng.Apply(context.Background(), p, prCtx(1), Options{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.eng.Apply(context.Background(), p, prCtx(1), Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := len(w.cloud.Writes()); n != 20 {
		b.Fatalf("steady state wrote: %d writes in all, want the first run's 20", n)
	}
}

func BenchmarkApply20Scratch(b *testing.B) {
	p := mustPlanB(b, plan20())
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := benchWorld(b) // a new world each time: everything is created
		b.StartTimer()
		if _, err := w.eng.Apply(context.Background(), p, prCtx(1), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlan20Steady(b *testing.B) {
	w := benchWorld(b)
	p := mustPlanB(b, plan20())
	if _, err := w.eng.Apply(context.Background(), p, prCtx(1), Options{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.eng.Plan(context.Background(), p, prCtx(1), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlan20Scratch(b *testing.B) {
	w := benchWorld(b)
	p := mustPlanB(b, plan20())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.eng.Plan(context.Background(), p, prCtx(1), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func mustPlanB(b *testing.B, src string) *planT {
	b.Helper()
	p, err := parsePlan(src)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchLatency is the injected provider latency of the parallel benchmark:
// every object write takes this long (reads are immediate). 20 ms, or
// SPONSON_BENCH_LATENCY (a Go duration: "100ms").
func benchLatency() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("SPONSON_BENCH_LATENCY")); err == nil && d > 0 {
		return d
	}
	return 20 * time.Millisecond
}

// BenchmarkApplyParallel applies a 20-line plan from scratch against the
// fake cloud with benchLatency on every object write, at several
// parallelisms. The plan is a wide DAG: 4 roots, 16 lines that each take
// a root's URL, so its critical path is 2 writes. x-critical-path is the
// time per apply over critical path × latency (the goal: within 1.3 when
// the parallelism covers the DAG's width). Results: docs/performance-engine.md.
func BenchmarkApplyParallel(b *testing.B) {
	p := mustPlanB(b, widePlan(4, 16))
	latency := benchLatency()
	critical := 2 * latency
	for _, par := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				w := benchWorld(b)
				w.cloud.SetLatency(optest.OpObject, latency)
				b.StartTimer()
				start := time.Now()
				res, err := w.eng.Apply(context.Background(), p, prCtx(1), Options{Parallelism: par})
				total += time.Since(start)
				if err != nil || len(res.Receipt.Ledger) != 20 {
					b.Fatalf("apply: %v", err)
				}
			}
			b.ReportMetric(float64(total)/float64(b.N)/float64(critical), "x-critical-path")
		})
	}
}
