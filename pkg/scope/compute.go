package scope

import (
	"cmp"
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

	// LocalPR is the open pull request of the local checkout's branch, as
	// the GitHub CLI answers it (ReadGHPR); nil when unknown. It is used
	// only with Local (outside CI), after flags and SPONSON_CTX_PR, and only
	// when the branch is the checkout's.
	LocalPR *int

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
	l, err := readLayers(in)
	if err != nil {
		return Ctx{}, err
	}
	c := Ctx{Sources: map[string]string{}, Notes: []string{}, GitHubActions: l.getenv("GITHUB_ACTIONS") == "true"}
	c.CI = l.ci()
	c.Env = take(&c, "env", l.env())
	if l.gh != nil {
		c.Event, c.Action = l.gh.event, l.gh.action
		c.Notes = append(c.Notes, l.gh.notes...)
	}

	// Each field depends on the ones chosen before it: a lower layer's
	// branch only with the pull request chosen, its commit only with the
	// branch chosen.
	pr := take(&c, "pr.number", l.pr())
	c.PR.Number = pr
	ghOK := take(&c, "", l.eventIsThisRun(pr)) // no source of its own, only a note
	branch := take(&c, "git.branch", l.branch(ghOK))
	c.Git.Branch = branch
	c.Git.SHA = take(&c, "git.sha", l.sha(pr, branch, ghOK))
	c.Git.ShortSHA = short(c.Git.SHA)
	c.Repo = take(&c, "repo", l.repo())
	c.DefaultBranch = take(&c, "default_branch", l.defaultBranch())
	l.eventFacts(&c, pr, branch, ghOK)

	// A name git refuses is no branch: it would collapse into another's
	// scope (a\nb and a-b), and its ref could not be written.
	if branch != "" {
		if err := CheckBranchName(branch); err != nil {
			return Ctx{}, err
		}
	}
	if err := l.decideScope(&c, pr, branch); err != nil {
		return Ctx{}, err
	}
	return c, nil
}

// offer is what one source says about one field of the Ctx: a value and
// where it came from, or why a value it had is not used. A source with
// nothing to say offers the zero offer, and the next source is asked.
type offer[T any] struct {
	value  T
	source string // where value came from, for Ctx.Sources; "" when the source gave nothing
	note   string // why a value the source had is not used, for Ctx.Notes
}

// found reports whether the source decided the field: with a value, or by
// refusing one (a note), which leaves the field unknown.
func (o offer[T]) found() bool { return o.source != "" || o.note != "" }

// first is the offer of the first source, in order of precedence, that
// found anything; the zero offer when none did.
func first[T any](offers ...offer[T]) offer[T] {
	for _, o := range offers {
		if o.found() {
			return o
		}
	}
	return offer[T]{}
}

// text offers v, from src, when it is not empty.
func text(v, src string) offer[string] {
	if v == "" {
		return offer[string]{}
	}
	return offer[string]{value: v, source: src}
}

// number offers the pull request n, from src, when it is known.
func number(n *int, src string) offer[*int] {
	if n == nil {
		return offer[*int]{}
	}
	return offer[*int]{value: n, source: src}
}

// take records the offer in c, its source under key and its note, and
// returns its value.
func take[T any](c *Ctx, key string, o offer[T]) T {
	if o.source != "" && key != "" {
		c.Sources[key] = o.source
	}
	if o.note != "" {
		c.Notes = append(c.Notes, o.note)
	}
	return o.value
}

// explicit are the values given on purpose, by flags or by SPONSON_CTX_*,
// validated; "" and nil when not given.
type explicit struct {
	env    string
	pr     *int
	prSet  bool // SPONSON_CTX_PR is set, maybe empty ("no pull request")
	branch string
	sha    string
	repo   string
}

