package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/progress"
	"github.com/sponson/apply/pkg/receipt"
)

// Backoff of lease waits: exponential from leaseBackoffMin to
// leaseBackoffMax with jitter, bounded by the wait timeout.
const (
	leaseBackoffMin = 500 * time.Millisecond
	leaseBackoffMax = 30 * time.Second
	// progressEvery is how often a wait repeats its progress line when the
	// holder has not changed.
	progressEvery = time.Minute
	// releaseAttempts is how many times Release tries before it warns.
	releaseAttempts = 3
)

// LeaseConfig is what a LeaseKeeper needs: the store's lease half, the
// injected clock (stamps, waits between attempts, renewal timers), and the
// wait policy. The same machinery holds
// scope leases and parent-object leases.
type LeaseConfig struct {
	Store receipt.Leases
	// Clock stamps, waits between acquire attempts (Sleep) and times
	// renewals (After); nil is the system clock.
	Clock clock.Clock
	// Rand draws the jitter; nil is crypto/rand.
	Rand io.Reader
	// Progress receives one human line per notable wait step; nil drops it.
	Progress func(line string)
	// TTL is the lease's time to live; 0 is receipt.DefaultTTL.
	TTL time.Duration
	// Wait retries a held lease until WaitTimeout (0: DefaultWaitTimeout)
	// instead of failing at once with LOCK_HELD.
	Wait        bool
	WaitTimeout time.Duration
	// HolderGone, when set, is asked once about each live lease that
	// blocks (see Engine.HolderGone).
	HolderGone HolderGone
	// LockWaitOnly says the wait is Options.LockWait's (a lease only, not
	// external events), so a timeout names the setting that bounds it.
	LockWaitOnly bool
	// At, when set and the store implements receipt.Sessions, grants the
	// lease only while the scope's receipt is still at *At (AcquireAt):
	// the read At came from is then the run's read. A receipt that moved
	// since is STORE_CONTENDED with receipt.DetailMoved, returned at once.
	At *receipt.Version
}

// acquire is one acquire attempt: AcquireAt when cfg.At is set and the
// store can, else Acquire.
func (c *LeaseConfig) acquire(ctx context.Context, target receipt.Target, owner receipt.Owner) (receipt.Lease, *receipt.Lease, error) {
	if ss, ok := c.Store.(receipt.Sessions); ok && c.At != nil {
		return ss.AcquireAt(ctx, target, owner, c.TTL, *c.At)
	}
	return c.Store.Acquire(ctx, target, owner, c.TTL)
}

// receiptMoved reports whether err is a Sessions refusal because the scope
// changed since the version given.
func receiptMoved(err error) bool {
	var e *errs.Error
	return errors.As(err, &e) && e.Code == errs.STORE_CONTENDED && e.Details["detail"] == receipt.DetailMoved
}

// HolderGone reports whether the holder of a live lease is certainly gone
// (the GitHub run that holds it has completed or was cancelled), with the
// reason in one sentence; "" when it is not, or cannot be known. An error
// counts as "not known": the lease is then honoured until its TTL. It must
// not block for long: it is called while the acquire waits.
type HolderGone func(ctx context.Context, held receipt.Lease) (reason string, err error)

func (c *LeaseConfig) fill() {
	c.Clock = clock.Or(c.Clock)
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.TTL <= 0 {
		c.TTL = receipt.DefaultTTL
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = DefaultWaitTimeout
	}
}

