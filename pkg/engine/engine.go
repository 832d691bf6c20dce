package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/progress"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/secret"
)

// Defaults of the run options (engine.md).
const (
	DefaultWaitTimeout = 10 * time.Minute
	DefaultParallelism = 4
	// DefaultPlanParallelism is how many lines plan reads at once when
	// Options.Parallelism is 0. Reads change nothing, so plan need not
	// keep apply's pace of four writes; sixteen is the connections the
	// shared HTTP transport keeps open to one provider host
	// (httpclient.IdleConnsPerHost), so every read of a wave reuses one
	// instead of opening its own, and a plan never has more than sixteen
	// requests in flight to a provider (ADR 0011).
	DefaultPlanParallelism = 16
)

// Engine plans, applies and destroys one scope's side effects. It knows no
// provider, no CLI and no GitHub: ops come from Ops, receipts and leases
// from Store, secrets from Secrets, and every byte it hands out has passed
// through Redactor. Time, randomness and waiting are injected, so a test
// moves a fake clock instead of sleeping.
//
// The zero values of the optional fields are the production defaults:
// Clock the system clock, Rand crypto/rand,
// LeaseTTL receipt.DefaultTTL, UnsavedDir receipt.DefaultUnsavedDir,
// Redactor a fresh one (a caller that prints anything must pass its own, so
// that what the engine registers masks the caller's output too).
type Engine struct {
	Store    receipt.Store
	Ops      *adapter.Registry
	Secrets  *secret.Resolver
	Redactor *redact.Redactor

	// Clock stamps receipts and leases, and times every wait: the
	// foreground ones (lease waits, external-output polls, its Sleep) and
	// the background ones (lease renewal, its After).
	Clock clock.Clock
	Rand  io.Reader
	// Progress receives human progress lines ("waiting for lock held by
	// ..."); nil discards them. Lines pass through the redactor.
	Progress io.Writer
	// Events receives typed progress of every long wait (leases, parent
	// locks, external outputs, provisioning, store contention) while a
	// command runs; nil drops them. The engine hands it on in the context
	// (pkg/progress), so adapters and stores report through it too.
	Events progress.Sink
	// Ancestry reports whether ancestor is an ancestor of descendant (the
	// stale-run check). nil, or an error, means it cannot be decided: the
	// run is then not stale, with a warning.
	Ancestry func(ancestor, descendant string) (bool, error)
	// HolderGone, when set, is asked about a live lease that blocks a run:
	// a holder it says is gone (its GitHub run completed or was cancelled)
	// loses the lease at once instead of after its TTL, and the receipt
	// records the preempted lease and the reason (LEASE_TAKEN_OVER). nil:
	// leases are honoured until they expire.
	HolderGone HolderGone

	// LookupEnv looks up the credential variables ops name in their Spec
	// (Spec.Credentials), checked present before any I/O; nil checks
	// none (the op then fails on its own when it needs one).
	LookupEnv func(name string) (string, bool)

	UnsavedDir string
	LeaseTTL   time.Duration

	progressMu   sync.Mutex // one progress line at a time (parallel lines wait too)
	redactorOnce sync.Once  // a nil Redactor is replaced once, even by commands running at once

	// unlockedParents switches parent-object leases off. FOR TESTS ONLY:
	// it exists so the control case of I9 can show that entries of a shared
	// list are lost without the lock (concurrency_test.go sets it; nothing
	// else can, and no exported option reaches it).
	unlockedParents bool
}

// Options are the run options of one command (never flags).
type Options struct {
	// Env is the environment; "" takes the Ctx's, and then "preview".
	Env string
	// ApprovedBy names who approved a run that may write production.
	ApprovedBy string
	// Reconcile accepts resources changed outside Sponson.
	Reconcile bool
	// Confirm names manual steps someone has done (apply --confirm
	// <line>): each is verified and recorded with who confirmed it; for
	// destroy, manual steps whose undo someone has done. Who: ApprovedBy,
	// else ConfirmedBy; with neither, USAGE (steps.go).
	Confirm []string
	// ConfirmedBy is who confirms the steps of Confirm when ApprovedBy is
	// empty: the checkout's git identity ("Name <email>"), read by the
	// caller.
	ConfirmedBy string
	// Recreate names lines whose resources this scope created are deleted
	// and created again in this run (apply --recreate <line>), so a
	// once-only output (a new password) reaches the lines that use it:
	// those are recreated with it. A named line that uses a once-only
	// output of a line not recreated is refused before anything is
	// deleted (OUTPUT_UNAVAILABLE, naming the line to recreate).
	Recreate []string
	// Wait waits for held leases and external outputs instead of failing
	// (LOCK_HELD) or stopping partial.
	Wait bool
	// WaitTimeout bounds every wait; 0 is DefaultWaitTimeout.
	WaitTimeout time.Duration
	// LockWait, without Wait, still waits up to this long for a lease held
	// by another run (the scope's or a shared parent object's), but not
	// for external events: two pull requests writing one Auth0 list take
	// turns instead of failing, while a deploy barrier still ends the run
	// partial. 0: a held lease fails at once (LOCK_HELD).
	LockWait time.Duration
	// Reopen applies to a scope whose pull request closed: the tombstone
	// is cleared and the reopening recorded as a warning on the receipt.
	// Without it such an apply (or a succession into the scope) is
	// SCOPE_CLOSED.
	Reopen bool
	// Parallelism is how many lines whose dependencies are done run at
	// once (apply, destroy) or are read at once (plan); 0 is
	// DefaultParallelism, for plan DefaultPlanParallelism. 1 runs them one
	// at a time in the plan's order (dependencies first, ties by file
	// order).
	Parallelism int
	// Owner describes who runs (kind, host, pid, GitHub run); RunID is
	// generated when empty.
	Owner receipt.Owner
	// Close, for Destroy, leaves this tombstone on the scope (its pull
	// request closed): a later apply is SCOPE_CLOSED unless Reopen.
	Close *receipt.Tombstone
}

