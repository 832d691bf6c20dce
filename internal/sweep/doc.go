// Package sweep reconciles a repository's receipt store with GitHub: it
// destroys what closed pull requests and deleted branches left behind,
// retries teardowns that failed, deletes tombstoned receipt branches once
// they are older than the retention, and reports leases that expired
// without being released (action-and-bot.md, "The sweep"). The bot runs it
// on start and every SPONSON_SWEEP_INTERVAL; `sponson gc` runs the same
// code once, for an Actions schedule.
//
// Reconciling from inventory, not from events, is what makes "nothing left
// behind" true when webhook deliveries are lost: GitHub does not redeliver
// a failed delivery by itself.
//
// Invariants:
//   - Nothing is destroyed whose pull request is open, nor a scope whose
//     lease is live: the state of the pull request (or branch) is asked
//     again right before each destroy, and the destroy itself runs under
//     the scope's lease (engine.Destroy), which a live holder keeps.
//   - Nothing is destroyed on an unknown answer: a GitHub error leaves the
//     scope as it is (GITHUB_STATE finding) for the next sweep.
//   - Only pr-<n> and branch-<name> scopes are judged; main and every
//     other scope are never touched.
//   - Teardown is idempotent: a scope that is closed with an empty ledger
//     is not written again, so replayed deliveries and several replicas
//     produce one effect (the store's leases and compare-and-swap decide
//     races; the loser finds nothing left to do).
//   - Every mutation goes through the engine (destroy) or the store's
//     compare-and-swap delete (pruning): the sweep writes no receipt itself.
//   - At most Sweeper.Concurrency scopes are judged at once.
//   - GitHub is asked once per sweep for the open pull requests (when it
//     can list them, OpenLister); a pull request among them is left alone
//     for this sweep, and only the others are asked about one by one.
package sweep
