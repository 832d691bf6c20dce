package bot

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	gh "github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/pkg/errs"
)

// idleMarker opens the idle warning inside the bot's comment of an
// environment; idleEnd closes it. The opening line records the warning
// (when, from which last activity, until when): the sweep reads it back
// from the bot's own comment only, so the warning precedes the expiry by
// the warning period whenever the bot starts, and a replica that did not
// write it knows of it.
const (
	idleMarker = "<!-- sponson:idle "
	idleEnd    = "<!-- /sponson:idle -->"
	// hibernatedMarker marks a comment that says a preview was
	// hibernated: stale once it is warned again, so a warning drops it.
	hibernatedMarker = "<!-- sponson:hibernated -->"
)

// branchTips reads when a branch's tip was committed (the installation's
// client has it; a RepoGitHub without it counts no push).
type branchTips interface {
	// BranchCommitted is the committer time of branch's tip; found is
	// false when the branch does not exist.
	BranchCommitted(ctx context.Context, branch string) (at time.Time, found bool, err error)
}

// ownComments reads the bot's own comment carrying a marker (the
// installation's client has it).
type ownComments interface {
	// OwnComment is the body of the bot's comment on pull request n
	// carrying marker; found is false when there is none.
	OwnComment(ctx context.Context, n int, marker string) (body string, found bool, err error)
}

// BranchCommitted implements branchTips through the installation's client.
func (a appRepo) BranchCommitted(ctx context.Context, branch string) (time.Time, bool, error) {
	b, err := a.Client.GetBranch(ctx, a.Owner, a.Name, branch)
	if errs.CodeOf(err) == errs.GITHUB_NOT_FOUND {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return b.Committed, true, nil
}

// OwnComment implements ownComments through the installation's client.
func (a appRepo) OwnComment(ctx context.Context, n int, marker string) (string, bool, error) {
	c, found, err := gh.OwnComment(ctx, a.Client, a.Owner, a.Name, n, marker)
	return c.Body, found, err
}

var (
	_ branchTips  = appRepo{}
	_ ownComments = appRepo{}
)

// idleNotices is the bot's sweep.Idler for one repository: the last push
// from the head branch, the warning kept in the bot's comment of the
// environment, and the hibernation said there, the deployment marked
// inactive.
type idleNotices struct {
	gh  RepoGitHub
	log *slog.Logger
}

var _ sweep.Idler = idleNotices{}

// LastPush is the committer time of the head branch's tip; zero for a
// fork's pull request (its branch is in another repository) or a head
// branch that is gone.
func (n idleNotices) LastPush(ctx context.Context, pr sweep.PullRequest) (time.Time, error) {
	bt, ok := n.gh.(branchTips)
	if !ok || pr.HeadRef == "" || !strings.EqualFold(pr.HeadRepo, pr.BaseRepo) {
		return time.Time{}, nil
	}
	at, _, err := bt.BranchCommitted(ctx, pr.HeadRef)
	return at, err
}

func (n idleNotices) comment(ctx context.Context, pr int, env string) (string, bool, error) {
	oc, ok := n.gh.(ownComments)
	if !ok {
		return "", false, errs.New(errs.INTERNAL, "the repository's GitHub cannot read the bot's comments, so an idle warning cannot be found").
			WithHint("This is a defect: the installation's client reads them.")
	}
	return oc.OwnComment(ctx, pr, report.Marker(env))
}

// Warning is the warning recorded in the bot's comment of env.
func (n idleNotices) Warning(ctx context.Context, pr int, env string) (sweep.IdleWarning, bool, error) {
	body, found, err := n.comment(ctx, pr, env)
	if err != nil || !found {
		return sweep.IdleWarning{}, false, err
	}
	w, ok := parseIdleWarning(body)
	return w, ok, nil
}

// Warn puts the warning at the top of the bot's comment of env, keeping
// what the comment said below it.
func (n idleNotices) Warn(ctx context.Context, pr int, env, sc string, w sweep.IdleWarning) error {
	body, _, err := n.comment(ctx, pr, env)
	if err != nil {
		return err
	}
	return upsertComment(ctx, n.gh, pr, env, idleWarningBody(env, sc, w)+"\n"+withoutIdleWarning(body, env))
}

// Hibernated says in the bot's comment of env that the preview was
// hibernated and how to wake it, and marks its deployment inactive when
// nothing was left.
func (n idleNotices) Hibernated(ctx context.Context, pr int, env, sc string, t sweep.EnvTeardown) error {
	if t.Err == nil && len(t.Failed) == 0 {
		deactivate(ctx, n.log.With("env", env, "scope", sc), n.gh, env, sc)
	}
	return upsertComment(ctx, n.gh, pr, env, hibernatedBody(env, sc, t))
}

func idleStamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// humanTime is a time as the bot's comments write it.
func humanTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// parseIdleWarning reads the warning line of a comment's body; ok is
// false when there is none or it does not read.
func parseIdleWarning(body string) (sweep.IdleWarning, bool) {
	i := strings.Index(body, idleMarker)
	if i < 0 {
		return sweep.IdleWarning{}, false
	}
	line, _, _ := strings.Cut(body[i+len(idleMarker):], "-->")
	var w sweep.IdleWarning
	seen := 0
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return sweep.IdleWarning{}, false
		}
		switch k {
		case "warned":
			w.At = t
		case "activity":
			w.Activity = t
		case "expires":
			w.Expires = t
		default:
			continue
		}
		seen++
	}
	return w, seen == 3
}

