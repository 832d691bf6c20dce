// Package receipt is Sponson's memory: the Receipt (what a run of a scope
// did, and the ledger of what the scope manages), the leases that serialise
// runs of a scope and writers of a shared parent object, and the Store
// interface both live behind.
//
// Invariants:
//   - Only the holder of a scope's lease writes that scope's receipt. Every
//     write is fenced: the store accepts it only while the stored lease has
//     the writer's holder and generation, checked atomically with the write.
//     A run that lost its lease (taken over, released, force-released) gets
//     LOCK_LOST and its successor's receipt stands (quality.md, I10).
//   - Generations only grow: every Acquire of a target, after a release, a
//     force-release or an expiry, gets one above the last ever granted, so a
//     takeover is always visible and an old lease never fences again.
//   - Expiry makes a lease takeable, nothing more: until someone takes it
//     over, its holder's writes, renewals and release still succeed. The
//     holder's own deadline (engine.md) is what stops it touching providers.
//   - Leases are not re-entrant: a live lease is LOCK_HELD for everyone,
//     including another caller with the same run id. A run's parallel
//     workers therefore never share a parent lease by accident.
//   - "Persisted" means a later Read, by this or any other process using the
//     same store, returns the receipt: Write returned nil. A Write that
//     returned another error may or may not have landed (an answer can be
//     lost); callers re-read to know.
//   - Every receipt written parses and reads back as written (I6): Encode is
//     deterministic, Decode refuses what it cannot read — RECEIPT_CORRUPT
//     for bytes that are not a receipt, RECEIPT_VERSION for a newer format —
//     and nothing here ever replaces such a receipt silently.
//   - A refused final write is never merged into the stored receipt: the
//     engine keeps it with SaveUnsaved, and `sponson receipts push` decides
//     with CompareLedgers and AdoptMissing (which only ever adds entries).
//
// Concurrency: every Store is safe for concurrent use by many goroutines,
// and the stores that say Capabilities().Locking exclude across processes
// and machines sharing them. Time comes from an injected clock.Clock (clock.Fake
// in tests), never from time.Now directly.
//
// Layout shared by the stores (layout.go): a scope lives at
// "<env>/<scope>/" with both names encoded by EncodeSegment, a parent
// object's lock at "_locks/<first 32 hex of sha256(identity)>/". No
// encoded environment starts with '_', so the two can never collide.
//
// The conformance suite is receipttest.Run; memstore is the in-memory store
// for tests, localstore the file store for laptops and agents, and
// pkg/gitstore the git-branch store.
package receipt
