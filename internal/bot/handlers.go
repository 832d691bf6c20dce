package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

// Only what the webhook gives is decoded here; the handlers ask GitHub
// again before they destroy.

// pingHandler answers GitHub's ping.
type pingHandler struct{}

func (pingHandler) Handles() []string { return []string{"ping"} }

func (pingHandler) Triage(eventType string, payload []byte) (Verdict, error) {
	if _, err := decode[*github.PingEvent](eventType, payload); err != nil {
		return Verdict{}, err
	}
	return Verdict{Outcome: OutcomePing, Why: "pong"}, nil
}

// Handle does nothing: a ping is answered, never queued.
func (pingHandler) Handle(context.Context, string, string, []byte) error { return nil }

// pullRequestHandler hands a branch's resources on when its pull request
// opens (succession) and tears them down when it closes.
type pullRequestHandler struct{ b *Bot }

// pullRequest is a pull_request delivery.
type pullRequest struct {
	Subject
	HeadRef  string
	HeadSHA  string
	HeadRepo string // owner/name ("" when the head repository was deleted)
	ClosedAt time.Time
}

// Fork reports whether the pull request comes from another repository.
func (e pullRequest) Fork() bool { return e.HeadRepo != e.Repo.FullName() }

func (pullRequestHandler) Handles() []string { return []string{"pull_request"} }

func decodePullRequest(eventType string, payload []byte) (pullRequest, error) {
	p, err := decode[*github.PullRequestEvent](eventType, payload)
	if err != nil {
		return pullRequest{}, err
	}
	pr := p.GetPullRequest()
	if pr == nil || p.GetRepo() == nil || pr.GetNumber() <= 0 {
		return pullRequest{}, fmt.Errorf("the pull_request event has no pull request or repository")
	}
	inst := p.GetInstallation().GetID()
	return pullRequest{
		Subject:  Subject{Action: p.GetAction(), Installation: inst, Repo: repoOf(inst, p.GetRepo()), PR: pr.GetNumber(), Scope: scope.PRScope(pr.GetNumber())},
		HeadRef:  pr.GetHead().GetRef(),
		HeadSHA:  pr.GetHead().GetSHA(),
		HeadRepo: pr.GetHead().GetRepo().GetFullName(),
		ClosedAt: pr.GetClosedAt().Time,
	}, nil
}

func (pullRequestHandler) Triage(eventType string, payload []byte) (Verdict, error) {
	e, err := decodePullRequest(eventType, payload)
	if err != nil {
		return Verdict{}, err
	}
	switch e.Action {
	case "opened", "reopened", "closed":
		return act(e.Subject), nil
	}
	return ignore(e.Subject, "pull_request "+e.Action+" changes nothing the bot keeps"), nil
}

func (h pullRequestHandler) Handle(ctx context.Context, eventType, _ string, payload []byte) error {
	e, err := decodePullRequest(eventType, payload)
	if err != nil {
		return err
	}
	switch e.Action {
	case "opened", "reopened":
		return h.b.inWorkspace(ctx, e.Repo, func(ws *Workspace) error { return lifecycle(h).succeed(ctx, logOf(ctx), ws, e) })
	case "closed":
		return h.b.inWorkspace(ctx, e.Repo, func(ws *Workspace) error { return lifecycle(h).teardown(ctx, logOf(ctx), ws, e) })
	}
	return nil
}

// pushHandler tears down the scope of a deleted branch.
type pushHandler struct{ b *Bot }

func (pushHandler) Handles() []string { return []string{"push"} }

