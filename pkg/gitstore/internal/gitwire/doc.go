// Package gitwire is the git plumbing under the receipt store: one remote
// spoken to with go-git v5, and with the client side of protocol v2's
// ls-refs and fetch (v2.go, docs/adr/0014) where upload-pack speaks it —
// ref listings, depth-bounded and filtered
// fetches into an operation's in-memory storage, compare-and-swap pushes
// (RequireRemoteRefs on every update and delete, a non-forced push of a
// parentless commit to create), the object cache operations share, tree
// and commit building, and the guard that bounds a stalled HTTP exchange.
// It speaks refs, commits, trees, hashes and a remote; what a branch holds
// and what its files mean (receipts, leases, scopes) is pkg/gitstore's.
//
// It is internal to pkg/gitstore, not a plumbing package of its own: its
// only caller is the store, whose invariants (doc.go there) it carries out,
// so its API may change with the store's needs; go-git keeps plumbing apart
// from storage the same way, inside one module.
//
// Errors: what go-git's push outcomes mean is decided in one place,
// Classify (they are strings); every other error goes through the
// Config.Code the store gives, so the store alone decides codes, hints and
// the scrubbing of credentials.
//
// Concurrency: a Remote is safe for concurrent use; a Storage belongs to
// one operation; the Cache holds only immutable objects named by their
// hash.
package gitwire
