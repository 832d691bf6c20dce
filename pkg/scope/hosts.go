package scope

import (
	"fmt"
	"strconv"
	"strings"
)

// A CI host other than GitHub Actions says what its job runs on through
// its documented variables; each reader below turns them into the layer
// GitHub's event fills, so one set of rules (a lower layer's commit only
// with its branch, no guess) holds for all. Variables:
//   - GitLab CI/CD, "Predefined CI/CD variables reference"
//     (docs.gitlab.com/ci/variables/predefined_variables/).
//   - CircleCI, "Project values and variables" (circleci.com/docs/reference/variables/).
//   - Bitbucket Pipelines, "Variables and secrets", default variables
//     (support.atlassian.com/bitbucket-cloud/docs/variables-and-secrets/).

// ciHost is one CI host: the variable that says a job runs there, and the
// reader of its other variables.
type ciHost struct {
	name   string // as Ctx.CI says it
	marker func(getenv func(string) string) bool
	read   func(g *ghLayer, getenv func(string) string)
}

// ciHosts are the hosts read after GitHub, in this order.
var ciHosts = []ciHost{
	{name: "gitlab-ci", marker: func(e func(string) string) bool { return e("GITLAB_CI") == "true" }, read: (*ghLayer).fromGitLab},
	{name: "circleci", marker: func(e func(string) string) bool { return e("CIRCLECI") == "true" }, read: (*ghLayer).fromCircleCI},
	{name: "bitbucket-pipelines", marker: func(e func(string) string) bool { return e("BITBUCKET_BUILD_NUMBER") != "" }, read: (*ghLayer).fromBitbucket},
}

// otherCI reads the first CI host whose marker is set; nil when the run is
// on none of them.
func otherCI(lookup func(string) (string, bool)) *ghLayer {
	getenv := func(k string) string { return getenv(lookup, k) }
	for _, h := range ciHosts {
		if h.marker(getenv) {
			g := &ghLayer{host: h.name}
			h.read(g, getenv)
			return g
		}
	}
	return nil
}

// prNumber parses a pull request number from a variable: a positive
// decimal, else nil.
func prNumber(v string) *int {
	v = strings.TrimSpace(v)
	n, err := strconv.Atoi(v)
	if !digits(v) || err != nil || n <= 0 {
		return nil
	}
	return &n
}

// setEnv sets *dst and *src from the variable name when it is set.
func setEnv(getenv func(string) string, name string, dst, src *string) bool {
	v := getenv(name)
	if v == "" {
		return false
	}
	*dst, *src = v, "env:"+name
	return true
}

// fromGitLab: a merge request pipeline (or an external pull request's),
// else the branch of a branch pipeline; a tag pipeline has no scope.
func (g *ghLayer) fromGitLab(getenv func(string) string) {
	if setEnv(getenv, "CI_PROJECT_PATH", &g.repo, &g.repoSrc) && (!repoRe.MatchString(g.repo) || strings.Count(g.repo, "/") != 1) {
		g.notes = append(g.notes, fmt.Sprintf("repo: CI_PROJECT_PATH %q is not owner/name (a project in a subgroup): pass --repo", g.repo))
		g.repo, g.repoSrc = "", ""
	}
	setEnv(getenv, "CI_DEFAULT_BRANCH", &g.defBranch, &g.defBranchSrc)
	switch {
	case prNumber(getenv("CI_MERGE_REQUEST_IID")) != nil:
		g.fromGitLabMR(getenv, "CI_MERGE_REQUEST_")
	case prNumber(getenv("CI_EXTERNAL_PULL_REQUEST_IID")) != nil:
		g.fromGitLabMR(getenv, "CI_EXTERNAL_PULL_REQUEST_")
	case getenv("CI_COMMIT_TAG") != "":
		g.noScope = fmt.Sprintf("a GitLab pipeline for the tag %s", getenv("CI_COMMIT_TAG"))
	case setEnv(getenv, "CI_COMMIT_BRANCH", &g.branch, &g.branchSrc),
		setEnv(getenv, "CI_COMMIT_REF_NAME", &g.branch, &g.branchSrc):
		g.refBranch = g.branch
		setEnv(getenv, "CI_COMMIT_SHA", &g.sha, &g.shaSrc)
	default:
		g.noScope = "a GitLab pipeline with neither a merge request nor a branch (CI_MERGE_REQUEST_IID, CI_COMMIT_BRANCH)"
	}
}