// LeaseKeeper holds one lease: it renews it in the background every TTL/3
// (each renewal scheduled after the previous one finished), keeps the
// holder's own deadline, and releases it.
//
// The deadline is measured from when the last successful acquire or renew
// was sent, not from the store's expiry stamp: a slow answer cannot make the
// holder believe it has more time than it has. Check returns LOCK_LOST once
// less than TTL/5 is left, so the holder stops touching providers before
// anyone could legitimately take the lease over.
//
// A LeaseKeeper is safe for concurrent use.
type LeaseKeeper struct {
	cfg    LeaseConfig
	target receipt.Target

	mu        sync.Mutex
	lease     receipt.Lease
	preempted *receipt.Lease
	sent      time.Time // when the last successful acquire or renew was sent
	lost      error     // LOCK_LOST once the lease is known lost
	renewals  int
	takeover  string // why a live lease was taken over (HolderGone), "" when none was

	renewMu  sync.Mutex // one renewal at a time (background or Check's catch-up)
	stop     chan struct{}
	done     chan struct{}
	cancel   context.CancelFunc
	rctx     context.Context
	release  sync.Once
	relErr   error
	released bool

	// deferred: the lease is taken only when the run first needs it
	// (Ensure); nil for a lease taken up front.
	deferred *deferredAcquire
}

// deferredAcquire is a lease not taken yet: one attempt, never waiting,
// the first time the run needs it.
type deferredAcquire struct {
	ctx   context.Context
	owner receipt.Owner
	once  sync.Once
	tried atomic.Bool // the attempt was made (err and held are set)
	err   error
	held  bool
}

// DeferLease returns a keeper that holds no lease until Ensure (or Check)
// is first called: then it makes one attempt (AcquireAt when cfg.At is set
// and the store can), never waiting, and from then on is an ordinary
// keeper. A run that never needs the lease never takes it: Held is false,
// Release does nothing.
func DeferLease(ctx context.Context, cfg LeaseConfig, target receipt.Target, owner receipt.Owner) *LeaseKeeper {
	cfg.fill()
	cfg.Wait = false
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &LeaseKeeper{cfg: cfg, target: target, stop: make(chan struct{}), done: make(chan struct{}), rctx: rctx, cancel: cancel,
		deferred: &deferredAcquire{ctx: ctx, owner: owner}}
}

// Ensure takes a deferred lease now if it is not held yet, and returns the
// error of that one attempt (LOCK_HELD, STORE_CONTENDED with
// receipt.DetailMoved, ...) to every caller, now and later. Nil for a
// lease taken up front.
func (k *LeaseKeeper) Ensure() error {
	_, err := k.take(nil)
	return err
}

// acquireAt is one acquire of a deferred lease at the version the run read.
type acquireAt func(ctx context.Context, target receipt.Target, owner receipt.Owner, ttl time.Duration, at receipt.Version) (receipt.Lease, *receipt.Lease, error)

// take is Ensure whose one attempt, when it is made now, is by (a lease
// taken with a receipt written in the same step, receipt.WriteAcquirer)
// instead of the store's AcquireAt, if the keeper knows the version the
// run read. took reports that by made the attempt and it succeeded.
func (k *LeaseKeeper) take(by acquireAt) (took bool, err error) {
	d := k.deferred
	if d == nil {
		return false, nil
	}
	d.once.Do(func() {
		defer d.tried.Store(true)
		sent := k.cfg.Clock.Now()
		var l receipt.Lease
		var pre *receipt.Lease
		var err error
		if by != nil && k.cfg.At != nil {
			l, pre, err = by(d.ctx, k.target, d.owner, k.cfg.TTL, *k.cfg.At)
			took = true
		} else {
			l, pre, err = k.cfg.acquire(d.ctx, k.target, d.owner)
		}
		if held, isHeld := receipt.HeldLease(err); isHeld && held.Holder == d.owner.RunID {
			l, pre, err = held, nil, nil // our own acquire landed, its answer was lost
		}
		if err != nil {
			d.err = err
			return
		}
		if l.TTL <= 0 {
			l.TTL = k.cfg.TTL
		}
		k.mu.Lock()
		k.lease, k.preempted, k.sent = l, pre, sent
		d.held = true
		k.mu.Unlock()
		go k.loop()
	})
	return took && d.err == nil, d.err
}