// layers are the places Compute takes values from, highest first: flags,
// SPONSON_CTX_*, the GitHub layer (nil outside GitHub) and the local
// checkout (nil inside GitHub or when there is none).
type layers struct {
	lookup func(string) (string, bool)
	flag   explicit
	ctx    explicit
	input  Input
	gh     *ghLayer
	local  *LocalGit
}

func (l *layers) getenv(k string) string { return getenv(l.lookup, k) }

// readLayers reads and validates every layer. Explicit values are checked
// before anything else is looked at, flags and variables in a fixed order,
// so that the first error named is always the same.
func readLayers(in Input) (*layers, error) {
	l := &layers{lookup: in.LookupEnv, input: in}
	if l.lookup == nil {
		l.lookup = func(string) (string, bool) { return "", false }
	}
	var err error
	if l.flag.env, err = explicitEnv(in.Env); err != nil {
		return nil, err
	}
	l.ctx.env = l.getenv("SPONSON_CTX_ENV")
	if l.flag.pr, err = parsePR(in.PR, "--pr"); err != nil {
		return nil, err
	}
	l.flag.prSet = l.flag.pr != nil
	if l.ctx.pr, l.ctx.prSet, err = ctxPR(l.lookup); err != nil {
		return nil, err
	}
	if l.flag.branch, err = explicitBranch(in.Branch); err != nil {
		return nil, err
	}
	l.ctx.branch = strings.TrimPrefix(l.getenv("SPONSON_CTX_BRANCH"), "refs/heads/")
	if strings.TrimSpace(l.ctx.branch) == "" {
		l.ctx.branch = "" // blank counts as unset, like SPONSON_CTX_ENV
	}
	if l.flag.sha, err = explicitSHA(in.SHA, "--sha", true); err != nil {
		return nil, err
	}
	if l.ctx.sha, err = explicitSHA(ptrIf(l.getenv("SPONSON_CTX_SHA")), "SPONSON_CTX_SHA", false); err != nil {
		return nil, err
	}
	if l.flag.repo, err = explicitRepo(in.Repo); err != nil {
		return nil, err
	}
	if l.gh, err = github(in, l.lookup); err != nil {
		return nil, err
	}
	if l.gh == nil {
		l.gh = otherCI(l.lookup)
	}
	if l.gh == nil {
		l.local = in.Local
	}
	return l, nil
}

// ci names the CI host the run is on: github-actions, gitlab-ci,
// circleci, bitbucket-pipelines; "" outside CI (or for a GitHub event
// handed in by the bot).
func (l *layers) ci() string {
	switch {
	case l.gh != nil && l.gh.host != "":
		return l.gh.host
	case l.gh != nil && l.gh.actions:
		return "github-actions"
	}
	return ""
}

// event is the GitHub layer, or an empty one outside GitHub: it offers
// nothing.
func (l *layers) event() *ghLayer {
	if l.gh == nil {
		return &ghLayer{}
	}
	return l.gh
}

// checkout is the local checkout, or an empty one: it offers nothing.
func (l *layers) checkout() *LocalGit {
	if l.local == nil {
		return &LocalGit{}
	}
	return l.local
}

func (l *layers) env() offer[string] {
	return first(
		text(l.flag.env, "flag"),
		text(l.ctx.env, "env:SPONSON_CTX_ENV"),
		text("preview", "default"),
	)
}

func (l *layers) pr() offer[*int] {
	return first(
		number(l.flag.pr, "flag"),
		l.ctxPR(),
		number(l.event().pr, l.event().prSrc),
		l.localPR(),
	)
}

// localPR is the GitHub CLI's pull request of the checkout's branch: it is
// not the pull request of another branch given explicitly.
func (l *layers) localPR() offer[*int] {
	if l.local == nil || l.input.LocalPR == nil || *l.input.LocalPR <= 0 {
		return offer[*int]{}
	}
	if b := cmp.Or(l.flag.branch, l.ctx.branch); b != "" && b != l.local.Branch {
		return offer[*int]{note: fmt.Sprintf("gh pr view: pull request #%d is branch %q's, not %q: not used", *l.input.LocalPR, l.local.Branch, b)}
	}
	return number(l.input.LocalPR, "gh:pr view")
}

