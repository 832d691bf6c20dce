package githubtest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/clock"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// recorder collects the fake's violations instead of failing the test,
// for tests that provoke them on purpose.
type recorder struct{ msgs []string }

func (r *recorder) Errorf(format string, args ...any) { r.msgs = append(r.msgs, format) }

func client(t *testing.T, s *githubtest.Server, token string) *github.Client {
	t.Helper()
	c, err := github.NewClient(nil).WithAuthToken(token).WithEnterpriseURLs(s.APIURL+"/", s.APIURL+"/")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func seeded(t *testing.T) (*githubtest.Server, *clock.Fake) {
	t.Helper()
	clock := clock.NewFake(t0)
	s := githubtest.Start(t, clock)
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/app", Branches: map[string]string{"feature": "add feature"}}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "wf", Identity: githubtest.ActionsBot, Repos: []string{"octo/app"}})
	if _, err := s.AddPull(githubtest.PullRequest{Repo: "octo/app", Head: githubtest.Ref{Ref: "feature"}}); err != nil {
		t.Fatal(err)
	}
	return s, clock
}

func TestRESTCallsValidate(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	pr, _, err := gh.PullRequests.Get(ctx, "octo", "app", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetHead().GetRef() != "feature" || pr.GetState() != "open" || pr.GetBase().GetRef() != "main" {
		t.Errorf("pull: %v %v %v", pr.GetHead().GetRef(), pr.GetState(), pr.GetBase().GetRef())
	}
	repo, _, err := gh.Repositories.Get(ctx, "octo", "app")
	if err != nil || repo.GetDefaultBranch() != "main" {
		t.Fatalf("repo: %v %v", repo.GetDefaultBranch(), err)
	}
	br, _, err := gh.Repositories.GetBranch(ctx, "octo", "app", "feature", 0)
	if err != nil || br.GetCommit().GetSHA() != pr.GetHead().GetSHA() {
		t.Fatalf("branch: %v %v", br.GetCommit().GetSHA(), err)
	}
	cmp, _, err := gh.Repositories.CompareCommits(ctx, "octo", "app", "main", "feature", nil)
	if err != nil || cmp.GetStatus() != "ahead" || cmp.GetAheadBy() != 1 || cmp.GetBehindBy() != 0 {
		t.Fatalf("compare: %v %v %v %v", cmp.GetStatus(), cmp.GetAheadBy(), cmp.GetBehindBy(), err)
	}
	c, _, err := gh.Issues.CreateComment(ctx, "octo", "app", 1, &github.IssueComment{Body: github.String("hello")})
	if err != nil || c.GetUser().GetLogin() != "github-actions[bot]" {
		t.Fatalf("comment: %v %v", c.GetUser().GetLogin(), err)
	}
	if _, _, err := gh.Issues.EditComment(ctx, "octo", "app", c.GetID(), &github.IssueComment{Body: github.String("bye")}); err != nil {
		t.Fatal(err)
	}
	got := s.Comments("octo/app", 1)
	if len(got) != 1 || got[0].Body != "bye" || strings.Join(got[0].Edits, ",") != "hello" {
		t.Errorf("comments: %+v", got)
	}
	prs, _, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, "octo", "app", pr.GetHead().GetSHA(), nil)
	if err != nil || len(prs) != 1 {
		t.Fatalf("commit pulls: %d %v", len(prs), err)
	}
	list, _, err := gh.PullRequests.List(ctx, "octo", "app", &github.PullRequestListOptions{State: "all"})
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %d %v", len(list), err)
	}
	if v := s.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
	_ = http.StatusOK
}

