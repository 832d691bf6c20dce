package scope

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// Input is everything Compute needs. Compute does no I/O: the caller reads
// the environment, the event file (ReadEvent) and the local repository
// (ReadLocalGit) and hands them in.
type Input struct {
	// Explicit values, from command-line flags: nil when not given. A
	// given value is validated: an empty one is USAGE.
	Env    *string // --env
	PR     *string // --pr, as typed: a positive decimal number
	Branch *string // --branch; a leading refs/heads/ is dropped
	SHA    *string // --sha: 40 or 64 hexadecimal digits
	Repo   *string // --repo: owner/name

	// DefaultBranch is the repository's default branch when the caller
	// knows it from elsewhere (the API, a config file); it outranks the
	// event's. "" when not known.
	DefaultBranch string

	// LookupEnv is the environment (os.LookupEnv in a main; nil is an empty
	// one). A lookup, not a getenv, because SPONSON_CTX_PR="" (set, empty)
	// means "no pull request" while an unset SPONSON_CTX_PR means nothing.
	// Read: SPONSON_CTX_ENV, SPONSON_CTX_BRANCH, SPONSON_CTX_SHA,
	// SPONSON_CTX_PR; GITHUB_ACTIONS; and only when GITHUB_ACTIONS=true:
	// GITHUB_EVENT_NAME, GITHUB_REF, GITHUB_HEAD_REF, GITHUB_SHA,
	// GITHUB_REPOSITORY.
	LookupEnv func(key string) (string, bool)

	// EventName is the GitHub event (the bot's X-GitHub-Event header); ""
	// means GITHUB_EVENT_NAME inside GitHub Actions. Event is its payload
	// (ReadEvent reads it from GITHUB_EVENT_PATH); nil when there is none.
	EventName string
	Event     []byte

	// DeploymentPR is, for a deployment_status event only, the open pull
	// request of the deployed commit, which the caller finds through the
	// API. nil: no open pull request, so the scope comes from the deployed
	// branch.
	DeploymentPR *int

	// Local is the local checkout (ReadLocalGit), nil when there is none.
	// It is used only outside GitHub (no event name, GITHUB_ACTIONS not
	// true): inside an event the checkout is the event's, often a merge
	// commit or the default branch, and the event says more.
	Local *LocalGit
}

var (
	shaRe  = regexp.MustCompile(`^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$`)
	repoRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
)

func validSHA(s string) bool { return shaRe.MatchString(s) }

var usageHint = "Give the scope explicitly: --pr <number> or --branch <name> (or SPONSON_CTX_PR / SPONSON_CTX_BRANCH)."

