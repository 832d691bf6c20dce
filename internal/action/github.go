package action

import (
	"context"
	"net/http"
	"strings"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/pkg/receipt"
)

// The GitHub calls the Action makes, each behind the small interface its
// use needs; internal/github's client (go-github v62, token auth, the API
// base from GITHUB_API_URL, every list paged to its end, the rate-limit
// governor) satisfies them.

// Commenter keeps one comment per marker: the token identity's comment
// carrying the marker is edited, else one is created.
type Commenter interface {
	UpsertComment(ctx context.Context, owner, repo string, number int, marker, body string) (github.Comment, bool, error)
}

// PullFinder finds the open pull request whose head is a commit.
type PullFinder interface {
	OpenPullRequestForCommit(ctx context.Context, owner, repo, sha string) (github.PullRequest, bool, error)
}

// RunReader reads a workflow run.
type RunReader interface {
	GetWorkflowRun(ctx context.Context, owner, repo string, id int64) (github.WorkflowRun, error)
}

// Ancestry answers whether one commit is an ancestor of another through
// the compare API (a shallow checkout does not have the history).
type Ancestry interface {
	Compare(ctx context.Context, owner, repo, base, head string) (github.Comparison, error)
}

// GitHub is every call the Action makes.
type GitHub interface {
	Commenter
	PullFinder
	RunReader
	Ancestry
}

var _ GitHub = (*github.Client)(nil)

// newGitHubClient is the real GitHub of the Action: a token client whose
// comments are written by login.
func newGitHubClient(apiURL, serverURL, token, login string, hc *http.Client) (GitHub, error) {
	cfg := github.Config{APIURL: apiURL, ServerURL: serverURL, Login: login}
	if hc != nil {
		cfg.Transport = hc.Transport
	}
	c, err := github.NewToken(cfg, token)
	if err != nil {
		return nil, err // not a nil *Client inside the interface
	}
	return c, nil
}

func split(repo string) (string, string) {
	owner, name, _ := strings.Cut(repo, "/")
	return owner, name
}

// holderGone is the engine's HolderGone over the Actions API: a lease held
// by a workflow run that has completed (success, failure, cancelled, ...),
// or whose attempt was superseded by a later attempt, is held by nobody.
// Leases without a GitHub run (a laptop, the bot) are never judged here.
func holderGone(gh RunReader, thisRepo string) func(ctx context.Context, held receipt.Lease) (string, error) {
	return func(ctx context.Context, held receipt.Lease) (string, error) {
		o := held.Owner
		if o.GitHubRunID == 0 {
			return "", nil
		}
		repo := o.Repository
		if repo == "" {
			repo = thisRepo
		}
		owner, name, ok := strings.Cut(repo, "/")
		if !ok {
			return "", nil
		}
		run, err := gh.GetWorkflowRun(ctx, owner, name, o.GitHubRunID)
		if err != nil {
			return "", err
		}
		run.ID = o.GitHubRunID
		return run.Gone(o.GitHubRunAttempt, repo), nil
	}
}

// compareAncestry is the stale-run check through the compare API.
func compareAncestry(ctx context.Context, gh Ancestry, repo string) func(ancestor, descendant string) (bool, error) {
	return func(ancestor, descendant string) (bool, error) {
		owner, name := split(repo)
		x, err := gh.Compare(ctx, owner, name, ancestor, descendant)
		return x.Descends(), err
	}
}

// chainAncestry asks ancestry hooks in turn: the first that can decide
// answers (a hook that errs passes the question on; the last error is
// the answer when none could).
func chainAncestry(hooks ...func(a, d string) (bool, error)) func(a, d string) (bool, error) {
	return func(a, d string) (bool, error) {
		var last error
		for _, h := range hooks {
			if h == nil {
				continue
			}
			ok, err := h(a, d)
			if err == nil {
				return ok, nil
			}
			last = err
		}
		return false, last
	}
}

// openPullRequest is the number of the open pull request whose head is
// sha (the deployed commit), 0 when none is open.
func openPullRequest(ctx context.Context, gh PullFinder, repo, sha string) (int, error) {
	owner, name := split(repo)
	p, ok, err := gh.OpenPullRequestForCommit(ctx, owner, name, sha)
	if err != nil || !ok {
		return 0, err
	}
	return p.Number, nil
}
