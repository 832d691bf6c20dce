package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

// Comments is what the bot needs of a pull request's conversation.
type Comments interface {
	// UpsertComment keeps one comment carrying marker among those the
	// bot's own identity wrote on pull request number: found on any page,
	// edited in place, created once, an unchanged body not rewritten; two
	// writers racing to create converge on the oldest, the others deleted
	// (github.Client.UpsertComment).
	UpsertComment(ctx context.Context, number int, marker, body string) error
}

// MaxCommentBytes is GitHub's limit on a comment's body.
const MaxCommentBytes = 65536

// upsertComment edits the bot's comment for env in place, or creates it;
// several replicas writing at once leave one comment. Its marker is the
// Action's (report.Marker); the bot looks for it only among its own
// comments (author = its identity), so the Action's comment, written by
// github-actions[bot], is never edited by the bot nor the bot's by the
// Action.
func upsertComment(ctx context.Context, c Comments, number int, env, body string) error {
	return c.UpsertComment(ctx, number, report.Marker(env), commentBody(env, body))
}

// commentBody is body under env's marker, cut to GitHub's limit on a
// UTF-8 boundary.
func commentBody(env, body string) string {
	body = report.Marker(env) + "\n" + body
	if len(body) > MaxCommentBytes {
		cut := MaxCommentBytes - 200
		for cut > 0 && (body[cut]&0xC0) == 0x80 {
			cut--
		}
		body = body[:cut] + "\n\n… (truncated: the receipt branch has the whole record)\n"
	}
	return body
}

// md is text from a provider, a branch name or an error made safe in a
// heading or a list item, as the Action's comments make it
// (report.Escape): it cannot open HTML, a code span or a table cell, nor
// ping anyone.
func md(s string) string { return report.Escape(s, 0) }

// teardownBody says what a teardown of scope sc in env did: destroyed,
// forgotten, failed, and the manual steps whose undo waits on a person
// (each with its undo and how to confirm it, report.StepsMarkdown).
func teardownBody(env, sc string, destroyed, forgotten, failed []string, err error, undo []adapter.Todo) string {
	var b strings.Builder
	switch {
	case err != nil || len(failed) > 0:
		fmt.Fprintf(&b, "### Sponson: teardown of %s in %s left resources behind\n\n", md(sc), md(env))
	case len(undo) > 0:
		fmt.Fprintf(&b, "### Sponson: %s torn down in %s, but for %s a person did\n\n", md(sc), md(env), report.Count(len(undo), "step"))
	default:
		fmt.Fprintf(&b, "### Sponson: %s torn down in %s\n\n", md(sc), md(env))
	}
	writeList(&b, "Destroyed", destroyed)
	writeList(&b, "Forgotten (adopted, left in place)", forgotten)
	writeList(&b, "Failed (still recorded; the next sweep retries)", failed)
	if len(destroyed)+len(forgotten)+len(failed)+len(undo) == 0 && err == nil {
		b.WriteString("Nothing was left to destroy.\n\n")
	}
	b.WriteString(report.StepsMarkdown(report.StepsOf("destroy", env, sc, undo)))
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
		fmt.Fprintf(&b, "Inherited %s from %s (the head branch's scope), now owned by this pull request and destroyed when it closes:\n\n", report.Count(len(moved), "resource"), md(from))
		for _, m := range moved {
			fmt.Fprintf(&b, "- %s\n", md(m))
		}
	}
	return b.String()
}

// writeList writes a titled list of items, each as code; nothing for no
// items.
func writeList(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "%s (%d):\n\n", title, len(items))
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", md(it))
	}
	b.WriteString("\n")
}