// Compute derives the run's Ctx and scope. Each field is taken from the first
// of: explicit flags; SPONSON_CTX_*; the GitHub event and GitHub Actions
// variables; local git (outside GitHub only). Values of a lower layer that
// describe another pull request or another branch than the one chosen above
// it are not used (a wrong commit could make a run look stale); Ctx.Notes
// says so.
//
// Errors: USAGE for an invalid explicit value or when no scope can be
// derived (a tag, a schedule, an event with no rule, nothing known), with a
// hint naming --pr and --branch; INTERNAL when DeploymentPR is given for
// another event than deployment_status.
func Compute(in Input) (Ctx, error) {
	lookup := in.LookupEnv
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	getenv := func(k string) string { v, _ := lookup(k); return v }

	c := Ctx{Sources: map[string]string{}, Notes: []string{}}
	note := func(format string, args ...any) { c.Notes = append(c.Notes, fmt.Sprintf(format, args...)) }
	c.GitHubActions = getenv("GITHUB_ACTIONS") == "true"

	// env
	switch {
	case in.Env != nil:
		if strings.TrimSpace(*in.Env) == "" {
			return Ctx{}, errs.New(errs.USAGE, "--env is empty").WithHint("Pass --env with an environment of the plan, or leave it out for preview.")
		}
		c.Env, c.Sources["env"] = *in.Env, "flag"
	case getenv("SPONSON_CTX_ENV") != "":
		c.Env, c.Sources["env"] = getenv("SPONSON_CTX_ENV"), "env:SPONSON_CTX_ENV"
	default:
		c.Env, c.Sources["env"] = "preview", "default"
	}

	// Explicit values, checked before anything else is looked at.
	flagPR, err := parsePR(in.PR, "--pr")
	if err != nil {
		return Ctx{}, err
	}
	ctxPRText, ctxPRSet := lookup("SPONSON_CTX_PR")
	var ctxPR *int
	if ctxPRSet && ctxPRText != "" {
		if ctxPR, err = parsePR(&ctxPRText, "SPONSON_CTX_PR"); err != nil {
			return Ctx{}, err
		}
	}
	flagBranch, err := explicitBranch(in.Branch)
	if err != nil {
		return Ctx{}, err
	}
	ctxBranch := strings.TrimPrefix(getenv("SPONSON_CTX_BRANCH"), "refs/heads/")
	if strings.TrimSpace(ctxBranch) == "" {
		ctxBranch = "" // blank counts as unset, like SPONSON_CTX_ENV
	}
	flagSHA, err := explicitSHA(in.SHA, "--sha", true)
	if err != nil {
		return Ctx{}, err
	}
	ctxSHA, err := explicitSHA(ptrIf(getenv("SPONSON_CTX_SHA")), "SPONSON_CTX_SHA", false)
	if err != nil {
		return Ctx{}, err
	}
	if in.Repo != nil && !repoRe.MatchString(*in.Repo) {
		return Ctx{}, errs.New(errs.USAGE, "--repo %q is not owner/name", *in.Repo).WithHint("Pass --repo as owner/name, for example acme/shop.")
	}

	gh, err := github(in, lookup)
	if err != nil {
		return Ctx{}, err
	}
	var local *LocalGit
	if gh == nil {
		local = in.Local
	} else {
		c.Event, c.Action = gh.event, gh.action
		c.Notes = append(c.Notes, gh.notes...)
	}

	// pull request
	var pr *int
	switch {
	case flagPR != nil:
		pr, c.Sources["pr.number"] = flagPR, "flag"
	case ctxPRSet:
		pr = ctxPR
		c.Sources["pr.number"] = "env:SPONSON_CTX_PR"
		if pr == nil && gh != nil && gh.pr != nil {
			note("SPONSON_CTX_PR is set and empty: the event's pull request #%d is not used", *gh.pr)
		}
	case gh != nil && gh.pr != nil:
		pr, c.Sources["pr.number"] = gh.pr, gh.prSrc
	}
	c.PR.Number = pr

	// The event describes this run's pull request (or it is about none).
	ghOK := gh != nil && (gh.pr == nil || pr == nil || *gh.pr == *pr)
	if gh != nil && !ghOK {
		note("the event is about pull request #%d, not #%d: its branch, commit and head repository are not used", *gh.pr, *pr)
	}

	// branch
	switch {
	case flagBranch != "":
		c.Git.Branch, c.Sources["git.branch"] = flagBranch, "flag"
	case ctxBranch != "":
		c.Git.Branch, c.Sources["git.branch"] = ctxBranch, "env:SPONSON_CTX_BRANCH"
	case ghOK && gh.branch != "":
		c.Git.Branch, c.Sources["git.branch"] = gh.branch, gh.branchSrc
	case local != nil && local.Branch != "":
		c.Git.Branch, c.Sources["git.branch"] = local.Branch, "git:HEAD"
	}
	branch := c.Git.Branch

	// commit: a lower layer's commit only with the branch it belongs to
	switch {
	case flagSHA != "":
		c.Git.SHA, c.Sources["git.sha"] = flagSHA, "flag"
	case ctxSHA != "":
		c.Git.SHA, c.Sources["git.sha"] = ctxSHA, "env:SPONSON_CTX_SHA"
	case ghOK && gh.sha != "":
		// A pull request event's head is the PR's whatever the branch is
		// called; any other event's commit is its branch's.
		if (gh.pr != nil && pr != nil) || (gh.refBranch != "" && gh.refBranch == branch) {
			c.Git.SHA, c.Sources["git.sha"] = strings.ToLower(gh.sha), gh.shaSrc
		} else {
			note("git.sha: the event's commit %s is not on branch %q; pass --sha", short(gh.sha), branch)
		}
	case local != nil && local.SHA != "":
		// A detached HEAD goes with any branch: it is why --branch is given.
		if local.Branch == "" || local.Branch == branch {
			c.Git.SHA, c.Sources["git.sha"] = strings.ToLower(local.SHA), "git:HEAD"
		} else {
			note("git.sha: local HEAD is on branch %q, not %q; pass --sha", local.Branch, branch)
		}
	}
	c.Git.ShortSHA = short(c.Git.SHA)

	// repository and its default branch
	switch {
	case in.Repo != nil:
		c.Repo, c.Sources["repo"] = *in.Repo, "flag"
	case gh != nil && gh.repo != "":
		c.Repo, c.Sources["repo"] = gh.repo, gh.repoSrc
	case local != nil && local.Repo != "":
		c.Repo, c.Sources["repo"] = local.Repo, "git:origin"
	}
	switch {
	case in.DefaultBranch != "":
		c.DefaultBranch, c.Sources["default_branch"] = in.DefaultBranch, "input:DefaultBranch"
	case gh != nil && gh.defBranch != "":
		c.DefaultBranch, c.Sources["default_branch"] = gh.defBranch, gh.defBranchSrc
	case local != nil && local.DefaultBranch != "":
		c.DefaultBranch, c.Sources["default_branch"] = local.DefaultBranch, "git:origin/HEAD"
	}

	// fork and deletion: facts of the event, kept when the event is this run's
	if ghOK && gh.forkKnown {
		c.Fork, c.HeadRepo, c.Sources["fork"] = gh.fork, gh.headRepo, gh.forkSrc
	}
	c.Deleted = gh != nil && gh.deleted && pr == nil && branch == gh.branch

	// A name git refuses is no branch: it would collapse into another's
	// scope (a\nb and a-b), and its ref could not be written.
	if branch != "" {
		if err := CheckBranchName(branch); err != nil {
			return Ctx{}, err
		}
	}

	// scope
	switch {
	case pr != nil:
		c.Scope, c.Sources["scope"] = PRScope(*pr), c.Sources["pr.number"]
		c.Reason = fmt.Sprintf("inside pull request #%d (%s)", *pr, c.Sources["pr.number"])
	case branch == "":
		return Ctx{}, noScope(gh, local, ctxPRSet && ctxPRText == "")
	default:
		c.Sources["scope"] = c.Sources["git.branch"]
		switch {
		case c.DefaultBranch != "" && branch == c.DefaultBranch:
			c.Scope = Main
			c.Reason = fmt.Sprintf("branch %q is the repository's default branch (%s)", branch, c.Sources["default_branch"])
		case c.DefaultBranch == "" && (branch == "main" || branch == "master"):
			c.Scope = Main
			c.Reason = fmt.Sprintf("branch %q, and the default branch is unknown: main and master count as default", branch)
		default:
			c.Scope = BranchScope(branch)
			if c.DefaultBranch != "" {
				c.Reason = fmt.Sprintf("branch %q is not the default branch %q", branch, c.DefaultBranch)
			} else {
				c.Reason = fmt.Sprintf("branch %q is not main or master (the default branch is unknown)", branch)
			}
			if err := Validate(c.Scope); err != nil {
				return Ctx{}, errs.New(errs.USAGE, "branch %q gives the scope %q, which is not a valid git ref name", branch, c.Scope).
					WithHint("Pass --branch with a valid git branch name.")
			}
		}
	}
	return c, nil
}

