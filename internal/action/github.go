package action

import (
	"context"
	"fmt"
	"strings"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/receipt"
)

// The GitHub calls the Action makes, each behind the small interface its
// use needs; internal/github's client satisfies them (gh.go adapts it).

// Comment is an issue comment as the Action needs it.
type Comment struct {
	ID     int64
	Body   string
	Author string // the login of its author
}

// Comments lists, creates and edits a pull request's comments.
type Comments interface {
	// ListComments returns every comment of the issue or pull request,
	// oldest first, across all pages.
	ListComments(ctx context.Context, owner, repo string, number int) ([]Comment, error)
	CreateComment(ctx context.Context, owner, repo string, number int, body string) (Comment, error)
	EditComment(ctx context.Context, owner, repo string, id int64, body string) (Comment, error)
}

// PullRequest is a pull request as the deployment look-up needs it.
type PullRequest struct {
	Number  int
	State   string // open or closed
	HeadSHA string
}

// Pulls finds the pull requests of a commit.
type Pulls interface {
	// PullRequestsOfCommit lists the pull requests associated with the
	// commit (GET /repos/{owner}/{repo}/commits/{sha}/pulls), all pages.
	PullRequestsOfCommit(ctx context.Context, owner, repo, sha string) ([]PullRequest, error)
}

// WorkflowRun is a workflow run's state.
type WorkflowRun struct {
	Status     string // queued, in_progress, completed, ...
	Conclusion string // success, failure, cancelled, ... (completed runs)
	Attempt    int    // run_attempt: the latest attempt
}

// Runs reads a workflow run.
type Runs interface {
	WorkflowRun(ctx context.Context, owner, repo string, id int64) (WorkflowRun, error)
}

// Compare answers whether one commit is an ancestor of another through the
// compare API (a shallow checkout does not have the history).
type Compare interface {
	// CompareStatus is the status of comparing base...head: ahead (head is
	// base plus commits), behind, identical or diverged.
	CompareStatus(ctx context.Context, owner, repo, base, head string) (string, error)
}

// GitHub is every call the Action makes.
type GitHub interface {
	Comments
	Pulls
	Runs
	Compare
}

// upsertComment keeps one comment per environment on the pull request: the
// comment carrying report.Marker(env) written by author is edited in
// place; when there is none it is created. Comments by anyone else carry
// no weight, even with the marker (a quote, the bot's own comment). With
// several of ours (a race between two jobs), the oldest is kept up to date.
func upsertComment(ctx context.Context, gh Comments, repo string, number int, env, author, body string) (Comment, bool, error) {
	owner, name, _ := strings.Cut(repo, "/")
	all, err := gh.ListComments(ctx, owner, name, number)
	if err != nil {
		return Comment{}, false, err
	}
	marker := report.Marker(env)
	for _, c := range all {
		if strings.EqualFold(c.Author, author) && strings.HasPrefix(strings.TrimLeft(c.Body, " \r\n"), marker) {
			if c.Body == body {
				return c, false, nil
			}
			edited, err := gh.EditComment(ctx, owner, name, c.ID, body)
			return edited, false, err
		}
	}
	created, err := gh.CreateComment(ctx, owner, name, number, body)
	return created, true, err
}

// holderGone is the engine's HolderGone over the Actions API: a lease held
// by a workflow run that has completed (success, failure, cancelled, ...),
// or whose attempt was superseded by a later attempt, is held by nobody.
// Leases without a GitHub run (a laptop, the bot) are never judged here.
func holderGone(gh Runs, thisRepo string) func(ctx context.Context, held receipt.Lease) (string, error) {
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
		run, err := gh.WorkflowRun(ctx, owner, name, o.GitHubRunID)
		if err != nil {
			return "", err
		}
		switch {
		case run.Status == "completed":
			how := "has completed"
			if run.Conclusion == "cancelled" {
				how = "was cancelled"
			} else if run.Conclusion != "" {
				how += " (" + run.Conclusion + ")"
			}
			return fmt.Sprintf("GitHub run %d of %s %s", o.GitHubRunID, repo, how), nil
		case o.GitHubRunAttempt > 0 && run.Attempt > o.GitHubRunAttempt:
			return fmt.Sprintf("attempt %d of GitHub run %d of %s was superseded by attempt %d", o.GitHubRunAttempt, o.GitHubRunID, repo, run.Attempt), nil
		}
		return "", nil
	}
}

// compareAncestry is the stale-run check through the compare API:
// ancestor is an ancestor of descendant when descendant is ahead of it or
// identical.
func compareAncestry(ctx context.Context, gh Compare, repo string) func(ancestor, descendant string) (bool, error) {
	return func(ancestor, descendant string) (bool, error) {
		owner, name, _ := strings.Cut(repo, "/")
		st, err := gh.CompareStatus(ctx, owner, name, ancestor, descendant)
		if err != nil {
			return false, err
		}
		return st == "ahead" || st == "identical", nil
	}
}

// firstOf chains ancestry hooks: the first that can decide answers.
func firstOf(hooks ...func(a, d string) (bool, error)) func(a, d string) (bool, error) {
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

// openPullRequest is the open pull request whose head is sha: the one
// deployed. An open pull request that merely contains the commit comes
// second; none open is 0.
func openPullRequest(ctx context.Context, gh Pulls, repo, sha string) (int, error) {
	owner, name, _ := strings.Cut(repo, "/")
	prs, err := gh.PullRequestsOfCommit(ctx, owner, name, sha)
	if err != nil {
		return 0, err
	}
	best := 0
	for _, p := range prs {
		if p.State != "open" {
			continue
		}
		if p.HeadSHA == sha {
			return p.Number, nil
		}
		if best == 0 {
			best = p.Number
		}
	}
	return best, nil
}
