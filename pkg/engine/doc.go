// Package engine plans, applies and destroys the side effects of a plan in
// one scope (engine.md). It knows no provider, no CLI and no GitHub: it sees
// ops through the adapter contract, receipts and leases through
// receipt.Store, and speaks in run Options, never in flags.
//
// Entry points: Engine.Plan, Engine.Apply, Engine.Destroy,
// Engine.Succeed, Engine.Reopen and Engine.PushUnsaved; RenderPush for
// text (plans and runs are drawn by internal/report); AcquireLease and
// LeaseKeeper for any lease (scope or parent object); Owners for the
// succession rule of ownership.
//
// Composition: every entry point starts with Engine.begin, which checks
// the engine, resolves the environment once (Options.Env, the context's,
// "preview") and makes the run's owner into a start; every lease of a run
// (the scope's, a predecessor's or successor's, a parent object's) is
// taken by start.acquire and given up by start.release. A run is made of
// parts, each the one owner of its state, holding its own lock where
// lines running at once share it:
//
//   - ledger (ledger.go): the entries being judged and written and the
//     hash key, behind ledger.mu; the recorder writes from its snapshots.
//   - notes (notes.go): the warnings, behind notes.mu.
//   - scopeLease (scopelease.go): the scope's LeaseKeeper and what the
//     run knows of it (lost, a provider write attempted) behind its mu,
//     and the run's turns on parent objects behind parentMu.
//   - recorder (recorder.go): the receipt being written, the lines'
//     results (mu), the group commit of checkpoints (ck) and the cache of
//     redacted parts (redMu).
//   - inspector (state.go): the lines as they are read and judged — the
//     secrets (set before any line runs), the outputs known (its mu) and
//     one lineState per line, owned by the goroutine running the line.
//   - owners (owners.go): who else manages what, read on demand, behind
//     its own mu.
//   - rollback (rollback.go): what an apply created, behind its mu, and
//     the undoing of it.
//   - scheduler (schedule.go): the dependency waves apply and plan run
//     lines in, used by the one goroutine that starts them.
//
// Apply (applier), destroy (destroyer) and plan (planner) hold the parts
// they use as named fields, embedding none: apply and destroy share a
// scopeWriter, which holds the ledger, notes, scope lease and recorder and
// owns no state of its own; apply adds an inspector and a rollback;
// destroy its walk of the ledger (what became of each entry); plan an
// inspector, a ledger it only reads, and notes. Succession works on the
// start of its run (handOver), under the leases the caller holds.
//
// Invariants (quality.md numbers them; tests cite them):
//   - I1 No secret value leaves the engine: every secret is resolved and
//     registered with the Redactor before any output exists, sensitive
//     outputs are registered as soon as they are read, and results, errors
//     (adapter text included), receipts and unsaved files pass through the
//     Redactor field by field. Results show pending, secret and sensitive
//     values as null beside an explicit state.
//   - I2 When a line fails, rollback destroys what this run created, newest
//     first, after locating the intents whose answer was lost: the set of
//     resources is what it was before the run.
//   - I3 An apply against an unchanged world makes no provider write: a line
//     whose diffs are all unchanged never reaches op.Apply.
//   - I4 Plan writes nothing anywhere: no provider write, no receipt, no
//     lease (it reads the lease only to say an apply is running).
//   - I5 Nothing Sponson does not manage is written: a resource found live
//     that no scope manages is adopted only when it already equals the plan
//     or the line says {keep: true} (else PROVIDER_CONFLICT); a resource of
//     another scope may be relied on, never changed (OWNED_BY_OTHER_SCOPE);
//     adopted resources are never destroyed, only forgotten. Who else
//     manages a resource is asked before apply judges anything its own
//     ledger does not hold; the other scopes' receipts are read then, once
//     a run (owners.go), and never for what the ledger holds.
//   - I6 Every receipt is written whole through one writer (the run's
//     recorder: its checkpoints and final write), fenced by the scope
//     lease.
//   - I7 Production is never written without a named approver: a run whose
//     environment is production's by name (plan.Production: it contains
//     "prod"), or with any active line whose op says it writes such an
//     environment, is refused (ENV_NOT_APPROVED) before anything is read.
//   - I8 Destroy walks the ledger, not the plan; what it cannot remove stays
//     in the ledger (DESTROY_FAILED, INTENT_UNRESOLVED), so nothing is
//     forgotten. A manual step's entry stays until a person confirms its
//     undo (destroy --confirm <line>; the destroy ends partial), and no
//     step is ever confirmed without a named confirmer (steps.go).
//   - I9 No entry of a shared parent list is lost: every write of a line
//     whose op names a parent object (LockOn) happens under that object's
//     lease, after inspecting the line again under it; rollback and destroy
//     lock the object recorded in the ledger (parent.go).
//   - I10 Every receipt write names the lease's holder and generation; a run
//     that lost its lease stops (LOCK_LOST) and its successor's receipt
//     stands. Before every provider write the holder checks its own
//     deadline, measured from when its last acquire or renew was sent, and
//     stops with TTL/5 to spare.
//   - I11 Before any create leaves, its keys are intents in the ledger and a
//     fenced checkpoint receipt is written: a crash or a lost answer after
//     that can never make Sponson forget a resource. Failed, skipped,
//     waiting and blocked lines keep their ledger entries.
//
// The ledger never forgets: a run starts from the previous ledger and
// changes only entries it observed or wrote; entries no line declares
// become orphan (created by Sponson) or are forgotten (adopted). Hashes are
// HMAC (receipt.HashValue) of the canonical value under the scope's random
// hash key, generated once and carried forward.
//
// Concurrency: an Engine may run several commands at once on different
// scopes. Within an apply, lines whose dependencies are done run at once,
// at most Options.Parallelism (schedule.go); each line's state belongs to
// the goroutine running it, the shared state is in the parts above, each
// behind its own lock (one nesting only: owners warn of an unreadable
// scope to notes while holding theirs), and every receipt write
// goes through the run's recorder: checkpoints one at a time, lines asking at
// once sharing one write (group commit), each line's part of the receipt
// redacted once, when it changes (recorder.go). What a
// run reports does not depend on the interleaving: lines are listed in run
// order, entries a run adds are put in run order of their lines, warnings
// raised by concurrent lines are sorted. Rollback undoes in reverse
// completion order. Leases are always taken in one order — the scope's
// (and, for succession, the successor's before the predecessor's), then at
// most one parent object per worker — and nobody waits for a scope lease
// while holding a parent lease, so runs cannot deadlock.
//
// Once-only outputs (onceonly.go; OutputSpec.Once, a password answered
// only to its create) are never recorded; the producer's ledger entry keeps
// their fingerprints (HashValue under the scope's key). A later run uses
// the reference as "what is live" and compares: a user of the value that
// has nothing live, or whose changed live values no longer hold the
// fingerprint, is blocked OUTPUT_UNAVAILABLE before it writes, naming the
// producer to recreate; apply --recreate refuses a user without its
// producer before anything is deleted, and recreates a producer's users
// with it (recreateSet).
//
// Succession (succession.go) moves a branch scope's ledger into its pull
// request's scope with an ownership rule (Owners) under which every
// resource has exactly one owner at every moment a reader can observe,
// whether or not the store writes several scopes atomically.
package engine
