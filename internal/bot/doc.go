// Package bot is the Sponson GitHub App server (action-and-bot.md, "The
// bot"): it verifies and de-duplicates webhook deliveries, queues them,
// and hands each pull request's resources on (succession at open),
// tears them down (at close, and when a branch is deleted), and sweeps
// every installed repository for what missed deliveries left behind
// (internal/sweep).
//
// Invariants:
//   - Nothing unverified is acted on: a delivery is read whole (at most
//     MaxBody bytes, else 413), its X-Hub-Signature-256 checked over the
//     raw body in constant time (SHA-256 only; a SHA-1-only delivery is
//     refused, 401; the MAC is go-github's ValidateSignature), and decoded
//     (else 400) before anything is queued or remembered. A refused
//     delivery changes nothing.
//   - Each event type has one handler (event.go, handlers.go: Handles and
//     Handle, the shape of go-githubapp's EventHandler), found in one map:
//     its Triage gives the webhook's answer, its Handle, on a worker,
//     decodes the payload again with go-github's types and does the work.
//     An event without a handler is checked to be JSON and ignored.
//   - Unauthenticated work is bounded: the bytes of bodies held before
//     their signature is checked come out of one budget for all requests
//     at once (MaxUnverified, default two largest bodies), taken before
//     they are read (a known length) or chunk by chunk (chunked); past it
//     the delivery is answered 503 with Retry-After without being read.
//     /healthz never waits on it. The server's ReadTimeout bounds how long
//     a slow sender holds its share.
//   - A delivery is acted on once: Dedup admits one copy per delivery id
//     and per body hash, atomically; a failed or unqueued delivery is
//     forgotten so GitHub's redelivery is handled. Handlers are
//     idempotent anyway (a torn-down scope is not written again, a
//     succession with nothing to move writes nothing), and every mutation
//     goes through the store's leases and compare-and-swap, so several
//     replicas on the same deliveries produce one effect.
//   - GitHub gets its answer before any work: 202 once queued, 503 with
//     Retry-After when the queue is full; the queue never blocks the
//     webhook.
//   - Work on one (repository, scope) is serialised by the queue; other
//     keys run in parallel on Workers workers.
//   - Nothing is destroyed on the webhook's word alone: the handler asks
//     GitHub right before (a late close of a reopened pull request
//     destroys nothing; a deleted branch pushed again is kept), and
//     succession never takes from a fork.
//   - The bot comments only through its own identity (<slug>[bot]), one
//     comment per environment found by its marker among its own comments,
//     edited in place (github.Client.UpsertComment): replicas racing to
//     create it converge on the oldest, so they never leave two.
//   - A comment command (`/sponson <verb> ...`, commentcmd.go) runs only
//     from a new comment on an open pull request of the same repository,
//     not the bot's own: the payload decides edited, deleted, issue,
//     closed and own (never queued), GitHub decides open and fork (both
//     when the webhook answers and right before the work); a comment it
//     ignores gets no reaction and no answer. The webhook leaves the eyes
//     reaction before it answers (Acknowledge, within AckBudget of
//     GitHub's 10 s), before any work runs; GitHub keeps one reaction of a
//     kind per user, so replicas given the same delivery leave one. Who
//     asks is checked before what: the collaborator permission, asked of
//     GitHub (never author_association), write or above, else the one
//     refusal (COMMAND_REFUSED) whatever was typed; only then is the
//     command parsed (COMMAND_INVALID, with what to type). Admin, or an
//     active member of the Approvers team, for a command that writes
//     production (admin for a shared object's lease), and then the
//     commenter is the recorded approver (and always who confirmed a
//     step). The plan is read at the pull request's head commit. The
//     result, then +1 or confused, goes into the environment's one
//     comment, a refusal into the bot's one answer comment. A refused
//     command reads and writes nothing in the store. `/sponson destroy`
//     hibernates: it destroys and leaves no tombstone.
//   - A plan the bot runs never reaches the bot's own settings and secrets
//     (every SPONSON_* variable that is not a provider's credential: the
//     App's key, the webhook secret, the receipt key): an env:// reference
//     to one is SECRET_REFUSED before anything runs, and the run's adapters
//     do not see them (credentials.go), with or without
//     SPONSON_CREDENTIALS_DIR.
//   - A repository's provider work uses its own credentials: with
//     SPONSON_CREDENTIALS_DIR set, only <owner>/<repo>.env, else
//     <owner>.env (credentials.go), never the process environment's nor
//     another repository's; with neither file the workspace is refused
//     (no engine), the pull request's comment and a metric say so.
//   - Idle expiry (SPONSON_IDLE_TTL, idle.go; the sweep decides,
//     internal/sweep's invariants): the warning is written into the bot's
//     own comment of the environment, its hidden line recording when,
//     from which last activity and until when; it is read back only from
//     the bot's own comment, so a replica that did not write it honours it
//     and a bot that was down never expires a preview it had not warned
//     the warning period before. A comment rewritten since (a command's
//     result) loses the line, and the preview is warned anew: later,
//     never sooner. The last push is the head branch's tip's committer
//     time (none for a fork). A hibernation marks the deployment inactive
//     and says how to wake the preview; it writes no tombstone.
//   - Every log line of a job carries the delivery id, installation,
//     repository, pull request and scope (and the run id of a teardown).
package bot
