package githubtest

import (
	"crypto/rsa"
	"encoding/json"
	"time"
)

// Identity is who a token acts as: the author of the comments it writes.
type Identity struct {
	Login string `json:"login"`
	ID    int64  `json:"id,omitempty"`
	Type  string `json:"type,omitempty"` // "User" or "Bot"; default "User"
}

// ActionsBot is the identity of a workflow's GITHUB_TOKEN.
var ActionsBot = Identity{Login: "github-actions[bot]", ID: 41898282, Type: "Bot"}

// Token is an access token the fake accepts, as a bearer token on the
// REST API and as the password of HTTP basic auth on git.
type Token struct {
	Value    string   `json:"token"`
	Identity Identity `json:"identity"`
	// Permissions are GitHub's fine-grained permissions ("contents":
	// "write", "pull_requests": "read", ...). Nil grants every permission
	// at write; a map grants only what it lists, as a workflow's
	// `permissions:` block does.
	Permissions map[string]string `json:"permissions,omitempty"`
	// Repos limits the token to these repositories ("owner/name"); nil is
	// every repository. Others answer 404, as GitHub does.
	Repos []string `json:"repos,omitempty"`
	// ExpiresAt is when the fake starts answering 401; zero never.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Installation is the installation that issued the token (0: none).
	Installation int64 `json:"installation,omitempty"`
	// RateLimit is the token's primary limit: calls per hour, counted
	// from its first call of the hour (0: GitHub's 5000, never reached
	// here). Answers carry X-RateLimit-Remaining; once it is 0, calls are
	// answered 403 until X-RateLimit-Reset.
	RateLimit int `json:"rate_limit,omitempty"`
}

// ReadOnly returns permissions that read everything and write nothing: a
// workflow without `contents: write` (pushes answer 403).
func ReadOnly() map[string]string {
	return map[string]string{"contents": "read", "pull_requests": "read", "issues": "read", "actions": "read", "deployments": "read", "metadata": "read", "checks": "read", "statuses": "read"}
}

// Repo seeds a repository. Its git repository is created bare with one
// commit on the default branch unless Empty.
type Repo struct {
	FullName      string `json:"full_name"` // "owner/name"
	DefaultBranch string `json:"default_branch,omitempty"`
	Private       bool   `json:"private,omitempty"`
	Empty         bool   `json:"empty,omitempty"`
	// Fork is the repository this one was forked from ("" none).
	Fork string `json:"fork,omitempty"`
	// Branches names branches to create, each one commit ahead of the
	// default branch (a map of branch name to commit message).
	Branches map[string]string `json:"branches,omitempty"`
}

// Ref is one side of a pull request.
type Ref struct {
	Ref  string `json:"ref"`
	SHA  string `json:"sha,omitempty"`  // default: the branch's tip
	Repo string `json:"repo,omitempty"` // "owner/name"; default the PR's repository (a fork when different)
}

// PullRequest is a pull request of a repository.
type PullRequest struct {
	Repo           string    `json:"repo"`
	Number         int       `json:"number"` // 0: the next issue number
	State          string    `json:"state,omitempty"`
	Title          string    `json:"title,omitempty"`
	User           string    `json:"user,omitempty"`
	Head           Ref       `json:"head"`
	Base           Ref       `json:"base"`
	Draft          bool      `json:"draft,omitempty"`
	Merged         bool      `json:"merged,omitempty"`
	MergeCommitSHA string    `json:"merge_commit_sha,omitempty"`
	ClosedAt       time.Time `json:"closed_at,omitzero"`
	Created        time.Time `json:"created_at,omitzero"`
}

// Comment is an issue comment with its edit history.
type Comment struct {
	ID      int64     `json:"id"`
	Repo    string    `json:"repo"`
	Issue   int       `json:"issue"`
	Author  Identity  `json:"author"`
	Body    string    `json:"body"`
	Edits   []string  `json:"edits,omitempty"` // earlier bodies, oldest first
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
	Deleted bool      `json:"deleted,omitempty"`
}

