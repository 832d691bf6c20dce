package bot

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/sponson/apply/internal/deploy"
	gh "github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// PlanFile is the plan's path in the repository, read at the pull
// request's head commit.
const PlanFile = "release.plan.yaml"

// CommandGitHub is what a comment command asks of GitHub beyond
// RepoGitHub (a workspace's GitHub without it answers every command with
// INTERNAL).
type CommandGitHub interface {
	// Permission is login's permission on the repository now (admin,
	// write, read or none: github.Client.CollaboratorPermission).
	Permission(ctx context.Context, login string) (string, error)
	// React leaves a reaction (eyes, +1, confused) on comment id.
	React(ctx context.Context, id int64, content string) error
	// FileAt is the file at path in commit sha of the repository.
	FileAt(ctx context.Context, path, sha string) ([]byte, error)
	// Label puts label name on pull request n (on) or takes it off.
	Label(ctx context.Context, n int, name string, on bool) error
	// TeamMember reports whether login is an active member of team slug
	// of organisation org.
	TeamMember(ctx context.Context, org, slug, login string) (bool, error)
}

// KeepLabel on a pull request keeps its preview from idle expiry
// (/sponson keep puts it on, /sponson unkeep takes it off).
const KeepLabel = "sponson:keep"

// commands runs comment commands for the bot b (its own type: the Bot
// has methods enough).
type commands struct{ b *Bot }

// answerMarker marks the bot's one answer to commands that ran nowhere
// (refused, or not understood); results go to each environment's comment.
const answerMarker = "<!-- sponson:commands -->"

// issueComment is an issue_comment delivery.
type issueComment struct {
	Subject
	CommentID  int64
	Author     string
	Body       string
	PullReq    bool   // the issue is a pull request
	IssueState string // open or closed
}

func decodeIssueComment(eventType string, payload []byte) (issueComment, error) {
	p, err := decode[*github.IssueCommentEvent](eventType, payload)
	if err != nil {
		return issueComment{}, err
	}
	is, cm := p.GetIssue(), p.GetComment()
	if is == nil || cm == nil || p.GetRepo() == nil || is.GetNumber() <= 0 {
		return issueComment{}, fmt.Errorf("the issue_comment event has no issue, comment or repository")
	}
	inst := p.GetInstallation().GetID()
	return issueComment{
		Subject:    Subject{Action: p.GetAction(), Installation: inst, Repo: repoOf(inst, p.GetRepo()), PR: is.GetNumber(), Scope: scope.PRScope(is.GetNumber())},
		CommentID:  cm.GetID(),
		Author:     cm.GetUser().GetLogin(),
		Body:       cm.GetBody(),
		PullReq:    is.IsPullRequest(),
		IssueState: is.GetState(),
	}, nil
}

// why is the reason the bot does nothing with comment e ("" when it is a
// command to act on), from the payload alone.
func (e issueComment) why(identity string) string {
	switch {
	case e.Action != "created":
		return "issue_comment " + e.Action + ": only a new comment is a command"
	case !e.PullReq:
		return "a comment on an issue, not a pull request"
	case e.IssueState == "closed":
		return "a comment on a closed pull request"
	case strings.EqualFold(e.Author, identity):
		return "the bot's own comment"
	}
	if _, ok, _ := ParseCommand(e.Body); !ok {
		return "a comment that is not a " + CommandPrefix + " command"
	}
	return ""
}

// runComment runs comment e's command: nothing at all when the pull
// request is closed or a fork's (as GitHub has it now); then who asks
// before what — a commenter without write permission gets the one
// refusal whatever they typed, and nothing runs; a writer's command that
// cannot be read is answered with what to type. The comment was
// acknowledged (eyes) when the webhook answered (Acknowledge); the result
// is written into each environment's comment.
func (x commands) runComment(ctx context.Context, log *slog.Logger, ws *Workspace, e issueComment) error {
	cg, ok := ws.GitHub.(CommandGitHub)
	if !ok {
		return errs.New(errs.INTERNAL, "the workspace's GitHub cannot run comment commands")
	}
	log = log.With("commenter", e.Author)
	pr, found, err := ws.GitHub.PullRequest(ctx, e.PR)
	if err != nil {
		return errs.Wrap(err, errs.GITHUB_STATE, "ask GitHub for pull request #%d", e.PR)
	}
	if why := ignoredPull(pr, found); why != "" {
		// Ignored as the webhook ignores an edited comment: no answer,
		// no reaction (Acknowledge left none either).
		log.Info("the comment command does nothing", "why", why)
		return nil
	}
	// Asked of GitHub now, never read from the payload's
	// author_association: a permission taken away since counts.
	perm, err := cg.Permission(ctx, e.Author)
	if err != nil {
		return err
	}
	if gh.PermissionRank(perm) < gh.PermissionRank(gh.PermissionWrite) {
		return x.answer(ctx, log, ws, cg, e, x.notAllowed(e.Author, perm))
	}
	cmd, _, err := ParseCommand(e.Body)
	if err != nil {
		return x.answer(ctx, log, ws, cg, e, err)
	}
	return x.runCommand(ctx, log.With("command", cmd.Verb), ws, cg, e, cmd, pr, perm)
}

