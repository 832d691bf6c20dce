package scope

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// ReadEvent returns the bytes of the event payload GitHub Actions wrote to
// GITHUB_EVENT_PATH, or nil when the variable is unset or empty (outside
// GitHub Actions). It reads the environment and the file only through
// getenv and readFile (os.Getenv and os.ReadFile in a main), so it is as
// testable as Compute. An unreadable file is USAGE: the run cannot know its
// scope.
func ReadEvent(getenv func(string) string, readFile func(string) ([]byte, error)) ([]byte, error) {
	path := getenv("GITHUB_EVENT_PATH")
	if path == "" {
		return nil, nil
	}
	b, err := readFile(path)
	if err != nil {
		return nil, errs.Wrap(err, errs.USAGE, "cannot read the event payload GITHUB_EVENT_PATH=%s", path).
			WithHint("Run inside GitHub Actions with the event file present, or give the scope with --pr or --branch.")
	}
	return b, nil
}

// payload is the part of a webhook payload Sponson reads. Every event's
// fields are here; an event fills only its own.
type payload struct {
	Action  string `json:"action"`
	Number  int    `json:"number"`   // pull_request*: the PR number again
	Ref     string `json:"ref"`      // push: refs/heads/x; workflow_dispatch: refs/heads/x; delete: x
	RefType string `json:"ref_type"` // delete: branch | tag
	Deleted bool   `json:"deleted"`  // push
	Before  string `json:"before"`   // push
	After   string `json:"after"`    // push

	Repository *struct {
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
		MasterBranch  string `json:"master_branch"` // push payloads also carry this
	} `json:"repository"`

	PullRequest *struct {
		Number int        `json:"number"`
		Head   prEndpoint `json:"head"`
		Base   prEndpoint `json:"base"`
	} `json:"pull_request"`

	Issue *struct {
		Number      int             `json:"number"`
		PullRequest json.RawMessage `json:"pull_request"` // present only on a PR's conversation
	} `json:"issue"`

	Deployment *struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"deployment"`
}

type prEndpoint struct {
	Ref  string `json:"ref"`
	SHA  string `json:"sha"`
	Repo *struct {
		FullName string `json:"full_name"`
	} `json:"repo"` // null when the head repository (a fork) was deleted
}

// ghLayer is what the GitHub event and the GitHub Actions variables say.
type ghLayer struct {
	// host is the CI host of a layer read from another host's variables
	// (hosts.go); "" for GitHub's.
	host          string
	event, action string
	actions       bool // GITHUB_ACTIONS=true

	pr    *int
	prSrc string

	// branch is the branch the event offers as the run's branch; refBranch
	// is the branch its commit belongs to, set even where the event offers
	// no scope (a schedule runs on the default branch). A lower layer's sha
	// is only used with the branch it belongs to.
	branch, branchSrc string
	refBranch         string
	sha, shaSrc       string

	repo, repoSrc string
	defBranch     string
	defBranchSrc  string

	headRepo  string
	fork      bool
	forkKnown bool
	forkSrc   string
	deleted   bool

	noScope string // why the event gives no scope, e.g. "a tag push (refs/tags/v1)"
	notes   []string
}

// event is what the rule of one event family reads.
type event struct {
	name         string
	p            payload
	hasPayload   bool
	deploymentPR *int
	env          func(string) string // a GITHUB_* variable; "" outside GitHub Actions
}

// ref is the event's ref, else GitHub Actions' GITHUB_REF, and where it
// came from.
func (ev event) ref() (ref, src string) {
	if ev.p.Ref != "" {
		return ev.p.Ref, "event:ref"
	}
	return ev.env("GITHUB_REF"), "env:GITHUB_REF"
}

// eventRules reads each event family Sponson derives a scope from, by
// event name ("" is a GitHub Actions run without GITHUB_EVENT_NAME). Every
// other event is read by (*ghLayer).fromOtherEvent.
var eventRules = map[string]func(*ghLayer, event){
	"pull_request":                (*ghLayer).fromPullRequest,
	"pull_request_target":         (*ghLayer).fromPullRequest,
	"pull_request_review":         (*ghLayer).fromPullRequest,
	"pull_request_review_comment": (*ghLayer).fromPullRequest,
	"issue_comment":               (*ghLayer).fromIssueComment,
	"deployment_status":           (*ghLayer).fromDeployment,
	"push":                        (*ghLayer).fromPush,
	"delete":                      (*ghLayer).fromDelete,
	"workflow_dispatch":           (*ghLayer).fromDispatch,
	"schedule":                    (*ghLayer).fromSchedule,
	"":                            (*ghLayer).fromNoEventName,
}

// github reads the GitHub layer. It returns nil outside GitHub: no event name
// was given and GITHUB_ACTIONS is not "true".
func github(in Input, lookup func(string) (string, bool)) (*ghLayer, error) {
	actions := getenv(lookup, "GITHUB_ACTIONS") == "true"
	// The GITHUB_* variables are only read inside GitHub Actions: a stray
	// GITHUB_REF on a laptop must not choose a scope.
	ghenv := func(k string) string {
		if !actions {
			return ""
		}
		return getenv(lookup, k)
	}
	name := cmp.Or(in.EventName, ghenv("GITHUB_EVENT_NAME"))
	if name == "" && !actions {
		return nil, outsideGitHub(in)
	}
	if in.DeploymentPR != nil && (name != "deployment_status" || *in.DeploymentPR <= 0) {
		return nil, errs.New(errs.INTERNAL, "scope: DeploymentPR %d given for a %s event; it is only for deployment_status and must be positive", *in.DeploymentPR, name)
	}
	ev := event{name: name, deploymentPR: in.DeploymentPR, env: ghenv}
	if ev.hasPayload = len(bytes.TrimSpace(in.Event)) > 0; ev.hasPayload {
		if err := json.Unmarshal(in.Event, &ev.p); err != nil {
			return nil, errs.Wrap(err, errs.USAGE, "the %s event payload is not valid JSON", name).
				WithHint("Check GITHUB_EVENT_PATH, or give the scope with --pr or --branch.")
		}
	}

	g := &ghLayer{event: name, actions: actions, action: ev.p.Action}
	g.fromRepository(ev)
	rule, ok := eventRules[name]
	if !ok {
		rule = (*ghLayer).fromOtherEvent
	}
	rule(g, ev)
	return g, nil
}

func getenv(lookup func(string) (string, bool), k string) string { v, _ := lookup(k); return v }

// outsideGitHub checks that nothing of an event was given outside GitHub.
func outsideGitHub(in Input) error {
	if len(in.Event) > 0 {
		return errs.New(errs.USAGE, "an event payload was given without its event name")
	}
	if in.DeploymentPR != nil {
		return errs.New(errs.INTERNAL, "scope: DeploymentPR given outside a deployment_status event")
	}
	return nil
}

// fromRepository reads the repository and its default branch.
func (g *ghLayer) fromRepository(ev event) {
	r := ev.p.Repository
	if r != nil && r.FullName != "" {
		g.repo, g.repoSrc = r.FullName, "event:repository.full_name"
	} else if v := ev.env("GITHUB_REPOSITORY"); v != "" {
		g.repo, g.repoSrc = v, "env:GITHUB_REPOSITORY"
	}
	if r != nil && r.DefaultBranch != "" {
		g.defBranch, g.defBranchSrc = r.DefaultBranch, "event:repository.default_branch"
	} else if r != nil && r.MasterBranch != "" {
		g.defBranch, g.defBranchSrc = r.MasterBranch, "event:repository.master_branch"
	}
}

// fromRef fills the branch (or the reason there is none) from a full ref.
func (g *ghLayer) fromRef(ref, src, what string) {
	switch {
	case strings.HasPrefix(ref, "refs/heads/") && len(ref) > len("refs/heads/"):
		g.branch, g.branchSrc = strings.TrimPrefix(ref, "refs/heads/"), src
		g.refBranch = g.branch
	case strings.HasPrefix(ref, "refs/tags/"):
		g.noScope = fmt.Sprintf("%s on the tag %s", what, strings.TrimPrefix(ref, "refs/tags/"))
	case ref == "":
		g.noScope = what + " with no ref"
	default:
		g.noScope = fmt.Sprintf("%s on %s, which is not a branch", what, ref)
	}
}

// envCommit is the commit and branch of GitHub's checkout, for events whose
// payload has neither; used only with the branch it belongs to.
func (g *ghLayer) envCommit(ev event) {
	if g.sha == "" {
		if v := ev.env("GITHUB_SHA"); v != "" {
			g.sha, g.shaSrc = v, "env:GITHUB_SHA"
		}
	}
	if g.refBranch == "" {
		if r := ev.env("GITHUB_REF"); strings.HasPrefix(r, "refs/heads/") {
			g.refBranch = strings.TrimPrefix(r, "refs/heads/")
		}
	}
}

// fromIssueComment: a comment on a pull request is in it; its payload has
// no head.
func (g *ghLayer) fromIssueComment(ev event) {
	issue := ev.p.Issue
	switch {
	case !ev.hasPayload || issue == nil:
		g.noScope = "an issue_comment event without its payload (a comment on a pull request cannot be told from one on an issue)"
	case len(issue.PullRequest) > 0 && string(issue.PullRequest) != "null" && issue.Number > 0:
		n := issue.Number
		g.pr, g.prSrc = &n, "event:issue.number"
		g.notes = append(g.notes, "issue_comment payloads carry no head branch, head commit or head repository: git.branch and git.sha are unknown and fork is false unless the caller resolves the pull request and passes --branch and --sha")
	default:
		g.noScope = fmt.Sprintf("a comment on issue #%d, which is not a pull request", issue.Number)
	}
}

// fromPush: the pushed branch and its new commit, or its last one when the
// push deleted it.
func (g *ghLayer) fromPush(ev event) {
	ref, src := ev.ref()
	g.fromRef(ref, src, "a push")
	p := ev.p
	switch {
	case p.Deleted && g.branch != "":
		// The branch is gone; its last commit is the one the scope saw.
		g.deleted = true
		if p.Before != "" && !zeroSHA(p.Before) {
			g.sha, g.shaSrc = p.Before, "event:before"
		}
		g.notes = append(g.notes, "the push deleted the branch: git.sha is its last commit (before)")
	case p.After != "" && !zeroSHA(p.After):
		g.sha, g.shaSrc = p.After, "event:after"
	default:
		g.envCommit(ev)
	}
}

// fromDelete: the deleted branch, with no commit.
func (g *ghLayer) fromDelete(ev event) {
	p := ev.p
	switch {
	case p.RefType == "branch" && p.Ref != "":
		g.branch, g.branchSrc = strings.TrimPrefix(p.Ref, "refs/heads/"), "event:ref"
		g.refBranch, g.deleted = g.branch, true
		g.notes = append(g.notes, "a delete event carries no commit: git.sha is unknown")
	case p.RefType == "tag":
		g.noScope = "the deletion of the tag " + p.Ref
	default:
		g.noScope = "a delete event without a branch"
	}
}

// fromDispatch: the branch the workflow was dispatched on.
func (g *ghLayer) fromDispatch(ev event) {
	ref, src := ev.ref()
	g.fromRef(ref, src, "a workflow_dispatch")
	g.envCommit(ev)
}

func (g *ghLayer) fromSchedule(ev event) {
	g.noScope = "a schedule event (it runs on no branch of its own)"
	g.envCommit(ev)
}

func (g *ghLayer) fromNoEventName(ev event) {
	g.noScope = "a GitHub Actions run without GITHUB_EVENT_NAME"
	g.envCommit(ev)
}

// fromOtherEvent: ping, installation, installation_repositories and every
// event Sponson has no rule for give no scope, never a guess.
func (g *ghLayer) fromOtherEvent(ev event) {
	g.noScope = fmt.Sprintf("a %s event, which has no pull request or branch Sponson derives a scope from", ev.name)
	g.envCommit(ev)
}

// fromPullRequest: the pull request and its head, from the payload or,
// without one, from GitHub Actions' refs/pull/<n>/merge.
func (g *ghLayer) fromPullRequest(ev event) {
	if ev.hasPayload && ev.p.PullRequest != nil {
		g.fromPullRequestPayload(ev.p)
		return
	}
	// No payload: GitHub Actions still says which pull request and branch.
	ref := ev.env("GITHUB_REF") // refs/pull/<n>/merge
	if rest, ok := strings.CutPrefix(ref, "refs/pull/"); ok {
		num, _, _ := strings.Cut(rest, "/")
		if n, err := strconv.Atoi(num); err == nil && n > 0 && digits(num) {
			g.pr, g.prSrc = &n, "env:GITHUB_REF"
		}
	}
	if g.pr == nil {
		g.noScope = fmt.Sprintf("a %s event without its payload or a refs/pull/<n>/ GITHUB_REF", g.event)
		return
	}
	if v := ev.env("GITHUB_HEAD_REF"); v != "" {
		g.branch, g.branchSrc = v, "env:GITHUB_HEAD_REF"
		g.refBranch = v
	}
	g.notes = append(g.notes, "no event payload: git.sha is unknown (GITHUB_SHA is the merge commit, not the head) and so is fork")
}

func (g *ghLayer) fromPullRequestPayload(p payload) {
	pr := p.PullRequest
	n, src := pr.Number, "event:pull_request.number"
	if n <= 0 {
		n, src = p.Number, "event:number"
	}
	if n <= 0 {
		g.noScope = fmt.Sprintf("a %s payload without a pull request number", g.event)
		return
	}
	g.pr, g.prSrc = &n, src
	if pr.Head.Ref != "" {
		g.branch, g.branchSrc = pr.Head.Ref, "event:pull_request.head.ref"
		g.refBranch = g.branch
	}
	if pr.Head.SHA != "" {
		g.sha, g.shaSrc = pr.Head.SHA, "event:pull_request.head.sha"
	}
	base := ""
	if pr.Base.Repo != nil {
		base = pr.Base.Repo.FullName
	} else if p.Repository != nil {
		base = p.Repository.FullName
	}
	g.forkKnown, g.forkSrc = true, "event:pull_request.head.repo.full_name"
	if pr.Head.Repo == nil {
		// Only a fork can be deleted apart from its base.
		g.fork = true
		g.notes = append(g.notes, "the pull request's head repository was deleted: it came from a fork")
	} else {
		g.headRepo = pr.Head.Repo.FullName
		g.fork = !strings.EqualFold(g.headRepo, base)
	}
}

// fromDeployment: the deployed branch, or the open pull request of the
// deployed commit when the caller found one.
func (g *ghLayer) fromDeployment(ev event) {
	p, deploymentPR, ghenv := ev.p, ev.deploymentPR, ev.env
	if p.Deployment != nil && p.Deployment.SHA != "" {
		g.sha, g.shaSrc = p.Deployment.SHA, "event:deployment.sha"
	} else if v := ghenv("GITHUB_SHA"); v != "" {
		g.sha, g.shaSrc = v, "env:GITHUB_SHA"
	}
	// GitHub Actions says whether the deployed ref is a branch or a tag
	// (GITHUB_REF is refs/heads/x or refs/tags/x, empty for a commit); a
	// webhook has only deployment.ref, where a bare name is taken for a
	// branch (a tag of the same name cannot be told apart without the API).
	ref, src := "", ""
	if r := ghenv("GITHUB_REF"); r != "" {
		ref, src = r, "env:GITHUB_REF"
	} else if p.Deployment != nil {
		ref, src = p.Deployment.Ref, "event:deployment.ref"
	}
	switch {
	case strings.HasPrefix(ref, "refs/heads/") && len(ref) > len("refs/heads/"):
		g.branch = strings.TrimPrefix(ref, "refs/heads/")
	case ref == "" || strings.HasPrefix(ref, "refs/") || validSHA(ref):
		// a tag, another kind of ref, or a bare commit: no branch
	default:
		g.branch = ref
	}
	if g.branch != "" {
		g.branchSrc, g.refBranch = src, g.branch
	}
	if deploymentPR != nil {
		n := *deploymentPR
		g.pr, g.prSrc = &n, "input:DeploymentPR"
		return
	}
	if g.branch == "" {
		g.noScope = fmt.Sprintf("a deployment of %q, which is not a branch, with no open pull request given", ref)
	}
	g.notes = append(g.notes, "deployment_status without an open pull request: the scope comes from the deployed branch, never from a guessed pull request")
}

func zeroSHA(s string) bool { return strings.Trim(s, "0") == "" }
