// Package localstore is the local file receipt.Store (stores.md, "The local
// store"), for laptops, agents without a remote, and tests. It keeps the git
// store's logical layout under one root directory (default
// receipt.DefaultLocalRoot, ".sponson/receipts"):
//
//	<root>/<env>/<scope>/receipt.json      the latest receipt
//	<root>/<env>/<scope>/lock.json         the lease, while one is held
//	<root>/<env>/<scope>/generation        the last lease generation granted
//	<root>/<env>/<scope>/history/*.json    one file per run, one per unlock
//	<root>/_locks/<id>/lock.json           a parent object's lease (identity in clear)
//	<root>/<dir>/.flock                    the mutex of that directory
//
// Env and scope are encoded with receipt.EncodeSegment: no name can escape
// the root, nest, hide, or reach "_locks".
//
// Invariants:
//   - Every read-check-write (acquire, renew, release, unlock, fenced write)
//     runs under an exclusive flock(2) of the target directory's .flock, so
//     fencing holds between goroutines and between processes on one
//     machine. WriteMany takes the mutexes of all its scopes in sorted
//     order (no deadlock) and checks every lease before writing anything.
//   - Files are replaced by write-to-temp + fsync + rename(2) + fsync of the
//     directory, and a free lease is created with link(2): a reader without
//     the mutex sees a whole old file or a whole new one, never a mix.
//     Reads take no mutex.
//   - "Persisted" means Write returned nil: the receipt is renamed into
//     place and fsynced, and survives the process and the machine.
//   - The generation file outlives lock.json, so generations keep growing
//     across releases and force-releases.
//   - WriteMany is not atomic across scopes (Capabilities().AtomicMulti is
//     false): a crash between two renames leaves the first scopes written.
//     The engine orders succession's writes so an idempotent retry repairs
//     that.
//   - Reading never writes: no directory is made until a lease is taken.
//
// Fencing does not hold across machines sharing the directory over a
// network file system whose flock is not coherent; use the git store there.
package localstore
