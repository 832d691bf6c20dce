package github

import (
	"context"
	"fmt"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/sponson/apply/pkg/errs"
)

// perPage is the page size of every list: GitHub's maximum, so a pull
// request with hundreds of comments costs a few calls.
const perPage = 100

// Comment is an issue or pull request comment.
type Comment struct {
	ID      int64
	Author  string // login, e.g. "github-actions[bot]"
	Body    string
	HTMLURL string
	Created time.Time
	Updated time.Time
}

// PullRequest is what Sponson reads of a pull request.
type PullRequest struct {
	Number   int
	State    string // "open" or "closed"
	Merged   bool
	Draft    bool
	Title    string
	HTMLURL  string
	User     string
	HeadRef  string
	HeadSHA  string
	HeadRepo string // "owner/name" of the head; differs from BaseRepo for a fork ("" when the fork was deleted)
	BaseRef  string
	BaseSHA  string
	BaseRepo string
	ClosedAt time.Time
	Labels   []string // the names of its labels
}

// Open reports whether the pull request is open.
func (p PullRequest) Open() bool { return p.State == "open" }

// Fork reports whether the head lives in another repository (or in a
// fork that was deleted).
func (p PullRequest) Fork() bool { return !strings.EqualFold(p.HeadRepo, p.BaseRepo) }

// WorkflowRun is what Sponson reads of an Actions run.
type WorkflowRun struct {
	ID         int64
	Attempt    int
	Status     string // queued, in_progress, completed, waiting, ...
	Conclusion string // success, failure, cancelled, ... (when completed)
	HeadSHA    string
	HTMLURL    string
}

// Done reports whether the run has finished (completed, whatever its
// conclusion, including cancelled): a lease it holds is stale.
func (r WorkflowRun) Done() bool { return r.Status == "completed" || r.Conclusion == "cancelled" }

// Gone says why a lease taken by attempt of this run (0: any) of repo is
// held by nobody: the run has completed (cancelled included), or that
// attempt was superseded by a later one; "" while it may still hold it.
func (r WorkflowRun) Gone(attempt int, repo string) string {
	switch {
	case r.Done():
		how := "has completed"
		if r.Conclusion == "cancelled" {
			how = "was cancelled"
		} else if r.Conclusion != "" {
			how += " (" + r.Conclusion + ")"
		}
		return fmt.Sprintf("GitHub run %d of %s %s", r.ID, repo, how)
	case attempt > 0 && r.Attempt > attempt:
		return fmt.Sprintf("attempt %d of GitHub run %d of %s was superseded by attempt %d", attempt, r.ID, repo, r.Attempt)
	}
	return ""
}

// Comparison is base...head.
type Comparison struct {
	// Status is "identical", "ahead" (head has commits base lacks),
	// "behind" (base has commits head lacks) or "diverged".
	Status    string
	AheadBy   int
	BehindBy  int
	MergeBase string
}

// Descends reports whether head is base or descends from it: base is an
// ancestor of (or the same as) head, which the compare API tells without
// local history.
func (x Comparison) Descends() bool { return x.Status == "identical" || x.Status == "ahead" }

// Branch is a branch and its tip.
type Branch struct {
	Name      string
	SHA       string
	Protected bool
	// Committed is the tip commit's committer time (when it was made or
	// last rewritten: a rebase or an amend sets it anew).
	Committed time.Time
}

// Repository is what Sponson reads of a repository.
type Repository struct {
	ID            int64
	Owner         string
	Name          string
	FullName      string
	DefaultBranch string
	Private       bool
	Fork          bool
}

// AppInfo is the authenticated App (GET /app).
type AppInfo struct {
	ID   int64
	Slug string
	Name string
}

// Login is the App's comment identity: "<slug>[bot]".
func (a AppInfo) Login() string { return a.Slug + "[bot]" }

// Installation is an installation of the App.
type Installation struct {
	ID      int64
	AppID   int64
	Account string
}

func repoName(owner, repo string) string { return owner + "/" + repo }

func comment(c *gh.IssueComment) Comment {
	return Comment{
		ID: c.GetID(), Author: c.GetUser().GetLogin(), Body: c.GetBody(), HTMLURL: c.GetHTMLURL(),
		Created: c.GetCreatedAt().Time, Updated: c.GetUpdatedAt().Time,
	}
}

