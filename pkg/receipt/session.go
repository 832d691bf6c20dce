package receipt

import (
	"context"
	"time"
)

// View is one consistent read of a scope and its environment: the scope's
// own receipt, version and stored lease, and every other scope of the
// environment that has a receipt (what List returns, without the scope
// itself).
type View struct {
	Receipt *Receipt
	Version Version
	// Lease is the scope's stored lease, live or expired; nil when none.
	Lease  *Lease
	Others []Stored
	// Rest, when not nil, lists the whole environment (List(env)) on
	// demand: Others then holds only the scopes the read named
	// (ScopeViewer). Nil when Others is every other scope.
	Rest Lister
	// Named, when not nil, reads the receipts of the named scopes of the
	// environment only, as of the same read (a scope without a branch is
	// not in the result; a damaged one is a Stored with Err): the owners of
	// a few resources found in other scopes' places, without the whole
	// environment. Nil when the store has no such read.
	Named NamedLister
}

// Viewer is a store that can read a scope, its lease and its
// environment's other receipts in one exchange (the git store: one ref
// listing and one packfile). Errors as Read and List.
type Viewer interface {
	View(ctx context.Context, env, scope string) (*View, error)
}

// ScopeViewer is a store that can read a scope without the rest of its
// environment, and the rest later, only if the caller needs it
// (docs/adr/0008, "The other scopes, on demand"): a run whose lines meet
// nothing outside the scope's own ledger then never pays for the other
// scopes' receipts.
type ScopeViewer interface {
	// ViewScope is View with only the scope's own branch and those of the
	// scopes named in also read (a succession's predecessor): Others holds
	// the named scopes that have a receipt, a damaged one as a Stored with
	// Err (as List returns it), and Rest lists the whole environment as
	// List(env) does, as of the same read (the same ref listing where the
	// store can: no listing of its own), whenever the caller calls it.
	// Errors as Read.
	ViewScope(ctx context.Context, env, scope string, also []string) (*View, error)
}

// Lister is List(env) of one environment, called when it is needed.
type Lister func(ctx context.Context) ([]Stored, error)

// NamedLister is List(env) restricted to the named scopes.
type NamedLister func(ctx context.Context, scopes []string) ([]Stored, error)

// Sessions are the optional store operations that let a run meet its
// floor of round trips (docs/adr/0008): a store that implements them does
// in one step what the engine would otherwise do in two.
type Sessions interface {
	Viewer

	// AcquireAt is Acquire, granted only while the scope's receipt is
	// still at version v ("" when it had none): the read that v came from
	// is then the run's read, and no second read is needed under the
	// lease. STORE_CONTENDED with the detail "receipt_moved" when the
	// receipt changed since (read again and retry); otherwise as Acquire.
	AcquireAt(ctx context.Context, target Target, owner Owner, ttl time.Duration, v Version) (Lease, *Lease, error)

	// WriteRelease is Write followed by Release in one atomic step (the git
	// store: one commit): the final receipt of a run and the end of its
	// lease. Errors as Write; when it fails the lease is still held.
	WriteRelease(ctx context.Context, r *Receipt, lease Lease) error

	// WriteAt records r without a lease, only if the scope's receipt is
	// still at version v and no lease (live or expired) is stored: the
	// receipt of a run that wrote nothing to a provider. STORE_CONTENDED
	// with the detail "receipt_moved" when the receipt changed or a lease
	// is stored; the caller then runs again under the lease.
	WriteAt(ctx context.Context, r *Receipt, v Version) error
}

// WriteAcquirer is a store that can take a lease and write a receipt under
// it in one atomic step (the git store: one commit): a run's lease and its
// first checkpoint (docs/adr/0008, "The lease and the first checkpoint in
// one commit").
type WriteAcquirer interface {
	// AcquireAtWith is AcquireAt followed by Write(r, the lease taken), in
	// one step: both land or neither does. r must be of target's scope.
	// A live lease whose holder is owner.RunID is LOCK_HELD naming it, as
	// Acquire reports it, whatever the version: only this very step could
	// have taken it, so it landed (its answer was lost) and r is stored.
	// Otherwise errors as AcquireAt.
	AcquireAtWith(ctx context.Context, target Target, owner Owner, ttl time.Duration, v Version, r *Receipt) (Lease, *Lease, error)
}

// HistoryPager is a store that can return a target's latest history
// without reading all of it (`sponson receipt --history` reads what it
// prints).
type HistoryPager interface {
	// RecentHistory returns at most n of target's latest events (as
	// History returns them, oldest first) and whether older ones exist.
	// n <= 0 is the whole history.
	RecentHistory(ctx context.Context, target Target, n int) (events []Event, more bool, err error)
}

// DetailMoved is the detail a Sessions method sets on STORE_CONTENDED when
// the scope changed since the version it was given.
const DetailMoved = "receipt_moved"
