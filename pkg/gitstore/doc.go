// Package gitstore is the git-branch receipt.Store (stores.md, "The
// git-branch store"): receipts and leases live on branches of the
// repository itself, so CI runs that start from nothing, the bot and a
// laptop all see the same truth, under the hosting service's permissions,
// branch rules and audit log. It speaks to the remote with go-git v5 and
// keeps nothing on disk: every operation has its own in-memory storage, over
// an object cache the store's operations share.
//
// Layout, under refs/heads/sponson-receipts/ (segments encoded by
// receipt.EncodeSegment):
//
//	<env>/<scope>                 README.md, receipt.json, lock.json while held, generation,
//	                              compacted.json once compacted
//	_locks/<sha256(identity)[:32]> README.md, lock.json while held (names the identity), generation
//	_unsaved/<env>/<scope>/<run>  README.md, receipt.json: a receipt the store refused, create-only
//
// One commit per write, message "<operation> <env>/<scope> <run> <status>"
// (lease commits: "acquire|renew|release|unlock <key> <run> generation-<n>")
// with trailers: Sponson-Event (the receipt.Event History is made of, on
// receipt writes and force-releases), Sponson-Receipt (on lease commits, the
// commit that wrote the receipt: a receipt's Version), Sponson-Depth (the
// commit's first-parent depth), Sponson-Squash (on a squash: the tip it
// replaced), Sponson-Nonce, and last, with Options.Keys (SPONSON_RECEIPT_KEY),
// Sponson-MAC (sign.go, docs/adr/0011).
//
// Invariants:
//   - Every mutation is ONE compare-and-swap on one ref, or one atomic push
//     of several (WriteMany): the store reads the tip, checks the lease
//     (holder and generation) against that tip's tree, builds the new commit
//     in memory and pushes it requiring the remote ref to still be at that
//     tip (PushOptions.RequireRemoteRefs for updates and deletes; a
//     non-forced push of a parentless commit to create). git's receive-pack
//     applies the update under the ref's lock only if the ref is still at
//     the expected value, so the lease check and the write land together or
//     not at all. The lease and the receipt are in one tree: a fenced write
//     is one commit. Not ForceWithLease: see docs/adr/0003.
//   - A mutation may start from the tip this store itself last pushed or
//     read (one round trip saved); a refusal (LOCK_HELD, LOCK_LOST) or a
//     no-op is only ever decided on a tip read fresh from the remote.
//   - After any push error the store re-reads the refs: a ref at one of the
//     commits this operation pushed (or one commit past it) means the write
//     landed and only the answer was lost — success. Every commit carries a
//     nonce (run, time, random), so no two writers can push the same commit
//     and both "succeed".
//   - A lost compare-and-swap is retried with full-jitter exponential
//     backoff within Options.Budget (default 60 s), then STORE_CONTENDED
//     with the attempts and the time spent. A lease check that fails on a
//     fresh read is LOCK_HELD / LOCK_LOST at once, never contention.
//   - Generations only grow: the generation file stays in the tree when
//     lock.json goes, and a force-release keeps it at least at the removed
//     lease's generation.
//   - "Persisted" means Write returned nil: the remote's receive-pack
//     accepted the commit. An error other than LOCK_LOST / INTERNAL does not
//     prove nothing landed.
//   - Capabilities().AtomicMulti is true only when the remote's receive-pack
//     advertises "atomic" (go-git otherwise silently pushes non-atomically);
//     then WriteMany lands all its commits or none. Otherwise it checks
//     every lease, then writes in the order given.
//   - No message ever contains a credential: the URL go-git sees has no
//     userinfo (it becomes basic auth; a token is sent as user
//     "x-access-token"), and every error text is scrubbed of the URL's
//     userinfo, the token and the password.
//   - go-git's push outcomes are strings; classify (classify.go) is the one
//     place that reads them.
//   - Signed receipts (sign.go, docs/adr/0011): with Options.Keys every
//     commit carries an HMAC-SHA256 over its branch, parents, tree, message
//     and receipt/compacted bytes, and Recorded counts only commits whose
//     MAC verifies under the current or the previous key; a forged,
//     copied or differently keyed commit records nothing. Without keys,
//     nothing is signed or verified.
//   - Bounded branches (compact.go, docs/adr/0009): no tip reaches more than
//     Options.MaxDepth commits (default 200). A write whose base is at the
//     bound is made on a squash of the base (no parent, the base's tree plus
//     compacted.json: the latest events and the ledger's provenance), with
//     the same compare-and-swap on the exact old tip. History and Recorded
//     go on through the squash's record. A remote that refuses the
//     non-fast-forward push gets the ordinary write in the same operation,
//     and none again from this store; Warnings says so once
//     (STORE_UNCOMPACTED).
//   - A branch's shape is its own scope's problem (docs/adr/0010): the
//     store reads only receipt.json, lock.json, generation and
//     compacted.json, as plain files of at most receipt.MaxBytes; anything
//     else in their place is RECEIPT_CORRUPT for that branch alone, and
//     every listing reports it beside the readable ones. Fetches ask for a
//     partial clone (blob:limit) where the remote serves one, so no blob
//     larger than a store file is ever downloaded; other entries of a tree
//     are carried over by hash, never read.
//
// Cost: where the remote's upload-pack speaks protocol v2 (docs/adr/0014)
// a read lists only the refs under its prefixes (ls-refs: the scope's
// branch, the environment, the namespace) and fetches with a request of its
// own; New's exchange is then the capabilities, no ref, and a push (git's
// receive-pack speaks v0 only) receives every ref once. A v2 remote over
// HTTP is taken to push atomically until a multi-scope write confirms it.
// Against a v0 remote every fetch and push first receives the whole ref
// advertisement (~75 bytes a ref), as follows. Read is one
// advertisement plus, when the tip is not in memory, one packfile; List(env),
// Scopes and Locks are one advertisement plus at most one depth-1 packfile of
// every matching branch, whatever their number; a fenced write is one
// advertisement plus one push request. RoundTrips counts them. Prune deletes
// tombstoned scopes' branches after a retention, so the ref count tracks
// open work. New's one exchange (the receive-pack advertisement: the
// capabilities) also lists the refs, and over HTTP the store's first read
// uses that listing instead of asking again; any push discards it. The
// receipt.Sessions methods let a run meet its floor (docs/adr/0008): View
// reads the scope and its environment in one fetch; ViewScope reads the
// scope (and the scopes it names) alone, one tip whatever the number of
// branches, and its View.Rest lists the environment later on the same ref
// listing (over HTTP: one packfile request); AcquireAt takes the
// lease on the tip View read (one push, no second read), AcquireAtWith
// (receipt.WriteAcquirer) is that lease and the run's first checkpoint in
// one commit, WriteRelease is
// the final receipt and the release in one commit, and WriteAt records a
// run that wrote nothing to a provider with one push and no lease.
// A sweep (internal/sweep) starts from Survey: one listing and one
// packfile of every scope tip's commit and tree without blobs (blob:none;
// which store files each tip holds, and when it was written), reads the
// scopes it must decide on with ReadSurveyed (one packfile request per 500
// tips, on the survey's listing over HTTP), and prunes from those reads
// with PruneSurveyed (no fetch of its own).
// docs/performance.md has the measurements.
//
// Parts: the git mechanics — ref listings, fetches, compare-and-swap
// pushes, the object cache, tree and commit building, the stalled-remote
// guard and the reading of go-git's push outcomes — are internal/gitwire,
// which knows refs, commits, trees and hashes, never receipts or leases.
// The Store holds gitwire's Remote and its own parts as named fields: the
// compare-and-swap writer (cas.go, compact.go), the lease keeper, the
// receipts reader, the session reader, the pruner, the memory of tips,
// the signer and the messages that code and scrub every error.
//
// Concurrency: a Store is safe for concurrent use; operations share only the
// immutable-object cache and the memory of last tips. Between processes and
// machines, the remote's ref lock is the only arbiter.
package gitstore
