package receipt

import (
	"context"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/errs"
)

// Version is an opaque token naming one stored state of a scope's receipt
// (the git store: the commit id; the local store: a digest of the file; the
// memory store: a counter). "" means no receipt. Two reads return the same
// token exactly when nothing was written in between that changed the
// receipt.
type Version string

// Stored is a receipt as List found it, with where it was found. Err is set,
// and Receipt nil, when that scope's receipt cannot be read
// (RECEIPT_CORRUPT, RECEIPT_VERSION): one damaged scope must not stop every
// other scope of the environment.
type Stored struct {
	Env     string
	Scope   string
	Receipt *Receipt
	Version Version
	Err     error
}

// ScopeRef is a scope that has a receipt, a lease, or both.
type ScopeRef struct {
	Env        string `json:"env"`
	Scope      string `json:"scope"`
	HasReceipt bool   `json:"has_receipt"`
	// Lease is the stored lease, live or expired (Lease.Expired); nil when
	// none is held.
	Lease *Lease `json:"lease,omitempty"`
	// Problem says why the scope's lease could not be read ("" when it
	// could): the scope is listed all the same.
	Problem string `json:"problem,omitempty"`
}

// Unreadable is one lease or receipt a listing could not read.
type Unreadable struct {
	Where string // the branch or file
	Err   error
}

// UnreadableError is the cause of the RECEIPT_CORRUPT error a listing
// returns, beside every result it could read, when it met unreadable
// entries (Locks); errors.As finds it.
type UnreadableError struct {
	Items []Unreadable
}

func (e *UnreadableError) Error() string {
	parts := make([]string, len(e.Items))
	for i, it := range e.Items {
		parts[i] = it.Where + ": " + it.Err.Error()
	}
	return strings.Join(parts, "; ")
}

// NewUnreadable is the RECEIPT_CORRUPT error naming items, nil for none.
func NewUnreadable(items []Unreadable) error {
	if len(items) == 0 {
		return nil
	}
	where := make([]string, len(items))
	for i, it := range items {
		where[i] = it.Where
	}
	return errs.Wrap(&UnreadableError{Items: items}, errs.RECEIPT_CORRUPT, "%d lease(s) cannot be read: %s", len(items), strings.Join(where, ", ")).
		With("unreadable", where).
		WithHint("Inspect each named lease; `sponson unlock` removes a scope's, and the others are listed all the same.")
}

// Write is one receipt to write and the lease that fences it.
type Write struct {
	Receipt *Receipt
	Lease   Lease
}

// Event is one entry of a target's store-level history: a receipt written
// (Operation is the receipt's) or a lease force-released (OpUnlock).
type Event struct {
	At         time.Time `json:"at"`
	Target     Target    `json:"target"`
	Operation  Operation `json:"operation"`
	RunID      string    `json:"run_id,omitempty"`
	Status     Status    `json:"status,omitempty"`
	Version    Version   `json:"version,omitempty"`    // the receipt written
	Generation int64     `json:"generation,omitempty"` // the lease that wrote, or was released
	By         string    `json:"by,omitempty"`         // unlock: who
	Reason     string    `json:"reason,omitempty"`     // unlock: why
	Lease      *Lease    `json:"lease,omitempty"`      // unlock: the lease released
}

// Capabilities is what a store guarantees, printed by `sponson locks --json`
// and in the Action's summary so the guarantee in force is visible.
type Capabilities struct {
	Locking      bool `json:"locking"`       // leases exclude each other
	FencedWrites bool `json:"fenced_writes"` // Write checks the lease atomically with the write
	AtomicMulti  bool `json:"atomic_multi"`  // WriteMany lands all writes or none, even across a crash
	History      bool `json:"history"`       // History returns past runs and unlocks
}

