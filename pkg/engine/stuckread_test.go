package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/secret"
)

const fileSecretPlan = `
version: 1
providers:
  fake: { project: p1 }
changes:
  - id: app
    adapter: fake
    op: object
    name: app-${ctx.scope}
    fields:
      api_key: { secret: "file://token" }
`

// A secret read that is refused or that a cancel cuts short ends the run
// at once and gives its lease up: nothing is written to a provider, and
// the next run does not wait for a TTL (issue: a hung read kept the lease
// until it expired). The memory store takes the scope lease before the
// secrets are read, so this is the case where a lease is held.
func TestRefusedOrCancelledReadReleasesTheLease(t *testing.T) {
	p := mustPlan(t, fileSecretPlan)
	heldAfter := func(w *world) bool {
		t.Helper()
		l, _, err := w.store.Acquire(context.Background(), receipt.ScopeTarget("preview", "pr-12"), own("next"), testTTL)
		if err != nil {
			return true
		}
		_ = w.store.Release(context.Background(), l)
		return false
	}

	t.Run("refused", func(t *testing.T) {
		w := newWorld(t)
		refuse := func(path string) ([]byte, error) {
			return nil, errs.New(errs.USAGE, "%s is not a regular file (a named pipe); Sponson reads inputs only from regular files", path)
		}
		w.eng.Secrets = secret.New(secret.Config{ReadFile: refuse, BaseDir: t.TempDir()})
		_, err := w.eng.Apply(context.Background(), p, prCtx(12), Options{})
		if errs.CodeOf(err) != errs.SECRET_UNRESOLVED {
			t.Fatalf("apply: %v, want SECRET_UNRESOLVED", err)
		}
		if heldAfter(w) {
			t.Error("the run's lease is still held after it ended on a refused read")
		}
		if n := writes(w.cloud); n != 0 {
			t.Errorf("%d provider writes after a refused secret", n)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		w := newWorld(t)
		entered, unblock := make(chan struct{}), make(chan struct{})
		defer close(unblock)
		stuck := func(string) ([]byte, error) { close(entered); <-unblock; return []byte("late-value-123456"), nil }
		w.eng.Secrets = secret.New(secret.Config{ReadFile: stuck, BaseDir: t.TempDir()})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := w.eng.Apply(ctx, p, prCtx(12), Options{}); done <- err }()
		<-entered
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) || errs.CodeOf(err) != errs.INTERRUPTED {
			t.Fatalf("apply: %v (code %s), want INTERRUPTED by the cancel", err, errs.CodeOf(err))
		}
		if heldAfter(w) {
			t.Error("the run's lease is still held after a cancel cut its secret read short")
		}
		if n := writes(w.cloud); n != 0 {
			t.Errorf("%d provider writes after a cancelled read", n)
		}
	})
}
