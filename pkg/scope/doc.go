// Package scope computes the context of a run (Ctx: env, scope, git branch
// and commit, pull request, repository, default branch, fork) from flags,
// SPONSON_CTX_* variables, the GitHub event and GitHub Actions variables, the
// documented variables of GitLab CI, CircleCI and Bitbucket Pipelines, and
// the local checkout (with the GitHub CLI's pull request of its branch).
//
// Invariants:
//   - Compute is pure. It never reads the process environment, a file, the
//     network or the clock: the environment is Input.LookupEnv, the event
//     payload is Input.Event (ReadEvent reads GITHUB_EVENT_PATH through the
//     functions it is given), the open pull request of a deployment is
//     Input.DeploymentPR, the checkout is Input.Local and its pull request
//     Input.LocalPR. ReadLocalGit and ReadGHPR (which runs `gh pr view`
//     through the Runner it is given) are the functions that do I/O.
//   - Precedence, field by field: explicit flags; SPONSON_CTX_ENV, _BRANCH,
//     _SHA, _PR (SPONSON_CTX_PR="" means "no pull request", unset means
//     nothing; the others count only when non-empty); the GitHub event
//     payload, then GITHUB_* variables (read only when GITHUB_ACTIONS=true);
//     else the first CI host whose marker is set (GITLAB_CI=true,
//     CIRCLECI=true, BITBUCKET_BUILD_NUMBER), read from its documented
//     variables only (hosts.go), its tag builds giving no scope like a tag
//     push; local git, only outside CI (inside a job the checkout is a merge
//     commit or detached, and the job says more), with Input.LocalPR, the
//     GitHub CLI's pull request, only for the checkout's own branch.
//   - Ctx.Sources names the variable or file each value came from
//     ("env:CI_MERGE_REQUEST_IID", "gh:pr view"); Ctx.CI the host.
//   - A value from a lower layer is used only when it describes the pull
//     request or branch chosen above it: the head of pull request #5 is not
//     the commit of --pr 7, a schedule's commit is not --branch x's. A wrong
//     commit could make a run look stale; an unknown one is null, and Notes
//     says why.
//   - Scope: pr-<n> inside a pull request (pull_request, pull_request_target,
//     pull_request_review, pull_request_review_comment, an issue_comment on a
//     pull request, a deployment_status given its open pull request); main on
//     the default branch (repository.default_branch, else main or master when
//     it is unknown); branch-<name> elsewhere (BranchScope). Nothing is
//     inferred from a branch name but that, and the environment defaults to
//     preview.
//   - No guess: a tag, a schedule, a workflow_dispatch on a tag, ping,
//     installation events, any event without a rule here, or nothing known
//     at all gives no scope unless one is given explicitly: USAGE, with a
//     hint naming --pr and --branch.
//   - In a pull request git.branch is the head ref and git.sha the head
//     commit (pull_request.head.sha), never the merge commit GITHUB_SHA. An
//     issue_comment payload has neither: they stay null until the caller
//     resolves the pull request and passes them explicitly.
//   - Every scope Compute returns passes Validate, so it is usable as one
//     component of a git ref name.
package scope
