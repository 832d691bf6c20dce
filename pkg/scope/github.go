package scope

import (
	"bytes"
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

// prEvents are the events that run inside a pull request and carry it.
var prEvents = map[string]bool{
	"pull_request":                true,
	"pull_request_target":         true,
	"pull_request_review":         true,
	"pull_request_review_comment": true,
}

// github reads the GitHub layer. It returns nil outside GitHub: no event name
// was given and GITHUB_ACTIONS is not "true".
func github(in Input, env func(string) (string, bool)) (*ghLayer, error) {
	get := func(k string) string { v, _ := env(k); return v }
	actions := get("GITHUB_ACTIONS") == "true"
	// The GITHUB_* variables are only read inside GitHub Actions: a stray
	// GITHUB_REF on a laptop must not choose a scope.
	ghenv := func(k string) string {
		if !actions {
			return ""
		}
		return get(k)
	}
	name := in.EventName
	if name == "" {
		name = ghenv("GITHUB_EVENT_NAME")
	}
	if name == "" && !actions {
		if len(in.Event) > 0 {
			return nil, errs.New(errs.USAGE, "an event payload was given without its event name")
		}
		if in.DeploymentPR != nil {
			return nil, errs.New(errs.INTERNAL, "scope: DeploymentPR given outside a deployment_status event")
		}
		return nil, nil
	}
	if in.DeploymentPR != nil && (name != "deployment_status" || *in.DeploymentPR <= 0) {
		return nil, errs.New(errs.INTERNAL, "scope: DeploymentPR %d given for a %s event; it is only for deployment_status and must be positive", *in.DeploymentPR, name)
	}

	g := &ghLayer{event: name, actions: actions}
	var p payload
	hasPayload := len(bytes.TrimSpace(in.Event)) > 0
	if hasPayload {
		if err := json.Unmarshal(in.Event, &p); err != nil {
			return nil, errs.Wrap(err, errs.USAGE, "the %s event payload is not valid JSON", name).
				WithHint("Check GITHUB_EVENT_PATH, or give the scope with --pr or --branch.")
		}
	}
	g.action = p.Action

	if p.Repository != nil && p.Repository.FullName != "" {
		g.repo, g.repoSrc = p.Repository.FullName, "event:repository.full_name"
	} else if v := ghenv("GITHUB_REPOSITORY"); v != "" {
		g.repo, g.repoSrc = v, "env:GITHUB_REPOSITORY"
	}
	if p.Repository != nil && p.Repository.DefaultBranch != "" {
		g.defBranch, g.defBranchSrc = p.Repository.DefaultBranch, "event:repository.default_branch"
	} else if p.Repository != nil && p.Repository.MasterBranch != "" {
		g.defBranch, g.defBranchSrc = p.Repository.MasterBranch, "event:repository.master_branch"
	}

	// fromRef fills the branch (or the reason there is none) from a full ref.
	fromRef := func(ref, src, what string) {
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
	// envCommit is the commit and branch of GitHub's checkout, for events
	// whose payload has neither; used only with the branch it belongs to.
	envCommit := func() {
		if g.sha == "" {
			if v := ghenv("GITHUB_SHA"); v != "" {
				g.sha, g.shaSrc = v, "env:GITHUB_SHA"
			}
		}
		if g.refBranch == "" {
			if r := ghenv("GITHUB_REF"); strings.HasPrefix(r, "refs/heads/") {
				g.refBranch = strings.TrimPrefix(r, "refs/heads/")
			}
		}
	}

	switch {
	case prEvents[name]:
		g.fromPullRequest(p, hasPayload, ghenv)

	case name == "issue_comment":
		switch {
		case !hasPayload || p.Issue == nil:
			g.noScope = "an issue_comment event without its payload (a comment on a pull request cannot be told from one on an issue)"
		case len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null" && p.Issue.Number > 0:
			n := p.Issue.Number
			g.pr, g.prSrc = &n, "event:issue.number"
			g.notes = append(g.notes, "issue_comment payloads carry no head branch, head commit or head repository: git.branch and git.sha are unknown and fork is false unless the caller resolves the pull request and passes --branch and --sha")
		default:
			g.noScope = fmt.Sprintf("a comment on issue #%d, which is not a pull request", p.Issue.Number)
		}

	case name == "deployment_status":
		g.fromDeployment(p, in.DeploymentPR, ghenv)

	case name == "push":
		ref := p.Ref
		src := "event:ref"
		if ref == "" {
			ref, src = ghenv("GITHUB_REF"), "env:GITHUB_REF"
		}
		fromRef(ref, src, "a push")
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
			envCommit()
		}

	case name == "delete":
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

	case name == "workflow_dispatch":
		ref, src := p.Ref, "event:ref"
		if ref == "" {
			ref, src = ghenv("GITHUB_REF"), "env:GITHUB_REF"
		}
		fromRef(ref, src, "a workflow_dispatch")
		envCommit()

	case name == "schedule":
		g.noScope = "a schedule event (it runs on no branch of its own)"
		envCommit()

	case name == "":
		g.noScope = "a GitHub Actions run without GITHUB_EVENT_NAME"
		envCommit()

	default:
		// ping, installation, installation_repositories and every event
		// Sponson has no rule for: never a guess.
		g.noScope = fmt.Sprintf("a %s event, which has no pull request or branch Sponson derives a scope from", name)
		envCommit()
	}
	return g, nil
}

func (g *ghLayer) fromPullRequest(p payload, hasPayload bool, ghenv func(string) string) {
	if hasPayload && p.PullRequest != nil {
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
		return
	}
	// No payload: GitHub Actions still says which pull request and branch.
	ref := ghenv("GITHUB_REF") // refs/pull/<n>/merge
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
	if v := ghenv("GITHUB_HEAD_REF"); v != "" {
		g.branch, g.branchSrc = v, "env:GITHUB_HEAD_REF"
		g.refBranch = v
	}
	g.notes = append(g.notes, "no event payload: git.sha is unknown (GITHUB_SHA is the merge commit, not the head) and so is fork")
}

func (g *ghLayer) fromDeployment(p payload, deploymentPR *int, ghenv func(string) string) {
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
