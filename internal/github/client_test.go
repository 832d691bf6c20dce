package github_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// world is a fake GitHub with octo/app, branch feature one commit ahead
// of main, pull request #1 from it, and the workflow token "wf".
type world struct {
	*githubtest.Server
	time *enginetest.Time
}

func newWorld(t *testing.T) *world {
	t.Helper()
	tm := enginetest.NewTime(t0)
	s := githubtest.Start(t, tm)
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/app", Branches: map[string]string{"feature": "add feature"}}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "wf", Identity: githubtest.ActionsBot, Repos: []string{"octo/app"}})
	if _, err := s.AddPull(githubtest.PullRequest{Repo: "octo/app", Head: githubtest.Ref{Ref: "feature"}}); err != nil {
		t.Fatal(err)
	}
	return &world{Server: s, time: tm}
}

func (w *world) config() github.Config {
	return github.Config{APIURL: w.APIURL, ServerURL: w.URL, Clock: w.time}
}

func (w *world) client(t *testing.T, token string) *github.Client {
	t.Helper()
	c, err := github.NewToken(w.config(), token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if errs.CodeOf(err) != code {
		t.Fatalf("error %v: code %q, want %s", err, errs.CodeOf(err), code)
	}
}

func TestReads(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	repo, err := c.GetRepository(ctx, "octo", "app")
	if err != nil || repo.DefaultBranch != "main" || repo.FullName != "octo/app" {
		t.Fatalf("repository: %+v %v", repo, err)
	}
	pr, err := c.GetPullRequest(ctx, "octo", "app", 1)
	if err != nil || !pr.Open() || pr.HeadRef != "feature" || pr.Fork() || pr.BaseRef != "main" {
		t.Fatalf("pull request: %+v %v", pr, err)
	}
	tip := w.Branches("octo/app")["feature"]
	if pr.HeadSHA != tip {
		t.Errorf("head sha %s, want %s", pr.HeadSHA, tip)
	}
	b, err := c.GetBranch(ctx, "octo", "app", "feature")
	if err != nil || b.SHA != tip {
		t.Fatalf("branch: %+v %v", b, err)
	}
	for name, want := range map[string]bool{"feature": true, "main": true, "gone": false} {
		if got, err := c.BranchExists(ctx, "octo", "app", name); err != nil || got != want {
			t.Errorf("BranchExists(%s) = %v, %v", name, got, err)
		}
	}
	cmp, err := c.Compare(ctx, "octo", "app", "main", "feature")
	if err != nil || cmp.Status != "ahead" || cmp.AheadBy != 1 || cmp.BehindBy != 0 {
		t.Fatalf("compare: %+v %v", cmp, err)
	}
	if _, err := w.Commit("octo/app", "main", "main moves"); err != nil {
		t.Fatal(err)
	}
	if cmp, _ := c.Compare(ctx, "octo", "app", "main", "feature"); cmp.Status != "diverged" {
		t.Errorf("after main moved: %+v", cmp)
	}
	if x, err := c.Compare(ctx, "octo", "app", "main", "feature"); err != nil || x.Descends() {
		t.Errorf("compare(main, feature) after main moved = %+v, %v: feature descends from main", x, err)
	}
	base := w.Branches("octo/app")["feature"]
	if _, err := w.Commit("octo/app", "feature", "more"); err != nil {
		t.Fatal(err)
	}
	if x, err := c.Compare(ctx, "octo", "app", base, "feature"); err != nil || !x.Descends() {
		t.Errorf("compare(old tip, feature) = %+v, %v: feature does not descend from it", x, err)
	}

	w.AddRun(githubtest.WorkflowRun{Repo: "octo/app", ID: 77, Status: "completed", Conclusion: "cancelled", Attempt: 2})
	run, err := c.GetWorkflowRun(ctx, "octo", "app", 77)
	if err != nil || !run.Done() || run.Attempt != 2 || run.Conclusion != "cancelled" {
		t.Fatalf("run: %+v %v", run, err)
	}
	w.AddRun(githubtest.WorkflowRun{Repo: "octo/app", ID: 78, Status: "in_progress"})
	if run, _ := c.GetWorkflowRun(ctx, "octo", "app", 78); run.Done() {
		t.Errorf("an in-progress run is done: %+v", run)
	}
	_, err = c.GetWorkflowRun(ctx, "octo", "app", 79)
	wantCode(t, err, errs.GITHUB_NOT_FOUND)
}

func TestPullRequestLists(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	// The commits named, not resolved again by git for each pull request.
	head, base := w.Branches("octo/app")["feature"], w.Branches("octo/app")["main"]
	for i := 0; i < 120; i++ {
		if _, err := w.AddPull(githubtest.PullRequest{Repo: "octo/app", State: "closed", Head: githubtest.Ref{Ref: "feature", SHA: head}, Base: githubtest.Ref{SHA: base}}); err != nil {
			t.Fatal(err)
		}
	}
	open, err := c.ListPullRequests(ctx, "octo", "app", "open")
	if err != nil || len(open) != 1 || open[0].Number != 1 {
		t.Fatalf("open: %d %v", len(open), err)
	}
	w.ResetLog()
	all, err := c.ListPullRequests(ctx, "octo", "app", "all")
	if err != nil || len(all) != 121 {
		t.Fatalf("all: %d %v", len(all), err)
	}
	if n := w.Count("pulls/list"); n != 2 {
		t.Errorf("pulls/list calls for 121 pull requests: %d, want 2 (100 a page)", n)
	}
	tip := w.Branches("octo/app")["feature"]
	prs, err := c.PullRequestsForCommit(ctx, "octo", "app", tip)
	if err != nil || len(prs) != 121 {
		t.Fatalf("for commit: %d %v", len(prs), err)
	}
	pr, ok, err := c.OpenPullRequestForCommit(ctx, "octo", "app", tip)
	if err != nil || !ok || pr.Number != 1 {
		t.Fatalf("open for commit: %+v %v %v", pr, ok, err)
	}
	if err := w.SetPullState("octo/app", 1, "closed", false); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.OpenPullRequestForCommit(ctx, "octo", "app", tip); err != nil || ok {
		t.Errorf("a closed pull request was found open: %v %v", ok, err)
	}
}

func TestCommentsAreOneAndEditedInPlace(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	// Hundreds of comments before ours, and a human quoting our marker.
	for i := 0; i < 230; i++ {
		w.AddComment("octo/app", 1, githubtest.Identity{Login: "reviewer"}, "looks good")
	}
	w.AddComment("octo/app", 1, githubtest.Identity{Login: "reviewer"}, "quoting <!-- sponson:preview -->")
	marker := "<!-- sponson:preview -->"
	first, created, err := c.UpsertComment(ctx, "octo", "app", 1, marker, marker+"\nplan")
	if err != nil || !created || first.Author != github.ActionsLogin {
		t.Fatalf("first upsert: %+v %v %v", first, created, err)
	}
	for _, body := range []string{"applied", "applied", "destroyed"} {
		got, created, err := c.UpsertComment(ctx, "octo", "app", 1, marker, marker+"\n"+body)
		if err != nil || created || got.ID != first.ID {
			t.Fatalf("upsert %s: %+v %v %v", body, got, created, err)
		}
	}
	// Another environment has its own comment.
	if _, created, err := c.UpsertComment(ctx, "octo", "app", 1, "<!-- sponson:prod -->", "<!-- sponson:prod -->\nx"); err != nil || !created {
		t.Fatalf("prod: %v %v", created, err)
	}
	var ours []githubtest.Comment
	for _, cm := range w.Comments("octo/app", 1) {
		if cm.Author.Login == github.ActionsLogin && strings.Contains(cm.Body, marker) {
			ours = append(ours, cm)
		}
	}
	if len(ours) != 1 {
		t.Fatalf("comments with the marker by the token: %d, want 1", len(ours))
	}
	// "applied" twice is one edit: an unchanged body is not written again.
	if got := strings.Join(ours[0].Edits, "|"); got != marker+"\nplan|"+marker+"\napplied" || ours[0].Body != marker+"\ndestroyed" {
		t.Errorf("edit history %q, body %q", got, ours[0].Body)
	}
	if w.Count("issues/create-comment") != 2 || w.Count("issues/update-comment") != 2 {
		t.Errorf("creates %d, updates %d", w.Count("issues/create-comment"), w.Count("issues/update-comment"))
	}
	if _, _, err := c.UpsertComment(ctx, "octo", "app", 1, marker, "no marker"); err == nil {
		t.Error("a body without its marker was written")
	}
}

func TestErrorsCarryCodes(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	_, err := w.client(t, "ro").CreateIssueComment(ctx, "octo", "app", 1, "x")
	wantCode(t, err, errs.GITHUB_PERMISSION)
	if !strings.Contains(err.Error(), "pull-requests: write") {
		t.Errorf("the permission error does not name pull-requests: write: %v", err)
	}
	_, err = w.client(t, "nope").GetRepository(ctx, "octo", "app")
	wantCode(t, err, errs.GITHUB_AUTH)
	_, err = w.client(t, "wf").GetPullRequest(ctx, "octo", "app", 99)
	wantCode(t, err, errs.GITHUB_NOT_FOUND)
	_, err = w.client(t, "wf").GetRepository(ctx, "octo", "other")
	wantCode(t, err, errs.GITHUB_NOT_FOUND)
	if _, err := github.NewToken(w.config(), ""); errs.CodeOf(err) != errs.GITHUB_AUTH {
		t.Errorf("no token: %v", err)
	}
	cfg := w.config()
	cfg.APIURL = "not a url"
	if _, err := github.NewToken(cfg, "wf"); errs.CodeOf(err) != errs.USAGE {
		t.Errorf("bad API URL: %v", err)
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		t.Fatal("not an *errs.Error")
	}
}

func TestEnterpriseBase(t *testing.T) {
	w := newWorld(t)
	for _, base := range []string{w.APIURL, w.APIURL + "/", w.APIURL + "//"} {
		cfg := w.config()
		cfg.APIURL = base
		c, err := github.NewToken(cfg, "wf")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetRepository(context.Background(), "octo", "app"); err != nil {
			t.Errorf("base %q: %v", base, err)
		}
		if got := c.RemoteURL("octo", "app"); got != w.URL+"/octo/app.git" {
			t.Errorf("remote %q", got)
		}
	}
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

func TestARenamedBranchNoLongerExists(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	if err := w.RenameBranch("octo/app", "feature", "feature-2"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := c.GetBranch(ctx, "octo", "app", "feature")
	if err != nil || b.Name != "feature-2" {
		t.Fatalf("the old name: %+v %v", b, err)
	}
	if ok, err := c.BranchExists(ctx, "octo", "app", "feature"); err != nil || ok {
		t.Errorf("BranchExists(old name) = %v, %v", ok, err)
	}
	if ok, err := c.BranchExists(ctx, "octo", "app", "feature-2"); err != nil || !ok {
		t.Errorf("BranchExists(new name) = %v, %v", ok, err)
	}
}

func TestRacingUpsertsConvergeOnOneComment(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	marker := "<!-- sponson:preview -->"
	// Two writers of one identity, as two bot replicas are.
	a, b := w.client(t, "wf"), w.client(t, "wf")
	var wg sync.WaitGroup
	for i, c := range []*github.Client{a, b, a, b} {
		wg.Add(1)
		go func(i int, c *github.Client) {
			defer wg.Done()
			if _, _, err := c.UpsertComment(ctx, "octo", "app", 1, marker, fmt.Sprintf("%s\nwriter %d", marker, i)); err != nil {
				t.Error(err)
			}
		}(i, c)
	}
	wg.Wait()
	// Whatever the interleaving, each creator looked again after creating.
	if got := w.Comments("octo/app", 1); len(got) != 1 {
		t.Fatalf("after the race: %d comments", len(got))
	}
	if _, _, err := a.UpsertComment(ctx, "octo", "app", 1, marker, marker+"\nfinal"); err != nil {
		t.Fatal(err)
	}
	got := w.Comments("octo/app", 1)
	if len(got) != 1 || got[0].Body != marker+"\nfinal" {
		t.Errorf("comments: %+v", got)
	}
}

func TestUpsertCostsOneListPerHundredComments(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	for i := 0; i < 250; i++ {
		w.AddComment("octo/app", 1, githubtest.Identity{Login: "reviewer"}, "noise")
	}
	marker := "<!-- sponson:preview -->"
	if _, _, err := c.UpsertComment(context.Background(), "octo", "app", 1, marker, marker+"\n1"); err != nil {
		t.Fatal(err)
	}
	w.ResetLog()
	if _, _, err := c.UpsertComment(context.Background(), "octo", "app", 1, marker, marker+"\n2"); err != nil {
		t.Fatal(err)
	}
	if w.Count("issues/list-comments") != 3 || w.Count("issues/update-comment") != 1 || len(w.Requests()) != 4 {
		t.Errorf("calls for an update among 251 comments: %v", w.Requests())
	}
}

func TestBranchNamesWithSlashes(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	sha, err := w.Commit("octo/app", "topic/login-page", "login")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.GetBranch(ctx, "octo", "app", "topic/login-page")
	if err != nil || b.SHA != sha || b.Name != "topic/login-page" {
		t.Fatalf("branch: %+v %v", b, err)
	}
	if ok, err := c.BranchExists(ctx, "octo", "app", "topic/login-page"); err != nil || !ok {
		t.Errorf("exists: %v %v", ok, err)
	}
	if ok, err := c.BranchExists(ctx, "octo", "app", "topic/gone"); err != nil || ok {
		t.Errorf("a missing slashed branch: %v %v", ok, err)
	}
	cmp, err := c.Compare(ctx, "octo", "app", "main", "topic/login-page")
	if err != nil || cmp.Status != "ahead" {
		t.Errorf("compare: %+v %v", cmp, err)
	}
}

func TestALostCreateIsFoundByTheNextUpsert(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	marker := "<!-- sponson:preview -->"
	w.Inject(githubtest.Fault{Method: "POST", Count: 1, Status: 502, Lost: true})
	_, _, err := c.UpsertComment(ctx, "octo", "app", 1, marker, marker+"\nfirst")
	wantCode(t, err, errs.GITHUB_UNAVAILABLE)
	if _, created, err := c.UpsertComment(ctx, "octo", "app", 1, marker, marker+"\nsecond"); err != nil || created {
		t.Fatalf("the next upsert: created %v, %v", created, err)
	}
	if got := w.Comments("octo/app", 1); len(got) != 1 || got[0].Body != marker+"\nsecond" {
		t.Errorf("comments: %+v", got)
	}
}
