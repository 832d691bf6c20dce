package scope

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sponson/apply/pkg/errs"
)

// Ctx is the context of one run: what ${ctx.*} interpolates, the scope, and
// enough about where each value came from to answer "why did I get this
// scope". In JSON an unknown string is null, never "".
type Ctx struct {
	Env           string `json:"env"`
	Scope         string `json:"scope"`
	Git           Git    `json:"git"`
	PR            PR     `json:"pr"`
	Repo          string `json:"repo"`           // owner/name; null when unknown
	DefaultBranch string `json:"default_branch"` // null when unknown (then main and master count as default)

	// Fork is true when the pull request's head repository is not its base
	// repository (or was deleted). Its workflow has no secrets: see Warnings.
	Fork     bool   `json:"fork"`
	HeadRepo string `json:"head_repo"` // the pull request's head repository, owner/name

	Event         string `json:"event"`          // the GitHub event name; null outside GitHub
	Action        string `json:"action"`         // the payload's action (opened, closed, ...)
	Deleted       bool   `json:"deleted"`        // the event deleted this branch (push deleted: true, delete)
	GitHubActions bool   `json:"github_actions"` // GITHUB_ACTIONS=true
	// CI is the CI host whose variables were read: github-actions,
	// gitlab-ci, circleci, bitbucket-pipelines; null outside CI.
	CI string `json:"ci"`

	// Reason says in one sentence why the scope is what it is.
	Reason string `json:"reason"`
	// Sources names where each known value came from, by variable name
	// (env, scope, pr.number, git.branch, git.sha, repo, default_branch,
	// fork): "flag", "env:SPONSON_CTX_PR", "event:pull_request.head.sha",
	// "env:GITHUB_SHA", "git:HEAD", "git:origin", "input:DeploymentPR",
	// "input:DefaultBranch", "default".
	Sources map[string]string `json:"sources"`
	// Notes explain values left unknown or not taken from a lower layer.
	Notes []string `json:"notes"`
}

// Git is the branch and commit of the run. In a pull request they are the
// head's, not the merge commit GitHub checks out.
type Git struct {
	Branch   string `json:"branch"`
	SHA      string `json:"sha"`
	ShortSHA string `json:"short_sha"` // the first 7 characters of SHA
}

// PR is the pull request of the run; Number is nil (JSON null) outside one.
type PR struct {
	Number *int `json:"number"`
}

// Vars returns the ${ctx.*} variables, by name without the "ctx." prefix:
// env, scope, git.branch, git.sha, git.short_sha, pr.number, repo. A nil
// value is a null (pr.number outside a pull request, repo when unknown, ...),
// which the plan reports as CTX_NULL when a line uses it.
func (c Ctx) Vars() map[string]*string {
	var pr *string
	if c.PR.Number != nil {
		s := strconv.Itoa(*c.PR.Number)
		pr = &s
	}
	return map[string]*string{
		"env":           nullable(c.Env),
		"scope":         nullable(c.Scope),
		"git.branch":    nullable(c.Git.Branch),
		"git.sha":       nullable(c.Git.SHA),
		"git.short_sha": nullable(c.Git.ShortSHA),
		"pr.number":     pr,
		"repo":          nullable(c.Repo),
	}
}

// Warnings are the warnings the caller reports beside its result:
// FORK_NO_SECRETS for a pull request from a fork.
func (c Ctx) Warnings() []*errs.Error {
	if !c.Fork {
		return nil
	}
	from := "a fork whose repository was deleted"
	if c.HeadRepo != "" {
		from = "the fork " + c.HeadRepo
	}
	msg := "the pull request comes from " + from
	if c.PR.Number != nil {
		msg = fmt.Sprintf("pull request #%d comes from %s", *c.PR.Number, from)
	}
	return []*errs.Error{errs.New(errs.FORK_NO_SECRETS, "%s", msg).With("head_repo", c.HeadRepo)}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ctxJSON is Ctx on the wire: the same fields in the same order, with the
// strings that are null when unknown as pointers.
type ctxJSON struct {
	Env           string            `json:"env"`
	Scope         string            `json:"scope"`
	Git           Git               `json:"git"`
	PR            PR                `json:"pr"`
	Repo          *string           `json:"repo"`
	DefaultBranch *string           `json:"default_branch"`
	Fork          bool              `json:"fork"`
	HeadRepo      *string           `json:"head_repo"`
	Event         *string           `json:"event"`
	Action        *string           `json:"action"`
	Deleted       bool              `json:"deleted"`
	GitHubActions bool              `json:"github_actions"`
	CI            *string           `json:"ci"`
	Reason        string            `json:"reason"`
	Sources       map[string]string `json:"sources"`
	Notes         []string          `json:"notes"`
}

// MarshalJSON writes unknown strings as null and never a null list or map.
func (c Ctx) MarshalJSON() ([]byte, error) {
	j := ctxJSON{
		Env: c.Env, Scope: c.Scope, Git: c.Git, PR: c.PR,
		Repo: nullable(c.Repo), DefaultBranch: nullable(c.DefaultBranch),
		Fork: c.Fork, HeadRepo: nullable(c.HeadRepo),
		Event: nullable(c.Event), Action: nullable(c.Action),
		Deleted: c.Deleted, GitHubActions: c.GitHubActions, CI: nullable(c.CI),
		Reason: c.Reason, Sources: c.Sources, Notes: c.Notes,
	}
	if j.Sources == nil {
		j.Sources = map[string]string{}
	}
	if j.Notes == nil {
		j.Notes = []string{}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Ctx) UnmarshalJSON(b []byte) error {
	var j ctxJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Ctx{
		Env: j.Env, Scope: j.Scope, Git: j.Git, PR: j.PR,
		Repo: deref(j.Repo), DefaultBranch: deref(j.DefaultBranch),
		Fork: j.Fork, HeadRepo: deref(j.HeadRepo),
		Event: deref(j.Event), Action: deref(j.Action),
		Deleted: j.Deleted, GitHubActions: j.GitHubActions, CI: deref(j.CI),
		Reason: j.Reason, Sources: j.Sources, Notes: j.Notes,
	}
	return nil
}

type gitJSON struct {
	Branch   *string `json:"branch"`
	SHA      *string `json:"sha"`
	ShortSHA *string `json:"short_sha"`
}

// MarshalJSON writes unknown values as null.
func (g Git) MarshalJSON() ([]byte, error) {
	return json.Marshal(gitJSON{nullable(g.Branch), nullable(g.SHA), nullable(g.ShortSHA)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (g *Git) UnmarshalJSON(b []byte) error {
	var j gitJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*g = Git{deref(j.Branch), deref(j.SHA), deref(j.ShortSHA)}
	return nil
}