func (o Options) parallelism() int {
	if o.Parallelism > 0 {
		return o.Parallelism
	}
	return DefaultParallelism
}

// readParallelism is plan's: Parallelism when set, else
// DefaultPlanParallelism.
func (o Options) readParallelism() int {
	if o.Parallelism > 0 {
		return o.Parallelism
	}
	return DefaultPlanParallelism
}

func (o Options) waitTimeout() time.Duration {
	if o.WaitTimeout > 0 {
		return o.WaitTimeout
	}
	return DefaultWaitTimeout
}

func (e *Engine) now() time.Time { return clock.Or(e.Clock).Now() }

// clock is the engine's clock: Clock (the system's when nil), its sleeps
// ending INTERRUPTED when ctx is done.
func (e *Engine) clock() clock.Clock { return engineClock{clock.Or(e.Clock)} }

// engineClock is Engine.clock.
type engineClock struct{ clock.Clock }

func (c engineClock) Sleep(ctx context.Context, d time.Duration) error {
	return sleepOn(c.Clock, ctx, d)
}

// sleepOn waits d on c, or until ctx is done (INTERRUPTED).
func sleepOn(c clock.Clock, ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return interrupted(ctx)
	}
	if c.Sleep(ctx, d) != nil {
		return interrupted(ctx)
	}
	return nil
}

func (e *Engine) rand() io.Reader {
	if e.Rand == nil {
		return rand.Reader
	}
	return e.Rand
}

func (e *Engine) ttl() time.Duration {
	if e.LeaseTTL > 0 {
		return e.LeaseTTL
	}
	return receipt.DefaultTTL
}

func (e *Engine) unsavedDir() string {
	if e.UnsavedDir != "" {
		return e.UnsavedDir
	}
	return receipt.DefaultUnsavedDir
}

func (e *Engine) redactor() *redact.Redactor {
	e.redactorOnce.Do(func() {
		if e.Redactor == nil {
			e.Redactor = redact.New()
		}
	})
	return e.Redactor
}

// progress writes one human progress line, redacted.
func (e *Engine) progress(format string, args ...any) {
	if e.Progress == nil {
		return
	}
	line := e.redactor().String(fmt.Sprintf(format, args...))
	e.progressMu.Lock()
	defer e.progressMu.Unlock()
	fmt.Fprintln(e.Progress, line)
}

// events puts the engine's progress sink in ctx, for the waits below it.
func (e *Engine) events(ctx context.Context) context.Context {
	if e == nil {
		return ctx
	}
	return progress.With(ctx, e.Events)
}

// check returns INTERNAL when the engine is not wired.
func (e *Engine) check() error {
	switch {
	case e == nil:
		return errs.New(errs.INTERNAL, "engine: nil engine")
	case e.Store == nil:
		return errs.New(errs.INTERNAL, "engine: no receipt store")
	case e.Ops == nil:
		return errs.New(errs.INTERNAL, "engine: no op registry")
	}
	return nil
}

func interrupted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return errs.Wrap(err, errs.INTERRUPTED, "the run was interrupted")
	}
	return nil
}

// newRunID is a fresh run id: "r" and 16 hex digits from rnd.
func newRunID(rnd io.Reader) (string, error) {
	b := make([]byte, 8)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return "", errs.Wrap(err, errs.INTERNAL, "generate a run id")
	}
	return "r" + hex.EncodeToString(b), nil
}

// jitter returns a duration in [d/2, d], drawn from rnd (full jitter above
// a floor, so a backoff never collapses to nothing).
func jitter(rnd io.Reader, d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return d
	}
	half := d / 2
	return half + time.Duration(binary.LittleEndian.Uint64(b[:])%uint64(d-half+1))
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
