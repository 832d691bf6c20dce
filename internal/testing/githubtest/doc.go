// Package githubtest is a fake GitHub for tests and local runs: the REST API
// under /api/v3 and git smart HTTP at /{owner}/{repo}.git on one port, the
// layout of GitHub Enterprise Server, so a client is pointed at it with
// GITHUB_API_URL=<URL>/api/v3 and GITHUB_SERVER_URL=<URL> alone.
//
// # Checked against GitHub's description
//
// Every REST request and every answer is validated with kin-openapi
// against GitHub's OpenAPI description (the fixtures'
// openapi-subset.json, found through internal/testing/ghfixtures). A request
// GitHub would reject (a path or method outside the description, a
// missing or mistyped body field, a query value outside its enum) is
// reported to Options.Report (Start: the test's t.Errorf, so the test
// fails) and answered as GitHub answers it (404 for an unknown route, 422
// for an invalid request). An answer of the fake that breaks the
// description is reported the same way: the fake builds every answer from
// the smallest value its schema allows (Spec.Synth) overlaid with the
// state it models, so it never leaves out a field GitHub always sends.
//
// # What it models
//
//   - tokens (Token): the identity a token acts as (the author of the
//     comments it writes: ActionsBot for a workflow's GITHUB_TOKEN,
//     "<slug>[bot]" for an App's installation token), fine-grained
//     permissions (a missing one answers 403 "Resource not accessible by
//     integration" with X-Accepted-GitHub-Permissions naming it), the
//     repositories it may see (others are 404), an expiry (then 401), and
//     optionally a primary rate limit (Token.RateLimit calls an hour, with
//     X-RateLimit-* headers counting down, then 403 until the reset);
//   - repositories backed by real bare git repositories (git
//     http-backend serves fetch and push; branches, compare and
//     commits/{sha}/pulls read the real commit graph, so what a store
//     pushes is what the REST API shows);
//   - pull requests (state, head ref/sha/repository including forks,
//     base, the labels on them), commits as the real ones are (author
//     and committer with their times, which the fake's clock sets for
//     the commits it makes), issue comments with author and edit history (Comments: a test
//     asserts "exactly one comment, edited in place"; an integration may
//     edit only its own), workflow runs, git refs;
//   - deployments and their statuses: create resolves the ref, refuses
//     (409) a commit whose status contexts and check runs did not all
//     succeed unless required_contexts says otherwise, and with auto_merge
//     merges a branch that is behind the default branch for real (202); a
//     success status marks earlier deployments of the environment
//     inactive (auto_inactive); only an inactive deployment is deleted
//     while the repository has others (422);
//   - repository webhooks (Hooks: a secret is kept, answered masked; one
//     hook per URL), labels on issues and pull requests (created on first
//     use, AddLabel to preset one; IssueLabels), reactions to issue
//     comments (201 new, 200 again; Reactions), check runs listed by ref;
//   - contents read from the real git tree (CommitFiles commits files as a
//     push would): files base64 in lines of 60, directories, symlinks;
//   - who may do what: SetCollaborator gives a role on a repository (the
//     owner is admin, anyone else read on a public repository, none on a
//     private one, 404 for a login the fake never met); AddTeamMember puts
//     a user on an organisation's team;
//   - GitHub Apps: GET /app and the other App endpoints check the JWT
//     against the App's public key (RS256, iss, iat not in the future,
//     exp in the future and at most ten minutes ahead);
//     POST /app/installations/{id}/access_tokens issues tokens that expire
//     after App.TokenTTL (one hour) by Options.Clock;
//   - pagination as GitHub pages: per_page (default 30, at most 100),
//     page, and a Link header with next/last/first/prev;
//   - faults (Inject): secondary rate limits with Retry-After, primary
//     ones with X-RateLimit-Remaining: 0 and X-RateLimit-Reset, 5xx, for
//     the next N matching calls, REST or git (Path "git-receive-pack",
//     ...); a faulted call changes nothing, unless Lost: then it takes
//     effect and only its answer is replaced (a write whose answer was
//     lost).
//
// SeedFromEvent (and a Seed's "events") makes the fake hold what a real
// webhook delivery talks about (its repository, pull request, deployment,
// installation), so a test handing a program a fixture payload seeds the
// API from the same payload.
//
// Git auth is GitHub's: HTTP basic with the token as password (user
// x-access-token). Fetch needs contents: read, push contents: write; a
// token without it is answered 403 before git runs (the error a workflow
// without `permissions: contents: write` gets).
//
// Requests lists every call (method, path, status, operationId or
// git-upload-pack/git-receive-pack, login); Count counts one operation.
//
// # Standalone
//
// cmd/ghfake serves a fake from a JSON Seed on -addr and prints its URLs;
// GET /_ghfake/state dumps State as JSON and POST /_ghfake/seed applies
// more seed (a pull request given by number with no head only changes
// state: {"pulls":[{"repo":"o/r","number":2,"state":"closed"}]}), so a
// shell script can drive a workflow run and assert on comments, branches
// and calls.
//
// # Parts
//
// A Fake is made of parts, one per area of GitHub, held as fields: Log
// (requests, violations, faults, the primary rate limit), Git (the bare
// repositories and git smart HTTP, refs, branches, contents), Repos
// (repositories, webhooks, collaborators and teams), Issues (pull
// requests, comments, labels, reactions, workflow runs), Deploys (check
// runs, statuses, deployments) and Apps (Apps, installations, tokens).
// Each part lists the operations it serves (routes); every handler finds
// what its path names through one helper (found: lock, find, snapshot,
// 404). The seeding and reading tests do most (AddRepo, AddPull,
// Comments, Requests, ...) are also the Fake's own methods.
//
// # Concurrency
//
// A Fake is safe for concurrent use; git serialises its own ref updates
// (a push that loses a compare-and-swap race is refused by git).
package githubtest
