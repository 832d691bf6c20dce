package scope_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

// The variables of each host, as its documentation lists them, give the
// scope, branch, commit, repository and fork; each value says where it came
// from. GitLab: "Predefined CI/CD variables reference"; CircleCI: "Project
// values and variables"; Bitbucket Pipelines: "Variables and secrets".
func TestComputeOtherCIHosts(t *testing.T) {
	gitlab := func(kv ...string) []string {
		return append([]string{"CI", "true", "GITLAB_CI", "true", "CI_PROJECT_PATH", "acme/shop", "CI_DEFAULT_BRANCH", "trunk", "CI_COMMIT_SHA", shaMerge}, kv...)
	}
	circle := func(kv ...string) []string {
		return append([]string{"CI", "true", "CIRCLECI", "true", "CIRCLE_PROJECT_USERNAME", "acme", "CIRCLE_PROJECT_REPONAME", "shop", "CIRCLE_SHA1", shaHead}, kv...)
	}
	bitbucket := func(kv ...string) []string {
		return append([]string{"CI", "true", "BITBUCKET_BUILD_NUMBER", "42", "BITBUCKET_REPO_FULL_NAME", "acme/shop", "BITBUCKET_COMMIT", shaHead}, kv...)
	}
	for _, tc := range []struct {
		name    string
		env     []string
		in      scope.Input
		ci      string
		want    view
		sources map[string]string
		note    string
		code    errs.Code
	}{
		{name: "gitlab merged results pipeline: the head is _SOURCE_BRANCH_SHA, not the merge commit",
			env: gitlab("CI_PIPELINE_SOURCE", "merge_request_event", "CI_MERGE_REQUEST_IID", "17", "CI_MERGE_REQUEST_EVENT_TYPE", "merged_result",
				"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "feat/login", "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", shaHead, "CI_COMMIT_REF_NAME", "feat/login",
				"CI_MERGE_REQUEST_PROJECT_ID", "7", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID", "7", "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH", "acme/shop"),
			ci:   "gitlab-ci",
			want: view{Scope: "pr-17", PR: num(17), Branch: "feat/login", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop", DefaultBranch: "trunk", HeadRepo: "acme/shop"},
			sources: map[string]string{"pr.number": "env:CI_MERGE_REQUEST_IID", "git.branch": "env:CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
				"git.sha": "env:CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", "repo": "env:CI_PROJECT_PATH", "default_branch": "env:CI_DEFAULT_BRANCH", "fork": "env:CI_MERGE_REQUEST_SOURCE_PROJECT_ID"}},
		{name: "gitlab detached merge request pipeline: CI_COMMIT_SHA is the head",
			env: gitlab("CI_MERGE_REQUEST_IID", "17", "CI_MERGE_REQUEST_EVENT_TYPE", "detached", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "feat/login"),
			ci:  "gitlab-ci", want: view{Scope: "pr-17", PR: num(17), Branch: "feat/login", SHA: shaMerge, ShortSHA: shaMerge[:7], Repo: "acme/shop", DefaultBranch: "trunk"},
			sources: map[string]string{"git.sha": "env:CI_COMMIT_SHA"}},
		{name: "gitlab merge request from a fork",
			env: gitlab("CI_MERGE_REQUEST_IID", "18", "CI_MERGE_REQUEST_EVENT_TYPE", "detached", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "fix",
				"CI_MERGE_REQUEST_PROJECT_ID", "7", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID", "99", "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH", "stranger/shop"),
			ci: "gitlab-ci", want: view{Scope: "pr-18", PR: num(18), Branch: "fix", SHA: shaMerge, ShortSHA: shaMerge[:7], Repo: "acme/shop", DefaultBranch: "trunk", Fork: true, HeadRepo: "stranger/shop"}},
		{name: "gitlab merge train without a head commit: sha unknown, said why",
			env: gitlab("CI_MERGE_REQUEST_IID", "19", "CI_MERGE_REQUEST_EVENT_TYPE", "merge_train", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "feat/y"),
			ci:  "gitlab-ci", want: view{Scope: "pr-19", PR: num(19), Branch: "feat/y", Repo: "acme/shop", DefaultBranch: "trunk"},
			note: "GitLab sets no head commit"},
		{name: "gitlab external pull request",
			env: gitlab("CI_EXTERNAL_PULL_REQUEST_IID", "5", "CI_EXTERNAL_PULL_REQUEST_SOURCE_BRANCH_NAME", "feat/z", "CI_EXTERNAL_PULL_REQUEST_SOURCE_BRANCH_SHA", shaHead),
			ci:  "gitlab-ci", want: view{Scope: "pr-5", PR: num(5), Branch: "feat/z", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop", DefaultBranch: "trunk"},
			sources: map[string]string{"pr.number": "env:CI_EXTERNAL_PULL_REQUEST_IID"}},
		{name: "gitlab branch pipeline on the default branch",
			env: gitlab("CI_PIPELINE_SOURCE", "push", "CI_COMMIT_BRANCH", "trunk", "CI_COMMIT_REF_NAME", "trunk"),
			ci:  "gitlab-ci", want: view{Scope: "main", Branch: "trunk", SHA: shaMerge, ShortSHA: shaMerge[:7], Repo: "acme/shop", DefaultBranch: "trunk"},
			sources: map[string]string{"scope": "env:CI_COMMIT_BRANCH", "git.sha": "env:CI_COMMIT_SHA"}},
		{name: "gitlab branch from CI_COMMIT_REF_NAME alone",
			env: gitlab("CI_COMMIT_REF_NAME", "feat/x"),
			ci:  "gitlab-ci", want: view{Scope: "branch-feat-x", Branch: "feat/x", SHA: shaMerge, ShortSHA: shaMerge[:7], Repo: "acme/shop", DefaultBranch: "trunk"},
			sources: map[string]string{"git.branch": "env:CI_COMMIT_REF_NAME"}},
		{name: "gitlab tag pipeline: no scope", env: gitlab("CI_COMMIT_TAG", "v1.2.0", "CI_COMMIT_REF_NAME", "v1.2.0"), code: errs.USAGE, note: "the tag v1.2.0"},
		{name: "gitlab project in a subgroup: no repo, said why",
			env: []string{"GITLAB_CI", "true", "CI_PROJECT_PATH", "acme/web/shop", "CI_COMMIT_BRANCH", "feat/x"},
			ci:  "gitlab-ci", want: view{Scope: "branch-feat-x", Branch: "feat/x"}, note: "CI_PROJECT_PATH \"acme/web/shop\" is not owner/name"},

		{name: "circleci pull request of the repository's own branch",
			env: circle("CIRCLE_BRANCH", "feat/login", "CIRCLE_PULL_REQUEST", "https://github.com/acme/shop/pull/23", "CIRCLE_PULL_REQUESTS", "https://github.com/acme/shop/pull/23"),
			ci:  "circleci", want: view{Scope: "pr-23", PR: num(23), Branch: "feat/login", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop"},
			sources: map[string]string{"pr.number": "env:CIRCLE_PULL_REQUEST", "git.branch": "env:CIRCLE_BRANCH", "git.sha": "env:CIRCLE_SHA1", "repo": "env:CIRCLE_PROJECT_USERNAME", "fork": "env:CIRCLE_PR_USERNAME"}},
		{name: "circleci pull request from a fork",
			env: circle("CIRCLE_BRANCH", "pull/24", "CIRCLE_PR_NUMBER", "24", "CIRCLE_PR_USERNAME", "stranger", "CIRCLE_PR_REPONAME", "shop", "CIRCLE_PULL_REQUEST", "https://github.com/acme/shop/pull/24"),
			ci:  "circleci", want: view{Scope: "pr-24", PR: num(24), Branch: "pull/24", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop", Fork: true, HeadRepo: "stranger/shop"},
			sources: map[string]string{"pr.number": "env:CIRCLE_PR_NUMBER"}},
		{name: "circleci branch with two pull requests: none is taken",
			env: circle("CIRCLE_BRANCH", "feat/two", "CIRCLE_PULL_REQUEST", "https://github.com/acme/shop/pull/3", "CIRCLE_PULL_REQUESTS", "https://github.com/acme/shop/pull/3,https://github.com/acme/shop/pull/4"),
			ci:  "circleci", want: view{Scope: "branch-feat-two", Branch: "feat/two", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop"}, note: "names 2 pull requests"},
		{name: "circleci branch build on main", env: circle("CIRCLE_BRANCH", "main"),
			ci: "circleci", want: view{Scope: "main", Branch: "main", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop"}},
		{name: "circleci tag build: no scope", env: circle("CIRCLE_TAG", "v2"), code: errs.USAGE, note: "the tag v2"},
		{name: "circleci bitbucket pull request URL",
			env: circle("CIRCLE_BRANCH", "feat/bb", "CIRCLE_PULL_REQUEST", "https://bitbucket.org/acme/shop/pull-requests/8"),
			ci:  "circleci", want: view{Scope: "pr-8", PR: num(8), Branch: "feat/bb", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop"}},

		{name: "bitbucket pull request pipeline",
			env: bitbucket("BITBUCKET_PR_ID", "31", "BITBUCKET_BRANCH", "feat/login", "BITBUCKET_PR_DESTINATION_BRANCH", "main"),
			ci:  "bitbucket-pipelines", want: view{Scope: "pr-31", PR: num(31), Branch: "feat/login", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop"},
			sources: map[string]string{"pr.number": "env:BITBUCKET_PR_ID", "git.branch": "env:BITBUCKET_BRANCH", "git.sha": "env:BITBUCKET_COMMIT", "repo": "env:BITBUCKET_REPO_FULL_NAME"}},
		{name: "bitbucket branch pipeline", env: bitbucket("BITBUCKET_BRANCH", "release/1"),
			ci: "bitbucket-pipelines", want: view{Scope: "branch-release-1", Branch: "release/1", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop"}},
		{name: "bitbucket tag pipeline: no scope", env: bitbucket("BITBUCKET_TAG", "v3"), code: errs.USAGE, note: "the tag v3"},

		{name: "flags still win over the host",
			env: bitbucket("BITBUCKET_PR_ID", "31", "BITBUCKET_BRANCH", "feat/login"), in: scope.Input{PR: str("40"), Branch: str("other")},
			ci: "bitbucket-pipelines", want: view{Scope: "pr-40", PR: num(40), Branch: "other", Repo: "acme/shop"}, note: "not #40"},
		{name: "inside a host the checkout is not read",
			env: circle("CIRCLE_BRANCH", "feat/ci"), in: scope.Input{Local: &scope.LocalGit{Branch: "local", SHA: shaMerge}, LocalPR: num(9)},
			ci: "circleci", want: view{Scope: "branch-feat-ci", Branch: "feat/ci", SHA: shaHead, ShortSHA: shaHead[:7], Repo: "acme/shop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.LookupEnv = envOf(tc.env...)
			c, err := scope.Compute(in)
			if tc.code != "" {
				if errs.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.note) {
					t.Fatalf("err = %v, want %s saying %q", err, tc.code, tc.note)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, c)
			want := tc.want
			want.Env = "preview"
			if d := diff(t, want, viewOf(c)); d != "" {
				t.Errorf("ctx (-want +got):\n%s", d)
			}
			if c.CI != tc.ci {
				t.Errorf("ci = %q, want %q", c.CI, tc.ci)
			}
			for k, v := range tc.sources {
				if c.Sources[k] != v {
					t.Errorf("sources[%s] = %q, want %q (all: %v)", k, c.Sources[k], v, c.Sources)
				}
			}
			if tc.note != "" && !strings.Contains(strings.Join(c.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", c.Notes, tc.note)
			}
		})
	}
}

// Outside CI the GitHub CLI's pull request of the checkout's branch gives
// the scope, after flags and SPONSON_CTX_PR; never for another branch.
func TestComputeLocalPR(t *testing.T) {
	local := &scope.LocalGit{Branch: "feat/x", SHA: shaHead}
	c, err := scope.Compute(scope.Input{Local: local, LocalPR: num(12)})
	if err != nil || c.Scope != "pr-12" || c.Sources["pr.number"] != "gh:pr view" || c.Git.Branch != "feat/x" || c.Git.SHA != shaHead || c.CI != "" {
		t.Fatalf("gh's pull request: %+v, %v", c, err)
	}
	c, err = scope.Compute(scope.Input{Local: local, LocalPR: num(12), LookupEnv: envOf("SPONSON_CTX_PR", "")})
	if err != nil || c.Scope != "branch-feat-x" {
		t.Errorf("SPONSON_CTX_PR empty wins: %q, %v", c.Scope, err)
	}
	c, err = scope.Compute(scope.Input{Local: local, LocalPR: num(12), Branch: str("other")})
	if err != nil || c.Scope != "branch-other" || !strings.Contains(strings.Join(c.Notes, "\n"), "not used") {
		t.Errorf("another branch given: %q %v, %v", c.Scope, c.Notes, err)
	}
}

func TestReadGHPR(t *testing.T) {
	found := func(string) (string, error) { return "/usr/bin/gh", nil }
	missing := func(string) (string, error) { return "", errors.New("not found") }
	answer := func(out string, err error) scope.Runner {
		return func(_ context.Context, dir, name string, args ...string) ([]byte, error) {
			if dir != "/repo" || name != "/usr/bin/gh" || strings.Join(args, " ") != "pr view --json number" {
				t.Errorf("ran %s %v in %s", name, args, dir)
			}
			return []byte(out), err
		}
	}
	for _, tc := range []struct {
		name string
		run  scope.Runner
		look func(string) (string, error)
		want *int
	}{
		{"a pull request", answer(`{"number":42}`+"\n", nil), found, num(42)},
		{"no pull request for the branch", answer("", errors.New(`no pull requests found for branch "feat/x"`)), found, nil},
		{"not a number", answer(`{"number":0}`, nil), found, nil},
		{"garbage", answer(`gh: command not understood`, nil), found, nil},
		{"gh not installed", answer("", nil), missing, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scope.ReadGHPR(context.Background(), tc.run, tc.look, "/repo")
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInCI(t *testing.T) {
	for env, want := range map[string]bool{"": false, "GITHUB_ACTIONS": true, "CI": true, "GITLAB_CI": true, "CIRCLECI": true} {
		lookup := envOf()
		if env != "" {
			lookup = envOf(env, "true")
		}
		if got := scope.InCI(lookup); got != want {
			t.Errorf("InCI with %s=true: %v, want %v", env, got, want)
		}
	}
	if !scope.InCI(envOf("BITBUCKET_BUILD_NUMBER", "7")) {
		t.Error("Bitbucket Pipelines is CI")
	}
}