// attempted reports whether a deferred lease's one attempt was made
// (true for a lease taken up front).
func (k *LeaseKeeper) attempted() bool {
	return k.deferred == nil || k.deferred.tried.Load()
}

// Held reports whether the keeper holds (or held) a lease: false only for a
// deferred lease never taken.
func (k *LeaseKeeper) Held() bool {
	if k.deferred == nil {
		return true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.deferred.held
}

// AcquireLease takes the lease on target for owner and starts renewing it.
//
// Without cfg.Wait a lease held by someone else is LOCK_HELD with the
// holder's details. With it, AcquireLease retries with exponential backoff
// and jitter until cfg.WaitTimeout (WAIT_TIMEOUT, naming the holder),
// printing progress; every retry is a plain Acquire, never a read of the
// holder first, so a holder that released in the meantime cannot break it.
// A LOCK_HELD whose holder is owner.RunID is this caller's own lease whose
// answer was lost: it is kept. STORE_* errors are returned as they are
// (retried while waiting); INTERRUPTED when ctx is done.
//
// With cfg.HolderGone, a live lease whose holder it says is gone is taken
// over at once, before its TTL: force-released with the reason (recorded in
// the target's history) if it is still that very lease, then acquired; the
// keeper's Preempted is that lease and TakeoverReason the reason.
func AcquireLease(ctx context.Context, cfg LeaseConfig, target receipt.Target, owner receipt.Owner) (*LeaseKeeper, error) {
	cfg.fill()
	start := cfg.Clock.Now()
	deadline := start.Add(cfg.WaitTimeout)
	backoff := leaseBackoffMin
	var lastHolder string
	var lastProgress time.Time
	asked := map[string]bool{} // holder/generation pairs HolderGone was asked about
	var took *receipt.Lease    // the lease force-released as gone, until our acquire lands
	var tookReason string
	waited := progressEvent(target, start, deadline)
	for {
		sent := cfg.Clock.Now()
		l, pre, err := cfg.acquire(ctx, target, owner)
		if err == nil {
			if waited.Attempt > 0 {
				waited.Now, waited.Done, waited.OK = cfg.Clock.Now(), true, true
				progress.Report(ctx, waited)
			}
			k := startKeeper(ctx, cfg, l, pre, sent)
			if took != nil && pre == nil {
				k.preempted, k.takeover = took, tookReason
			}
			return k, nil
		}
		held, isHeld := receipt.HeldLease(err)
		if isHeld && held.Holder == owner.RunID {
			// Our own acquire landed and its answer was lost.
			return startKeeper(ctx, cfg, held, nil, sent), nil
		}
		if key := fmt.Sprintf("%s/%d", held.Holder, held.Generation); isHeld && cfg.HolderGone != nil && !asked[key] {
			asked[key] = true
			if removed, reason := takeOverGone(ctx, cfg, held, owner); removed != nil {
				took, tookReason = removed, reason
				continue // acquire again at once
			}
		}
		retryable := isHeld || errs.CodeOf(err) == errs.STORE_CONTENDED || errs.CodeOf(err) == errs.STORE_UNAVAILABLE
		if !cfg.Wait || !retryable || receiptMoved(err) {
			return nil, err
		}
		now := cfg.Clock.Now()
		waited.Now, waited.Attempt = now, waited.Attempt+1
		if isHeld {
			waited.Holder, waited.HolderUntil = describeOwner(held.Holder, held.Owner), held.ExpiresAt
		}
		if !now.Before(deadline) {
			waited.Done = true
			progress.Report(ctx, waited)
			return nil, waitTimedOut(cfg, target, err, held, isHeld)
		}
		progress.Report(ctx, waited)
		if isHeld && cfg.Progress != nil && (held.Holder != lastHolder || now.Sub(lastProgress) >= progressEvery) {
			cfg.Progress(waitingLine(held, now))
			lastHolder, lastProgress = held.Holder, now
		}
		d := jitter(cfg.Rand, backoff)
		if left := deadline.Sub(now); d > left {
			d = left
		}
		if err := cfg.Clock.Sleep(ctx, d); err != nil {
			return nil, errs.Wrap(err, errs.INTERRUPTED, "interrupted while waiting for the lease on %s", target)
		}
		backoff = min(backoff*2, leaseBackoffMax)
	}
}

// waitTimedOut is WAIT_TIMEOUT for a wait for target's lease that ended
// on err (held: the lease that blocked it, when isHeld), its hint naming
// the setting that bounds the wait.
func waitTimedOut(cfg LeaseConfig, target receipt.Target, err error, held receipt.Lease, isHeld bool) error {
	e := errs.Wrap(err, errs.WAIT_TIMEOUT, "gave up waiting for the lease on %s after %s", target, cfg.WaitTimeout).
		With("target", target.String())
	setting := "--wait-timeout"
	if cfg.LockWaitOnly {
		setting = "--lock-wait (or SPONSON_LOCK_WAIT)"
	}
	e.WithHint("Raise %s above %s, or, if the holder is dead, release its lease: %s", setting, cfg.WaitTimeout, target.UnlockCommand())
	if isHeld {
		e.With("lease", held)
	}
	return e
}

// takeOverGone asks cfg.HolderGone about held and, when its holder is gone
// and the stored lease is still held (same holder and generation),
// force-releases it with the reason. It returns the lease removed and the
// reason, or nil when nothing was released. Between the re-read and the
// release another run could only have taken the lease if held had been
// released first; the store's generation fences out anyone displaced.
func takeOverGone(ctx context.Context, cfg LeaseConfig, held receipt.Lease, owner receipt.Owner) (*receipt.Lease, string) {
	reason, err := cfg.HolderGone(ctx, held)
	if err != nil || reason == "" {
		return nil, ""
	}
	cur, err := cfg.Store.Lease(ctx, held.Target)
	if err != nil || cur == nil || !cur.Same(held) {
		return nil, ""
	}
	removed, err := cfg.Store.ForceRelease(ctx, held.Target, reason, describeOwner(owner.RunID, owner))
	if err != nil || removed == nil {
		return nil, ""
	}
	if cfg.Progress != nil {
		cfg.Progress(fmt.Sprintf("took over the lease on %s held by %s: %s", held.Target, describeOwner(held.Holder, held.Owner), reason))
	}
	return removed, reason
}

// progressEvent is the typed progress of a wait for target's lease.
func progressEvent(target receipt.Target, start, deadline time.Time) progress.Event {
	ev := progress.Event{Kind: progress.Lease, Target: target.String(), Started: start, Deadline: deadline}
	if target.IsParent() {
		ev.Kind, ev.Target = progress.ParentLock, target.Identity
	}
	return ev
}

// waitingLine is the progress line of a wait: "waiting for lock on
// preview/pr-12 held by run r1 (cli, host h) of PR #12 since 14:02, 3 min
// left on its lease".
func waitingLine(held receipt.Lease, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "waiting for lock on %s held by %s", held.Target, describeOwner(held.Holder, held.Owner))
	if n, ok := strings.CutPrefix(held.Target.Scope, "pr-"); ok && !held.Target.IsParent() {
		fmt.Fprintf(&b, " of PR #%s", n)
	}
	left := held.ExpiresAt.Sub(now)
	fmt.Fprintf(&b, " since %s, %s left on its lease", held.AcquiredAt.UTC().Format("15:04"), minutes(left))
	return b.String()
}