// fromGitLabMR reads a merge request's pipeline (prefix CI_MERGE_REQUEST_)
// or an external pull request's (CI_EXTERNAL_PULL_REQUEST_). Its head
// commit is _SOURCE_BRANCH_SHA when GitLab sets it (merged results,
// external pull requests); CI_COMMIT_SHA only in a detached pipeline, where
// it is the head (in a merged results pipeline it is the merge commit).
func (g *ghLayer) fromGitLabMR(getenv func(string) string, prefix string) {
	g.pr, g.prSrc = prNumber(getenv(prefix+"IID")), "env:"+prefix+"IID"
	if setEnv(getenv, prefix+"SOURCE_BRANCH_NAME", &g.branch, &g.branchSrc) {
		g.refBranch = g.branch
	}
	switch {
	case setEnv(getenv, prefix+"SOURCE_BRANCH_SHA", &g.sha, &g.shaSrc):
	case prefix == "CI_MERGE_REQUEST_" && getenv("CI_MERGE_REQUEST_EVENT_TYPE") == "detached":
		setEnv(getenv, "CI_COMMIT_SHA", &g.sha, &g.shaSrc)
	default:
		g.notes = append(g.notes, "git.sha is unknown: GitLab sets no head commit for this merge request pipeline (CI_COMMIT_SHA may be its merge commit); pass --sha")
	}
	src, dst := getenv("CI_MERGE_REQUEST_SOURCE_PROJECT_ID"), getenv("CI_MERGE_REQUEST_PROJECT_ID")
	if prefix == "CI_MERGE_REQUEST_" && src != "" && dst != "" {
		g.forkKnown, g.forkSrc = true, "env:CI_MERGE_REQUEST_SOURCE_PROJECT_ID"
		g.fork = src != dst
		g.headRepo = getenv("CI_MERGE_REQUEST_SOURCE_PROJECT_PATH")
	}
}

// fromCircleCI: the pull request of the branch built (CIRCLE_PR_NUMBER
// for a fork's, else the number at the end of CIRCLE_PULL_REQUEST), its
// branch and commit; a tag build has no scope. A branch with several open
// pull requests gives none: which one is not for Sponson to guess.
func (g *ghLayer) fromCircleCI(getenv func(string) string) {
	user, name := getenv("CIRCLE_PROJECT_USERNAME"), getenv("CIRCLE_PROJECT_REPONAME")
	if user != "" && name != "" && repoRe.MatchString(user+"/"+name) {
		g.repo, g.repoSrc = user+"/"+name, "env:CIRCLE_PROJECT_USERNAME"
	}
	if setEnv(getenv, "CIRCLE_BRANCH", &g.branch, &g.branchSrc) {
		g.refBranch = g.branch
		setEnv(getenv, "CIRCLE_SHA1", &g.sha, &g.shaSrc)
	} else if t := getenv("CIRCLE_TAG"); t != "" {
		g.noScope = "a CircleCI build of the tag " + t
	} else {
		g.noScope = "a CircleCI build with no branch (CIRCLE_BRANCH)"
	}
	g.circlePR(getenv)
}

func (g *ghLayer) circlePR(getenv func(string) string) {
	if n := prNumber(getenv("CIRCLE_PR_NUMBER")); n != nil {
		g.pr, g.prSrc = n, "env:CIRCLE_PR_NUMBER"
	} else if prs := strings.Split(getenv("CIRCLE_PULL_REQUESTS"), ","); len(prs) > 1 {
		g.notes = append(g.notes, fmt.Sprintf("CIRCLE_PULL_REQUESTS names %d pull requests of this branch: no pull request is taken; pass --pr", len(prs)))
		return
	} else if n := prFromURL(getenv("CIRCLE_PULL_REQUEST")); n != nil {
		g.pr, g.prSrc = n, "env:CIRCLE_PULL_REQUEST"
	}
	if g.pr == nil {
		return
	}
	// CIRCLE_PR_USERNAME and _REPONAME are set only for a fork's pull request.
	g.forkKnown, g.forkSrc = true, "env:CIRCLE_PR_USERNAME"
	if u, r := getenv("CIRCLE_PR_USERNAME"), getenv("CIRCLE_PR_REPONAME"); u != "" {
		g.fork, g.headRepo = true, u+"/"+r
	}
}

// prFromURL is the number at the end of a pull request's URL
// (https://github.com/acme/shop/pull/12, .../pull-requests/12).
func prFromURL(u string) *int {
	u = strings.TrimRight(strings.TrimSpace(u), "/")
	i := strings.LastIndexByte(u, '/')
	if i < 0 {
		return nil
	}
	kind := u[:i]
	if !strings.HasSuffix(kind, "/pull") && !strings.HasSuffix(kind, "/pull-requests") && !strings.HasSuffix(kind, "/merge_requests") {
		return nil
	}
	return prNumber(u[i+1:])
}

// fromBitbucket: a pull request pipeline (BITBUCKET_PR_ID, its source
// branch and commit), else the branch's; a tag pipeline has no scope.
func (g *ghLayer) fromBitbucket(getenv func(string) string) {
	if setEnv(getenv, "BITBUCKET_REPO_FULL_NAME", &g.repo, &g.repoSrc) && !repoRe.MatchString(g.repo) {
		g.repo, g.repoSrc = "", ""
	}
	if n := prNumber(getenv("BITBUCKET_PR_ID")); n != nil {
		g.pr, g.prSrc = n, "env:BITBUCKET_PR_ID"
	}
	switch {
	case setEnv(getenv, "BITBUCKET_BRANCH", &g.branch, &g.branchSrc):
		g.refBranch = g.branch
		setEnv(getenv, "BITBUCKET_COMMIT", &g.sha, &g.shaSrc)
	case getenv("BITBUCKET_TAG") != "":
		g.noScope = "a Bitbucket pipeline for the tag " + getenv("BITBUCKET_TAG")
	default:
		g.noScope = "a Bitbucket pipeline with no branch (BITBUCKET_BRANCH)"
	}
}