// ctxPR is SPONSON_CTX_PR's offer: set and empty, it says "no pull request"
// and the event's is not used.
func (l *layers) ctxPR() offer[*int] {
	if !l.ctx.prSet {
		return offer[*int]{}
	}
	o := offer[*int]{value: l.ctx.pr, source: "env:SPONSON_CTX_PR"}
	if o.value == nil && l.event().pr != nil {
		o.note = fmt.Sprintf("SPONSON_CTX_PR is set and empty: the event's pull request #%d is not used", *l.event().pr)
	}
	return o
}

// eventIsThisRun reports whether the event describes this run's pull
// request pr (or is about none); when it does not, its note says so. It is
// false outside GitHub.
func (l *layers) eventIsThisRun(pr *int) offer[bool] {
	gh := l.gh
	if gh == nil {
		return offer[bool]{}
	}
	if gh.pr == nil || pr == nil || *gh.pr == *pr {
		return offer[bool]{value: true}
	}
	return offer[bool]{note: fmt.Sprintf("the event is about pull request #%d, not #%d: its branch, commit and head repository are not used", *gh.pr, *pr)}
}

func (l *layers) branch(ghOK bool) offer[string] {
	gh := offer[string]{}
	if ghOK {
		gh = text(l.gh.branch, l.gh.branchSrc)
	}
	return first(
		text(l.flag.branch, "flag"),
		text(l.ctx.branch, "env:SPONSON_CTX_BRANCH"),
		gh,
		text(l.checkout().Branch, "git:HEAD"),
	)
}

// sha is the commit: a lower layer's only with the branch it belongs to.
func (l *layers) sha(pr *int, branch string, ghOK bool) offer[string] {
	return first(
		text(l.flag.sha, "flag"),
		text(l.ctx.sha, "env:SPONSON_CTX_SHA"),
		l.eventSHA(pr, branch, ghOK),
		l.localSHA(branch),
	)
}

// eventSHA is the event's commit. A pull request event's head is the pull
// request's whatever the branch is called; any other event's commit is its
// branch's.
func (l *layers) eventSHA(pr *int, branch string, ghOK bool) offer[string] {
	if !ghOK || l.gh.sha == "" {
		return offer[string]{}
	}
	gh := l.gh
	if (gh.pr != nil && pr != nil) || (gh.refBranch != "" && gh.refBranch == branch) {
		return text(strings.ToLower(gh.sha), gh.shaSrc)
	}
	return offer[string]{note: fmt.Sprintf("git.sha: the event's commit %s is not on branch %q; pass --sha", short(gh.sha), branch)}
}

// localSHA is the local HEAD. A detached HEAD goes with any branch: it is
// why --branch is given.
func (l *layers) localSHA(branch string) offer[string] {
	local := l.checkout()
	if local.SHA == "" {
		return offer[string]{}
	}
	if local.Branch == "" || local.Branch == branch {
		return text(strings.ToLower(local.SHA), "git:HEAD")
	}
	return offer[string]{note: fmt.Sprintf("git.sha: local HEAD is on branch %q, not %q; pass --sha", local.Branch, branch)}
}

func (l *layers) repo() offer[string] {
	return first(
		text(l.flag.repo, "flag"),
		text(l.event().repo, l.event().repoSrc),
		text(l.checkout().Repo, "git:origin"),
	)
}

func (l *layers) defaultBranch() offer[string] {
	return first(
		text(l.input.DefaultBranch, "input:DefaultBranch"),
		text(l.event().defBranch, l.event().defBranchSrc),
		text(l.checkout().DefaultBranch, "git:origin/HEAD"),
	)
}

