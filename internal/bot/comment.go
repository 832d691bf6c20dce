package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// Comment is one comment of a pull request's conversation.
type Comment struct {
	ID     int64
	Author string // the login of whoever wrote it ("sponson[bot]")
	Body   string
}

// Comments is what the bot needs of a pull request's conversation.
type Comments interface {
	// Comments returns every comment of the pull request, all pages.
	Comments(ctx context.Context, number int) ([]Comment, error)
	CreateComment(ctx context.Context, number int, body string) error
	EditComment(ctx context.Context, id int64, body string) error
}

// MaxCommentBytes is GitHub's limit on a comment's body.
const MaxCommentBytes = 65536

// Marker is the hidden marker of the bot's comment for env. The bot looks
// for it only among its own comments (author = its identity), so the
// Action's comment with the same marker, written by github-actions[bot],
// is never edited by the bot nor the bot's by the Action.
func Marker(env string) string { return "<!-- sponson:" + env + " -->" }

// upsertComment edits the bot's comment for env in place, or creates it.
func upsertComment(ctx context.Context, c Comments, identity string, number int, env, body string) error {
	return writeComment(ctx, c, identity, number, env, body, true)
}

// writeComment is upsertComment; with edit false an existing comment is
// left as it is (a teardown that found nothing left to do must not
// overwrite the one that says what was destroyed).
func writeComment(ctx context.Context, c Comments, identity string, number int, env, body string, edit bool) error {
	body = Marker(env) + "\n" + body
	if len(body) > MaxCommentBytes {
		cut := MaxCommentBytes - 200
		for cut > 0 && (body[cut]&0xC0) == 0x80 {
			cut--
		}
		body = body[:cut] + "\n\n… (truncated: the receipt branch has the whole record)\n"
	}
	list, err := c.Comments(ctx, number)
	if err != nil {
		return err
	}
	for _, cm := range list {
		if cm.Author == identity && strings.Contains(cm.Body, Marker(env)) {
			if cm.Body == body || !edit {
				return nil
			}
			return c.EditComment(ctx, cm.ID, body)
		}
	}
	return c.CreateComment(ctx, number, body)
}

// md escapes text for a markdown table cell or list item: nothing from a
// provider or a branch name can open HTML, a code span or a table cell.
func md(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "`", "\\`", "|", "\\|", "<", "&lt;", ">", "&gt;", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]", "\r", " ", "\n", " ")
	return r.Replace(s)
}

func teardownBody(env, sc string, destroyed, forgotten, failed []string, err error) string {
	var b strings.Builder
	switch {
	case err != nil || len(failed) > 0:
		fmt.Fprintf(&b, "### Sponson: teardown of %s in %s left resources behind\n\n", md(sc), md(env))
	default:
		fmt.Fprintf(&b, "### Sponson: %s torn down in %s\n\n", md(sc), md(env))
	}
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s (%d):\n\n", title, len(items))
		for _, it := range items {
			fmt.Fprintf(&b, "- %s\n", md(it))
		}
		b.WriteString("\n")
	}
	list("Destroyed", destroyed)
	list("Forgotten (adopted, left in place)", forgotten)
	list("Failed (still recorded; the next sweep retries)", failed)
	if len(destroyed)+len(forgotten)+len(failed) == 0 && err == nil {
		b.WriteString("Nothing was left to destroy.\n\n")
	}
	if err != nil {
		e := errs.Coded(err)
		fmt.Fprintf(&b, "Error `%s`: %s\n\n", e.Code, md(e.Message))
	}
	b.WriteString("The scope is closed: a late workflow run cannot rebuild it (reopening the pull request clears this).\n")
	return b.String()
}

func successionBody(env, from, to string, moved []string, reopened bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Sponson: %s in %s\n\n", md(to), md(env))
	if reopened {
		b.WriteString("The pull request reopened: the scope's tombstone was cleared, so it can be applied again.\n\n")
	}
	if len(moved) > 0 {
		fmt.Fprintf(&b, "Inherited %d resource(s) from %s (the head branch's scope), now owned by this pull request and destroyed when it closes:\n\n", len(moved), md(from))
		for _, m := range moved {
			fmt.Fprintf(&b, "- %s\n", md(m))
		}
	}
	return b.String()
}
