package scope_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

var (
	shaHead  = strings.Repeat("ab", 20) // a pull request's head
	shaMerge = strings.Repeat("cd", 20) // GitHub's merge commit / GITHUB_SHA
	shaFlag  = strings.Repeat("ef", 20)
	shaCtx   = strings.Repeat("12", 20)
	shaLocal = strings.Repeat("34", 20)
	shaPush  = strings.Repeat("56", 20)
	shaOld   = strings.Repeat("78", 20)
	sha256   = strings.Repeat("9a", 32)
	zeros    = strings.Repeat("0", 40)
)

func str(s string) *string { return &s }
func num(n int) *int       { return &n }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

type obj = map[string]any

func repository(fullName, defaultBranch string) obj {
	r := obj{"full_name": fullName}
	if defaultBranch != "" {
		r["default_branch"] = defaultBranch
	}
	return r
}

// prPayload is a pull_request* payload; headRepo "" is a deleted fork (null).
func prPayload(n int, headRef, headSHA, headRepo, baseRepo, def string) []byte {
	var hr any
	if headRepo != "" {
		hr = obj{"full_name": headRepo}
	}
	return mustJSON(obj{
		"action": "opened",
		"number": n,
		"pull_request": obj{
			"number": n,
			"head":   obj{"ref": headRef, "sha": headSHA, "repo": hr},
			"base":   obj{"ref": def, "sha": shaOld, "repo": obj{"full_name": baseRepo}},
		},
		"repository": repository(baseRepo, def),
	})
}

func pushPayload(ref, before, after string, deleted bool, def string) []byte {
	return mustJSON(obj{"ref": ref, "before": before, "after": after, "deleted": deleted, "created": false,
		"repository": repository("acme/shop", def)})
}

func issueCommentPayload(n int, onPR bool) []byte {
	issue := obj{"number": n, "title": "t"}
	if onPR {
		issue["pull_request"] = obj{"url": "https://api.github.com/repos/acme/shop/pulls/1"}
	}
	return mustJSON(obj{"action": "created", "issue": issue, "comment": obj{"body": "/sponson plan"},
		"repository": repository("acme/shop", "main")})
}

func deploymentPayload(ref, sha string) []byte {
	return mustJSON(obj{"action": "created",
		"deployment":        obj{"ref": ref, "sha": sha, "environment": "Preview"},
		"deployment_status": obj{"state": "success"},
		"repository":        repository("acme/shop", "main")})
}

func dispatchPayload(ref string) []byte {
	return mustJSON(obj{"ref": ref, "inputs": obj{}, "repository": repository("acme/shop", "main")})
}

// envOf is an environment for Input.LookupEnv.
func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// actions is a GitHub Actions environment for an event, plus extra pairs.
func actions(event string, kv ...string) func(string) (string, bool) {
	return envOf(append([]string{"GITHUB_ACTIONS", "true", "GITHUB_EVENT_NAME", event, "GITHUB_REPOSITORY", "acme/shop"}, kv...)...)
}

// view is the part of a Ctx a row checks. Env "" in a want means preview.
type view struct {
	Env, Scope, Branch, SHA, ShortSHA string
	PR                                *int
	Repo, DefaultBranch               string
	Fork                              bool
	HeadRepo                          string
	Deleted                           bool
}

func viewOf(c scope.Ctx) view {
	return view{c.Env, c.Scope, c.Git.Branch, c.Git.SHA, c.Git.ShortSHA, c.PR.Number,
		c.Repo, c.DefaultBranch, c.Fork, c.HeadRepo, c.Deleted}
}

