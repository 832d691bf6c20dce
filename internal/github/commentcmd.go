package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v62/github"

	"github.com/sponson/apply/pkg/errs"
)

// Permission levels of a repository, lowest first, as GitHub's
// repository-collaborator-permission answers them ("permission": admin,
// write, read or none; maintain reads as write, triage as read).
const (
	PermissionNone  = "none"
	PermissionRead  = "read"
	PermissionWrite = "write"
	PermissionAdmin = "admin"
)

// PermissionRank orders a permission: none 0, read 1, write 2, admin 3
// (an unknown one is none).
func PermissionRank(p string) int {
	switch p {
	case PermissionRead:
		return 1
	case PermissionWrite:
		return 2
	case PermissionAdmin:
		return 3
	}
	return 0
}

// CollaboratorPermission is user's permission on the repository (admin,
// write, read or none), as GitHub says it now: never the
// author_association a webhook carried. A login GitHub does not know is
// "none".
func (c *Client) CollaboratorPermission(ctx context.Context, owner, repo, user string) (string, error) {
	ctx = withOp(ctx, "repos/get-collaborator-permission-level")
	cl := call{fmt.Sprintf("ask %s's permission on %s", user, repoName(owner, repo)), "metadata: read"}
	p, _, err := c.gh.Repositories.GetPermissionLevel(ctx, owner, repo, user)
	if err != nil {
		if err = wrapErr(err, cl); errs.CodeOf(err) == errs.GITHUB_NOT_FOUND {
			return PermissionNone, nil
		}
		return "", err
	}
	switch perm := p.GetPermission(); perm {
	case PermissionAdmin, PermissionWrite, PermissionRead:
		return perm, nil
	case "maintain":
		return PermissionWrite, nil
	}
	return PermissionNone, nil
}

// ReactToComment leaves reaction content (+1, eyes, confused, ...) on
// issue comment id; the same reaction left again is not an error.
func (c *Client) ReactToComment(ctx context.Context, owner, repo string, id int64, content string) error {
	ctx = withOp(ctx, "reactions/create-for-issue-comment")
	cl := call{fmt.Sprintf("react to comment %d of %s", id, repoName(owner, repo)), "pull-requests: write"}
	_, _, err := c.gh.Reactions.CreateIssueCommentReaction(ctx, owner, repo, id, content)
	return wrapErr(err, cl)
}

// FileAt is the file at path in commit (or branch) ref, as the contents
// API gives it; a file that is not there is GITHUB_NOT_FOUND, a folder
// GITHUB_INVALID.
func (c *Client) FileAt(ctx context.Context, owner, repo, path, ref string) ([]byte, error) {
	ctx = withOp(ctx, "repos/get-content")
	cl := call{fmt.Sprintf("read %s at %s in %s", path, ref, repoName(owner, repo)), "contents: read"}
	f, _, _, err := c.gh.Repositories.GetContents(ctx, owner, repo, path, &gh.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, wrapErr(err, cl)
	}
	if f == nil {
		return nil, errs.New(errs.GITHUB_INVALID, "%s at %s in %s is a folder, not a file", path, ref, repoName(owner, repo))
	}
	s, err := f.GetContent()
	if err != nil {
		return nil, errs.Wrap(err, errs.GITHUB_INVALID, "decode %s at %s in %s", path, ref, repoName(owner, repo))
	}
	return []byte(s), nil
}

// AddLabel puts label name on issue or pull request number (GitHub
// creates a label the repository lacks; one already there is kept).
func (c *Client) AddLabel(ctx context.Context, owner, repo string, number int, name string) error {
	ctx = withOp(ctx, "issues/add-labels")
	cl := call{fmt.Sprintf("label %s#%d %s", repoName(owner, repo), number, name), "pull-requests: write"}
	_, _, err := c.gh.Issues.AddLabelsToIssue(ctx, owner, repo, number, []string{name})
	return wrapErr(err, cl)
}

// RemoveLabel takes label name off issue or pull request number (a label
// not there is not an error).
func (c *Client) RemoveLabel(ctx context.Context, owner, repo string, number int, name string) error {
	ctx = withOp(ctx, "issues/remove-label")
	cl := call{fmt.Sprintf("take label %s off %s#%d", name, repoName(owner, repo), number), "pull-requests: write"}
	_, err := c.gh.Issues.RemoveLabelForIssue(ctx, owner, repo, number, name)
	if err = wrapErr(err, cl); errs.CodeOf(err) == errs.GITHUB_NOT_FOUND {
		return nil
	}
	return err
}

// TeamMember reports whether login is an active member (or maintainer)
// of team slug of organisation org; not a member, or no such team, is
// false. The App needs the organisation permission members: read.
func (c *Client) TeamMember(ctx context.Context, org, slug, login string) (bool, error) {
	ctx = withOp(ctx, "teams/get-membership-for-user-in-org")
	cl := call{fmt.Sprintf("ask whether %s is on team %s/%s", login, org, slug), "members: read (organisation)"}
	m, _, err := c.gh.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
	if err != nil {
		if err = wrapErr(err, cl); errs.CodeOf(err) == errs.GITHUB_NOT_FOUND {
			return false, nil
		}
		return false, err
	}
	return m.GetState() == "active", nil
}
