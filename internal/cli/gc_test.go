package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/githubtest"
)

// `sponson gc` as a scheduled workflow runs it: the workflow token, the
// repository's own receipt branches on the fake GitHub, the bot's sweep.
func TestGCDestroysClosedPullRequestsOnly(t *testing.T) {
	t.Parallel()
	gh := githubtest.Start(t, nil)
	if err := gh.AddRepo(githubtest.Repo{FullName: "acme/shop", Branches: map[string]string{"feat/gc": "gc", "feat/open": "open"}}); err != nil {
		t.Fatal(err)
	}
	gh.AddToken(githubtest.Token{Value: "ghs_workflowtoken0123456789", Identity: githubtest.ActionsBot,
		Permissions: map[string]string{"contents": "write", "pull_requests": "read", "metadata": "read"}})
	for _, pr := range []githubtest.PullRequest{{Repo: "acme/shop", Number: 3, Head: githubtest.Ref{Ref: "feat/gc"}}, {Repo: "acme/shop", Number: 4, Head: githubtest.Ref{Ref: "feat/open"}}} {
		if _, err := gh.AddPull(pr); err != nil {
			t.Fatal(err)
		}
	}
	env, cloud, _ := fakeWorld(t)
	vars := map[string]string{"APP_KEY": appKey, "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/shop",
		"GITHUB_TOKEN": "ghs_workflowtoken0123456789", "GITHUB_API_URL": gh.APIURL, "GITHUB_SERVER_URL": gh.URL}
	env.LookupEnv = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for _, n := range []string{"3", "4"} {
		if r := runCLI(t, env, "apply", "--pr", n); r.code != 0 {
			t.Fatalf("apply --pr %s: %d\n%s%s", n, r.code, r.out, r.err)
		}
	}
	if err := gh.SetPullState("acme/shop", 3, "closed", true); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, env, "gc", "--json")
	if r.code != 0 {
		t.Fatalf("gc: %d\n%s%s", r.code, r.out, r.err)
	}
	var out struct {
		OK       bool
		Findings []struct{ Env, Scope, Kind string }
	}
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	if !out.OK || len(out.Findings) != 1 || out.Findings[0].Scope != "pr-3" || out.Findings[0].Kind != "closed_pr" {
		t.Fatalf("findings: %s", r.out)
	}
	for _, k := range cloud.Keys() {
		if strings.Contains(k, "pr-3") {
			t.Errorf("left after gc: %s", k)
		}
	}
	if n := len(cloud.Keys()); n != 2 {
		t.Errorf("the open pull request's resources: %d left, want 2 (%v)", n, cloud.Keys())
	}
	if strings.Contains(r.out+r.err, "ghs_workflowtoken0123456789") {
		t.Error("gc printed the token")
	}
	if v := gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
	// A second gc finds nothing to do.
	if r := runCLI(t, env, "gc"); r.code != 0 || !strings.Contains(r.out, "0 finding(s)") {
		t.Errorf("second gc: %d\n%s%s", r.code, r.out, r.err)
	}
}

func TestGCNeedsARepositoryAndAToken(t *testing.T) {
	env, _, _ := fakeWorld(t)
	if r := runCLI(t, env, "gc"); r.code != 2 || !strings.Contains(r.err, "owner/name") {
		t.Errorf("no repository: %d %s", r.code, r.err)
	}
	vars := map[string]string{"GITHUB_REPOSITORY": "acme/shop"}
	env.LookupEnv = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	if r := runCLI(t, env, "gc"); r.code != 2 || !strings.Contains(r.err, "GITHUB_TOKEN") {
		t.Errorf("no token: %d %s", r.code, r.err)
	}
}

// Outside a workflow, with no receipts remote known (no flag, no
// variable, no origin), gc refuses rather than sweep the local store it
// would fall back to; --receipts local sweeps it on purpose.
func TestGCRefusesTheLocalFallback(t *testing.T) {
	gh := githubtest.Start(t, nil)
	if err := gh.AddRepo(githubtest.Repo{FullName: "acme/shop"}); err != nil {
		t.Fatal(err)
	}
	gh.AddToken(githubtest.Token{Value: "ghs_workflowtoken0123456789", Identity: githubtest.ActionsBot,
		Permissions: map[string]string{"contents": "write", "pull_requests": "read", "metadata": "read"}})
	env, _, _ := fakeWorld(t)
	vars := map[string]string{"GITHUB_REPOSITORY": "acme/shop",
		"GITHUB_TOKEN": "ghs_workflowtoken0123456789", "GITHUB_API_URL": gh.APIURL, "GITHUB_SERVER_URL": gh.URL}
	env.LookupEnv = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	r := runCLI(t, env, "gc")
	if r.code != 2 || !strings.Contains(r.err, "USAGE") || !strings.Contains(r.err, "--receipts-remote") || !strings.Contains(r.err, "--receipts local") {
		t.Errorf("gc with no remote: exit %d, want a USAGE refusal naming --receipts-remote and --receipts local\n%s%s", r.code, r.out, r.err)
	}
	if r := runCLI(t, env, "gc", "--receipts", "local"); r.code != 0 {
		t.Errorf("gc --receipts local: exit %d\n%s%s", r.code, r.out, r.err)
	}
}