// notAllowed is the one answer to a commenter without write permission:
// who may run commands, and what to do.
func (x commands) notAllowed(login, perm string) error {
	return refused("%s may not run Sponson's commands here: they need write permission on the repository (write, maintain or admin), and %s has %s; commands that write production also need an admin%s",
		md(login), md(login), md(perm), x.approversText()).
		WithHint("Ask someone with write permission on the repository to comment the command, or ask an admin for write access.")
}

// runCommand runs cmd in each of its environments, refusing it where it
// would write production and the commenter is not an admin.
func (x commands) runCommand(ctx context.Context, log *slog.Logger, ws *Workspace, cg CommandGitHub, e issueComment, cmd Command, pr sweep.PullRequest, perm string) error {
	if cmd.Verb == "keep" || cmd.Verb == "unkeep" {
		return x.keep(ctx, log, ws, cg, e, cmd.Verb == "keep")
	}
	if cmd.Verb == "unlock" && cmd.Parent != "" {
		return x.unlockParent(ctx, log, ws, cg, e, cmd, perm)
	}
	p, err := planAt(ctx, cg, cmd, pr)
	if err != nil {
		return x.answer(ctx, log, ws, cg, e, err)
	}
	envs, err := x.commandEnvs(ctx, ws, cmd, p, e.Scope)
	if err != nil {
		return x.answer(ctx, log, ws, cg, e, err)
	}
	if err := x.mayWrite(ctx, cg, e, cmd, perm, envs); err != nil {
		return x.answer(ctx, log, ws, cg, e, err)
	}
	if ws.Refused != nil && cmd.Verb != "unlock" {
		// No provider work without the repository's own credentials.
		_ = refuseWork(ctx, log, x.b.Metrics, ws, e.PR, envs, "comment command")
		x.react(ctx, log, cg, e.CommentID, "confused")
		return nil
	}
	return x.runEnvs(ctx, log, ws, cg, e, cmd, p, pr, envs)
}

// planAt reads and parses the plan at the pull request's head commit, for
// a command that runs one (nil for destroy and unlock).
func planAt(ctx context.Context, cg CommandGitHub, cmd Command, pr sweep.PullRequest) (*plan.Plan, error) {
	if cmd.Verb == "destroy" || cmd.Verb == "unlock" || cmd.Verb == "keep" || cmd.Verb == "unkeep" {
		return nil, nil
	}
	src, err := cg.FileAt(ctx, PlanFile, pr.HeadSHA)
	if err != nil {
		return nil, refused("%s: %s could not be read at the head commit %s: %s", cmd, PlanFile, pr.HeadSHA, errs.Coded(err).Message)
	}
	return plan.Parse(PlanFile, src)
}

// mayWrite refuses cmd where it writes production and the commenter is
// neither an admin nor an approver.
func (x commands) mayWrite(ctx context.Context, cg CommandGitHub, e issueComment, cmd Command, perm string, envs []string) error {
	for _, env := range envs {
		if !plan.Production(env) || !cmd.Writes() {
			continue
		}
		ok, err := x.approver(ctx, cg, e.Author, perm)
		if err != nil {
			return err // GitHub's refusal names the permission the App lacks
		}
		if !ok {
			return refused("%s writes production (%s): it needs an admin of the repository%s, who is recorded as its approver; %s has %s", cmd, md(env), x.approversText(), md(e.Author), perm)
		}
	}
	return nil
}

