package githubtest_test

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/internal/testing/gittest"
)

func remote(s *githubtest.Server, full, token string) string {
	u, _ := url.Parse(s.URL + "/" + full + ".git")
	u.User = url.UserPassword("x-access-token", token)
	return u.String()
}

func TestGitSmartHTTPWithTokens(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	s.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	work := filepath.Join(t.TempDir(), "work")
	gittest.Run(t, "", "clone", "-q", remote(s, "octo/app", "wf"), work)
	gittest.Run(t, work, "commit", "-q", "--allow-empty", "-m", "receipt")
	gittest.Run(t, work, "push", "-q", "origin", "HEAD:refs/heads/sponson-receipts/preview/pr-1")
	tip := strings.TrimSpace(gittest.Run(t, work, "rev-parse", "HEAD"))
	if got := s.Branches("octo/app")["sponson-receipts/preview/pr-1"]; got != tip {
		t.Fatalf("pushed branch on the fake: %q, want %q", got, tip)
	}

	// A token without contents: write is refused as GitHub refuses it.
	gittest.Run(t, work, "commit", "-q", "--allow-empty", "-m", "second")
	out, err := gittest.Try(work, nil, "push", remote(s, "octo/app", "ro"), "HEAD:refs/heads/sponson-receipts/preview/pr-1")
	if err == nil || !strings.Contains(out, "403") {
		t.Fatalf("read-only push: err %v\n%s", err, out)
	}
	if got := s.Branches("octo/app")["sponson-receipts/preview/pr-1"]; got != tip {
		t.Errorf("a refused push moved the branch to %s", got)
	}
	// It may still fetch.
	if out, err := gittest.Try(work, nil, "fetch", "-q", remote(s, "octo/app", "ro")); err != nil {
		t.Errorf("read-only fetch: %v\n%s", err, out)
	}
	// Unknown and missing credentials are 401.
	if out, err := gittest.Try(work, nil, "fetch", "-q", remote(s, "octo/app", "nope")); err == nil {
		t.Errorf("fetch with a bad token succeeded\n%s", out)
	}
	if out, err := gittest.Try(work, nil, "ls-remote", s.URL+"/octo/app.git"); err == nil {
		t.Errorf("anonymous ls-remote succeeded\n%s", out)
	}
	if s.Count("git-receive-pack") != 1 {
		t.Errorf("receive-pack calls: %d, want 1 (the refused push never reaches git)", s.Count("git-receive-pack"))
	}
}

func TestGitFaults(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	work := filepath.Join(t.TempDir(), "work")
	gittest.Run(t, "", "clone", "-q", remote(s, "octo/app", "wf"), work)
	gittest.Run(t, work, "commit", "-q", "--allow-empty", "-m", "one")
	s.Inject(githubtest.Fault{Path: "git-receive-pack", Count: 1, Status: 503})
	if out, err := gittest.Try(work, nil, "push", "-q", "origin", "HEAD:refs/heads/r"); err == nil {
		t.Fatalf("a push met no fault\n%s", out)
	}
	if _, ok := s.Branches("octo/app")["r"]; ok {
		t.Fatal("a refused push landed")
	}
	s.Inject(githubtest.Fault{Path: "git-receive-pack", Count: 1, Status: 502, Lost: true})
	if out, err := gittest.Try(work, nil, "push", "-q", "origin", "HEAD:refs/heads/r"); err == nil {
		t.Fatalf("the lost answer reached git\n%s", out)
	}
	if _, ok := s.Branches("octo/app")["r"]; !ok {
		t.Fatal("the push whose answer was lost did not land")
	}
	// REST calls are not touched by git faults, nor git by REST faults.
	s.Inject(githubtest.ServerError(1, 500))
	gittest.Run(t, work, "fetch", "-q", "origin")
	if n := len(s.Requests()); n == 0 {
		t.Fatal("no requests logged")
	}
}
