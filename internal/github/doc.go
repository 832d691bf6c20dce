// Package github is Sponson's one GitHub layer: every REST call goes
// through go-github v62, behind one rate-limit governor, with errors that
// carry codes from pkg/errs. The Action and the bot use it; each declares
// the small interface it consumes (the methods below have plain types, so
// a caller's fake is a few lines).
//
// # Clients
//
//	c, err := github.NewToken(cfg, token)        // the Action's github_token
//	app, err := github.NewApp(cfg, appID, pem)   // the bot: the App's JWT
//	c, err := app.Installation(installationID)   // one client per installation, cached
//
// Config carries GITHUB_API_URL (ConfigFromEnv): https://api.github.com or
// a GitHub Enterprise Server base https://HOST/api/v3, with or without a
// trailing slash (the client keeps exactly one, and points go-github's
// upload URL at HOST/api/uploads/ rather than github.com); and
// GITHUB_SERVER_URL, from which RemoteURL builds git remotes
// ${GITHUB_SERVER_URL}/{owner}/{repo}.git. Token returns the client's
// current token for git over HTTP (user x-access-token).
//
// # The calls
//
// Issue comments: ListIssueComments (every page, 100 a page),
// CreateIssueComment, EditIssueComment, DeleteIssueComment, and
// UpsertComment (one comment per hidden marker among the comments this
// identity wrote: found on any page, edited in place, created once, an
// unchanged body not rewritten; writers racing to create converge on the
// oldest comment, the others deleted). Pull requests: GetPullRequest, ListPullRequests (state
// open/closed/all), PullRequestsForCommit (commits/{sha}/pulls) and
// OpenPullRequestForCommit (the deployment_status rule: only an open pull
// request counts). GetWorkflowRun (WorkflowRun.Done: completed or
// cancelled, for stale leases). Compare (base...head: identical, ahead,
// behind, diverged) and Comparison.Descends (staleness without a full clone).
// GetBranch and BranchExists (404 is false). GetRepository (the default
// branch). Deployments (deployments.go): EnsureDeployment (one deployment
// per commit and environment, task DeploymentTask, never transient so
// GitHub's auto_inactive keeps one active per environment),
// CreateDeploymentStatus, DeactivateDeployments (teardown) and
// CreateCommitStatus (the check sponson/<env>). For Apps: App.Get (GET /app: the slug), App.Check (readiness),
// App.Installations, App.RepositoryInstallation,
// Client.InstallationRepositories on an installation client, and
// App.Repositories (every repository of every installation: the bot's
// sweep set). For comment commands: CollaboratorPermission (admin, write,
// read or none as GitHub says it now; maintain is write, an unknown login
// none), ReactToComment, FileAt (a file at a commit, through the contents
// API), AddLabel and RemoveLabel (one not there is not an error). Every
// list follows GitHub's Link pagination to the end.
//
// # Comment identity
//
// GitHub lets an integration edit only its own comments, so each program
// finds its comment among those its own identity wrote (Login). An
// installation's identity is "<slug>[bot]", from GET /app (once per App).
// A workflow's GITHUB_TOKEN cannot call GET /user (and the description
// subset we hold to does not include it), so a token client's identity is
// not asked of GitHub: it is ActionsLogin ("github-actions[bot]"), the
// author GitHub records for every comment made with GITHUB_TOKEN, unless
// Config.Login names another (a personal access token passed as
// github_token must name its user there).
//
// # App authentication
//
// ghinstallation/v2 signs the App's JWT (RS256) and fetches installation
// tokens (with an empty options object as body); its claims are stamped on Config.Clock (clockSigner), so a test
// clock and GitHub's iat/exp checks agree. The installation token is held
// by this package, not by ghinstallation's own cache (which refreshes a
// minute before expiry by the wall clock): it is replaced RefreshBefore
// (five minutes) before expiry, under one lock per installation, so one
// refresh runs at a time and concurrent callers share its result. A 401
// to a call forces one refresh and one retry of that call (a token revoked
// or expired early); a second 401 is GITHUB_AUTH.
//
// # Rate limits
//
// One governor per client (an App and all its installations share one)
// sits under go-github as an http.RoundTripper. A 403 or 429 that is a
// rate limit (Retry-After, X-RateLimit-Remaining: 0, or GitHub's "rate
// limit" message) is waited out: Retry-After, else until
// X-RateLimit-Reset, else a backoff from one minute, doubling; then the
// call is sent again, a POST included, because GitHub did not process a
// call it answered so. While one call waits, every other call of the
// governor waits for the same moment before it is sent (GitHub asks
// clients to pause all requests), and an answer saying the primary limit
// is spent (X-RateLimit-Remaining: 0) holds the next call until
// X-RateLimit-Reset.
//
// A 502/503/504 or a network error to a GET is retried twice, after 1 s
// and 2 s; a write that met a server error or a lost connection is never
// sent again (it may have been processed), so CreateIssueComment writes
// at most one comment.
//
// Waits are bounded by the context's deadline, by Config.MaxWait per call
// (15 minutes) and by Config.Budget over the client's life (the Action's
// run budget; leave it 0 in a long-lived bot); past a bound the caller
// gets GITHUB_RATE_LIMITED at once, without sleeping. The Clock is
// injected (Clock must be the clock GitHub's side keeps: the system clock
// outside tests, the fake's clock against internal/testing/githubtest).
//
// Stats counts calls, rate limits, retries, give-ups and time throttled;
// App and Client also have Calls and ThrottledSeconds; Config.Observer
// hears each call and each wait, labelled with GitHub's operationId
// (bounded cardinality, for Prometheus labels; this package does not
// import Prometheus); RouteOf gives an operation's method and path
// template ("/repos/{owner}/{repo}/pulls/{pull_number}"), as GitHub's
// description names them.
//
// # Errors
//
// Every error is an *errs.Error: 401 GITHUB_AUTH; a 403 that is not a rate
// limit GITHUB_PERMISSION, naming the permission to add in a workflow's
// syntax (from GitHub's X-Accepted-GitHub-Permissions, else the one the
// call needs, e.g. `pull-requests: write`); 404/410 GITHUB_NOT_FOUND;
// other 4xx GITHUB_INVALID; a rate limit past the budget
// GITHUB_RATE_LIMITED; 5xx and network failures GITHUB_UNAVAILABLE; a
// cancelled context INTERRUPTED. Callers decide with errs.CodeOf or
// errors.Is(err, errs.GITHUB_NOT_FOUND), never on text.
//
// Tests run against internal/testing/githubtest, which validates every request and
// answer against GitHub's OpenAPI description.
package github
