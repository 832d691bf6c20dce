package action

import (
	"context"
	"net/http"

	gh "github.com/google/go-github/v62/github"

	"net/url"
	"strings"
)

// client is the Action's GitHub over internal/github: token auth, the API
// base from GITHUB_API_URL (GitHub Enterprise's /api/v3 included), the
// rate-limit governor, and go-github v62 for every call, every list paged
// to its end.
type client struct{ c *ghClient }

// ghClient is a stand-in until internal/github lands.
type ghClient struct{ g *gh.Client }

func (c *ghClient) GitHub() *gh.Client { return c.g }

var _ GitHub = client{}

// newGitHubClient is the real GitHub of the Action.
func newGitHubClient(apiURL, token string, hc *http.Client) (GitHub, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	g := gh.NewClient(hc).WithAuthToken(token)
	u, err := url.Parse(strings.TrimRight(apiURL, "/") + "/")
	if err != nil {
		return nil, err
	}
	g.BaseURL = u
	return client{&ghClient{g}}, nil
}

func (c client) ListComments(ctx context.Context, owner, repo string, number int) ([]Comment, error) {
	var out []Comment
	opt := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		page, resp, err := c.c.GitHub().Issues.ListComments(ctx, owner, repo, number, opt)
		if err != nil {
			return nil, err
		}
		for _, cm := range page {
			out = append(out, Comment{ID: cm.GetID(), Body: cm.GetBody(), Author: cm.GetUser().GetLogin()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (c client) CreateComment(ctx context.Context, owner, repo string, number int, body string) (Comment, error) {
	cm, _, err := c.c.GitHub().Issues.CreateComment(ctx, owner, repo, number, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return Comment{}, err
	}
	return Comment{ID: cm.GetID(), Body: cm.GetBody(), Author: cm.GetUser().GetLogin()}, nil
}

func (c client) EditComment(ctx context.Context, owner, repo string, id int64, body string) (Comment, error) {
	cm, _, err := c.c.GitHub().Issues.EditComment(ctx, owner, repo, id, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return Comment{}, err
	}
	return Comment{ID: cm.GetID(), Body: cm.GetBody(), Author: cm.GetUser().GetLogin()}, nil
}

func (c client) PullRequestsOfCommit(ctx context.Context, owner, repo, sha string) ([]PullRequest, error) {
	var out []PullRequest
	opt := &gh.ListOptions{PerPage: 100}
	for {
		page, resp, err := c.c.GitHub().PullRequests.ListPullRequestsWithCommit(ctx, owner, repo, sha, opt)
		if err != nil {
			return nil, err
		}
		for _, p := range page {
			out = append(out, PullRequest{Number: p.GetNumber(), State: p.GetState(), HeadSHA: p.GetHead().GetSHA()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (c client) WorkflowRun(ctx context.Context, owner, repo string, id int64) (WorkflowRun, error) {
	r, _, err := c.c.GitHub().Actions.GetWorkflowRunByID(ctx, owner, repo, id)
	if err != nil {
		return WorkflowRun{}, err
	}
	return WorkflowRun{Status: r.GetStatus(), Conclusion: r.GetConclusion(), Attempt: r.GetRunAttempt()}, nil
}

func (c client) CompareStatus(ctx context.Context, owner, repo, base, head string) (string, error) {
	cmp, _, err := c.c.GitHub().Repositories.CompareCommits(ctx, owner, repo, base, head, &gh.ListOptions{PerPage: 1})
	if err != nil {
		return "", err
	}
	return cmp.GetStatus(), nil
}