// Receipts is the receipt half of a store.
//
// Every method may also fail with STORE_UNAVAILABLE (cannot reach or read
// the store), STORE_PERMISSION (refused access), and, when ctx is done
// before the store was touched, an INTERRUPTED error wrapping ctx.Err().
type Receipts interface {
	// Read returns the scope's latest receipt and its version token; a scope
	// with no receipt is (nil, "", nil). RECEIPT_CORRUPT when the stored
	// bytes do not parse, exceed MaxBytes, name another env or scope, or
	// are missing where a receipt was written before (DecodeStored,
	// Missing); RECEIPT_VERSION when a newer Sponson wrote them:
	// never a nil receipt standing in for one that cannot be read.
	Read(ctx context.Context, env, scope string) (*Receipt, Version, error)

	// List returns the latest receipt of every scope of env that has one,
	// sorted by scope, in a number of round trips that does not grow with
	// the number of scopes. A scope whose receipt cannot be read (corrupt,
	// missing where one was written, newer, naming another scope) is
	// returned with Err (RECEIPT_CORRUPT / RECEIPT_VERSION naming it) and no
	// receipt; it never fails the call, so one damaged or hostile branch
	// blocks only its own scope. The caller warns about it, and must not
	// take its resources for unmanaged.
	List(ctx context.Context, env string) ([]Stored, error)

	// Write stores r as the latest receipt of r's scope, fenced by lease:
	// it succeeds only if the stored lease of that scope still has lease's
	// holder and generation, checked atomically with the write. An expired
	// lease that nobody has taken over still fences: its holder's write
	// succeeds (nobody else can have written). LOCK_LOST when the lease was
	// released, force-released or taken over (the details name the current
	// holder); INTERNAL when lease is not a lease on r's scope or r cannot
	// be encoded; STORE_CONTENDED when a compare-and-swap kept losing to
	// other writers; STORE_REJECTED when a server-side rule refused it. An
	// error other than LOCK_LOST and INTERNAL does not prove that nothing
	// was written (an answer can be lost): re-read to know.
	Write(ctx context.Context, r *Receipt, lease Lease) error

	// WriteMany writes several scopes' receipts (succession), each fenced by
	// its own lease. If any lease is not held, LOCK_LOST and nothing is
	// written. With Capabilities().AtomicMulti the writes land together or
	// not at all; without it a crash or I/O error part-way can leave some
	// written, in the order given, and the caller orders them so that an
	// idempotent retry repairs it. INTERNAL for two writes to one scope.
	WriteMany(ctx context.Context, writes []Write) error

	// History returns the target's store-level history, oldest first: one
	// event per run that wrote a receipt (its latest write) and one per
	// force-release. Empty when Capabilities().History is false.
	History(ctx context.Context, target Target) ([]Event, error)
}

// Leases is the lease half of a store. Time comes from the store's Clock.
//
// Every method may also fail with STORE_UNAVAILABLE, STORE_PERMISSION,
// STORE_CONTENDED, and INTERRUPTED when ctx is done before the store was
// touched; USAGE for a target that is not valid (Target.Validate).
type Leases interface {
	// Acquire takes the lease on target for owner, for ttl (DefaultTTL when
	// ttl <= 0). A target with no lease, or whose lease expired, is granted
	// with a generation one above the last ever granted on it; an expired
	// lease taken over is returned as preempted. A live lease is LOCK_HELD
	// with the holder's details (HeldError, HeldLease), whoever asks —
	// leases are not re-entrant, even for the same run id; a caller that
	// lost the answer of its own Acquire finds its lease in the error.
	// INTERNAL when owner has no RunID.
	Acquire(ctx context.Context, target Target, owner Owner, ttl time.Duration) (lease Lease, preempted *Lease, err error)

	// Renew extends the lease to now + its TTL and returns it. LOCK_LOST when
	// the stored lease is not this holder's and generation (released,
	// force-released or taken over). An expired lease nobody took is renewed.
	Renew(ctx context.Context, lease Lease) (Lease, error)

	// Release gives the lease up. Releasing a lease that is not the stored
	// one (released, taken over, never held) is a no-op returning nil: a
	// stale holder never removes its successor's lease.
	Release(ctx context.Context, lease Lease) error

	// ForceRelease removes target's lease whoever holds it (`sponson
	// unlock`) and records who, why and the lease in the target's history.
	// It returns the lease removed, nil when none was held (nothing is
	// recorded then). USAGE when reason or who is empty. The next Acquire
	// still gets a higher generation, so the old holder is fenced out.
	ForceRelease(ctx context.Context, target Target, reason, who string) (*Lease, error)

	// Lease returns target's stored lease, live or expired, or nil.
	Lease(ctx context.Context, target Target) (*Lease, error)

	// Locks returns every stored lease, scopes' and parent objects', live or
	// expired, sorted by Target.Key (for `sponson locks`). A lease that
	// cannot be read does not hide the others: they are returned together
	// with an *UnreadableError (RECEIPT_CORRUPT) naming each bad one.
	Locks(ctx context.Context) ([]Lease, error)
}