func TestRefusesWhatGitHubWouldRefuse(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	s := githubtest.Serve(t, githubtest.Options{Report: rec, Clock: clock.NewFake(t0)})
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/app", Branches: map[string]string{"feature": "f"}}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "wf", Identity: githubtest.ActionsBot})
	if _, err := s.AddPull(githubtest.PullRequest{Repo: "octo/app", Head: githubtest.Ref{Ref: "feature"}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path, body string
		want                     int
	}{
		{"comment without body", "POST", "/repos/octo/app/issues/1/comments", `{"text":"x"}`, 422},
		{"comment body of the wrong type", "POST", "/repos/octo/app/issues/1/comments", `{"body":7}`, 422},
		{"pull state not in the enum", "GET", "/repos/octo/app/pulls?state=merged", "", 422},
		{"per_page not an integer", "GET", "/repos/octo/app/issues/1/comments?per_page=lots", "", 422},
		{"an operation outside the subset", "GET", "/user", "", 404},
		{"a method outside the subset", "PUT", "/repos/octo/app/pulls/1", "", 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec.msgs = nil
			req, _ := http.NewRequest(c.method, s.APIURL+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "token wf")
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("status %d, want %d", resp.StatusCode, c.want)
			}
			if len(rec.msgs) == 0 {
				t.Errorf("no violation reported")
			}
		})
	}
	if got := s.Comments("octo/app", 1); len(got) != 0 {
		t.Errorf("a refused request wrote: %+v", got)
	}
}

func TestResponseValidatorRejectsWhatTheDescriptionForbids(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	h := http.Header{"Content-Type": {"application/json"}}
	if err := s.ValidateResponse("GET", "/repos/octo/app/pulls/1", 200, h, []byte(`{"title":"no number"}`)); err == nil {
		t.Error("a pull request without its required fields validated")
	}
	if err := s.ValidateResponse("GET", "/repos/octo/app/pulls/1", 204, h, nil); err == nil {
		t.Error("an undocumented success status validated")
	}
	if err := s.ValidateResponse("GET", "/repos/octo/app/pulls/1", 403, h, []byte(`oops`)); err == nil {
		t.Error("an error body without a message validated")
	}
	if err := s.ValidateResponse("GET", "/repos/octo/app/pulls/1", 403, h, []byte(`{"message":"You have exceeded a secondary rate limit"}`)); err != nil {
		t.Errorf("a rate-limit answer was refused: %v", err)
	}
}