// WorkflowRun is an Actions workflow run.
type WorkflowRun struct {
	Repo       string `json:"repo"`
	ID         int64  `json:"id"`
	Name       string `json:"name,omitempty"`
	HeadBranch string `json:"head_branch,omitempty"`
	HeadSHA    string `json:"head_sha,omitempty"`
	Event      string `json:"event,omitempty"`
	// Status is queued, in_progress or completed; Conclusion (when
	// completed) success, failure, cancelled, ...
	Status     string `json:"status,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
	Attempt    int    `json:"run_attempt,omitempty"`
}

// Deployment is a deployment with its statuses.
type Deployment struct {
	Repo        string             `json:"repo"`
	ID          int64              `json:"id"`
	SHA         string             `json:"sha"`
	Ref         string             `json:"ref"`
	Environment string             `json:"environment,omitempty"`
	Task        string             `json:"task,omitempty"`
	Statuses    []DeploymentStatus `json:"statuses,omitempty"`
	// Creator is who created it (default ActionsBot).
	Creator     Identity        `json:"creator,omitzero"`
	Description string          `json:"description,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"` // an object or a string
	Transient   bool            `json:"transient_environment,omitempty"`
	Production  bool            `json:"production_environment,omitempty"`
	Created     time.Time       `json:"created_at,omitzero"`
}

// DeploymentStatus is one status posted to a deployment.
type DeploymentStatus struct {
	ID          int64  `json:"id"`
	State       string `json:"state"`
	Environment string `json:"environment,omitempty"`
	URL         string `json:"environment_url,omitempty"`
	Description string `json:"description,omitempty"`
	TargetURL   string `json:"target_url,omitempty"`
	LogURL      string `json:"log_url,omitempty"`
	// Creator is who posted it (the zero Identity for a seeded one: ActionsBot).
	Creator Identity  `json:"creator,omitzero"`
	Created time.Time `json:"created_at,omitzero"`
}

// App is a GitHub App. The fake checks the JWTs of /app calls against
// Key's public half.
type App struct {
	ID    int64           `json:"id"`
	Slug  string          `json:"slug"`
	Name  string          `json:"name,omitempty"`
	Owner string          `json:"owner,omitempty"`
	Key   *rsa.PrivateKey `json:"-"`
	// KeyPEM is the private key in PEM (PKCS#1 or PKCS#8), for seeds.
	KeyPEM string `json:"private_key,omitempty"`
	// TokenTTL is how long an installation token lives (default one
	// hour, as on GitHub).
	TokenTTL time.Duration `json:"token_ttl,omitempty"`
}

// Installation is an installation of an App on an account.
type Installation struct {
	ID          int64             `json:"id"`
	App         int64             `json:"app_id"`
	Account     string            `json:"account"`
	Repos       []string          `json:"repos"`
	Permissions map[string]string `json:"permissions,omitempty"`
}

// Request is one request the fake answered.
type Request struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query,omitempty"`
	Status int    `json:"status"`
	// Op is the operationId of a REST call, or git-upload-pack /
	// git-receive-pack / info-refs for git.
	Op    string `json:"op,omitempty"`
	Login string `json:"login,omitempty"`
}

// Fault makes the next Count requests that match answer with an error
// instead of reaching the fake's state.
type Fault struct {
	// Method and Path match the request ("" any; Path is a prefix of the
	// path after /api/v3, e.g. "/repos/o/r/issues"). A Path of
	// "git-receive-pack", "git-upload-pack" or "info-refs" matches git
	// requests of that kind instead (faults match git only so).
	Method string
	Path   string
	Count  int
	// Status is the answer: 403 or 429 for a rate limit, 5xx for a
	// server error.
	Status int
	// RetryAfter sets Retry-After (secondary rate limit).
	RetryAfter time.Duration
	// Reset, when set, answers X-RateLimit-Remaining: 0 and
	// X-RateLimit-Reset (primary rate limit).
	Reset time.Time
	// Message is the error message (default by status).
	Message string
	// Lost makes the call take effect while the client gets the error
	// instead of the answer: a write that landed but whose answer was lost.
	Lost bool
}

// SecondaryRateLimit is a fault: the next n requests answer 403 "You have
// exceeded a secondary rate limit" with Retry-After.
func SecondaryRateLimit(n int, retryAfter time.Duration) Fault {
	return Fault{Count: n, Status: 403, RetryAfter: retryAfter, Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}
}

// PrimaryRateLimit is a fault: the next n requests answer 403 with
// X-RateLimit-Remaining: 0 until reset.
func PrimaryRateLimit(n int, reset time.Time) Fault {
	return Fault{Count: n, Status: 403, Reset: reset, Message: "API rate limit exceeded for installation."}
}

// ServerError is a fault: the next n requests answer status (5xx).
func ServerError(n, status int) Fault { return Fault{Count: n, Status: status} }