// decodePush is a push delivery: the deleted branch, or why there is
// none.
func decodePush(eventType string, payload []byte) (s Subject, branch, why string, err error) {
	p, err := decode[*github.PushEvent](eventType, payload)
	if err != nil {
		return s, "", "", err
	}
	s.Installation = p.GetInstallation().GetID()
	r := p.GetRepo()
	if r == nil {
		return s, "", "", fmt.Errorf("the push event has no repository")
	}
	s.Repo = Repository{Installation: s.Installation, Owner: r.GetOwner().GetLogin(), Name: r.GetName()}
	if s.Repo.Owner == "" {
		s.Repo.Owner, _, _ = strings.Cut(r.GetFullName(), "/")
	}
	branch, isBranch := strings.CutPrefix(p.GetRef(), "refs/heads/")
	switch {
	case !p.GetDeleted():
		return s, "", "a push that deletes nothing", nil
	case !isBranch:
		return s, "", "a deleted tag has no scope", nil
	}
	s.Scope = scope.BranchScope(branch)
	return s, branch, "", nil
}

func (pushHandler) Triage(eventType string, payload []byte) (Verdict, error) {
	s, _, why, err := decodePush(eventType, payload)
	if err != nil {
		return Verdict{}, err
	}
	if why != "" {
		return ignore(s, why), nil
	}
	return act(s), nil
}

func (h pushHandler) Handle(ctx context.Context, eventType, _ string, payload []byte) error {
	s, branch, why, err := decodePush(eventType, payload)
	if err != nil || why != "" {
		return err
	}
	return h.b.inWorkspace(ctx, s.Repo, func(ws *Workspace) error { return lifecycle(h).branchGone(ctx, logOf(ctx), ws, s.Repo, branch) })
}

// installChange is a change to the set of repositories to sweep.
type installChange struct {
	Subject
	Added   []Repository
	Removed []Repository
	// Uninstalled is set when the whole installation was deleted or
	// suspended.
	Uninstalled bool
	Why         string // why nothing changes ("" when something may)
}

func (c installChange) verdict() Verdict {
	if c.Why != "" {
		return ignore(c.Subject, c.Why)
	}
	return Verdict{Subject: c.Subject, Key: fmt.Sprintf("installation %d", c.Installation)}
}

// installationHandler learns the repositories of an installation created,
// and forgets those of one deleted or suspended.
type installationHandler struct{ b *Bot }

func (installationHandler) Handles() []string { return []string{"installation"} }

func decodeInstallation(eventType string, payload []byte) (installChange, error) {
	p, err := decode[*github.InstallationEvent](eventType, payload)
	if err != nil {
		return installChange{}, err
	}
	c := installChange{Subject: Subject{Action: p.GetAction(), Installation: p.GetInstallation().GetID()}}
	owner := p.GetInstallation().GetAccount().GetLogin()
	var repos []Repository
	for _, r := range p.Repositories {
		repos = append(repos, repoOfName(c.Installation, owner, r.GetFullName(), r.GetName()))
	}
	switch c.Action {
	case "created", "new_permissions_accepted", "unsuspend":
		c.Added = repos
	case "deleted", "suspend":
		c.Removed, c.Uninstalled = repos, true
	default:
		c.Why = "installation " + c.Action + " changes no repository"
	}
	return c, nil
}

func (installationHandler) Triage(eventType string, payload []byte) (Verdict, error) {
	c, err := decodeInstallation(eventType, payload)
	return c.verdict(), err
}

func (h installationHandler) Handle(ctx context.Context, eventType, _ string, payload []byte) error {
	c, err := decodeInstallation(eventType, payload)
	if err != nil || c.Why != "" {
		return err
	}
	h.b.changeInstallation(ctx, c)
	return nil
}

// installationRepositoriesHandler learns the repositories added to an
// installation and forgets those removed.
type installationRepositoriesHandler struct{ b *Bot }

func (installationRepositoriesHandler) Handles() []string {
	return []string{"installation_repositories"}
}

func decodeInstallationRepositories(eventType string, payload []byte) (installChange, error) {
	p, err := decode[*github.InstallationRepositoriesEvent](eventType, payload)
	if err != nil {
		return installChange{}, err
	}
	c := installChange{Subject: Subject{Action: p.GetAction(), Installation: p.GetInstallation().GetID()}}
	owner := p.GetInstallation().GetAccount().GetLogin()
	for _, r := range p.RepositoriesAdded {
		c.Added = append(c.Added, repoOfName(c.Installation, owner, r.GetFullName(), r.GetName()))
	}
	for _, r := range p.RepositoriesRemoved {
		c.Removed = append(c.Removed, repoOfName(c.Installation, owner, r.GetFullName(), r.GetName()))
	}
	return c, nil
}

