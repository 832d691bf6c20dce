package bot

import (
	"context"
	"log/slog"

	"github.com/sponson/apply/pkg/errs"
)

// deploymentDeactivator marks the newest deployment of an environment
// inactive (internal/github's DeactivateDeployments on one repository).
// The installation's client has it; a RepoGitHub without it (a test's)
// skips the step.
type deploymentDeactivator interface {
	DeactivateDeployments(ctx context.Context, environment, logURL string) (bool, error)
}

// DeactivateDeployments is the repository's DeactivateDeployments.
func (a appRepo) DeactivateDeployments(ctx context.Context, environment, logURL string) (bool, error) {
	return a.Client.DeactivateDeployments(ctx, a.Owner, a.Name, environment, logURL)
}

var _ deploymentDeactivator = appRepo{}

// deactivate marks the deployment of env/sc inactive after the bot tore
// the scope down (the Action made it on apply). A refusal (the App lacks
// deployments: write) is logged, never the teardown's error.
func deactivate(ctx context.Context, log *slog.Logger, gh RepoGitHub, env, sc string) {
	d, ok := gh.(deploymentDeactivator)
	if !ok {
		return
	}
	if _, err := d.DeactivateDeployments(ctx, env+"/"+sc, ""); err != nil {
		log.Warn("the deployment could not be marked inactive", "code", string(errs.CodeOf(err)), "error", errs.Coded(err).Message)
	}
}