// Store is where receipts and leases live. The engine depends on this
// interface only; every implementation passes receipttest.Run.
type Store interface {
	Receipts
	Leases

	// Scopes returns every (env, scope) that has a receipt or a lease,
	// sorted by env then scope, with its lease if any: names and leases,
	// never receipts (for the sweep and `sponson locks`). Parent objects
	// are not scopes: Locks lists their leases. A scope whose lease cannot
	// be read is listed with Problem set and no Lease; it never fails the
	// call.
	Scopes(ctx context.Context) ([]ScopeRef, error)

	// Capabilities says what the store guarantees.
	Capabilities() Capabilities
}

// CheckWrite validates a write before a store fences it: INTERNAL when the
// receipt is missing, names no scope, or the lease is not on its scope.
func CheckWrite(r *Receipt, lease Lease) error {
	if r == nil {
		return errs.New(errs.INTERNAL, "write: nil receipt")
	}
	if r.Env == "" || r.Scope == "" {
		return errs.New(errs.INTERNAL, "write: the receipt names no environment or scope (%q/%q)", r.Env, r.Scope)
	}
	if lease.Target != r.Target() {
		return errs.New(errs.INTERNAL, "write %s: fenced by a lease on %s, not on the receipt's scope", r.Target(), lease.Target)
	}
	return nil
}

// CheckWrites validates a WriteMany: every write as CheckWrite, and no scope
// twice.
func CheckWrites(ws []Write) error {
	seen := map[Target]bool{}
	for _, w := range ws {
		if err := CheckWrite(w.Receipt, w.Lease); err != nil {
			return err
		}
		t := w.Receipt.Target()
		if seen[t] {
			return errs.New(errs.INTERNAL, "write many: %s is written twice", t)
		}
		seen[t] = true
	}
	return nil
}

// Interrupted is the error for a ctx that is done before the store was
// touched, or nil.
func Interrupted(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return errs.Wrap(err, errs.INTERRUPTED, "%s", what)
	}
	return nil
}

// Provenance is implemented by stores that keep, beside a scope's latest
// receipt, the receipts Sponson itself wrote for it (its history). Destroy
// uses it so that a ledger edited by hand cannot aim it at a resource the
// scope never created (a hostile push to the store): an entry is destroyed
// only when Recorded proves it. Every store of this module implements it
// (the git store from its commits, the local store from its record file,
// the memory store from its writes); against a store that does not,
// destroy proves nothing and so deletes nothing (LEDGER_UNPROVEN).
type Provenance interface {
	// Recorded returns the identities (ResourceRef.Identity) of every
	// resource that a receipt this store wrote for target — through Write
	// or WriteMany, never a hand edit — recorded as created by Sponson or
	// as an intent, and that no later write of Sponson's dropped
	// (RecordIntroduced). ok is false when the store holds no such record
	// for target (a scope written before the store kept them, a branch
	// only a person wrote, or no receipt at all): nothing is proven then,
	// and destroy deletes nothing on its word (unknown is unproven).
	Recorded(ctx context.Context, target Target) (ids map[string]bool, ok bool, err error)
}

// RecordIntroduced updates ids, what Sponson's writes of a scope proved it
// created, with a write by Sponson of after over the stored before (nil
// for none): the entries after introduces as created by Sponson or as
// intents are added — a run records what it creates (an intent first, for
// most ops), a succession what it hands over — and every id after's ledger
// no longer holds is dropped: a resource that left the ledger (destroyed,
// rolled back, handed over) must be introduced again to count, so a hand
// edit that puts it back proves nothing. An entry that before already held
// proves nothing: a run carries forward whatever ledger it read, a hand
// edit included.
func RecordIntroduced(ids map[string]bool, before, after *Receipt) {
	if after == nil {
		return
	}
	had := map[string]bool{}
	if before != nil {
		for _, en := range before.Ledger {
			had[en.Ref().Identity()] = true
		}
	}
	holds := map[string]bool{}
	for _, en := range after.Ledger {
		id := en.Ref().Identity()
		holds[id] = true
		if !had[id] && (en.CreatedBy == CreatedByIntent || en.CreatedBy == CreatedBySponson) {
			ids[id] = true
		}
	}
	for id := range ids {
		if !holds[id] {
			delete(ids, id)
		}
	}
}
