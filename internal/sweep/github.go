package sweep

import (
	"context"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/pkg/errs"
)

// ClientRepo is one repository seen through the GitHub layer's client
// (a workflow token for `sponson gc`, an installation for the bot).
type ClientRepo struct {
	Client *github.Client
	Owner  string
	Name   string
}

var (
	_ GitHub        = ClientRepo{}
	_ OpenLister    = ClientRepo{}
	_ OpenDescriber = ClientRepo{}
)

// OpenPullRequestsDescribed lists the repository's open pull requests,
// every page, with their heads and labels: the same requests as
// OpenPullRequests.
func (c ClientRepo) OpenPullRequestsDescribed(ctx context.Context) ([]PullRequest, error) {
	prs, err := c.Client.ListPullRequests(ctx, c.Owner, c.Name, "open")
	if err != nil {
		return nil, err
	}
	out := make([]PullRequest, len(prs))
	for i, p := range prs {
		out[i] = pullRequest(p)
	}
	return out, nil
}

func pullRequest(p github.PullRequest) PullRequest {
	return PullRequest{Number: p.Number, Open: p.Open(), Merged: p.Merged, ClosedAt: p.ClosedAt,
		HeadRef: p.HeadRef, HeadSHA: p.HeadSHA, HeadRepo: p.HeadRepo, BaseRepo: p.BaseRepo, Labels: p.Labels}
}

// OpenPullRequests lists the numbers of the repository's open pull
// requests, every page.
func (c ClientRepo) OpenPullRequests(ctx context.Context) ([]int, error) {
	prs, err := c.Client.ListPullRequests(ctx, c.Owner, c.Name, "open")
	if err != nil {
		return nil, err
	}
	nums := make([]int, len(prs))
	for i, p := range prs {
		nums[i] = p.Number
	}
	return nums, nil
}

// PullRequest asks GitHub for pull request n; a 404 is not found, not an
// error.
func (c ClientRepo) PullRequest(ctx context.Context, n int) (PullRequest, bool, error) {
	p, err := c.Client.GetPullRequest(ctx, c.Owner, c.Name, n)
	if errs.CodeOf(err) == errs.GITHUB_NOT_FOUND {
		return PullRequest{}, false, nil
	}
	if err != nil {
		return PullRequest{}, false, err
	}
	return pullRequest(p), true, nil
}

// BranchExists asks GitHub whether the branch exists.
func (c ClientRepo) BranchExists(ctx context.Context, branch string) (bool, error) {
	return c.Client.BranchExists(ctx, c.Owner, c.Name, branch)
}