// runEnvs runs cmd in each of envs, writing each environment's comment
// and showing each run as a deployment, then reacts to the comment.
func (x commands) runEnvs(ctx context.Context, log *slog.Logger, ws *Workspace, cg CommandGitHub, e issueComment, cmd Command, p *plan.Plan, pr sweep.PullRequest, envs []string) error {
	var firstErr error
	var blocked []string
	for _, env := range envs {
		dep := deployRun(log.With("env", env), ws, cmd, pr, env, e.Scope)
		dep.Start(ctx)
		body, rep, err := x.runInEnv(ctx, ws, e, cmd, p, pr, env)
		if err != nil && body == "" {
			return x.answer(ctx, log, ws, cg, e, err)
		}
		if held, ok := heldByBot(err, x.b.Identity); ok {
			// Another run of this bot (a replica given the same comment,
			// or an earlier command) holds the environment: its result,
			// not this refusal, is the environment's comment, and its
			// deployment's status.
			log.Info("another run of the bot holds the environment", "env", env, "holder", held.Holder)
			blocked = append(blocked, env)
			continue
		}
		log.Info("comment command ran", "env", env, "code", string(errs.CodeOf(err)))
		url, werr := writeComment(ctx, ws.GitHub, e.PR, report.Marker(env), body)
		if werr != nil {
			log.Warn("the pull request comment could not be written", "env", env, "error", errs.Coded(werr).Message)
		}
		if rep != nil {
			dep.Finish(ctx, rep, url, deploy.EnvironmentURL(p, rep, ws.Engine.Redactor))
		}
		firstErr = first(firstErr, err)
	}
	switch {
	case len(blocked) > 0:
		return x.answer(ctx, log, ws, cg, e, errs.New(errs.LOCK_HELD, "%s did not run in %s: another run of the bot held it longer than %s (a replica given the same comment, or an earlier command still running); that run writes its result into the environment's comment",
			cmd, md(strings.Join(blocked, ", ")), x.b.lockWait()).
			WithHint("Comment the command again once that run's result is in the environment's comment."))
	case firstErr == nil:
		x.react(ctx, log, cg, e.CommentID, "+1")
	default:
		x.react(ctx, log, cg, e.CommentID, "confused")
	}
	return nil
}

// heldByBot is the lease that kept a run out (LOCK_HELD, or a wait for it
// that timed out) when another run of the bot identity holds it.
func heldByBot(err error, identity string) (receipt.Lease, bool) {
	e := errs.As(err)
	if e == nil || e.Code != errs.LOCK_HELD && e.Code != errs.WAIT_TIMEOUT {
		return receipt.Lease{}, false
	}
	held, ok := e.Details["lease"].(receipt.Lease)
	if !ok {
		held, ok = receipt.HeldLease(e.Err)
	}
	return held, ok && held.Owner.Kind == receipt.KindBot && identity != "" && held.Owner.Actor == identity
}

// commentOf is r as its environment's comment; a run that ended before it
// knew its environment (a lease it never got) is still env's.
func commentOf(r *report.Report, env, sc string) string {
	if r.Env == "" {
		r.Env, r.Scope = env, sc
	}
	return report.Comment(r)
}

// runInEnv runs cmd in env and renders the environment's comment (body ""
// when the command is not one the bot runs), with the run's report (nil
// for unlock).
func (x commands) runInEnv(ctx context.Context, ws *Workspace, e issueComment, cmd Command, p *plan.Plan, pr sweep.PullRequest, env string) (string, *report.Report, error) {
	b := x.b
	n := e.PR
	c := scope.Ctx{Env: env, Scope: e.Scope, PR: scope.PR{Number: &n}, Git: scope.Git{Branch: pr.HeadRef, SHA: pr.HeadSHA}, Repo: e.Repo.FullName()}
	o := engine.Options{Env: env, Owner: b.owner(), LockWait: b.lockWait(), ConfirmedBy: e.Author, Reconcile: cmd.Verb == "reconcile"}
	if plan.Production(env) {
		o.ApprovedBy = e.Author
	}
	switch cmd.Verb {
	case "confirm":
		o.Confirm = []string{cmd.Line}
	case "recreate":
		o.Recreate = []string{cmd.Line}
	}
	links := report.Links{Repo: e.Repo.FullName(), SHA: pr.HeadSHA}
	switch cmd.Verb {
	case "plan":
		res, err := ws.Engine.Plan(ctx, p, c, o)
		r := report.FromPlan(res, err, links)
		return commentOf(r, env, e.Scope), r, err
	case "apply", "confirm", "recreate", "reconcile":
		res, err := ws.Engine.Apply(ctx, p, c, o)
		r := report.FromRun("apply", res, err, p, links)
		return commentOf(r, env, e.Scope), r, err
	case "destroy":
		// No tombstone (o.Close unset): the pull request stays open, and
		// its next apply builds the preview again. Its deployment is
		// marked inactive (deploy.Run.Finish).
		res, err := ws.Engine.Destroy(ctx, c, o)
		r := report.FromRun("destroy", res, err, nil, links)
		return withHibernated(commentOf(r, env, e.Scope), env, err), r, err
	case "unlock":
		released, err := ws.Store.ForceRelease(ctx, receipt.ScopeTarget(env, e.Scope), cmd.Reason, e.Author)
		if err != nil {
			return "", nil, err
		}
		return report.Marker(env) + "\n" + unlockBody(receipt.ScopeTarget(env, e.Scope), released, e.Author, cmd.Reason), nil, nil
	}
	return "", nil, errs.New(errs.COMMAND_REFUSED, "the bot does not run %s yet", cmd).
		WithHint("Run it with the CLI (`sponson %s`) from a checkout with access to the receipts.", cmd.Verb)
}