func minutes(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(math.Ceil(max(d, 0).Seconds())))
	}
	return fmt.Sprintf("%d min", int(math.Ceil(d.Minutes())))
}

// describeOwner renders "run r1 (action, actor octocat, GitHub run 9)".
func describeOwner(holder string, o receipt.Owner) string {
	var parts []string
	if o.Kind != "" {
		parts = append(parts, string(o.Kind))
	}
	if o.Operation != "" {
		parts = append(parts, string(o.Operation))
	}
	if o.Actor != "" {
		parts = append(parts, "actor "+o.Actor)
	}
	if o.GitHubRunID != 0 {
		parts = append(parts, fmt.Sprintf("GitHub run %d", o.GitHubRunID))
	}
	if o.Host != "" {
		s := "host " + o.Host
		if o.PID != 0 {
			s += fmt.Sprintf(" pid %d", o.PID)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "run " + holder
	}
	return "run " + holder + " (" + strings.Join(parts, ", ") + ")"
}

func startKeeper(ctx context.Context, cfg LeaseConfig, l receipt.Lease, pre *receipt.Lease, sent time.Time) *LeaseKeeper {
	if l.TTL <= 0 {
		l.TTL = cfg.TTL
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k := &LeaseKeeper{cfg: cfg, target: l.Target, lease: l, preempted: pre, sent: sent,
		stop: make(chan struct{}), done: make(chan struct{}), rctx: rctx, cancel: cancel}
	go k.loop()
	return k
}

// loop renews every TTL/3, each renewal scheduled after the previous one
// finished (a fixed tick would queue renewals faster than a slow store
// completes them). A renewal that failed for another reason than LOCK_LOST
// is retried sooner, at TTL/15, while the deadline allows.
func (k *LeaseKeeper) loop() {
	defer close(k.done)
	interval := k.cfg.TTL / 3
	for {
		select {
		case <-k.stop:
			return
		case <-k.cfg.Clock.After(interval):
		}
		select {
		case <-k.stop:
			return
		default:
		}
		err := k.renew()
		if k.Err() != nil {
			return
		}
		interval = k.cfg.TTL / 3
		if err != nil {
			interval = k.cfg.TTL / 15
		}
	}
}

// renew sends one renewal and, on success, moves the deadline.
func (k *LeaseKeeper) renew() error {
	k.renewMu.Lock()
	defer k.renewMu.Unlock()
	k.mu.Lock()
	if k.lost != nil || k.released {
		err := k.lost
		k.mu.Unlock()
		return err
	}
	cur := k.lease
	k.mu.Unlock()
	sent := k.cfg.Clock.Now()
	l, err := k.cfg.Store.Renew(k.rctx, cur)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err == nil {
		if l.TTL <= 0 {
			l.TTL = k.cfg.TTL
		}
		k.lease, k.sent = l, sent
		k.renewals++
		return nil
	}
	if errs.CodeOf(err) == errs.LOCK_LOST {
		k.lost = err
	}
	return err
}

// Lease is the lease as last acquired or renewed: the fencing token of
// every receipt write.
func (k *LeaseKeeper) Lease() receipt.Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lease
}

// Preempted is the expired lease this acquire took over, or nil.
func (k *LeaseKeeper) Preempted() *receipt.Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.preempted
}