func pullRequest(p *gh.PullRequest) PullRequest {
	return PullRequest{
		Number: p.GetNumber(), State: p.GetState(), Merged: p.GetMerged() || p.MergedAt != nil, Draft: p.GetDraft(),
		Title: p.GetTitle(), HTMLURL: p.GetHTMLURL(), User: p.GetUser().GetLogin(),
		HeadRef: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), HeadRepo: p.GetHead().GetRepo().GetFullName(),
		BaseRef: p.GetBase().GetRef(), BaseSHA: p.GetBase().GetSHA(), BaseRepo: p.GetBase().GetRepo().GetFullName(),
		ClosedAt: p.GetClosedAt().Time, Labels: labelNames(p.Labels),
	}
}

func labelNames(ls []*gh.Label) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

func repository(r *gh.Repository) Repository {
	return Repository{
		ID: r.GetID(), Owner: r.GetOwner().GetLogin(), Name: r.GetName(), FullName: r.GetFullName(),
		DefaultBranch: r.GetDefaultBranch(), Private: r.GetPrivate(), Fork: r.GetFork(),
	}
}

// ListIssueComments returns every comment of issue or pull request number,
// oldest first, following every page.
func (c *Client) ListIssueComments(ctx context.Context, owner, repo string, number int) ([]Comment, error) {
	ctx = withOp(ctx, "issues/list-comments")
	cl := call{fmt.Sprintf("list the comments of %s#%d", repoName(owner, repo), number), "pull-requests: read"}
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: perPage}}
	var out []Comment
	for {
		page, resp, err := c.gh.Issues.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return nil, wrapErr(err, cl)
		}
		for _, x := range page {
			out = append(out, comment(x))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CreateIssueComment writes a comment on issue or pull request number.
// It is never retried after an answer GitHub may have acted on (a 5xx or
// a lost connection), so it writes at most one comment; a rate-limit
// answer (not acted on) is waited out and sent again.
func (c *Client) CreateIssueComment(ctx context.Context, owner, repo string, number int, body string) (Comment, error) {
	ctx = withOp(ctx, "issues/create-comment")
	cl := call{fmt.Sprintf("comment on %s#%d", repoName(owner, repo), number), "pull-requests: write"}
	x, _, err := c.gh.Issues.CreateComment(ctx, owner, repo, number, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return Comment{}, wrapErr(err, cl)
	}
	return comment(x), nil
}

// EditIssueComment replaces the body of comment id. GitHub lets an App or
// workflow token edit only its own comments (GITHUB_PERMISSION otherwise).
func (c *Client) EditIssueComment(ctx context.Context, owner, repo string, id int64, body string) (Comment, error) {
	ctx = withOp(ctx, "issues/update-comment")
	cl := call{fmt.Sprintf("edit comment %d of %s", id, repoName(owner, repo)), "pull-requests: write"}
	x, _, err := c.gh.Issues.EditComment(ctx, owner, repo, id, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return Comment{}, wrapErr(err, cl)
	}
	return comment(x), nil
}

// DeleteIssueComment deletes comment id (a comment already gone is not
// an error).
func (c *Client) DeleteIssueComment(ctx context.Context, owner, repo string, id int64) error {
	ctx = withOp(ctx, "issues/delete-comment")
	cl := call{fmt.Sprintf("delete comment %d of %s", id, repoName(owner, repo)), "pull-requests: write"}
	_, err := c.gh.Issues.DeleteComment(ctx, owner, repo, id)
	if err = wrapErr(err, cl); errs.CodeOf(err) == errs.GITHUB_NOT_FOUND {
		return nil
	}
	return err
}

// UpsertComment keeps one comment per marker on issue or pull request
// number: the oldest comment written by this client's identity (Login)
// whose body contains marker (a hidden "<!-- sponson:<env> -->") is
// edited to body (not when it already reads so); with none, a new comment
// is created. Every page is read. It returns the comment and whether it
// was created. body must contain marker, or the next call could not find
// it.
//
// Two writers racing (two bot replicas on one delivery) may both create;
// so after creating, the comments are read again and every one of ours
// with the marker but the oldest is deleted: the pull request converges on
// one comment, whichever writer finishes last.
func (c *Client) UpsertComment(ctx context.Context, owner, repo string, number int, marker, body string) (Comment, bool, error) {
	if marker == "" || !strings.Contains(body, marker) {
		return Comment{}, false, errs.New(errs.INTERNAL, "UpsertComment: the body does not contain its marker %q", marker)
	}
	login, err := c.Login(ctx)
	if err != nil {
		return Comment{}, false, err
	}
	ours := func() ([]Comment, error) {
		all, err := c.ListIssueComments(ctx, owner, repo, number)
		if err != nil {
			return nil, err
		}
		var out []Comment
		for _, cm := range all {
			if strings.EqualFold(cm.Author, login) && strings.Contains(cm.Body, marker) {
				out = append(out, cm)
			}
		}
		return out, nil
	}
	mine, err := ours()
	if err != nil {
		return Comment{}, false, err
	}
	if len(mine) > 0 {
		cm := mine[0]
		for _, extra := range mine[1:] {
			if err := c.DeleteIssueComment(ctx, owner, repo, extra.ID); err != nil {
				return Comment{}, false, err
			}
		}
		if cm.Body == body {
			return cm, false, nil
		}
		out, err := c.EditIssueComment(ctx, owner, repo, cm.ID, body)
		return out, false, err
	}
	created, err := c.CreateIssueComment(ctx, owner, repo, number, body)
	if err != nil {
		return Comment{}, false, err
	}
	mine, err = ours()
	if err != nil || len(mine) <= 1 {
		return created, err == nil, err
	}
	// Another writer created one too: keep the oldest.
	keep := mine[0]
	for _, extra := range mine[1:] {
		if err := c.DeleteIssueComment(ctx, owner, repo, extra.ID); err != nil {
			return Comment{}, false, err
		}
	}
	if keep.Body != body {
		if keep, err = c.EditIssueComment(ctx, owner, repo, keep.ID, body); err != nil {
			return Comment{}, false, err
		}
	}
	return keep, keep.ID == created.ID, nil
}

// GetPullRequest returns pull request number.
func (c *Client) GetPullRequest(ctx context.Context, owner, repo string, number int) (PullRequest, error) {
	ctx = withOp(ctx, "pulls/get")
	cl := call{fmt.Sprintf("read pull request %s#%d", repoName(owner, repo), number), "pull-requests: read"}
	p, _, err := c.gh.PullRequests.Get(ctx, owner, repo, number)
	if err != nil {
		return PullRequest{}, wrapErr(err, cl)
	}
	return pullRequest(p), nil
}

// ListPullRequests returns every pull request in state ("open", "closed"
// or "all"), newest first, following every page.
func (c *Client) ListPullRequests(ctx context.Context, owner, repo, state string) ([]PullRequest, error) {
	ctx = withOp(ctx, "pulls/list")
	cl := call{fmt.Sprintf("list the %s pull requests of %s", state, repoName(owner, repo)), "pull-requests: read"}
	opts := &gh.PullRequestListOptions{State: state, ListOptions: gh.ListOptions{PerPage: perPage}}
	var out []PullRequest
	for {
		page, resp, err := c.gh.PullRequests.List(ctx, owner, repo, opts)
		if err != nil {
			return nil, wrapErr(err, cl)
		}
		for _, p := range page {
			out = append(out, pullRequest(p))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// PullRequestsForCommit returns the pull requests associated with commit
// sha (GET commits/{sha}/pulls: those whose head holds it, and the merged
// one that brought it into the default branch), every page.
func (c *Client) PullRequestsForCommit(ctx context.Context, owner, repo, sha string) ([]PullRequest, error) {
	ctx = withOp(ctx, "repos/list-pull-requests-associated-with-commit")
	cl := call{fmt.Sprintf("find the pull requests of commit %s in %s", sha, repoName(owner, repo)), "pull-requests: read"}
	opts := &gh.ListOptions{PerPage: perPage}
	var out []PullRequest
	for {
		page, resp, err := c.gh.PullRequests.ListPullRequestsWithCommit(ctx, owner, repo, sha, opts)
		if err != nil {
			return nil, wrapErr(err, cl)
		}
		for _, p := range page {
			out = append(out, pullRequest(p))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// OpenPullRequestForCommit returns the open pull request of repository
// owner/repo whose head is sha (a deployment's commit), and false when
// there is none: a closed pull request's preview is never rebuilt.
func (c *Client) OpenPullRequestForCommit(ctx context.Context, owner, repo, sha string) (PullRequest, bool, error) {
	prs, err := c.PullRequestsForCommit(ctx, owner, repo, sha)
	if err != nil {
		return PullRequest{}, false, err
	}
	var best *PullRequest
	for i := range prs {
		p := &prs[i]
		if !p.Open() || !strings.EqualFold(p.BaseRepo, repoName(owner, repo)) && p.BaseRepo != "" {
			continue
		}
		// The pull request whose head is the commit wins over one that
		// merely contains it.
		if best == nil || (p.HeadSHA == sha && best.HeadSHA != sha) {
			best = p
		}
	}
	if best == nil {
		return PullRequest{}, false, nil
	}
	return *best, true, nil
}

// GetWorkflowRun returns Actions run id.
func (c *Client) GetWorkflowRun(ctx context.Context, owner, repo string, id int64) (WorkflowRun, error) {
	ctx = withOp(ctx, "actions/get-workflow-run")
	cl := call{fmt.Sprintf("read workflow run %d of %s", id, repoName(owner, repo)), "actions: read"}
	r, _, err := c.gh.Actions.GetWorkflowRunByID(ctx, owner, repo, id)
	if err != nil {
		return WorkflowRun{}, wrapErr(err, cl)
	}
	return WorkflowRun{
		ID: r.GetID(), Attempt: r.GetRunAttempt(), Status: r.GetStatus(), Conclusion: r.GetConclusion(),
		HeadSHA: r.GetHeadSHA(), HTMLURL: r.GetHTMLURL(),
	}, nil
}

// Compare compares base...head (branch names or commit ids).
func (c *Client) Compare(ctx context.Context, owner, repo, base, head string) (Comparison, error) {
	ctx = withOp(ctx, "repos/compare-commits")
	cl := call{fmt.Sprintf("compare %s...%s in %s", base, head, repoName(owner, repo)), "contents: read"}
	// One commit per page: only the counts and the status are read.
	x, _, err := c.gh.Repositories.CompareCommits(ctx, owner, repo, base, head, &gh.ListOptions{PerPage: 1})
	if err != nil {
		return Comparison{}, wrapErr(err, cl)
	}
	return Comparison{Status: x.GetStatus(), AheadBy: x.GetAheadBy(), BehindBy: x.GetBehindBy(), MergeBase: x.GetMergeBaseCommit().GetSHA()}, nil
}

// GetBranch returns branch (GITHUB_NOT_FOUND when it does not exist). A
// renamed branch, which GitHub redirects, is returned under its new name.
func (c *Client) GetBranch(ctx context.Context, owner, repo, branch string) (Branch, error) {
	ctx = withOp(ctx, "repos/get-branch")
	cl := call{fmt.Sprintf("read branch %s of %s", branch, repoName(owner, repo)), "contents: read"}
	b, resp, err := c.gh.Repositories.GetBranch(ctx, owner, repo, branch, 1)
	if err != nil {
		// GetBranch answers a plain error beside the response: the status
		// decides the code.
		if resp != nil && resp.Response != nil && errs.As(err) == nil {
			return Branch{}, statusErr(err, resp.Response, resp.Status, cl)
		}
		return Branch{}, wrapErr(err, cl)
	}
	return Branch{Name: b.GetName(), SHA: b.GetCommit().GetSHA(), Protected: b.GetProtected(),
		Committed: b.GetCommit().GetCommit().GetCommitter().GetDate().Time}, nil
}

// BranchExists reports whether branch exists under that name (a 404 is
// false, not an error; so is a branch renamed since).
func (c *Client) BranchExists(ctx context.Context, owner, repo, branch string) (bool, error) {
	b, err := c.GetBranch(ctx, owner, repo, branch)
	if errs.CodeOf(err) == errs.GITHUB_NOT_FOUND {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return b.Name == branch, nil
}

// GetRepository returns the repository (its default branch among the
// rest).
func (c *Client) GetRepository(ctx context.Context, owner, repo string) (Repository, error) {
	ctx = withOp(ctx, "repos/get")
	cl := call{fmt.Sprintf("read repository %s", repoName(owner, repo)), "metadata: read"}
	r, _, err := c.gh.Repositories.Get(ctx, owner, repo)
	if err != nil {
		return Repository{}, wrapErr(err, cl)
	}
	return repository(r), nil
}

// InstallationRepositories returns every repository this installation
// client may access (GET /installation/repositories), every page. Only an
// installation client may call it.
func (c *Client) InstallationRepositories(ctx context.Context) ([]Repository, error) {
	ctx = withOp(ctx, "apps/list-repos-accessible-to-installation")
	cl := call{"list the installation's repositories", "metadata: read"}
	opts := &gh.ListOptions{PerPage: perPage}
	var out []Repository
	for {
		page, resp, err := c.gh.Apps.ListRepos(ctx, opts)
		if err != nil {
			return nil, wrapErr(err, cl)
		}
		for _, r := range page.Repositories {
			out = append(out, repository(r))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}
