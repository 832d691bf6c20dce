// Package memstore is an in-memory receipt.Store for tests: engine tests,
// scenario tests and the demo's throwaway runs. It passes receipttest.Run,
// which is the only reason a test may trust it in place of a real store.
//
// Invariants:
//   - Receipts are kept as the bytes receipt.Encode produced and decoded on
//     every read, so callers never share memory with the store and see the
//     same JSON semantics (numbers as float64, times as parsed) as with the
//     real stores.
//   - Every method runs under one mutex: each call is atomic, fenced writes
//     included, and WriteMany is atomic (Capabilities().AtomicMulti) unless
//     the store was made with NonAtomicMulti.
//   - "Persisted" means in this process's memory, for the life of the
//     Store.
//
// Fault hooks (Inject) make chosen calls fail before they take effect, or
// after (Lost: the store did it, the caller was told it failed), so engine
// tests can reproduce a store outage, a lost answer to a receipt write, or a
// crash in the middle of a non-atomic succession. Plant puts raw bytes in
// place of a receipt (corrupt or newer receipts).
package memstore