// hibernatedNote is what a /sponson destroy on an open pull request
// says: the resources are gone, nothing stops the next apply.
const hibernatedNote = "**The pull request stays open; no tombstone was left.** `/sponson destroy` removed this preview's resources in `%s`, as an idle preview is hibernated: the next apply (a push the workflow applies, or `/sponson apply`) builds it again. Closing the pull request is what ends it for good.\n"

// withHibernated is the destroy's comment body with hibernatedNote (or,
// when it failed, what is left and how to finish) before its footer.
func withHibernated(body, env string, err error) string {
	env = strings.NewReplacer("`", "'", "\n", " ").Replace(env) // inside a code span
	note := fmt.Sprintf(hibernatedNote, env)
	if err != nil {
		note = fmt.Sprintf("**The pull request stays open; no tombstone was left.** The destroy in `%s` did not finish (above): comment `/sponson destroy --env %s` again, or the next apply builds the preview again.\n", env, env)
	}
	if i := strings.LastIndex(body, "\n<sub>"); i >= 0 {
		return body[:i+1] + note + body[i:]
	}
	return body + "\n" + note
}

// commandEnvs are the environments cmd runs in: --env, else those where
// the pull request's scope has a receipt, else (plan, apply) the plan's
// first environment that is not production.
func (x commands) commandEnvs(ctx context.Context, ws *Workspace, cmd Command, p *plan.Plan, sc string) ([]string, error) {
	if cmd.Env != "" {
		if p != nil && !p.HasEnvironment(cmd.Env) {
			return nil, errs.New(errs.COMMAND_INVALID, "%s: the plan has no environment %s (it has %s)", cmd, md(cmd.Env), md(strings.Join(p.Environments, ", ")))
		}
		return []string{cmd.Env}, nil
	}
	envs, err := sweep.Envs(ctx, ws.Store, sc)
	if err != nil || len(envs) > 0 {
		return envs, err
	}
	if p != nil && (cmd.Verb == "plan" || cmd.Verb == "apply") {
		for _, env := range p.Environments {
			if !plan.Production(env) {
				return []string{env}, nil
			}
		}
	}
	return nil, errs.New(errs.COMMAND_INVALID, "%s: scope %s has no receipt in any environment; name one with --env", cmd, sc)
}

// approver reports whether login may write production: an admin of the
// repository, or an active member of the Approvers team.
func (x commands) approver(ctx context.Context, cg CommandGitHub, login, perm string) (bool, error) {
	b := x.b
	if perm == gh.PermissionAdmin {
		return true, nil
	}
	org, slug, ok := strings.Cut(b.Approvers, "/")
	if !ok {
		return false, nil
	}
	return cg.TeamMember(ctx, org, slug, login)
}

func (x commands) approversText() string {
	b := x.b
	if b.Approvers == "" {
		return ""
	}
	return " or a member of team " + md(b.Approvers)
}