// noScope is the USAGE error when neither a pull request nor a branch is known.
func noScope(gh *ghLayer, local *LocalGit, prDisabled bool) error {
	var why string
	switch {
	case gh != nil && gh.noScope != "":
		why = gh.noScope
	case gh != nil && prDisabled:
		why = fmt.Sprintf("SPONSON_CTX_PR is empty and the %s event names no branch", gh.event)
	case gh != nil:
		why = fmt.Sprintf("the %s event names no branch", gh.event)
	case local == nil:
		why = "nothing names one: no flag, no SPONSON_CTX_*, no GitHub event and no git repository"
	case local.SHA != "":
		why = "the local HEAD is detached (on no branch)"
	default:
		why = "the local repository names no branch"
	}
	e := errs.New(errs.USAGE, "no scope: %s", why).WithHint("%s", usageHint)
	if gh != nil {
		e.With("event", gh.event)
	}
	return e
}

func parsePR(s *string, what string) (*int, error) {
	if s == nil {
		return nil, nil
	}
	v := strings.TrimSpace(*s)
	n, err := strconv.Atoi(v)
	if !digits(v) || err != nil || n <= 0 {
		return nil, errs.New(errs.USAGE, "%s %q is not a pull request number", what, *s).
			WithHint("Pass a positive number, for example --pr 42; to run outside a pull request, set SPONSON_CTX_PR to empty.")
	}
	return &n, nil
}

func explicitBranch(s *string) (string, error) {
	if s == nil {
		return "", nil
	}
	b := strings.TrimPrefix(*s, "refs/heads/")
	if strings.TrimSpace(b) == "" {
		return "", errs.New(errs.USAGE, "--branch is empty").WithHint("Pass --branch with a branch name, or leave it out to use the event's or the checkout's.")
	}
	return b, nil
}

func explicitSHA(s *string, what string, emptyIsError bool) (string, error) {
	if s == nil || (*s == "" && !emptyIsError) {
		return "", nil
	}
	if !validSHA(*s) {
		return "", errs.New(errs.USAGE, "%s %q is not a commit id (40 or 64 hexadecimal digits)", what, *s).
			WithHint("Pass the full commit id, for example $(git rev-parse HEAD).")
	}
	return strings.ToLower(*s), nil
}

func ptrIf(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
