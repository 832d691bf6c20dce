package github

import (
	"context"
	"fmt"
	"maps"

	gh "github.com/google/go-github/v62/github"
)

// The deployment and commit-status calls: a run shows on its pull request
// as a deployment of the scope's environment (with the environment's URL)
// and as a commit status sponson/<env> on the head commit.

func init() {
	// Kept beside the calls that use them; the route test checks these
	// against GitHub's description like every other row.
	maps.Copy(routes, map[string]Route{
		"repos/list-deployments":         {"GET", "/repos/{owner}/{repo}/deployments"},
		"repos/create-deployment":        {"POST", "/repos/{owner}/{repo}/deployments"},
		"repos/create-deployment-status": {"POST", "/repos/{owner}/{repo}/deployments/{deployment_id}/statuses"},
		"repos/create-commit-status":     {"POST", "/repos/{owner}/{repo}/statuses/{sha}"},
	})
}

// DeploymentTask is the task of every deployment Sponson creates: a
// deployment_status event of one is Sponson's own echo, never a deploy to
// finish (with a token whose events start workflows, it would loop).
const DeploymentTask = "sponson"

// Deployment is what Sponson reads of a GitHub deployment.
type Deployment struct {
	ID          int64
	SHA         string
	Ref         string
	Environment string
}

// DeploymentStatus is one status posted on a deployment. State is one of
// in_progress, success, failure, error or inactive.
type DeploymentStatus struct {
	State          string
	EnvironmentURL string // the environment's URL ("" when unknown)
	LogURL         string // the run
	Description    string // at most 140 characters
}

// CommitStatus is a commit status: State is pending, success, failure or
// error; Context names it (sponson/<env>), the name a branch protection
// rule requires.
type CommitStatus struct {
	State       string
	Context     string
	TargetURL   string
	Description string // at most 140 characters
}

func deployment(d *gh.Deployment) Deployment {
	return Deployment{ID: d.GetID(), SHA: d.GetSHA(), Ref: d.GetRef(), Environment: d.GetEnvironment()}
}

// ListDeployments returns Sponson's deployments (task DeploymentTask) of
// environment (and of commit sha, when not ""), newest first, following
// every page.
func (c *Client) ListDeployments(ctx context.Context, owner, repo, environment, sha string) ([]Deployment, error) {
	ctx = withOp(ctx, "repos/list-deployments")
	cl := call{fmt.Sprintf("list the deployments of %s to %s", repoName(owner, repo), environment), "deployments: read"}
	opts := &gh.DeploymentsListOptions{Environment: environment, SHA: sha, Task: DeploymentTask, ListOptions: gh.ListOptions{PerPage: perPage}}
	var out []Deployment
	for {
		page, resp, err := c.gh.Repositories.ListDeployments(ctx, owner, repo, opts)
		if err != nil {
			return nil, wrapErr(err, cl)
		}
		for _, d := range page {
			out = append(out, deployment(d))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// EnsureDeployment returns the deployment of commit sha to environment,
// creating it when there is none: one deployment per commit and
// environment however many runs apply it (a re-run posts new statuses on
// the same deployment). It is created for the commit itself, without
// GitHub's auto-merge and without waiting for other checks (the run has
// already happened). It is not marked transient: GitHub's auto_inactive
// (a success marks the environment's earlier deployments inactive) skips
// transient deployments, and it is what keeps one active deployment per
// environment, which teardown then marks inactive.
func (c *Client) EnsureDeployment(ctx context.Context, owner, repo, environment, sha, description string) (Deployment, error) {
	have, err := c.ListDeployments(ctx, owner, repo, environment, sha)
	if err != nil {
		return Deployment{}, err
	}
	if len(have) > 0 {
		return have[0], nil
	}
	ctx = withOp(ctx, "repos/create-deployment")
	cl := call{fmt.Sprintf("create a deployment of %s to %s", repoName(owner, repo), environment), "deployments: write"}
	req := &gh.DeploymentRequest{
		Ref: gh.String(sha), Task: gh.String(DeploymentTask), Environment: gh.String(environment), Description: gh.String(clip140(description)),
		AutoMerge: gh.Bool(false), RequiredContexts: &[]string{},
		TransientEnvironment: gh.Bool(false), ProductionEnvironment: gh.Bool(false),
	}
	d, _, err := c.gh.Repositories.CreateDeployment(ctx, owner, repo, req)
	if err != nil {
		return Deployment{}, wrapErr(err, cl)
	}
	return deployment(d), nil
}

// CreateDeploymentStatus posts st on deployment id. GitHub's auto_inactive
// (a success marks the environment's earlier deployments inactive) is
// left on.
func (c *Client) CreateDeploymentStatus(ctx context.Context, owner, repo string, id int64, st DeploymentStatus) error {
	ctx = withOp(ctx, "repos/create-deployment-status")
	cl := call{fmt.Sprintf("set deployment %d of %s to %s", id, repoName(owner, repo), st.State), "deployments: write"}
	req := &gh.DeploymentStatusRequest{State: gh.String(st.State), Description: gh.String(clip140(st.Description))}
	if st.EnvironmentURL != "" {
		req.EnvironmentURL = gh.String(st.EnvironmentURL)
	}
	if st.LogURL != "" {
		req.LogURL = gh.String(st.LogURL)
	}
	_, _, err := c.gh.Repositories.CreateDeploymentStatus(ctx, owner, repo, id, req)
	return wrapErr(err, cl)
}

// DeactivateDeployments marks the newest deployment of environment
// inactive (teardown). Since every success marks the earlier ones
// inactive, the newest is the only one that can still be active. It
// reports whether there was one.
func (c *Client) DeactivateDeployments(ctx context.Context, owner, repo, environment, logURL string) (bool, error) {
	have, err := c.ListDeployments(ctx, owner, repo, environment, "")
	if err != nil || len(have) == 0 {
		return false, err
	}
	err = c.CreateDeploymentStatus(ctx, owner, repo, have[0].ID, DeploymentStatus{State: "inactive", LogURL: logURL, Description: "torn down"})
	return err == nil, err
}

// CreateCommitStatus sets st on commit sha.
func (c *Client) CreateCommitStatus(ctx context.Context, owner, repo, sha string, st CommitStatus) error {
	ctx = withOp(ctx, "repos/create-commit-status")
	cl := call{fmt.Sprintf("set the status %s of %s@%.7s", st.Context, repoName(owner, repo), sha), "statuses: write"}
	req := &gh.RepoStatus{State: gh.String(st.State), Context: gh.String(st.Context), Description: gh.String(clip140(st.Description))}
	if st.TargetURL != "" {
		req.TargetURL = gh.String(st.TargetURL)
	}
	_, _, err := c.gh.Repositories.CreateStatus(ctx, owner, repo, sha, req)
	return wrapErr(err, cl)
}

// clip140 cuts a description to GitHub's 140 characters (runes).
func clip140(s string) string {
	r := []rune(s)
	if len(r) <= 140 {
		return s
	}
	return string(r[:139]) + "…"
}
