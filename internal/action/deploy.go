package action

import (
	"context"

	"github.com/sponson/apply/internal/deploy"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

// Deployer is what the Action needs of GitHub to show a run on its pull
// request (internal/deploy): a deployment of the scope's environment and
// the commit status sponson/<env>. The workflow grants `deployments:
// write` and `statuses: write`; without them each call is a warning,
// never a failed run.
type Deployer = deploy.GitHub

// StatusContext is the commit status of environment env.
func StatusContext(env string) string { return deploy.StatusContext(env) }

// deployStart runs before the engine (deploy.Run.Start), when the client
// can deploy and the run has a commit.
func (a *act) deployStart(ctx context.Context, command string, c scope.Ctx) {
	dep, ok := a.gh.(Deployer)
	if !ok || c.Git.SHA == "" {
		return
	}
	owner, name := split(c.Repo)
	if c.Repo == "" {
		owner, name = split(a.env.getenv("GITHUB_REPOSITORY"))
	}
	a.deploy = &deploy.Run{GitHub: dep, Owner: owner, Repo: name, Command: command, Env: c.Env, Scope: c.Scope,
		SHA: c.Git.SHA, LogURL: a.links.RunURL(), Warn: a.warnGitHub}
	a.deploy.Start(ctx)
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