// keep puts the keep label on the pull request (on) or takes it off, and
// says so in the answer comment.
func (x commands) keep(ctx context.Context, log *slog.Logger, ws *Workspace, cg CommandGitHub, e issueComment, on bool) error {
	if err := cg.Label(ctx, e.PR, KeepLabel, on); err != nil {
		x.react(ctx, log, cg, e.CommentID, "confused")
		return err
	}
	text := fmt.Sprintf("### Sponson: %s kept this preview\n\nThe label `%s` is on: the idle sweep leaves the preview alone until `/sponson unkeep`.\n", md(e.Author), KeepLabel)
	if !on {
		text = fmt.Sprintf("### Sponson: %s no longer keeps this preview\n\nThe label `%s` is off: an idle preview expires again.\n", md(e.Author), KeepLabel)
	}
	if werr := ws.GitHub.UpsertComment(ctx, e.PR, answerMarker, answerMarker+"\n"+text); werr != nil {
		log.Warn("the answer could not be written", "error", errs.Coded(werr).Message)
	}
	x.react(ctx, log, cg, e.CommentID, "+1")
	return nil
}

// unlockParent releases the lease of a shared parent object, which no
// environment's name tells apart from production's: only an admin may.
func (x commands) unlockParent(ctx context.Context, log *slog.Logger, ws *Workspace, cg CommandGitHub, e issueComment, cmd Command, perm string) error {
	if perm != gh.PermissionAdmin {
		return x.answer(ctx, log, ws, cg, e, refused("%s releases a shared object's lease, which may be production's: it needs an admin of the repository; %s has %s", cmd, md(e.Author), perm))
	}
	target := receipt.ParentTarget(cmd.Parent)
	if err := target.Validate(); err != nil {
		return x.answer(ctx, log, ws, cg, e, err)
	}
	released, err := ws.Store.ForceRelease(ctx, target, cmd.Reason, e.Author)
	if err != nil {
		x.react(ctx, log, cg, e.CommentID, "confused")
		return err
	}
	log.Info("comment command ran", "target", target.String(), "released", released != nil)
	if werr := ws.GitHub.UpsertComment(ctx, e.PR, answerMarker, answerMarker+"\n"+unlockBody(target, released, e.Author, cmd.Reason)); werr != nil {
		log.Warn("the answer could not be written", "error", errs.Coded(werr).Message)
	}
	x.react(ctx, log, cg, e.CommentID, "+1")
	return nil
}

// unlockBody says what an unlock released, by whom and why.
func unlockBody(target receipt.Target, released *receipt.Lease, who, reason string) string {
	if released == nil {
		return fmt.Sprintf("### Sponson: no lease was held on %s\n\nNothing was released (%s asked: %s).\n", md(target.String()), md(who), md(reason))
	}
	return fmt.Sprintf("### Sponson: %s released the lease on %s\n\nIt was held since %s (generation %d). Why: %s. The holder, if it still runs, is fenced out; its history records this.\n",
		md(who), md(target.String()), released.AcquiredAt.UTC().Format("2006-01-02 15:04 UTC"), released.Generation, md(reason))
}

func refused(format string, args ...any) *errs.Error {
	return errs.New(errs.COMMAND_REFUSED, format, args...)
}

// react leaves a reaction; a failure is logged, never the command's.
func (x commands) react(ctx context.Context, log *slog.Logger, cg CommandGitHub, id int64, content string) {
	if err := cg.React(ctx, id, content); err != nil {
		log.Warn("the reaction could not be left", "content", content, "error", errs.Coded(err).Message)
	}
}

// answer says in the bot's answer comment why a command ran nowhere and
// what to type; the command is done (nil), the comment's failure logged.
func (x commands) answer(ctx context.Context, log *slog.Logger, ws *Workspace, cg CommandGitHub, e issueComment, err error) error {
	ce := errs.Coded(err)
	log.Info("comment command refused", "code", string(ce.Code), "error", ce.Message)
	x.react(ctx, log, cg, e.CommentID, "confused")
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n### Sponson: a command of %s ran nowhere\n\n", answerMarker, md(e.Author))
	fmt.Fprintf(&sb, "Error `%s`: %s\n", ce.Code, ce.Message)
	if ce.Hint != "" {
		fmt.Fprintf(&sb, "\n%s\n", ce.Hint)
	}
	if werr := ws.GitHub.UpsertComment(ctx, e.PR, answerMarker, sb.String()); werr != nil {
		log.Warn("the answer could not be written", "error", errs.Coded(werr).Message)
	}
	return nil
}