// TakeoverReason is why this acquire took over a live lease whose holder
// was gone (Preempted is that lease), or "".
func (k *LeaseKeeper) TakeoverReason() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.takeover
}

// Deadline is when the lease stops being this holder's for sure: the send
// time of the last successful acquire or renew plus the TTL.
func (k *LeaseKeeper) Deadline() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sent.Add(k.cfg.TTL)
}

// Renewals is how many renewals succeeded.
func (k *LeaseKeeper) Renewals() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.renewals
}

// Err is the LOCK_LOST error once the lease is known lost, else nil.
func (k *LeaseKeeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}

// Check is called before every provider write. It returns LOCK_LOST when the
// lease was lost, or when less than TTL/5 is left before the holder's own
// deadline; once it has said so it always does. When a background renewal
// is overdue (less than TTL/2 left) it renews first, in the caller's
// goroutine: a process that was suspended, or a renewal goroutine that
// was starved, must not stop a healthy run.
func (k *LeaseKeeper) Check() error {
	if err := k.Ensure(); err != nil {
		return err
	}
	if err := k.Err(); err != nil {
		return err
	}
	if k.left() < k.cfg.TTL/2 {
		_ = k.renew() // LOCK_LOST is recorded; other failures leave the deadline as it was
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost != nil {
		return k.lost
	}
	left := k.sent.Add(k.cfg.TTL).Sub(k.cfg.Clock.Now())
	if left < k.cfg.TTL/5 {
		k.lost = errs.New(errs.LOCK_LOST, "the lease of run %s on %s has %s left before its holder's own deadline, less than a fifth of its TTL (%s): stopping before anyone could take it over",
			k.lease.Holder, k.target, left.Round(time.Second), k.cfg.TTL).
			With("lease", k.lease).With("target", k.target.String()).
			WithHint("The lease could not be renewed in time (is the receipt store reachable?). Re-run; what was created is recorded.")
		if k.target.IsParent() {
			k.lost.(*errs.Error).With("parent", k.target.Identity)
		}
		return k.lost
	}
	return nil
}

// confirm renews the lease now, whatever the schedule, and returns
// LOCK_LOST when the store says it is no longer this holder's (taken over,
// or force-released with `sponson unlock`, which the holder's own deadline
// cannot see). A renewal that fails for another reason changes nothing:
// the deadline still guards. Called before writes that must not happen
// after a takeover, such as rollback's destroys.
func (k *LeaseKeeper) confirm() error {
	if !k.Held() {
		return nil // a deferred lease never taken: nothing was written under it
	}
	_ = k.renew()
	return k.Err()
}

func (k *LeaseKeeper) left() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sent.Add(k.cfg.TTL).Sub(k.cfg.Clock.Now())
}

