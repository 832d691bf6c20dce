package action

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// Deployer shows a run on its pull request: a GitHub deployment of the
// scope's environment (preview/pr-12) whose statuses follow the apply
// (in_progress, then success or failure, with the environment's URL), and
// a commit status sponson/<env> on the head commit that a branch
// protection rule can require. The workflow grants `deployments: write`
// and `statuses: write`; without them each call is a warning, never a
// failed run.
type Deployer interface {
	EnsureDeployment(ctx context.Context, owner, repo, environment, sha, description string) (github.Deployment, error)
	CreateDeploymentStatus(ctx context.Context, owner, repo string, id int64, st github.DeploymentStatus) error
	DeactivateDeployments(ctx context.Context, owner, repo, environment, logURL string) (bool, error)
	CreateCommitStatus(ctx context.Context, owner, repo, sha string, st github.CommitStatus) error
}

var _ Deployer = (*github.Client)(nil)

// StatusContext is the commit status of environment env.
func StatusContext(env string) string { return "sponson/" + env }

// deployState is what deployStart learnt, for deployFinish.
type deployState struct {
	dep     Deployer
	owner   string
	repo    string
	command string
	env     string // the plan's environment: preview
	envName string // the deployment's environment: preview/pr-12
	sha     string
	id      int64 // the deployment (apply), 0 when none
}

// deployStart runs before the engine: for an apply, the deployment of the
// commit to the scope's environment is created (or found) and set
// in_progress; the commit status is set pending. Nothing happens without
// a commit or a client that can deploy.
func (a *act) deployStart(ctx context.Context, command string, c scope.Ctx) {
	dep, ok := a.gh.(Deployer)
	if !ok || c.Git.SHA == "" {
		return
	}
	owner, name := split(c.Repo)
	if c.Repo == "" {
		owner, name = split(a.env.getenv("GITHUB_REPOSITORY"))
	}
	s := &deployState{dep: dep, owner: owner, repo: name, command: command, env: c.Env, envName: c.Env + "/" + c.Scope, sha: c.Git.SHA}
	a.deploy = s
	ctx = context.WithoutCancel(ctx)
	run := a.links.RunURL()
	a.warnGitHub("the commit status could not be set", dep.CreateCommitStatus(ctx, owner, name, s.sha, github.CommitStatus{
		State: "pending", Context: StatusContext(s.env), TargetURL: run, Description: fmt.Sprintf("sponson %s %s: running", command, s.envName),
	}))
	if command != CommandApply {
		return
	}
	d, err := dep.EnsureDeployment(ctx, owner, name, s.envName, s.sha, "sponson apply "+s.envName)
	if err != nil {
		a.warnGitHub("the deployment could not be created", err)
		return
	}
	s.id = d.ID
	a.warnGitHub("the deployment status could not be set", dep.CreateDeploymentStatus(ctx, owner, name, d.ID, github.DeploymentStatus{
		State: "in_progress", LogURL: run, Description: "applying",
	}))
}

// deployFinish runs after the comment is written (commentURL, "" when
// none): the deployment gets success with the environment's URL, or
// failure; a destroy marks the environment's deployment inactive; the
// commit status gets the run's verdict, linking to the comment (which
// links to the run) or, without one, to the run.
func (a *act) deployFinish(r *report.Report, commentURL string) {
	s := a.deploy
	if s == nil {
		return
	}
	ctx := context.WithoutCancel(a.ctx)
	run := a.links.RunURL()
	v := verdictOf(r)
	if r.Status == report.StatusSkipped && s.id != 0 {
		// The engine found the scope closed after the deployment was made
		// (a close landed meanwhile): nothing was deployed.
		a.warnGitHub("the deployment status could not be set", s.dep.CreateDeploymentStatus(ctx, s.owner, s.repo, s.id,
			github.DeploymentStatus{State: "inactive", LogURL: run, Description: v.text}))
		s.id = 0
	}
	switch {
	case s.command == CommandApply && s.id != 0:
		st := github.DeploymentStatus{State: v.deployment, LogURL: run, Description: v.text}
		if v.deployment == "success" || v.deployment == "in_progress" {
			st.EnvironmentURL = a.environmentURL(r)
		}
		a.warnGitHub("the deployment status could not be set", s.dep.CreateDeploymentStatus(ctx, s.owner, s.repo, s.id, st))
	case s.command == CommandDestroy && r.ExitCode == 0:
		_, err := s.dep.DeactivateDeployments(ctx, s.owner, s.repo, s.envName, run)
		a.warnGitHub("the deployment could not be marked inactive", err)
	}
	cs := github.CommitStatus{State: v.commit, Context: StatusContext(s.env), TargetURL: commentURL,
		Description: fmt.Sprintf("sponson %s %s: %s", s.command, s.envName, v.text)}
	if cs.TargetURL == "" {
		cs.TargetURL = run
	}
	a.warnGitHub("the commit status could not be set", s.dep.CreateCommitStatus(ctx, s.owner, s.repo, s.sha, cs))
}

// verdict is how a run shows on GitHub.
type verdict struct {
	deployment string // the deployment status of an apply
	commit     string // the commit status
	text       string
}

// verdictOf maps a report to GitHub's states: a complete run is success;
// a partial one (a line waits on a person or a provider) stays
// in_progress and its check pending; a stale one (a newer commit was
// applied) marks this commit's deployment inactive, so that the newer one
// stays the environment's active deployment; a failed run is failure,
// and a refused one or a lease that was not won is error.
func verdictOf(r *report.Report) verdict {
	switch {
	case r.ExitCode == 1:
		return verdict{"failure", "failure", failure(r)}
	case r.ExitCode != 0:
		return verdict{"error", "error", failure(r)}
	case r.Status == string(receipt.StatusPartial):
		return verdict{"in_progress", "pending", "partial: a line waits"}
	case r.Status == report.StatusStale:
		return verdict{"inactive", "success", "stale: a newer commit was applied"}
	case r.Status == report.StatusSkipped:
		return verdict{"inactive", "success", "skipped: " + r.SkipReason}
	}
	return verdict{"success", "success", r.Status}
}

// environmentURL is the value of the output the plan's environment_url
// names ("" when the plan names none, or the output is not known, not an
// http(s) URL, or masked).
func (a *act) environmentURL(r *report.Report) string {
	line, out, ok := a.plan.URLLine()
	if !ok {
		return ""
	}
	for _, l := range r.Lines {
		if l.ID != line {
			continue
		}
		for _, o := range l.Outputs {
			// The report shows a value as JSON text; a URL is a string.
			var u string
			if o.Name != out || json.Unmarshal([]byte(o.Value), &u) != nil {
				continue
			}
			if p, err := url.Parse(u); err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != "" && a.red.String(u) == u {
				return u
			}
		}
	}
	return ""
}

// failure is the short reason a run failed: its first error's code.
func failure(r *report.Report) string {
	if len(r.Errors) > 0 {
		return string(r.Errors[0].Code) + ": " + r.Errors[0].Message
	}
	return r.Status
}

// warnGitHub turns a failed GitHub call into a warning: the run's verdict
// stays the engine's.
func (a *act) warnGitHub(what string, err error) {
	if err == nil {
		return
	}
	e := errs.Coded(a.red.Error(err))
	a.gha.Warningf("%s: %s: %s", e.Code, what, e.Message)
}