func TestPaginationLikeGitHub(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	for i := 0; i < 250; i++ {
		s.AddComment("octo/app", 1, githubtest.Identity{Login: "someone"}, "noise")
	}
	gh := client(t, s, "wf")
	ctx := context.Background()
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var all []*github.IssueComment
	pages := 0
	for {
		cs, resp, err := gh.Issues.ListComments(ctx, "octo", "app", 1, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, cs...)
		if pages == 1 && (resp.NextPage != 2 || resp.LastPage != 3) {
			t.Errorf("first page: next %d last %d", resp.NextPage, resp.LastPage)
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if pages != 3 || len(all) != 250 {
		t.Errorf("pages %d, comments %d", pages, len(all))
	}
	// Without per_page GitHub sends 30.
	cs, resp, err := gh.Issues.ListComments(ctx, "octo", "app", 1, nil)
	if err != nil || len(cs) != 30 || resp.LastPage != 9 {
		t.Errorf("default page: %d comments, last %d, %v", len(cs), resp.LastPage, err)
	}
}

func TestFaultsAnswerAsGitHub(t *testing.T) {
	t.Parallel()
	s, clock := seeded(t)
	s.Inject(githubtest.SecondaryRateLimit(1, 30*time.Second))
	s.Inject(githubtest.PrimaryRateLimit(1, clock.Now().Add(time.Minute)))
	s.Inject(githubtest.ServerError(1, 502))
	do := func() *http.Response {
		req, _ := http.NewRequest("GET", s.APIURL+"/repos/octo/app/pulls/1", nil)
		req.Header.Set("Authorization", "token wf")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := do(); r.StatusCode != 403 || r.Header.Get("Retry-After") != "30" {
		t.Errorf("secondary: %d Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := do(); r.StatusCode != 403 || r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("X-RateLimit-Reset") == "" {
		t.Errorf("primary: %d %v", r.StatusCode, r.Header)
	}
	if r := do(); r.StatusCode != 502 {
		t.Errorf("server error: %d", r.StatusCode)
	}
	if r := do(); r.StatusCode != 200 {
		t.Errorf("after the faults: %d", r.StatusCode)
	}
	if n := s.Count("pulls/get"); n != 4 {
		t.Errorf("logged pulls/get: %d", n)
	}
}

func TestPermissionsNameWhatIsMissing(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	s.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	gh := client(t, s, "ro")
	_, resp, err := gh.Issues.CreateComment(context.Background(), "octo", "app", 1, &github.IssueComment{Body: github.String("x")})
	if err == nil || resp.StatusCode != 403 {
		t.Fatalf("comment with a read-only token: %v", err)
	}
	if got := resp.Header.Get("X-Accepted-GitHub-Permissions"); got != "issues=write; pull_requests=write" {
		t.Errorf("accepted permissions: %q", got)
	}
}

func TestOnlyTheAuthorEditsAComment(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	id := s.AddComment("octo/app", 1, githubtest.Identity{Login: "sponson[bot]", Type: "Bot"}, "the bot's")
	_, resp, err := client(t, s, "wf").Issues.EditComment(context.Background(), "octo", "app", id, &github.IssueComment{Body: github.String("mine")})
	if err == nil || resp.StatusCode != 403 {
		t.Fatalf("edit of another's comment: %v", err)
	}
	if got := s.Comments("octo/app", 1); got[0].Body != "the bot's" {
		t.Errorf("body now %q", got[0].Body)
	}
}

func TestEveryOperationOfTheDescriptionIsServed(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	served := s.Served()
	ops := s.Spec().Operations()
	// The description records the operations it was cut down to; the
	// paths it holds must be exactly those.
	listed := s.Spec().SubsetOperations()
	if len(listed) == 0 {
		t.Fatal("the description has no x-subset-of operation list")
	}
	want := map[string]bool{}
	for _, id := range listed {
		want[id] = true
	}
	have := map[string]bool{}
	for _, op := range ops {
		f := strings.Fields(op)
		have[f[2]] = true
		if !want[f[2]] {
			t.Errorf("%s is in the description's paths but not in its x-subset-of list", op)
		}
		if !served[f[0]+" "+f[1]] {
			t.Errorf("not served: %s", op)
		}
	}
	for _, id := range listed {
		if !have[id] {
			t.Errorf("x-subset-of lists %s, which the description's paths lack", id)
		}
	}
	if len(served) != len(ops) {
		t.Errorf("the fake serves %d operations, the description has %d", len(served), len(ops))
	}
}

func TestForkPullRequest(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	n, err := s.AddPull(githubtest.PullRequest{Repo: "octo/app", Head: githubtest.Ref{Ref: "patch-1", SHA: strings.Repeat("ab", 20), Repo: "stranger/app"}})
	if err != nil {
		t.Fatal(err)
	}
	pr, _, err := client(t, s, "wf").PullRequests.Get(context.Background(), "octo", "app", n)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetHead().GetRepo().GetFullName() != "stranger/app" || pr.GetBase().GetRepo().GetFullName() != "octo/app" || pr.GetHead().GetLabel() != "stranger:patch-1" {
		t.Errorf("head %s base %s label %s", pr.GetHead().GetRepo().GetFullName(), pr.GetBase().GetRepo().GetFullName(), pr.GetHead().GetLabel())
	}
}

func TestChecksStatusesDeploymentsAndRefs(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	sha := s.Branches("octo/app")["feature"]
	cr, _, err := gh.Checks.CreateCheckRun(ctx, "octo", "app", github.CreateCheckRunOptions{Name: "sponson", HeadSHA: sha, Status: github.String("in_progress")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "octo", "app", cr.GetID(), github.UpdateCheckRunOptions{Name: "sponson", Conclusion: github.String("success")}); err != nil {
		t.Fatal(err)
	}
	if got := s.Deploys.CheckRuns("octo/app"); len(got) != 1 || got[0].Status != "completed" || got[0].Conclusion != "success" {
		t.Errorf("check runs: %+v", got)
	}
	if _, _, err := gh.Repositories.CreateStatus(ctx, "octo", "app", sha, &github.RepoStatus{State: github.String("success"), Context: github.String("sponson/preview")}); err != nil {
		t.Fatal(err)
	}
	if got := s.Deploys.Statuses("octo/app"); len(got) != 1 || got[0].Context != "sponson/preview" {
		t.Errorf("statuses: %+v", got)
	}
	id := s.Deploys.AddDeployment(githubtest.Deployment{Repo: "octo/app", SHA: sha, Ref: "feature"})
	ds, _, err := gh.Repositories.ListDeployments(ctx, "octo", "app", &github.DeploymentsListOptions{SHA: sha})
	if err != nil || len(ds) != 1 || ds[0].GetID() != id {
		t.Fatalf("deployments: %v %v", ds, err)
	}
	if _, _, err := gh.Repositories.CreateDeploymentStatus(ctx, "octo", "app", id, &github.DeploymentStatusRequest{State: github.String("success")}); err != nil {
		t.Fatal(err)
	}
	ref, _, err := gh.Git.GetRef(ctx, "octo", "app", "heads/feature")
	if err != nil || ref.GetObject().GetSHA() != sha {
		t.Fatalf("ref: %v %v", ref, err)
	}
	if _, _, err := gh.Git.CreateRef(ctx, "octo", "app", &github.Reference{Ref: github.String("refs/heads/sponson-receipts/x"), Object: &github.GitObject{SHA: github.String(sha)}}); err != nil {
		t.Fatal(err)
	}
	refs, _, err := gh.Git.ListMatchingRefs(ctx, "octo", "app", &github.ReferenceListOptions{Ref: "heads/sponson-receipts/"})
	if err != nil || len(refs) != 1 {
		t.Fatalf("matching refs: %v %v", refs, err)
	}
	if _, err := gh.Git.DeleteRef(ctx, "octo", "app", "heads/sponson-receipts/x"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Branches("octo/app")["sponson-receipts/x"]; ok {
		t.Error("the deleted ref is still there")
	}
	if v := s.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

func TestRequestsGitHubRefusesOutright(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	s := githubtest.Serve(t, githubtest.Options{Report: rec})
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/app"}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "wf"})
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no User-Agent", map[string]string{"User-Agent": ""}, 403},
		{"an unknown API version", map[string]string{"X-GitHub-Api-Version": "2020-01-01"}, 400},
		{"both right", map[string]string{"X-GitHub-Api-Version": "2022-11-28"}, 200},
	} {
		rec.msgs = nil
		req, _ := http.NewRequest("GET", s.APIURL+"/repos/octo/app", nil)
		req.Header.Set("Authorization", "token wf")
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want || (c.want != 200) != (len(rec.msgs) > 0) {
			t.Errorf("%s: %d (want %d), violations %v", c.name, resp.StatusCode, c.want, rec.msgs)
		}
	}
}

func TestALostAnswerTakesEffect(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	s.Inject(githubtest.Fault{Method: "POST", Count: 1, Status: 502, Lost: true})
	_, resp, err := client(t, s, "wf").Issues.CreateComment(context.Background(), "octo", "app", 1, &github.IssueComment{Body: github.String("landed")})
	if err == nil || resp.StatusCode != 502 {
		t.Fatalf("the client heard %v", err)
	}
	if got := s.Comments("octo/app", 1); len(got) != 1 || got[0].Body != "landed" {
		t.Errorf("comments: %+v", got)
	}
}
