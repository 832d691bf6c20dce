package github

import (
	"context"
	"strings"
)

// OwnComment returns the oldest comment carrying marker among those c's
// own identity wrote on issue or pull request number (the one
// UpsertComment keeps): found is false when there is none. It reads the
// comments, every page, as UpsertComment does; a comment by anyone else
// is never returned, so a marker another author copies means nothing.
//
// A function over the client rather than its method: the Client's
// methods are the calls GitHub answers, and this is one of them read a
// particular way.
func OwnComment(ctx context.Context, c *Client, owner, repo string, number int, marker string) (Comment, bool, error) {
	login, err := c.Login(ctx)
	if err != nil {
		return Comment{}, false, err
	}
	all, err := c.ListIssueComments(ctx, owner, repo, number)
	if err != nil {
		return Comment{}, false, err
	}
	for _, cm := range all {
		if strings.EqualFold(cm.Author, login) && strings.Contains(cm.Body, marker) {
			return cm, true, nil
		}
	}
	return Comment{}, false, nil
}
