package bot

import (
	"context"

	"github.com/sponson/apply/internal/sweep"
)

var _ CommandGitHub = appRepo{}

// Permission implements CommandGitHub.
func (a appRepo) Permission(ctx context.Context, login string) (string, error) {
	return a.Client.CollaboratorPermission(ctx, a.Owner, a.Name, login)
}

// React implements CommandGitHub.
func (a appRepo) React(ctx context.Context, id int64, content string) error {
	return a.Client.ReactToComment(ctx, a.Owner, a.Name, id, content)
}

// FileAt implements CommandGitHub.
func (a appRepo) FileAt(ctx context.Context, path, sha string) ([]byte, error) {
	return a.Client.FileAt(ctx, a.Owner, a.Name, path, sha)
}

// Label implements CommandGitHub.
func (a appRepo) Label(ctx context.Context, n int, name string, on bool) error {
	if on {
		return a.Client.AddLabel(ctx, a.Owner, a.Name, n, name)
	}
	return a.Client.RemoveLabel(ctx, a.Owner, a.Name, n, name)
}

// TeamMember implements CommandGitHub.
func (a appRepo) TeamMember(ctx context.Context, org, slug, login string) (bool, error) {
	return a.Client.TeamMember(ctx, org, slug, login)
}

var _ ackerOpener = (*AppWorkspaces)(nil)

// Acker implements ackerOpener through the installation's client (its
// token is cached): no workspace is opened.
func (a *AppWorkspaces) Acker(ctx context.Context, r Repository) (commentAcker, error) {
	client, err := a.client(ctx, r)
	if err != nil {
		return nil, err
	}
	return appRepo{sweep.ClientRepo{Client: client, Owner: r.Owner, Name: r.Name}}, nil
}
