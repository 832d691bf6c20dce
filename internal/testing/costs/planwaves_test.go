package costs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/sim"
)

// TestPlanReadsInWaves: plan reads the lines that depend on nothing at
// once, --parallelism of them, and still prints them in plan order. The
// reads of the resources are held at the fake cloud until four are
// waiting together, which a plan reading one line at a time never does.
func TestPlanReadsInWaves(t *testing.T) {
	t.Parallel()
	w := newWorld(t, plan20)
	w.run("apply", "--pr", "1")
	want := w.run("plan", "--pr", "1", "--parallelism", "1")
	id := w.cloud.MustAddRule(sim.Rule{Kind: sim.KindHold, Provider: sim.ProviderHTTP, Method: "GET", Path: "/flags/*"})
	done := make(chan string, 1)
	go func() { done <- w.run("plan", "--pr", "1", "--parallelism", "4") }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := w.cloud.WaitHeld(ctx, id, 4)
	w.cloud.Release(id)
	got := <-done
	if err != nil {
		t.Fatalf("four reads were never in flight at once: %v", err)
	}
	if got != want || !strings.Contains(got, "r15") {
		t.Errorf("plan in waves printed\n%s\nwant, as one line at a time\n%s", got, want)
	}
}
