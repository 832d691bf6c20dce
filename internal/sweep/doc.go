// Package sweep reconciles a repository's receipt store with GitHub: it
// destroys what closed pull requests and deleted branches left behind,
// hibernates previews idle past a TTL (when set), retries teardowns that
// failed, deletes tombstoned receipt branches once
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
//   - Nothing is destroyed whose pull request is open (but an idle
//     preview, below), nor a scope whose lease is live: the state of the pull request (or branch) is asked
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
//   - With Sweeper.Claim set (the bot's replicas), a repository is swept
//     only by the holder of the lease of parent object ClaimIdentity in its
//     own store, taken for Claim and not released: replicas sweeping within
//     one interval do the work once; a held claim costs no push.
//   - The claim is renewed every third of its TTL while the sweep runs
//     (keepClaim), so a sweep longer than the claim stays one replica's;
//     a renewal refused LOCK_LOST (the claim lapsed and another replica
//     took it) stops this sweep from starting another scope's judgement
//     (Report.ClaimLost); what is under way finishes under its scope's
//     lease. After the sweep the claim is left to lapse, as before.
//   - Idle expiry (Sweeper.IdleTTL > 0, a Repo with an Idler, and a
//     GitHub that lists open pull requests with labels, OpenDescriber) is
//     the only way an open pull request's scope is destroyed. Activity is
//     the later of the receipt's last apply and the head's last push; a
//     preview idle TTL − warn is warned (IdleWarning, kept by the Idler),
//     and is hibernated only when it is idle TTL, was warned at least warn
//     ago, and the warning counted from the activity there is now (a push
//     or an apply since answers it). Right before destroying, GitHub is
//     asked again: a close, a keep label or a new head leaves it alone.
//     The destroy is the engine's (leases, locks, manual steps, the
//     production approval: an unattended sweep destroys nothing of
//     production) with no tombstone, so the next apply rebuilds it. A pull
//     request carrying KeepLabel is never expired. GitHub is asked nothing
//     more about a preview whose receipt branch was written less than
//     TTL − warn ago (its receipt is not even read).
//   - At most Sweeper.Concurrency scopes are judged at once.
//   - GitHub is asked once per sweep for the open pull requests (when it
//     can list them, OpenLister); a pull request among them is left alone
//     for this sweep, and only the others are asked about one by one.
//
// Cost at the receipts remote (a git-branch store, Surveyor): a sweep
// reads the ref listing once. Over it, one packfile request fetches every
// scope branch's tip commit and tree without a blob (blob:none, where the
// remote serves partial clones: a few hundred bytes a scope): the tree
// says whether lock.json (a lease) and receipt.json are there, the
// commit's time how long ago the branch was last written. From that and
// GitHub's open pull requests alone the sweep decides which receipts it
// must read (mustRead): a scope holding a lease (to report it, and to
// leave it alone while live); a pull request's that is not open; a
// branch scope's (its receipt names the branch to ask about); a scope
// last written at least the retention ago and not an open pull
// request's (a tombstone to prune is one of those). It reads them, with
// their leases, in packfile requests of up to 500 tips on the same
// listing, judges those scopes alone, and prunes from what it read (one
// compare-and-swap push per 100 deletes). With nothing to do that is two
// requests (the listing being the store's opening one) whatever the
// number of scopes; each teardown then costs what a destroy costs
// (docs/performance.md, "The sweep at many scopes"). Any other store is
// swept scope by scope (Scopes, then a Read per scope judged).
package sweep