func (installationRepositoriesHandler) Triage(eventType string, payload []byte) (Verdict, error) {
	c, err := decodeInstallationRepositories(eventType, payload)
	return c.verdict(), err
}

func (h installationRepositoriesHandler) Handle(ctx context.Context, eventType, _ string, payload []byte) error {
	c, err := decodeInstallationRepositories(eventType, payload)
	if err != nil {
		return err
	}
	h.b.changeInstallation(ctx, c)
	return nil
}

// issueCommentHandler runs the /sponson commands of new pull request
// comments (commentcmd.go, commentrun.go).
type issueCommentHandler struct{ b *Bot }

func (issueCommentHandler) Handles() []string { return []string{"issue_comment"} }

func (h issueCommentHandler) Triage(eventType string, payload []byte) (Verdict, error) {
	e, err := decodeIssueComment(eventType, payload)
	if err != nil {
		return Verdict{}, err
	}
	if why := e.why(h.b.Identity); why != "" {
		return ignore(e.Subject, why), nil
	}
	return act(e.Subject), nil
}

func (h issueCommentHandler) Handle(ctx context.Context, eventType, _ string, payload []byte) error {
	e, err := decodeIssueComment(eventType, payload)
	if err != nil || e.why(h.b.Identity) != "" {
		return err
	}
	return h.b.inWorkspace(ctx, e.Repo, func(ws *Workspace) error { return commands(h).runComment(ctx, logOf(ctx), ws, e) })
}

var _ acknowledger = issueCommentHandler{}

// commentAcker is what the webhook's acknowledgement of a comment command
// asks of GitHub, with no workspace opened (no clone, no receipts: it
// must fit AckBudget).
type commentAcker interface {
	PullRequest(ctx context.Context, n int) (sweep.PullRequest, bool, error)
	React(ctx context.Context, id int64, content string) error
}

// ackerOpener gives repository r's commentAcker. AppWorkspaces has it.
type ackerOpener interface {
	Acker(ctx context.Context, r Repository) (commentAcker, error)
}

// Acknowledge leaves the eyes reaction on the command's comment while the
// webhook answers (confused when the queue refused it), once the pull
// request is known to be open and not a fork's: a comment the bot ignores
// gets nothing. GitHub keeps one reaction of a kind per user, so a
// replica given the same delivery adds nothing. Workspaces that cannot
// give an acker acknowledge nothing.
func (h issueCommentHandler) Acknowledge(ctx context.Context, eventType string, payload []byte, accepted bool) error {
	o, ok := h.b.Workspace.(ackerOpener)
	if !ok {
		return nil
	}
	e, err := decodeIssueComment(eventType, payload)
	if err != nil {
		return err
	}
	g, err := o.Acker(ctx, e.Repo)
	if err != nil {
		return err
	}
	pr, found, err := g.PullRequest(ctx, e.PR)
	if err != nil {
		return errs.Wrap(err, errs.GITHUB_STATE, "ask GitHub for pull request #%d", e.PR)
	}
	if why := ignoredPull(pr, found); why != "" {
		logOf(ctx).Info("the comment is not acknowledged", "why", why)
		return nil
	}
	content := "eyes"
	if !accepted {
		content = "confused"
	}
	return g.React(ctx, e.CommentID, content)
}

// ignoredPull is why the bot does nothing with a command on pull request
// pr as GitHub has it now ("" when it acts): closed, gone, or a fork's,
// whose head is code the repository's writers have not pushed.
func ignoredPull(pr sweep.PullRequest, found bool) string {
	switch {
	case !found:
		return "the pull request is not found"
	case !pr.Open:
		return "the pull request is closed"
	case !strings.EqualFold(pr.HeadRepo, pr.BaseRepo):
		return "the pull request comes from a fork (" + pr.HeadRepo + ")"
	}
	return ""
}
