package bot

import (
	"context"
	"log/slog"

	"github.com/sponson/apply/internal/deploy"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/pkg/errs"
)

// deployer is a repository's GitHub that can show a run as a deployment
// and a commit status (the installation's client; a test's RepoGitHub may
// not).
type deployer interface {
	// Deployments is the client and the repository the calls go to.
	Deployments() (gh deploy.GitHub, owner, repo string)
}

// Deployments is the installation's client on this repository.
func (a appRepo) Deployments() (deploy.GitHub, string, string) { return a.Client, a.Owner, a.Name }

var _ deployer = appRepo{}

// deployRun is how a comment command shows on the pull request, as the
// Action's runs do: an apply (confirm, recreate, reconcile) is a
// deployment of env/<scope> at the head commit, in progress then success
// or failure with the plan's environment URL; a destroy marks it
// inactive; every run sets the commit status sponson/<env>, linking to the
// environment's comment. nil (which does nothing) for a command that runs
// no engine, or a GitHub that cannot deploy. A call GitHub refuses (the
// App lacks deployments or statuses write) is logged, never the command's
// error.
func deployRun(log *slog.Logger, ws *Workspace, cmd Command, pr sweep.PullRequest, env, sc string) *deploy.Run {
	d, ok := ws.GitHub.(deployer)
	if !ok || pr.HeadSHA == "" {
		return nil
	}
	command := ""
	switch cmd.Verb {
	case "plan", "destroy":
		command = cmd.Verb
	case "apply", "confirm", "recreate", "reconcile":
		command = "apply"
	default:
		return nil
	}
	gh, owner, repo := d.Deployments()
	return &deploy.Run{GitHub: gh, Owner: owner, Repo: repo, Command: command, Env: env, Scope: sc, SHA: pr.HeadSHA,
		Warn: func(what string, err error) {
			log.Warn(what, "code", string(errs.CodeOf(err)), "error", errs.Coded(err).Message)
		}}
}

// commentURLer is a repository's GitHub whose comment upsert says where
// the comment is (the installation's client).
type commentURLer interface {
	UpsertCommentURL(ctx context.Context, n int, marker, body string) (string, error)
}

// UpsertCommentURL is UpsertComment, with the comment's address.
func (a appRepo) UpsertCommentURL(ctx context.Context, n int, marker, body string) (string, error) {
	c, _, err := a.Client.UpsertComment(ctx, a.Owner, a.Name, n, marker, body)
	return c.HTMLURL, err
}

// writeComment writes the comment carrying marker and returns its
// address ("" when the GitHub cannot say).
func writeComment(ctx context.Context, gh RepoGitHub, n int, marker, body string) (string, error) {
	if u, ok := gh.(commentURLer); ok {
		return u.UpsertCommentURL(ctx, n, marker, body)
	}
	return "", gh.UpsertComment(ctx, n, marker, body)
}