// withoutIdleWarning is the bot's comment body without its marker line
// and without an earlier warning ("" for a hibernation's, which a new
// warning makes stale).
func withoutIdleWarning(body, env string) string {
	if strings.Contains(body, hibernatedMarker) {
		return ""
	}
	body = strings.TrimPrefix(body, report.Marker(env)+"\n")
	if i := strings.Index(body, idleMarker); i >= 0 {
		if j := strings.Index(body[i:], idleEnd); j >= 0 {
			body = body[:i] + strings.TrimLeft(body[i+j+len(idleEnd):], "\n")
		}
	}
	return body
}

// idleWarningBody is the warning: when the preview expires, since when
// it has been idle, what keeps it.
func idleWarningBody(env, sc string, w sweep.IdleWarning) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%swarned=%s activity=%s expires=%s -->\n", idleMarker, idleStamp(w.At), idleStamp(w.Activity), idleStamp(w.Expires))
	fmt.Fprintf(&b, "> [!WARNING]\n> **Sponson: the preview %s in %s expires at %s.** It has had no push and no apply since %s. ",
		md(sc), md(env), humanTime(w.Expires), humanTime(w.Activity))
	b.WriteString("It will then be hibernated: its resources destroyed, the pull request left open, and the next push or `/sponson apply` rebuilds it.\n>\n")
	fmt.Fprintf(&b, "> To keep it, before then: push to the branch, comment `/sponson apply`, or comment `/sponson keep` (the label `%s`, until `/sponson unkeep`).\n", KeepLabel)
	b.WriteString(idleEnd + "\n")
	return b.String()
}

// hibernatedBody says that the preview was hibernated for idleness, what
// was destroyed and what was not, and how to wake it.
func hibernatedBody(env, sc string, t sweep.EnvTeardown) string {
	var b strings.Builder
	b.WriteString(hibernatedMarker + "\n")
	left := t.Err != nil || len(t.Failed) > 0
	if left {
		fmt.Fprintf(&b, "### Sponson: the idle preview %s in %s was hibernated, but resources were left behind\n\n", md(sc), md(env))
	} else {
		fmt.Fprintf(&b, "### Sponson: the idle preview %s in %s was hibernated\n\n", md(sc), md(env))
	}
	b.WriteString("It had no push and no apply for the idle period, and was warned. Its resources were destroyed; the pull request stays open and nothing about it is closed.\n\n")
	writeList(&b, "Destroyed", t.Destroyed)
	writeList(&b, "Forgotten (adopted, left in place)", t.Forgotten)
	writeList(&b, "Failed (still recorded; the next sweep retries)", t.Failed)
	b.WriteString(report.StepsMarkdown(report.StepsOf("destroy", env, sc, t.Undo)))
	if t.Err != nil {
		e := errs.Coded(t.Err)
		fmt.Fprintf(&b, "Error `%s`: %s\n\n", e.Code, md(e.Message))
	}
	fmt.Fprintf(&b, "**To wake it:** push to the branch, or comment `/sponson apply`: either rebuilds it. To keep a preview from hibernating, comment `/sponson keep` (the label `%s`).\n", KeepLabel)
	return b.String()
}
