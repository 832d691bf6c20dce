package receipt

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/errs"
)

// DefaultTTL is the lease TTL when Acquire is given none (engine.md, "Leases").
const DefaultTTL = 15 * time.Minute

// Target is what a lease is taken on: a scope (Env and Scope set) or a shared
// parent object (Identity set, e.g. "auth0:example.eu.auth0.com:client:AbCd123").
// The two kinds never collide, whatever the names: parent leases live in the
// reserved "_locks" namespace, which no encoded environment can spell.
type Target struct {
	Env      string `json:"env,omitempty"`
	Scope    string `json:"scope,omitempty"`
	Identity string `json:"identity,omitempty"`
}

// ScopeTarget is the target of a scope's lease and receipt.
func ScopeTarget(env, scope string) Target { return Target{Env: env, Scope: scope} }

// ParentTarget is the target of a parent object's lease.
func ParentTarget(identity string) Target { return Target{Identity: identity} }

// IsParent reports whether t is a parent object.
func (t Target) IsParent() bool { return t.Identity != "" }

// Validate returns USAGE for a target that names neither exactly one scope
// nor one parent object.
func (t Target) Validate() error {
	switch {
	case t.Identity != "" && (t.Env != "" || t.Scope != ""):
		return errs.New(errs.USAGE, "a lease target is either a scope or a parent object, not both (%q, %s/%s)", t.Identity, t.Env, t.Scope)
	case t.Identity != "":
		return nil
	case t.Env == "" || t.Scope == "":
		return errs.New(errs.USAGE, "a scope target needs an environment and a scope (got %q/%q)", t.Env, t.Scope)
	}
	return nil
}

// String is "<env>/<scope>" or "parent <identity>", for messages.
func (t Target) String() string {
	if t.IsParent() {
		return "parent " + t.Identity
	}
	return t.Env + "/" + t.Scope
}

// Key is the target's storage key, the path shared by every store's layout:
// "<env>/<scope>" with both segments encoded by EncodeSegment, or
// "_locks/<ParentLockID(identity)>" for a parent object.
func (t Target) Key() string {
	if t.IsParent() {
		return LocksDir + "/" + ParentLockID(t.Identity)
	}
	return EncodeSegment(t.Env) + "/" + EncodeSegment(t.Scope)
}

// UnlockCommand is the command that force-releases t, for hints.
func (t Target) UnlockCommand() string {
	if t.IsParent() {
		return fmt.Sprintf("sponson unlock --parent %q --reason \"...\"", t.Identity)
	}
	return fmt.Sprintf("sponson unlock %s %s --reason \"...\"", t.Env, t.Scope)
}

// OwnerKind is the kind of program that holds a lease.
type OwnerKind string

// Owner kinds.
const (
	KindCLI    OwnerKind = "cli"
	KindAction OwnerKind = "action"
	KindBot    OwnerKind = "bot"
)

// Owner is who asks for a lease: the run (its id becomes the lease's holder)
// and where it runs, so a blocked run can say who blocks it.
type Owner struct {
	RunID            string    `json:"run_id"`
	Operation        Operation `json:"operation,omitempty"`
	Kind             OwnerKind `json:"kind,omitempty"`
	Host             string    `json:"host,omitempty"`
	PID              int       `json:"pid,omitempty"`
	GitHubRunID      int64     `json:"github_run_id,omitempty"`
	GitHubRunAttempt int       `json:"github_run_attempt,omitempty"`
	// Repository is the owner/name of the repository whose workflow run
	// GitHubRunID is (a lease is only known stale before its TTL when that
	// run can be looked up).
	Repository string `json:"repository,omitempty"`
	Actor      string `json:"actor,omitempty"`
}

// Describe renders the owner for people and messages: "run r1 (action,
// apply, actor octocat, GitHub run 99 attempt 2 of octo/app, host h pid 12)".
func (o Owner) Describe() string {
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
		s := fmt.Sprintf("GitHub run %d", o.GitHubRunID)
		if o.GitHubRunAttempt != 0 {
			s += fmt.Sprintf(" attempt %d", o.GitHubRunAttempt)
		}
		if o.Repository != "" {
			s += " of " + o.Repository
		}
		parts = append(parts, s)
	}
	if o.Host != "" {
		s := "host " + o.Host
		if o.PID != 0 {
			s += fmt.Sprintf(" pid %d", o.PID)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "run " + o.RunID
	}
	return "run " + o.RunID + " (" + strings.Join(parts, ", ") + ")"
}

// Lease is one holder's lease on a target. Holder and Generation are the
// fencing token: a write or renewal is accepted only while the stored lease
// has both. Generation increases on every acquire of the target, including
// after a release or a force-release, so a takeover is always visible.
type Lease struct {
	Target     Target        `json:"target"`
	Holder     string        `json:"holder"` // the holder's run id (Owner.RunID)
	Generation int64         `json:"generation"`
	AcquiredAt time.Time     `json:"acquired_at"`
	RenewedAt  time.Time     `json:"renewed_at,omitzero"`
	ExpiresAt  time.Time     `json:"expires_at"`
	TTL        time.Duration `json:"-"` // each renewal extends the lease to now + TTL
	Operation  Operation     `json:"operation,omitempty"`
	Owner      Owner         `json:"owner"`
}

type leaseJSON Lease