func TestCompute(t *testing.T) {
	onFeat := &scope.LocalGit{Branch: "feat/x", SHA: shaLocal, Repo: "acme/local"}
	onMain := &scope.LocalGit{Branch: "main", SHA: shaLocal}
	detached := &scope.LocalGit{SHA: shaLocal}

	cases := []struct {
		name string
		in   scope.Input
		want view
		src  map[string]string // sources that must be exactly these (a subset)
		code errs.Code         // the error code, when an error is wanted
	}{
		// ---- nothing known, local git ----
		{name: "nothing known at all", in: scope.Input{}, code: errs.USAGE},
		{name: "local branch", in: scope.Input{Local: onFeat},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaLocal, ShortSHA: "3434343", Repo: "acme/local"},
			src:  map[string]string{"scope": "git:HEAD", "git.sha": "git:HEAD", "repo": "git:origin", "env": "default"}},
		{name: "local main, default unknown", in: scope.Input{Local: onMain},
			want: view{Scope: "main", Branch: "main", SHA: shaLocal, ShortSHA: "3434343"}},
		{name: "local master, default unknown", in: scope.Input{Local: &scope.LocalGit{Branch: "master", SHA: shaLocal}},
			want: view{Scope: "main", Branch: "master", SHA: shaLocal, ShortSHA: "3434343"}},
		{name: "local main while origin/HEAD is develop", in: scope.Input{Local: &scope.LocalGit{Branch: "main", SHA: shaLocal, DefaultBranch: "develop"}},
			want: view{Scope: "branch-main", Branch: "main", SHA: shaLocal, ShortSHA: "3434343", DefaultBranch: "develop"},
			src:  map[string]string{"default_branch": "git:origin/HEAD"}},
		{name: "local develop is origin/HEAD", in: scope.Input{Local: &scope.LocalGit{Branch: "develop", SHA: shaLocal, DefaultBranch: "develop"}},
			want: view{Scope: "main", Branch: "develop", SHA: shaLocal, ShortSHA: "3434343", DefaultBranch: "develop"}},
		{name: "local detached HEAD: no scope", in: scope.Input{Local: detached}, code: errs.USAGE},
		{name: "detached HEAD with --branch takes HEAD's commit", in: scope.Input{Local: detached, Branch: str("feat/y")},
			want: view{Scope: "branch-feat-y", Branch: "feat/y", SHA: shaLocal, ShortSHA: "3434343"},
			src:  map[string]string{"git.branch": "flag", "git.sha": "git:HEAD"}},
		{name: "--branch other than HEAD's: HEAD's commit is not used", in: scope.Input{Local: onFeat, Branch: str("other")},
			want: view{Scope: "branch-other", Branch: "other", Repo: "acme/local"}},
		{name: "repository with no commits", in: scope.Input{Local: &scope.LocalGit{Branch: "wip"}},
			want: view{Scope: "branch-wip", Branch: "wip"}},
		{name: "Input.DefaultBranch outranks origin/HEAD", in: scope.Input{DefaultBranch: "trunk", Local: &scope.LocalGit{Branch: "trunk", DefaultBranch: "main"}},
			want: view{Scope: "main", Branch: "trunk", DefaultBranch: "trunk"}, src: map[string]string{"default_branch": "input:DefaultBranch"}},

		// ---- SPONSON_CTX_* over local git, flags over SPONSON_CTX_* ----
		{name: "SPONSON_CTX_BRANCH over local git", in: scope.Input{Local: onFeat, LookupEnv: envOf("SPONSON_CTX_BRANCH", "ctx/b")},
			want: view{Scope: "branch-ctx-b", Branch: "ctx/b", Repo: "acme/local"}, src: map[string]string{"git.branch": "env:SPONSON_CTX_BRANCH"}},
		{name: "SPONSON_CTX_BRANCH equal to HEAD keeps HEAD's commit", in: scope.Input{Local: onFeat, LookupEnv: envOf("SPONSON_CTX_BRANCH", "feat/x")},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaLocal, ShortSHA: "3434343", Repo: "acme/local"}},
		{name: "--branch over SPONSON_CTX_BRANCH", in: scope.Input{Branch: str("flag/b"), LookupEnv: envOf("SPONSON_CTX_BRANCH", "ctx/b")},
			want: view{Scope: "branch-flag-b", Branch: "flag/b"}},
		{name: "SPONSON_CTX_SHA over local git", in: scope.Input{Local: onFeat, LookupEnv: envOf("SPONSON_CTX_SHA", shaCtx)},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaCtx, ShortSHA: "1212121", Repo: "acme/local"}, src: map[string]string{"git.sha": "env:SPONSON_CTX_SHA"}},
		{name: "--sha over SPONSON_CTX_SHA", in: scope.Input{Local: onFeat, SHA: str(shaFlag), LookupEnv: envOf("SPONSON_CTX_SHA", shaCtx)},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaFlag, ShortSHA: "efefefe", Repo: "acme/local"}, src: map[string]string{"git.sha": "flag"}},
		{name: "SPONSON_CTX_PR locally", in: scope.Input{Local: onFeat, LookupEnv: envOf("SPONSON_CTX_PR", "7")},
			want: view{Scope: "pr-7", PR: num(7), Branch: "feat/x", SHA: shaLocal, ShortSHA: "3434343", Repo: "acme/local"}, src: map[string]string{"scope": "env:SPONSON_CTX_PR"}},
		{name: "--pr over SPONSON_CTX_PR", in: scope.Input{Local: onFeat, PR: str("9"), LookupEnv: envOf("SPONSON_CTX_PR", "7")},
			want: view{Scope: "pr-9", PR: num(9), Branch: "feat/x", SHA: shaLocal, ShortSHA: "3434343", Repo: "acme/local"}, src: map[string]string{"pr.number": "flag"}},
		{name: "--pr over SPONSON_CTX_PR empty", in: scope.Input{PR: str("9"), LookupEnv: envOf("SPONSON_CTX_PR", "")},
			want: view{Scope: "pr-9", PR: num(9)}},
		{name: "SPONSON_CTX_ENV", in: scope.Input{Local: onMain, LookupEnv: envOf("SPONSON_CTX_ENV", "staging")},
			want: view{Env: "staging", Scope: "main", Branch: "main", SHA: shaLocal, ShortSHA: "3434343"}, src: map[string]string{"env": "env:SPONSON_CTX_ENV"}},
		{name: "--env over SPONSON_CTX_ENV", in: scope.Input{Env: str("production"), Local: onMain, LookupEnv: envOf("SPONSON_CTX_ENV", "staging")},
			want: view{Env: "production", Scope: "main", Branch: "main", SHA: shaLocal, ShortSHA: "3434343"}, src: map[string]string{"env": "flag"}},
		{name: "empty SPONSON_CTX_ENV and SPONSON_CTX_BRANCH count as unset", in: scope.Input{Local: onMain, LookupEnv: envOf("SPONSON_CTX_ENV", "", "SPONSON_CTX_BRANCH", "  ")},
			want: view{Scope: "main", Branch: "main", SHA: shaLocal, ShortSHA: "3434343"}},
		{name: "--branch refs/heads/x is x", in: scope.Input{Branch: str("refs/heads/feat/y")},
			want: view{Scope: "branch-feat-y", Branch: "feat/y"}},
		{name: "--sha of 64 digits, upper case", in: scope.Input{Branch: str("b"), SHA: str(strings.ToUpper(sha256))},
			want: view{Scope: "branch-b", Branch: "b", SHA: sha256, ShortSHA: "9a9a9a9"}},
		{name: "--repo", in: scope.Input{Branch: str("b"), Repo: str("acme/other")},
			want: view{Scope: "branch-b", Branch: "b", Repo: "acme/other"}},

		// ---- invalid explicit values ----
		{name: "--pr abc", in: scope.Input{PR: str("abc"), Branch: str("b")}, code: errs.USAGE},
		{name: "--pr 0", in: scope.Input{PR: str("0")}, code: errs.USAGE},
		{name: "--pr -3", in: scope.Input{PR: str("-3")}, code: errs.USAGE},
		{name: "--pr +3", in: scope.Input{PR: str("+3")}, code: errs.USAGE},
		{name: "--pr empty", in: scope.Input{PR: str("")}, code: errs.USAGE},
		{name: "SPONSON_CTX_PR=abc", in: scope.Input{Branch: str("b"), LookupEnv: envOf("SPONSON_CTX_PR", "abc")}, code: errs.USAGE},
		{name: "--sha too short", in: scope.Input{Branch: str("b"), SHA: str("abc1234")}, code: errs.USAGE},
		{name: "--sha not hex", in: scope.Input{Branch: str("b"), SHA: str(strings.Repeat("g", 40))}, code: errs.USAGE},
		{name: "--sha empty", in: scope.Input{Branch: str("b"), SHA: str("")}, code: errs.USAGE},
		{name: "SPONSON_CTX_SHA malformed", in: scope.Input{Branch: str("b"), LookupEnv: envOf("SPONSON_CTX_SHA", "HEAD")}, code: errs.USAGE},
		{name: "--branch empty", in: scope.Input{Branch: str(""), Local: onFeat}, code: errs.USAGE},
		{name: "--branch blank", in: scope.Input{Branch: str("  ")}, code: errs.USAGE},
		{name: "--env empty", in: scope.Input{Env: str(""), Branch: str("b")}, code: errs.USAGE},
		{name: "--repo not owner/name", in: scope.Input{Branch: str("b"), Repo: str("shop")}, code: errs.USAGE},
		{name: "--branch with .. gives no valid ref", in: scope.Input{Branch: str("a..b")}, code: errs.BRANCH_INVALID},
		{name: "--branch ending in .lock gives no valid ref", in: scope.Input{Branch: str("x.lock")}, code: errs.BRANCH_INVALID},

		// ---- branch names through Compute ----
		{name: "slashes", in: scope.Input{Branch: str("feat/a/b")}, want: view{Scope: "branch-feat-a-b", Branch: "feat/a/b"}},
		{name: "consecutive specials", in: scope.Input{Branch: str("fix--this/+now!")}, want: view{Scope: "branch-fix--this-now-", Branch: "fix--this/+now!"}},
		{name: "spaces are no branch name", in: scope.Input{Branch: str("fix  this//now!")}, code: errs.BRANCH_INVALID},
		{name: "unicode", in: scope.Input{Branch: str("café/ñandú")}, want: view{Scope: "branch-caf-and-", Branch: "café/ñandú"}},
		{name: "dots and underscores kept", in: scope.Input{Branch: str("release_1.2.x")}, want: view{Scope: "branch-release_1.2.x", Branch: "release_1.2.x"}},
		{name: "leading and trailing specials", in: scope.Input{Branch: str("+lead/trail!")}, want: view{Scope: "branch--lead-trail-", Branch: "+lead/trail!"}},
		{name: "leading and trailing slashes are no branch name", in: scope.Input{Branch: str("/lead/trail/")}, code: errs.BRANCH_INVALID},
		{name: "--branch main is the main scope", in: scope.Input{Branch: str("main")}, want: view{Scope: "main", Branch: "main"}},

		// ---- pull requests ----
		{name: "pull_request: head ref and head sha, not the merge commit",
			in:   scope.Input{LookupEnv: actions("pull_request", "GITHUB_SHA", shaMerge, "GITHUB_REF", "refs/pull/2/merge", "GITHUB_HEAD_REF", "feat/x"), Event: prPayload(2, "feat/x", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "pr-2", PR: num(2), Branch: "feat/x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"},
			src:  map[string]string{"scope": "event:pull_request.number", "git.sha": "event:pull_request.head.sha", "git.branch": "event:pull_request.head.ref", "repo": "event:repository.full_name", "default_branch": "event:repository.default_branch"}},
		{name: "pull_request_target", in: scope.Input{LookupEnv: actions("pull_request_target", "GITHUB_SHA", shaMerge), Event: prPayload(3, "x", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "pr-3", PR: num(3), Branch: "x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"}},
		{name: "pull_request_review", in: scope.Input{EventName: "pull_request_review", Event: prPayload(4, "x", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "pr-4", PR: num(4), Branch: "x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"}},
		{name: "pull_request_review_comment", in: scope.Input{EventName: "pull_request_review_comment", Event: prPayload(5, "x", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "pr-5", PR: num(5), Branch: "x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"}},
		{name: "fork", in: scope.Input{LookupEnv: actions("pull_request"), Event: prPayload(6, "patch-1", shaHead, "stranger/shop", "acme/shop", "main")},
			want: view{Scope: "pr-6", PR: num(6), Branch: "patch-1", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", Fork: true, HeadRepo: "stranger/shop"},
			src:  map[string]string{"fork": "event:pull_request.head.repo.full_name"}},
		{name: "fork whose repository was deleted", in: scope.Input{EventName: "pull_request_target", Event: prPayload(7, "patch-1", shaHead, "", "acme/shop", "main")},
			want: view{Scope: "pr-7", PR: num(7), Branch: "patch-1", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", Fork: true}},
		{name: "same repository in another case is not a fork", in: scope.Input{EventName: "pull_request", Event: prPayload(8, "x", shaHead, "ACME/Shop", "acme/shop", "main")},
			want: view{Scope: "pr-8", PR: num(8), Branch: "x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "ACME/Shop"}},
		{name: "SPONSON_CTX_PR empty turns the event's PR into its head branch",
			in:   scope.Input{LookupEnv: actions("pull_request", "SPONSON_CTX_PR", "", "GITHUB_SHA", shaMerge), Event: prPayload(2, "feat/x", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"},
			src:  map[string]string{"pr.number": "env:SPONSON_CTX_PR", "scope": "event:pull_request.head.ref"}},
		{name: "SPONSON_CTX_PR empty, head is the default branch", in: scope.Input{LookupEnv: actions("pull_request", "SPONSON_CTX_PR", ""), Event: prPayload(2, "main", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "main", Branch: "main", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"}},
		{name: "--pr naming the event's PR", in: scope.Input{PR: str("2"), LookupEnv: actions("pull_request"), Event: prPayload(2, "x", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "pr-2", PR: num(2), Branch: "x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"}},
		{name: "--pr naming another PR drops the event's head", in: scope.Input{PR: str("9"), LookupEnv: actions("pull_request"), Event: prPayload(2, "x", shaHead, "stranger/shop", "acme/shop", "main")},
			want: view{Scope: "pr-9", PR: num(9), Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "--branch in a PR keeps the PR and its head commit", in: scope.Input{Branch: str("renamed"), LookupEnv: actions("pull_request"), Event: prPayload(2, "x", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "pr-2", PR: num(2), Branch: "renamed", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"}},
		{name: "pull_request without payload: GITHUB_REF and GITHUB_HEAD_REF, never GITHUB_SHA",
			in:   scope.Input{LookupEnv: actions("pull_request", "GITHUB_REF", "refs/pull/12/merge", "GITHUB_HEAD_REF", "feat/z", "GITHUB_SHA", shaMerge)},
			want: view{Scope: "pr-12", PR: num(12), Branch: "feat/z", Repo: "acme/shop"},
			src:  map[string]string{"pr.number": "env:GITHUB_REF", "git.branch": "env:GITHUB_HEAD_REF", "repo": "env:GITHUB_REPOSITORY"}},
		{name: "pull_request without payload or refs/pull", in: scope.Input{LookupEnv: actions("pull_request", "GITHUB_REF", "refs/heads/x")}, code: errs.USAGE},
		{name: "inside an event local git is not consulted", in: scope.Input{Local: onMain, LookupEnv: actions("pull_request"), Event: prPayload(2, "x", shaHead, "acme/shop", "acme/shop", "main")},
			want: view{Scope: "pr-2", PR: num(2), Branch: "x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main", HeadRepo: "acme/shop"}},

		// ---- issue_comment ----
		{name: "issue_comment on a pull request: no head ref or sha in the payload",
			in:   scope.Input{LookupEnv: actions("issue_comment", "GITHUB_SHA", shaMerge, "GITHUB_REF", "refs/heads/main"), Event: issueCommentPayload(31, true)},
			want: view{Scope: "pr-31", PR: num(31), Repo: "acme/shop", DefaultBranch: "main"},
			src:  map[string]string{"pr.number": "event:issue.number"}},
		{name: "issue_comment on a pull request, caller passes head branch and sha",
			in:   scope.Input{Branch: str("feat/c"), SHA: str(shaHead), LookupEnv: actions("issue_comment"), Event: issueCommentPayload(31, true)},
			want: view{Scope: "pr-31", PR: num(31), Branch: "feat/c", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "issue_comment on an issue", in: scope.Input{LookupEnv: actions("issue_comment", "GITHUB_REF", "refs/heads/main"), Event: issueCommentPayload(31, false)}, code: errs.USAGE},
		{name: "issue_comment on an issue, --pr given", in: scope.Input{PR: str("3"), LookupEnv: actions("issue_comment"), Event: issueCommentPayload(31, false)},
			want: view{Scope: "pr-3", PR: num(3), Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "issue_comment without payload", in: scope.Input{LookupEnv: actions("issue_comment", "GITHUB_REF", "refs/heads/main")}, code: errs.USAGE},

		// ---- push ----
		{name: "push to the default branch", in: scope.Input{LookupEnv: actions("push", "GITHUB_SHA", shaPush), Event: pushPayload("refs/heads/main", shaOld, shaPush, false, "main")},
			want: view{Scope: "main", Branch: "main", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop", DefaultBranch: "main"},
			src:  map[string]string{"git.sha": "event:after", "scope": "event:ref"}},
		{name: "push to another branch", in: scope.Input{LookupEnv: actions("push"), Event: pushPayload("refs/heads/feat/x", shaOld, shaPush, false, "main")},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "push to master when the default is develop", in: scope.Input{EventName: "push", Event: pushPayload("refs/heads/master", shaOld, shaPush, false, "develop")},
			want: view{Scope: "branch-master", Branch: "master", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop", DefaultBranch: "develop"}},
		{name: "push to develop when the default is develop", in: scope.Input{EventName: "push", Event: pushPayload("refs/heads/develop", shaOld, shaPush, false, "develop")},
			want: view{Scope: "main", Branch: "develop", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop", DefaultBranch: "develop"}},
		{name: "push to master, default unknown", in: scope.Input{EventName: "push", Event: pushPayload("refs/heads/master", shaOld, shaPush, false, "")},
			want: view{Scope: "main", Branch: "master", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop"}},
		{name: "push to trunk, default unknown", in: scope.Input{EventName: "push", Event: pushPayload("refs/heads/trunk", shaOld, shaPush, false, "")},
			want: view{Scope: "branch-trunk", Branch: "trunk", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop"}},
		{name: "push of a tag", in: scope.Input{LookupEnv: actions("push", "GITHUB_REF", "refs/tags/v1"), Event: pushPayload("refs/tags/v1", zeros, shaPush, false, "main")}, code: errs.USAGE},
		{name: "push of a tag with --pr", in: scope.Input{PR: str("4"), EventName: "push", Event: pushPayload("refs/tags/v1", zeros, shaPush, false, "main")},
			want: view{Scope: "pr-4", PR: num(4), Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "push deleting a branch", in: scope.Input{EventName: "push", Event: pushPayload("refs/heads/feat/gone", shaOld, zeros, true, "main")},
			want: view{Scope: "branch-feat-gone", Branch: "feat/gone", SHA: shaOld, ShortSHA: "7878787", Repo: "acme/shop", DefaultBranch: "main", Deleted: true},
			src:  map[string]string{"git.sha": "event:before"}},
		{name: "push without payload uses GITHUB_REF and GITHUB_SHA", in: scope.Input{LookupEnv: actions("push", "GITHUB_REF", "refs/heads/feat/e", "GITHUB_SHA", shaPush)},
			want: view{Scope: "branch-feat-e", Branch: "feat/e", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop"},
			src:  map[string]string{"git.branch": "env:GITHUB_REF", "git.sha": "env:GITHUB_SHA"}},
		{name: "push with --branch of another branch drops the pushed commit", in: scope.Input{Branch: str("other"), EventName: "push", Event: pushPayload("refs/heads/feat/x", shaOld, shaPush, false, "main")},
			want: view{Scope: "branch-other", Branch: "other", Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "push with --pr: the pushed branch is the PR's", in: scope.Input{PR: str("5"), EventName: "push", Event: pushPayload("refs/heads/feat/x", shaOld, shaPush, false, "main")},
			want: view{Scope: "pr-5", PR: num(5), Branch: "feat/x", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "--branch naming the default branch from the payload", in: scope.Input{Branch: str("develop"), EventName: "push", Event: pushPayload("refs/heads/develop", shaOld, shaPush, false, "develop")},
			want: view{Scope: "main", Branch: "develop", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop", DefaultBranch: "develop"}},
		{name: "delete event of a branch", in: scope.Input{EventName: "delete", Event: mustJSON(obj{"ref": "feat/d", "ref_type": "branch", "repository": repository("acme/shop", "main")})},
			want: view{Scope: "branch-feat-d", Branch: "feat/d", Repo: "acme/shop", DefaultBranch: "main", Deleted: true}},
		{name: "delete event of a tag", in: scope.Input{EventName: "delete", Event: mustJSON(obj{"ref": "v1", "ref_type": "tag"})}, code: errs.USAGE},

		// ---- schedule, workflow_dispatch ----
		{name: "schedule", in: scope.Input{Local: onMain, LookupEnv: actions("schedule", "GITHUB_REF", "refs/heads/main", "GITHUB_SHA", shaPush), Event: mustJSON(obj{"schedule": "0 * * * *"})}, code: errs.USAGE},
		{name: "schedule with --branch of its branch keeps GITHUB_SHA", in: scope.Input{Branch: str("main"), LookupEnv: actions("schedule", "GITHUB_REF", "refs/heads/main", "GITHUB_SHA", shaPush)},
			want: view{Scope: "main", Branch: "main", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop"}},
		{name: "schedule with --branch of another branch: no commit", in: scope.Input{Branch: str("x"), LookupEnv: actions("schedule", "GITHUB_REF", "refs/heads/main", "GITHUB_SHA", shaPush)},
			want: view{Scope: "branch-x", Branch: "x", Repo: "acme/shop"}},
		{name: "workflow_dispatch on a branch", in: scope.Input{LookupEnv: actions("workflow_dispatch", "GITHUB_REF", "refs/heads/feat/w", "GITHUB_SHA", shaPush), Event: dispatchPayload("refs/heads/feat/w")},
			want: view{Scope: "branch-feat-w", Branch: "feat/w", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "workflow_dispatch on the default branch", in: scope.Input{LookupEnv: actions("workflow_dispatch", "GITHUB_REF", "refs/heads/main", "GITHUB_SHA", shaPush), Event: dispatchPayload("refs/heads/main")},
			want: view{Scope: "main", Branch: "main", SHA: shaPush, ShortSHA: "5656565", Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "workflow_dispatch on a tag", in: scope.Input{LookupEnv: actions("workflow_dispatch", "GITHUB_REF", "refs/tags/v2", "GITHUB_SHA", shaPush), Event: dispatchPayload("refs/tags/v2")}, code: errs.USAGE},
		{name: "workflow_dispatch on a tag with --branch", in: scope.Input{Branch: str("hotfix"), LookupEnv: actions("workflow_dispatch", "GITHUB_REF", "refs/tags/v2", "GITHUB_SHA", shaPush), Event: dispatchPayload("refs/tags/v2")},
			want: view{Scope: "branch-hotfix", Branch: "hotfix", Repo: "acme/shop", DefaultBranch: "main"}},

		// ---- deployment_status ----
		{name: "deployment_status without its PR: the deployed branch", in: scope.Input{EventName: "deployment_status", Event: deploymentPayload("feat/x", shaHead)},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main"},
			src:  map[string]string{"git.branch": "event:deployment.ref", "git.sha": "event:deployment.sha"}},
		{name: "deployment_status with its open PR", in: scope.Input{EventName: "deployment_status", Event: deploymentPayload("feat/x", shaHead), DeploymentPR: num(12)},
			want: view{Scope: "pr-12", PR: num(12), Branch: "feat/x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main"},
			src:  map[string]string{"pr.number": "input:DeploymentPR"}},
		{name: "deployment_status of a bare commit, no PR", in: scope.Input{EventName: "deployment_status", Event: deploymentPayload(shaHead, shaHead)}, code: errs.USAGE},
		{name: "deployment_status of a bare commit with its PR", in: scope.Input{EventName: "deployment_status", Event: deploymentPayload(shaHead, shaHead), DeploymentPR: num(12)},
			want: view{Scope: "pr-12", PR: num(12), SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "deployment_status in Actions of a tag (GITHUB_REF)", in: scope.Input{LookupEnv: actions("deployment_status", "GITHUB_REF", "refs/tags/v1"), Event: deploymentPayload("v1", shaHead)}, code: errs.USAGE},
		{name: "deployment_status in Actions of a branch (GITHUB_REF)", in: scope.Input{LookupEnv: actions("deployment_status", "GITHUB_REF", "refs/heads/main"), Event: deploymentPayload("main", shaHead)},
			want: view{Scope: "main", Branch: "main", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main"},
			src:  map[string]string{"git.branch": "env:GITHUB_REF"}},
		{name: "SPONSON_CTX_PR empty beats DeploymentPR", in: scope.Input{LookupEnv: envOf("SPONSON_CTX_PR", ""), EventName: "deployment_status", Event: deploymentPayload("feat/x", shaHead), DeploymentPR: num(12)},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaHead, ShortSHA: "abababa", Repo: "acme/shop", DefaultBranch: "main"}},
		{name: "DeploymentPR for another event is a caller bug", in: scope.Input{EventName: "push", Event: pushPayload("refs/heads/x", shaOld, shaPush, false, "main"), DeploymentPR: num(3)}, code: errs.INTERNAL},
		{name: "DeploymentPR outside GitHub is a caller bug", in: scope.Input{Branch: str("x"), DeploymentPR: num(3)}, code: errs.INTERNAL},

		// ---- events with no scope, the GitHub layer's boundaries ----
		{name: "ping", in: scope.Input{EventName: "ping", Event: mustJSON(obj{"zen": "z", "repository": repository("acme/shop", "main")})}, code: errs.USAGE},
		{name: "installation", in: scope.Input{EventName: "installation", Event: mustJSON(obj{"action": "created"})}, code: errs.USAGE},
		{name: "an event with no rule", in: scope.Input{LookupEnv: actions("release", "GITHUB_REF", "refs/heads/main"), Event: mustJSON(obj{"action": "published"})}, code: errs.USAGE},
		{name: "an event with no rule and --pr", in: scope.Input{PR: str("1"), LookupEnv: actions("release"), Event: mustJSON(obj{"action": "published"})},
			want: view{Scope: "pr-1", PR: num(1), Repo: "acme/shop"}},
		{name: "GitHub Actions without an event name", in: scope.Input{Local: onMain, LookupEnv: envOf("GITHUB_ACTIONS", "true")}, code: errs.USAGE},
		{name: "GITHUB_* without GITHUB_ACTIONS=true are ignored", in: scope.Input{Local: onFeat, LookupEnv: envOf("GITHUB_EVENT_NAME", "push", "GITHUB_REF", "refs/heads/main", "GITHUB_SHA", shaPush, "GITHUB_REPOSITORY", "acme/shop")},
			want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaLocal, ShortSHA: "3434343", Repo: "acme/local"}},
		{name: "a payload without an event name", in: scope.Input{Event: pushPayload("refs/heads/x", shaOld, shaPush, false, "main")}, code: errs.USAGE},
		{name: "a payload that is not JSON", in: scope.Input{EventName: "push", Event: []byte("{not json")}, code: errs.USAGE},
	}

	names := map[string]bool{}
	for _, tc := range cases {
		if names[tc.name] {
			t.Fatalf("duplicate row name %q", tc.name)
		}
		names[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			got, err := scope.Compute(tc.in)
			if tc.code != "" {
				if err == nil {
					t.Fatalf("want %s, got no error and scope %q", tc.code, got.Scope)
				}
				if !errors.Is(err, tc.code) {
					t.Fatalf("want %s, got %v", tc.code, err)
				}
				if tc.code == errs.USAGE && strings.HasPrefix(errs.As(err).Message, "no scope") &&
					!(strings.Contains(errs.As(err).HintText(), "--pr") && strings.Contains(errs.As(err).HintText(), "--branch")) {
					t.Errorf("the hint does not name --pr and --branch: %q", errs.As(err).HintText())
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			want := tc.want
			if want.Env == "" {
				want.Env = "preview"
			}
			if d := diff(t, want, viewOf(got)); d != "" {
				t.Errorf("Compute (-want +got):\n%s\nreason: %s\nsources: %v\nnotes: %q", d, got.Reason, got.Sources, got.Notes)
			}
			for k, v := range tc.src {
				if got.Sources[k] != v {
					t.Errorf("sources[%q] = %q, want %q (all: %v)", k, got.Sources[k], v, got.Sources)
				}
			}
			checkInvariants(t, got)
		})
	}
}

// checkInvariants holds for every Ctx Compute returns.
func checkInvariants(t *testing.T, c scope.Ctx) {
	t.Helper()
	if err := scope.Validate(c.Scope); err != nil {
		t.Errorf("invalid scope %q: %v", c.Scope, err)
	}
	if (c.PR.Number != nil) != strings.HasPrefix(c.Scope, "pr-") {
		t.Errorf("scope %q with pr.number %v", c.Scope, c.PR.Number)
	}
	if c.Reason == "" {
		t.Error("no reason given")
	}
	for _, k := range []string{"env", "scope"} {
		if c.Sources[k] == "" {
			t.Errorf("no source for %s: %v", k, c.Sources)
		}
	}
	if c.Git.SHA != "" && (c.Sources["git.sha"] == "" || c.Git.ShortSHA != c.Git.SHA[:7]) {
		t.Errorf("sha %q short %q source %q", c.Git.SHA, c.Git.ShortSHA, c.Sources["git.sha"])
	}
	if c.Git.Branch != "" && c.Sources["git.branch"] == "" {
		t.Errorf("branch %q without a source", c.Git.Branch)
	}
}

func TestComputeNotesExplainDroppedValues(t *testing.T) {
	got, err := scope.Compute(scope.Input{Branch: str("other"), Local: &scope.LocalGit{Branch: "feat/x", SHA: shaLocal}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Git.SHA != "" || len(got.Notes) != 1 || !strings.Contains(got.Notes[0], `"feat/x"`) {
		t.Errorf("sha %q, notes %q: want no sha and one note naming HEAD's branch", got.Git.SHA, got.Notes)
	}
}

func TestComputeNoScopeMessages(t *testing.T) {
	cases := []struct {
		in   scope.Input
		want string // part of the message
	}{
		{scope.Input{}, "nothing names one"},
		{scope.Input{Local: &scope.LocalGit{SHA: shaLocal}}, "detached"},
		{scope.Input{EventName: "push", Event: pushPayload("refs/tags/v1", zeros, shaPush, false, "main")}, "tag v1"},
		{scope.Input{EventName: "schedule"}, "schedule"},
		{scope.Input{EventName: "issue_comment", Event: issueCommentPayload(8, false)}, "issue #8"},
		{scope.Input{EventName: "ping"}, "ping"},
	}
	for _, tc := range cases {
		_, err := scope.Compute(tc.in)
		e := errs.As(err)
		if e == nil || e.Code != errs.USAGE || !strings.Contains(e.Message, tc.want) {
			t.Errorf("Compute(%+v) = %v, want USAGE mentioning %q", tc.in, err, tc.want)
		}
	}
}

// FuzzComputeBranch: any --branch gives USAGE, BRANCH_INVALID or a valid scope, never a
// panic or a scope that cannot name a receipt branch.
func FuzzComputeBranch(f *testing.F) {
	for _, s := range []string{"feat/x", "main", "a..b", "x.lock", "ü", " ", "refs/heads/", "-", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, branch string) {
		c, err := scope.Compute(scope.Input{Branch: &branch})
		if err != nil {
			if !errors.Is(err, errs.USAGE) && !errors.Is(err, errs.BRANCH_INVALID) {
				t.Fatalf("--branch %q: %v, want USAGE, BRANCH_INVALID or a scope", branch, err)
			}
			return
		}
		if err := scope.Validate(c.Scope); err != nil {
			t.Fatalf("--branch %q gives invalid scope %q: %v", branch, c.Scope, err)
		}
	})
}