// Release stops renewing and gives the lease up, retrying a failed release
// a few times. It is idempotent and safe to defer on every exit path. When
// the release keeps failing it returns an error (to be reported as a
// warning) that names the lease and until when it stays held. Releasing a
// lost lease is a no-op at the store (a stale holder never removes its
// successor's lease). ctx should not be the run's cancelled context: pass
// context.WithoutCancel.
func (k *LeaseKeeper) Release(ctx context.Context) error {
	k.release.Do(func() {
		held := k.Held()
		k.mu.Lock()
		k.released = true
		k.mu.Unlock()
		close(k.stop)
		k.cancel()
		if !held {
			return // a deferred lease never taken
		}
		<-k.done
		l := k.Lease()
		backoff := leaseBackoffMin
		var err error
		for i := 0; i < releaseAttempts; i++ {
			if err = k.cfg.Store.Release(ctx, l); err == nil {
				return
			}
			if i < releaseAttempts-1 {
				if k.cfg.Clock.Sleep(ctx, jitter(k.cfg.Rand, backoff)) != nil {
					break
				}
				backoff *= 2
			}
		}
		k.relErr = errs.Wrap(err, errs.LEASE_NOT_RELEASED, "the lease on %s (run %s, generation %d) could not be released; it stays held until %s unless someone runs %s",
			l.Target, l.Holder, l.Generation, l.ExpiresAt.UTC().Format(time.RFC3339), l.Target.UnlockCommand()).
			With("lease", l)
	})
	return k.relErr
}

// ReleaseWith gives the lease up by fn, a store step that writes the run's
// final receipt and releases the lease at once (receipt.Sessions
// WriteRelease: one commit). No renewal runs while fn does. When fn fails
// the lease is still held and still renewed: Release gives it up as
// usual.
func (k *LeaseKeeper) ReleaseWith(fn func(receipt.Lease) error) error {
	k.renewMu.Lock()
	err := fn(k.Lease())
	if err == nil {
		k.mu.Lock()
		k.released = true
		k.mu.Unlock()
	}
	k.renewMu.Unlock()
	if err != nil {
		return err
	}
	k.release.Do(func() {
		close(k.stop)
		k.cancel()
		if k.Held() {
			<-k.done
		}
	})
	return nil
}