// eventFacts sets fork and deletion: facts of the event, kept when the
// event is this run's.
func (l *layers) eventFacts(c *Ctx, pr *int, branch string, ghOK bool) {
	if ghOK && l.gh.forkKnown {
		c.Fork, c.HeadRepo, c.Sources["fork"] = l.gh.fork, l.gh.headRepo, l.gh.forkSrc
	}
	c.Deleted = l.gh != nil && l.gh.deleted && pr == nil && branch == l.gh.branch
}

// decideScope sets the scope and its reason: the pull request's, else the
// branch's; no scope at all is USAGE.
func (l *layers) decideScope(c *Ctx, pr *int, branch string) error {
	switch {
	case pr != nil:
		c.Scope, c.Sources["scope"] = PRScope(*pr), c.Sources["pr.number"]
		c.Reason = fmt.Sprintf("inside pull request #%d (%s)", *pr, c.Sources["pr.number"])
		return nil
	case branch == "":
		return noScope(l.gh, l.local, l.ctx.prSet && l.ctx.pr == nil)
	}
	c.Sources["scope"] = c.Sources["git.branch"]
	return branchScope(c, branch)
}

// branchScope sets the scope of a run on branch outside a pull request:
// main on the default branch (main or master when it is unknown),
// branch-<name> elsewhere.
func branchScope(c *Ctx, branch string) error {
	switch {
	case c.DefaultBranch != "" && branch == c.DefaultBranch:
		c.Scope = Main
		c.Reason = fmt.Sprintf("branch %q is the repository's default branch (%s)", branch, c.Sources["default_branch"])
		return nil
	case c.DefaultBranch == "" && (branch == "main" || branch == "master"):
		c.Scope = Main
		c.Reason = fmt.Sprintf("branch %q, and the default branch is unknown: main and master count as default", branch)
		return nil
	}
	c.Scope = BranchScope(branch)
	if c.DefaultBranch != "" {
		c.Reason = fmt.Sprintf("branch %q is not the default branch %q", branch, c.DefaultBranch)
	} else {
		c.Reason = fmt.Sprintf("branch %q is not main or master (the default branch is unknown)", branch)
	}
	if err := Validate(c.Scope); err != nil {
		return errs.New(errs.USAGE, "branch %q gives the scope %q, which is not a valid git ref name", branch, c.Scope).
			WithHint("Pass --branch with a valid git branch name.")
	}
	return nil
}

// noScope is the USAGE error when neither a pull request nor a branch is known.
func noScope(gh *ghLayer, local *LocalGit, prDisabled bool) error {
	var why string
	switch {
	case gh != nil && gh.noScope != "":
		why = gh.noScope
	case gh != nil && gh.host != "":
		why = fmt.Sprintf("the %s job names neither a pull request nor a branch", gh.host)
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
	if gh != nil && gh.host == "" {
		e.With("event", gh.event)
	}
	return e
}

func explicitEnv(s *string) (string, error) {
	if s == nil {
		return "", nil
	}
	if strings.TrimSpace(*s) == "" {
		return "", errs.New(errs.USAGE, "--env is empty").WithHint("Pass --env with an environment of the plan, or leave it out for preview.")
	}
	return *s, nil
}

// ctxPR reads SPONSON_CTX_PR: set reports whether it is set at all, pr is
// nil when it is set and empty.
func ctxPR(lookup func(string) (string, bool)) (pr *int, set bool, err error) {
	v, set := lookup("SPONSON_CTX_PR")
	if !set || v == "" {
		return nil, set, nil
	}
	pr, err = parsePR(&v, "SPONSON_CTX_PR")
	return pr, set, err
}

func explicitRepo(s *string) (string, error) {
	if s == nil {
		return "", nil
	}
	if !repoRe.MatchString(*s) {
		return "", errs.New(errs.USAGE, "--repo %q is not owner/name", *s).WithHint("Pass --repo as owner/name, for example acme/shop.")
	}
	return *s, nil
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
