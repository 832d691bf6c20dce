// Package optest is an in-memory cloud with two ops, fake.object and
// fake.item, for engine tests only. It is never registered as a user-facing
// adapter and shares nothing with pkg/sim: it exists so the engine can be
// tested without HTTP, with every fault a provider can produce at the op
// boundary.
//
// The ops (see ObjectOp and ItemOp for parameters and keys):
//   - fake.object: one provider object per resource, key
//     object:<project>:<name>; fields are the desired state, create_only
//     fields force a replace, deploy: true gives it a deployment whose
//     external outputs (deploy_url, deploy_id) arrive with the "deploy" event.
//   - fake.item: one entry in a list on a shared parent object, key
//     item:<project>:<list>:<item>, written by read-modify-write of the whole
//     list with no precondition (GET, latency, PUT), like Auth0's callbacks.
//     LockOn names the list; without the engine's parent lock, concurrent
//     writers lose entries (the control case of invariant I9).
//
// Invariants:
//   - Cloud is safe for concurrent use: one mutex guards all state, and it
//     is never held while a hook runs or latency sleeps. The only
//     non-atomic provider operation is the item read-modify-write, on
//     purpose.
//   - Read, Diff, Lookup, AwaitExternal and ListScope never mutate. An Apply
//     whose diffs are all unchanged sends nothing (no call, no write).
//   - Apply calls intend with the keys before any create is sent (before the
//     create's hooks and faults fire); when intend fails nothing is sent and
//     its error is returned.
//   - Every mutation that reaches the provider through an op is appended to
//     the write log (Writes), including those that failed there (Failed).
//     Seeding, drift (Edit, Delete, Recreate, AddItem, RemoveItem) and
//     deploy events are not writes of Sponson and are not logged.
//   - Objects are deleted and updated by provider id when the caller knows
//     it: a resource recreated behind Sponson's back (Recreate) is "already
//     gone" for a Destroy of the old id and is never touched (I5).
//   - Ids ("obj_N", "dpl_N") and tokens come from counters: runs are
//     deterministic except for the interleaving of goroutines.
//   - Errors are coded PROVIDER_*, PARAM_INVALID or EXTERNAL_FAILED and never
//     contain a token.
//
// Faults (faults.go) are matched by Match{Op, Method, Key}, each field empty
// for "any", and consumed as they fire, oldest first.
package optest