// MarshalJSON writes the TTL as a duration string ("15m0s").
func (l Lease) MarshalJSON() ([]byte, error) {
	return marshalNoEscape(struct {
		leaseJSON
		TTL string `json:"ttl"`
	}{leaseJSON(l), l.TTL.String()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Lease) UnmarshalJSON(data []byte) error {
	var v struct {
		leaseJSON
		TTL string `json:"ttl"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*l = Lease(v.leaseJSON)
	if v.TTL != "" {
		d, err := time.ParseDuration(v.TTL)
		if err != nil {
			return fmt.Errorf("lease ttl: %w", err)
		}
		l.TTL = d
	}
	return nil
}

// Expired reports whether the lease may be taken over at now: from
// ExpiresAt on. An expired lease still fences: until someone takes it over,
// its holder's writes, renewals and release succeed.
func (l Lease) Expired(now time.Time) bool { return !now.Before(l.ExpiresAt) }

// Same reports whether l and o are the same grant: same target, holder and
// generation.
func (l Lease) Same(o Lease) bool {
	return l.Target == o.Target && l.Holder == o.Holder && l.Generation == o.Generation
}

// NewLease is the lease granted to owner on target at now, for stores.
func NewLease(target Target, owner Owner, generation int64, now time.Time, ttl time.Duration) Lease {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return Lease{
		Target:     target,
		Holder:     owner.RunID,
		Generation: generation,
		AcquiredAt: now,
		ExpiresAt:  now.Add(ttl),
		TTL:        ttl,
		Operation:  owner.Operation,
		Owner:      owner,
	}
}

// Renewed is l extended to now + TTL, for stores.
func (l Lease) Renewed(now time.Time) Lease {
	if l.TTL <= 0 {
		l.TTL = DefaultTTL
	}
	l.RenewedAt = now
	l.ExpiresAt = now.Add(l.TTL)
	return l
}

// CheckAcquire validates Acquire's arguments, for stores: USAGE for a bad
// target, INTERNAL for an owner without a run id.
func CheckAcquire(target Target, owner Owner) error {
	if err := target.Validate(); err != nil {
		return err
	}
	if owner.RunID == "" {
		return errs.New(errs.INTERNAL, "acquire %s: the owner has no run id", target)
	}
	return nil
}

// HeldError is the LOCK_HELD error for a live lease held by someone else at
// now. Its details carry the lease ("lease": who, since when, until when,
// which run) and the target; its hint says how to wait or release.
func HeldError(held Lease, now time.Time) *errs.Error {
	left := held.ExpiresAt.Sub(now).Round(time.Second)
	e := errs.New(errs.LOCK_HELD, "%s is held by %s since %s, until %s (%s left on its lease, generation %d)",
		held.Target, held.Owner.DescribeAs(held.Holder), held.AcquiredAt.UTC().Format(time.RFC3339),
		held.ExpiresAt.UTC().Format(time.RFC3339), left, held.Generation).
		With("lease", held).With("target", held.Target.String())
	if held.Target.IsParent() {
		e.With("parent", held.Target.Identity)
	}
	return e.WithHint("Re-run with --lock-wait 5m to wait for the lease (it expires at %s unless renewed), or, if run %s is dead: %s",
		held.ExpiresAt.UTC().Format(time.RFC3339), held.Holder, held.Target.UnlockCommand())
}

// DescribeAs is Describe with the holder's run id as the lease names it
// (the owner's own RunID when holder is empty).
func (o Owner) DescribeAs(holder string) string {
	if holder != "" {
		o.RunID = holder
	}
	return o.Describe()
}

// HeldLease returns the lease named by a LOCK_HELD error (HeldError), so a
// caller can wait on it or recognise its own lease.
func HeldLease(err error) (Lease, bool) {
	e := errs.As(err)
	if e == nil || e.Code != errs.LOCK_HELD {
		return Lease{}, false
	}
	l, ok := e.Details["lease"].(Lease)
	return l, ok
}

// LostError is the LOCK_LOST error for a holder whose lease is no longer the
// stored one; current is the stored lease (nil when there is none).
func LostError(mine Lease, current *Lease) *errs.Error {
	var e *errs.Error
	if current == nil {
		e = errs.New(errs.LOCK_LOST, "the lease of run %s on %s (generation %d) is no longer held: it was released or force-released",
			mine.Holder, mine.Target, mine.Generation)
	} else {
		e = errs.New(errs.LOCK_LOST, "the lease of run %s on %s (generation %d) was lost: %s holds it since %s (generation %d)",
			mine.Holder, mine.Target, mine.Generation, current.Owner.DescribeAs(current.Holder),
			current.AcquiredAt.UTC().Format(time.RFC3339), current.Generation)
		e.With("current", *current)
	}
	e.With("lease", mine).With("target", mine.Target.String())
	if mine.Target.IsParent() {
		e.With("parent", mine.Target.Identity)
	}
	return e
}

// CheckFence returns nil when current is mine (same holder and generation),
// else the LOCK_LOST error, for stores.
func CheckFence(mine Lease, current *Lease) error {
	if current != nil && current.Same(mine) {
		return nil
	}
	return LostError(mine, current)
}

// NextGeneration is the generation granted after last. Generations never
// go backwards: past the largest int64 there is none, and the target is
// refused (RECEIPT_CORRUPT: only a hand edit of its generation or lease
// gets there) rather than wrapped to a negative one that older leases
// would outrank.
func NextGeneration(target Target, last int64) (int64, error) {
	if last < 0 || last == math.MaxInt64 {
		return 0, errs.New(errs.RECEIPT_CORRUPT, "the lease generation of %s is %d; no later generation exists", target, last).
			WithHint("The generation or lease of %s was edited by hand; restore it from the history.", target)
	}
	return last + 1, nil
}
