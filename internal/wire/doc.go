// Package wire builds a run: Config → an engine over an opened receipt
// store, with its lease owner, redactor, adapters and hooks. It is the one
// place the three programs — the CLI, the Action and the bot — turn their
// configuration into a run; each then calls the engine and renders the
// engine's typed results itself (no program runs another and decodes its
// JSON).
//
// The three callers:
//
//   - the CLI: Choose(Choice{flags, Getenv, the checkout's origin}) decides
//     the store with today's precedence (--receipts, SPONSON_RECEIPTS, the
//     plan's receipts:, then a remote from --receipts-remote,
//     SPONSON_RECEIPTS_REMOTE, a GitHub Actions run's repository or the
//     checkout's origin, else the local store with LOCAL_RECEIPTS);
//     OpenStore opens it; Build wires the engine with
//     IdentityFromEnv(KindCLI, ...) and LocalAncestry(dir).
//   - the Action: ActionConfig(getenv, github_token) puts receipts on
//     ${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}.git with the token, makes an
//     owner of kind action that records the repository, GITHUB_RUN_ID and
//     GITHUB_RUN_ATTEMPT, and sets DefaultActionLockWait; the Action adds
//     its environment, redactor, progress and Hooks (GitHub-backed
//     ancestry), then New.
//   - the bot: one process, many repositories. It opens one Store per
//     repository with GitHubStore(server, repo, installationTokenSource)
//     and keeps it; per delivery it Builds a Run on that store with its own
//     redactor, calls Succeed, DestroyScope (from the ledger: no plan, no
//     checkout), Store.Scopes and Store.Prune, and Closes the run.
//
// Invariants:
//   - Nothing here reads the process environment, the working directory or
//     the clock behind the caller's back: every input is a Config field or
//     a function the caller passes (Getenv, LookupEnv, ReadFile, Clock).
//     IdentityFromEnv reads only the host name and pid of the process.
//   - A TokenSource is asked for the token before every request to the
//     remote, never once at opening only: a token that is replaced while a
//     long-lived process keeps the store open (an installation token) is
//     used from the next request on. A fixed token (StaticToken) goes to the
//     git store as such, which also scrubs it from its messages. Every token
//     handed out is registered with the redactor of every open Run on that
//     store, so no output of the run can show it; Close stops that.
//   - A source that cannot produce a token when the store opens is
//     STORE_PERMISSION before any request leaves unauthenticated; one that
//     fails later keeps the last good token, so the remote's own refusal
//     (401/403 → STORE_PERMISSION) reports a really expired credential.
//   - A Store may be shared by runs that run at once: everything it keeps in
//     memory is a cache or a hint, and every mutation is a compare-and-swap
//     on the remote (pkg/gitstore) or under a file lock (localstore). A Run
//     is one command's (one delivery's): its redactor accumulates that
//     command's secrets and must not be shared across unrelated work.
//   - Every run gets a fresh run id (Run.Options): two runs of one program
//     never share a lease holder.
//   - Hooks are passed through to the engine unchanged; a nil hook means
//     "cannot be decided here", which the engine turns into a warning,
//     never a guess.
//   - Progress of long waits reaches the caller typed (Config.Events, a
//     pkg/progress sink the engine hands down in the context to the HTTP
//     client's polls and the git store); the caller renders it. The CLI
//     draws a status line on a terminal and one line per change in a log;
//     nothing is written to stdout.
package wire
