// Package deploy shows a run on its pull request, for the Action and the
// bot alike: a GitHub deployment of the scope's environment
// (preview/pr-12) whose statuses follow an apply (in_progress, then
// success or failure, with the environment's URL), marked inactive when
// the scope is destroyed, and a commit status sponson/<env> on the head
// commit that a branch protection rule can require. A call GitHub refuses
// (no `deployments: write` or `statuses: write`) is a warning, never the
// run's failure.
package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/redact"
)

// GitHub is the calls a Run makes (internal/github's Client has them).
type GitHub interface {
	EnsureDeployment(ctx context.Context, owner, repo, environment, sha, description string) (github.Deployment, error)
	CreateDeploymentStatus(ctx context.Context, owner, repo string, id int64, st github.DeploymentStatus) error
	DeactivateDeployments(ctx context.Context, owner, repo, environment, logURL string) (bool, error)
	CreateCommitStatus(ctx context.Context, owner, repo, sha string, st github.CommitStatus) error
}

var _ GitHub = (*github.Client)(nil)

// StatusContext is the commit status of environment env.
func StatusContext(env string) string { return "sponson/" + env }

// Run is one command's deployment and commit status.
type Run struct {
	GitHub      GitHub
	Owner, Repo string
	// Command is plan, apply or destroy (a plan sets the commit status
	// only).
	Command string
	// Env is the plan's environment (preview), Scope the scope (pr-12):
	// the deployment's environment is Env/Scope.
	Env, Scope string
	SHA        string // the head commit
	// LogURL is where the run can be read (the Action's job), "" when
	// there is no such page (the bot).
	LogURL string
	// Warn is told of each call GitHub refused; nil drops them.
	Warn func(what string, err error)

	id int64 // the deployment of an apply, 0 when none
}

func (r *Run) envName() string { return r.Env + "/" + r.Scope }

func (r *Run) warn(what string, err error) {
	if err != nil && r.Warn != nil {
		r.Warn(what, err)
	}
}

// Start runs before the engine: the commit status is set pending and, for
// an apply, the deployment of the commit to the scope's environment is
// created (or found) and set in_progress. Nothing happens without a
// commit.
func (r *Run) Start(ctx context.Context) {
	if r == nil || r.GitHub == nil || r.SHA == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	r.warn("the commit status could not be set", r.GitHub.CreateCommitStatus(ctx, r.Owner, r.Repo, r.SHA, github.CommitStatus{
		State: "pending", Context: StatusContext(r.Env), TargetURL: r.LogURL, Description: fmt.Sprintf("sponson %s %s: running", r.Command, r.envName()),
	}))
	if r.Command != "apply" {
		return
	}
	d, err := r.GitHub.EnsureDeployment(ctx, r.Owner, r.Repo, r.envName(), r.SHA, "sponson apply "+r.envName())
	if err != nil {
		r.warn("the deployment could not be created", err)
		return
	}
	r.id = d.ID
	r.warn("the deployment status could not be set", r.GitHub.CreateDeploymentStatus(ctx, r.Owner, r.Repo, d.ID, github.DeploymentStatus{
		State: "in_progress", LogURL: r.LogURL, Description: "applying",
	}))
}

// Finish runs after the run's comment is written (commentURL, "" when
// none): an apply's deployment gets success with envURL (EnvironmentURL),
// or failure; a destroy marks the environment's deployment inactive; the
// commit status gets the run's verdict, linking to the comment (which
// links to the run) or, without one, to the run.
func (r *Run) Finish(ctx context.Context, rep *report.Report, commentURL, envURL string) {
	if r == nil || r.GitHub == nil || r.SHA == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	v := VerdictOf(rep)
	if rep.Status == report.StatusSkipped && r.id != 0 {
		// The engine found the scope closed after the deployment was made
		// (a close landed meanwhile): nothing was deployed.
		r.warn("the deployment status could not be set", r.GitHub.CreateDeploymentStatus(ctx, r.Owner, r.Repo, r.id,
			github.DeploymentStatus{State: "inactive", LogURL: r.LogURL, Description: v.Text}))
		r.id = 0
	}
	switch {
	case r.Command == "apply" && r.id != 0:
		st := github.DeploymentStatus{State: v.Deployment, LogURL: r.LogURL, Description: v.Text}
		if v.Deployment == "success" || v.Deployment == "in_progress" {
			st.EnvironmentURL = envURL
		}
		r.warn("the deployment status could not be set", r.GitHub.CreateDeploymentStatus(ctx, r.Owner, r.Repo, r.id, st))
	case r.Command == "destroy" && rep.ExitCode == 0:
		_, err := r.GitHub.DeactivateDeployments(ctx, r.Owner, r.Repo, r.envName(), r.LogURL)
		r.warn("the deployment could not be marked inactive", err)
	}
	cs := github.CommitStatus{State: v.Commit, Context: StatusContext(r.Env), TargetURL: commentURL,
		Description: fmt.Sprintf("sponson %s %s: %s", r.Command, r.envName(), v.Text)}
	if cs.TargetURL == "" {
		cs.TargetURL = r.LogURL
	}
	r.warn("the commit status could not be set", r.GitHub.CreateCommitStatus(ctx, r.Owner, r.Repo, r.SHA, cs))
}

// Verdict is how a run shows on GitHub.
type Verdict struct {
	Deployment string // the deployment status of an apply
	Commit     string // the commit status
	Text       string
}

// VerdictOf maps a report to GitHub's states: a complete run is success;
// a partial one (a line waits on a person or a provider) stays
// in_progress and its check pending; a stale one (a newer commit was
// applied) marks this commit's deployment inactive, so that the newer one
// stays the environment's active deployment; a failed run is failure,
// and a refused one or a lease that was not won is error.
func VerdictOf(r *report.Report) Verdict {
	switch {
	case r.ExitCode == 1:
		return Verdict{"failure", "failure", failure(r)}
	case r.ExitCode != 0:
		return Verdict{"error", "error", failure(r)}
	case r.Status == string(receipt.StatusPartial):
		return Verdict{"in_progress", "pending", "partial: a line waits"}
	case r.Status == report.StatusStale:
		return Verdict{"inactive", "success", "stale: a newer commit was applied"}
	case r.Status == report.StatusSkipped:
		return Verdict{"inactive", "success", "skipped: " + r.SkipReason}
	}
	return Verdict{"success", "success", r.Status}
}

// failure is the short reason a run failed: its first error's code.
func failure(r *report.Report) string {
	if len(r.Errors) > 0 {
		return string(r.Errors[0].Code) + ": " + r.Errors[0].Message
	}
	return r.Status
}

// EnvironmentURL is the value of the output the plan's environment_url
// names in the run's report ("" when the plan names none, or the output is
// not known, not an http(s) URL, or masked by red).
func EnvironmentURL(p *plan.Plan, rep *report.Report, red *redact.Redactor) string {
	line, out, ok := p.URLLine()
	if !ok {
		return ""
	}
	for _, l := range rep.Lines {
		if l.ID != line {
			continue
		}
		for _, o := range l.Outputs {
			// The report shows a value as JSON text; a URL is a string.
			var u string
			if o.Name != out || json.Unmarshal([]byte(o.Value), &u) != nil {
				continue
			}
			if pu, err := url.Parse(u); err == nil && (pu.Scheme == "https" || pu.Scheme == "http") && pu.Host != "" && (red == nil || red.String(u) == u) {
				return u
			}
		}
	}
	return ""
}
