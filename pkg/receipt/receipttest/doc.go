// Package receipttest is the conformance suite every receipt.Store passes
// (stores.md, "The contract"). A store's own tests call Run with a factory;
// a fake that passes it is as good as the real store for engine tests.
//
// The suite owns time: the factory receives a *clock.Fake and the
// store must take every timestamp and expiry decision from it, so expiry
// tests move the clock instead of sleeping. Each subtest makes its own store
// and clock and may run in parallel with the others; a factory must
// therefore return independent stores (a fresh directory, a fresh remote).
//
// What it checks, by invariant: I6 (a written receipt reads back as
// written), I10 (a run that lost its lease never has a write accepted, and
// its successor's receipt stands), lease exclusion under racing goroutines,
// generations that only grow, release as a no-op for non-holders, the
// escape hatch, parent-object leases that never collide with scopes, and
// corrupt or newer receipts surfacing as RECEIPT_CORRUPT / RECEIPT_VERSION
// (when the implementation gives the suite a way to plant raw bytes).
package receipttest
