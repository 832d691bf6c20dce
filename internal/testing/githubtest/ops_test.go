package githubtest_test

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/sponson/apply/internal/testing/githubtest"
)

// status is the HTTP status of a go-github error (0 for none).
func status(err error) int {
	var e *github.ErrorResponse
	if errors.As(err, &e) {
		return e.Response.StatusCode
	}
	var a *github.AcceptedError
	if errors.As(err, &a) {
		return http.StatusAccepted
	}
	return 0
}

func noViolations(t *testing.T, s *githubtest.Server) {
	t.Helper()
	if v := s.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

// refused checks a 403 naming the permission that was missing.
func refused(t *testing.T, what string, resp *github.Response, err error, accepted string) {
	t.Helper()
	if status(err) != http.StatusForbidden {
		t.Errorf("%s: want 403, got %v", what, err)
		return
	}
	if got := resp.Header.Get("X-Accepted-GitHub-Permissions"); got != accepted {
		t.Errorf("%s: X-Accepted-GitHub-Permissions %q, want %q", what, got, accepted)
	}
}

func TestDeploymentsLifecycle(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	// main is not behind feature's base, so no auto-merge happens.
	d, _, err := gh.Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{
		Ref: github.String("feature"), Environment: github.String("pr-1"), Description: github.String("preview"),
		RequiredContexts: &[]string{}, Payload: map[string]any{"scope": "pr-1"}, TransientEnvironment: github.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.GetSHA() != s.Branches("octo/app")["feature"] || d.GetEnvironment() != "pr-1" || d.GetCreator().GetLogin() != "github-actions[bot]" {
		t.Errorf("deployment: sha %s env %s creator %s", d.GetSHA(), d.GetEnvironment(), d.GetCreator().GetLogin())
	}
	got, _, err := gh.Repositories.GetDeployment(ctx, "octo", "app", d.GetID())
	if err != nil || got.GetRef() != "feature" || got.GetDescription() != "preview" || !strings.Contains(string(got.Payload), `"pr-1"`) {
		t.Fatalf("get: %+v %v", got, err)
	}
	for _, state := range []string{"in_progress", "success"} {
		if _, _, err := gh.Repositories.CreateDeploymentStatus(ctx, "octo", "app", d.GetID(), &github.DeploymentStatusRequest{State: github.String(state), EnvironmentURL: github.String("https://pr-1.example.test")}); err != nil {
			t.Fatal(err)
		}
	}
	sts, _, err := gh.Repositories.ListDeploymentStatuses(ctx, "octo", "app", d.GetID(), &github.ListOptions{PerPage: 1})
	if err != nil || len(sts) != 1 || sts[0].GetState() != "success" || sts[0].GetEnvironmentURL() != "https://pr-1.example.test" {
		t.Fatalf("statuses, newest first: %+v %v", sts, err)
	}

	// A second deployment: the first, still successful, cannot be deleted.
	d2, _, err := gh.Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{Ref: github.String("main"), Environment: github.String("pr-2"), RequiredContexts: &[]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gh.Repositories.DeleteDeployment(ctx, "octo", "app", d.GetID()); status(err) != http.StatusUnprocessableEntity {
		t.Fatalf("delete of an active deployment while others exist: %v", err)
	}
	if _, _, err := gh.Repositories.CreateDeploymentStatus(ctx, "octo", "app", d.GetID(), &github.DeploymentStatusRequest{State: github.String("inactive")}); err != nil {
		t.Fatal(err)
	}
	if _, err := gh.Repositories.DeleteDeployment(ctx, "octo", "app", d.GetID()); err != nil {
		t.Fatalf("delete of an inactive deployment: %v", err)
	}
	if _, _, err := gh.Repositories.GetDeployment(ctx, "octo", "app", d.GetID()); status(err) != http.StatusNotFound {
		t.Errorf("get of a deleted deployment: %v", err)
	}
	if _, _, err := gh.Repositories.ListDeploymentStatuses(ctx, "octo", "app", 999999, nil); status(err) != http.StatusNotFound {
		t.Errorf("statuses of an unknown deployment: %v", err)
	}
	if _, err := gh.Repositories.DeleteDeployment(ctx, "octo", "app", 999999); status(err) != http.StatusNotFound {
		t.Errorf("delete of an unknown deployment: %v", err)
	}
	if ds := s.Deploys.Deployments("octo/app"); len(ds) != 1 || ds[0].ID != d2.GetID() {
		t.Errorf("deployments left: %+v", ds)
	}
	noViolations(t, s)
}

func TestDeploymentRefusals(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	sha := s.Branches("octo/app")["feature"]
	if _, _, err := gh.Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{Ref: github.String("no-such-branch")}); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("unknown ref: %v", err)
	}
	// Without required_contexts every context on the commit must pass.
	if _, _, err := gh.Repositories.CreateStatus(ctx, "octo", "app", sha, &github.RepoStatus{State: github.String("failure"), Context: github.String("ci")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{Ref: github.String(sha)}); status(err) != http.StatusConflict {
		t.Errorf("failed status check: %v", err)
	}
	if _, _, err := gh.Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{Ref: github.String(sha), RequiredContexts: &[]string{}}); err != nil {
		t.Errorf("an empty required_contexts skips the check: %v", err)
	}
	// auto_merge (the default) merges the default branch into a branch
	// that is behind it, for real, and answers 202.
	if _, err := s.Commit("octo/app", "main", "main moves on"); err != nil {
		t.Fatal(err)
	}
	before := s.Branches("octo/app")["feature"]
	if _, _, err := gh.Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{Ref: github.String("feature"), RequiredContexts: &[]string{}}); status(err) != http.StatusAccepted {
		t.Fatalf("auto-merge: %v", err)
	}
	after := s.Branches("octo/app")["feature"]
	cmp, _, err := gh.Repositories.CompareCommits(ctx, "octo", "app", "main", "feature", nil)
	if err != nil || after == before || cmp.GetBehindBy() != 0 {
		t.Errorf("feature after the auto-merge: %s (was %s), behind main by %d, %v", after, before, cmp.GetBehindBy(), err)
	}
	if _, _, err := gh.Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{Ref: github.String("feature"), RequiredContexts: &[]string{}}); err != nil {
		t.Errorf("once merged the deployment is made: %v", err)
	}
	// A token without deployments: write.
	s.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	_, resp, err := client(t, s, "ro").Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{Ref: github.String("main")})
	refused(t, "create deployment read-only", resp, err, "deployments=write")
	noViolations(t, s)
}

func TestDeploymentSuccessMarksEarlierOnesInactive(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	var ids []int64
	for range 2 {
		d, _, err := gh.Repositories.CreateDeployment(ctx, "octo", "app", &github.DeploymentRequest{Ref: github.String("main"), Environment: github.String("pr-1"), ProductionEnvironment: github.Bool(false), RequiredContexts: &[]string{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := gh.Repositories.CreateDeploymentStatus(ctx, "octo", "app", d.GetID(), &github.DeploymentStatusRequest{State: github.String("success")}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.GetID())
	}
	sts, _, err := gh.Repositories.ListDeploymentStatuses(ctx, "octo", "app", ids[0], nil)
	if err != nil || len(sts) != 2 || sts[0].GetState() != "inactive" {
		t.Fatalf("the first deployment's statuses: %+v %v", sts, err)
	}
	if _, err := gh.Repositories.DeleteDeployment(ctx, "octo", "app", ids[0]); err != nil {
		t.Errorf("delete of the superseded deployment: %v", err)
	}
	noViolations(t, s)
}

func TestWebhooksLifecycle(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	h, resp, err := gh.Repositories.CreateHook(ctx, "octo", "app", &github.Hook{
		Config: &github.HookConfig{URL: github.String("https://hooks.example.test/in"), ContentType: github.String("json"), Secret: github.String("s3cret")},
		Events: []string{"pull_request", "push"}, Active: github.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 201 || h.GetConfig().GetSecret() != "********" || h.GetConfig().GetURL() != "https://hooks.example.test/in" || h.GetName() != "web" {
		t.Errorf("created: %d %+v", resp.StatusCode, h)
	}
	if got := s.Hooks("octo/app"); len(got) != 1 || got[0].Config["secret"] != "s3cret" {
		t.Errorf("stored: %+v", got)
	}
	if _, _, err := gh.Repositories.CreateHook(ctx, "octo", "app", &github.Hook{Config: &github.HookConfig{URL: github.String("https://hooks.example.test/in")}}); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("a second hook with the same URL: %v", err)
	}
	if _, _, err := gh.Repositories.CreateHook(ctx, "octo", "app", &github.Hook{Config: &github.HookConfig{ContentType: github.String("json")}}); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("a hook without a URL: %v", err)
	}
	got, _, err := gh.Repositories.GetHook(ctx, "octo", "app", h.GetID())
	if err != nil || strings.Join(got.Events, ",") != "pull_request,push" {
		t.Fatalf("get: %+v %v", got, err)
	}
	ed, _, err := gh.Repositories.EditHook(ctx, "octo", "app", h.GetID(), &github.Hook{Events: []string{"deployment_status"}, Active: github.Bool(false),
		Config: &github.HookConfig{URL: github.String("https://hooks.example.test/v2"), ContentType: github.String("json")}})
	if err != nil || ed.GetActive() || strings.Join(ed.Events, ",") != "deployment_status" || ed.GetConfig().GetURL() != "https://hooks.example.test/v2" {
		t.Fatalf("edit: %+v %v", ed, err)
	}
	if got := s.Hooks("octo/app"); got[0].Config["secret"] != "s3cret" {
		t.Errorf("an edit without a secret keeps it: %+v", got[0].Config)
	}
	for i := range 3 {
		if _, _, err := gh.Repositories.CreateHook(ctx, "octo", "app", &github.Hook{Config: &github.HookConfig{URL: github.String("https://hooks.example.test/" + string(rune('a'+i)))}}); err != nil {
			t.Fatal(err)
		}
	}
	page, resp, err := gh.Repositories.ListHooks(ctx, "octo", "app", &github.ListOptions{PerPage: 3})
	if err != nil || len(page) != 3 || resp.NextPage != 2 || resp.LastPage != 2 {
		t.Fatalf("list: %d hooks, next %d, last %d, %v", len(page), resp.NextPage, resp.LastPage, err)
	}
	if _, err := gh.Repositories.DeleteHook(ctx, "octo", "app", h.GetID()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Repositories.GetHook(ctx, "octo", "app", h.GetID()); status(err) != http.StatusNotFound {
		t.Errorf("get of a deleted hook: %v", err)
	}
	if _, err := gh.Repositories.DeleteHook(ctx, "octo", "app", h.GetID()); status(err) != http.StatusNotFound {
		t.Errorf("delete of a deleted hook: %v", err)
	}
	if _, _, err := gh.Repositories.EditHook(ctx, "octo", "app", h.GetID(), &github.Hook{Active: github.Bool(true)}); status(err) != http.StatusNotFound {
		t.Errorf("edit of a deleted hook: %v", err)
	}
	s.AddToken(githubtest.Token{Value: "nohooks", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	_, resp, err = client(t, s, "nohooks").Repositories.ListHooks(ctx, "octo", "app", nil)
	refused(t, "list hooks without repository_hooks", resp, err, "repository_hooks=read")
	noViolations(t, s)
}

func TestIssueLabels(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	if err := s.Issues.AddLabel("octo/app", githubtest.Label{Name: "preview", Color: "0e8a16", Description: "has a preview"}); err != nil {
		t.Fatal(err)
	}
	ls, _, err := gh.Issues.AddLabelsToIssue(ctx, "octo", "app", 1, []string{"preview", "sponson:pr-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].GetName() != "preview" || ls[0].GetColor() != "0e8a16" || ls[1].GetColor() != "ededed" {
		t.Errorf("added: %+v", ls)
	}
	// Adding one already there changes nothing.
	if ls, _, err := gh.Issues.AddLabelsToIssue(ctx, "octo", "app", 1, []string{"PREVIEW"}); err != nil || len(ls) != 2 {
		t.Errorf("re-add: %d %v", len(ls), err)
	}
	ls, _, err = gh.Issues.ListLabelsByIssue(ctx, "octo", "app", 1, &github.ListOptions{PerPage: 1, Page: 2})
	if err != nil || len(ls) != 1 || ls[0].GetName() != "sponson:pr-1" {
		t.Fatalf("list page 2: %+v %v", ls, err)
	}
	if _, err := gh.Issues.RemoveLabelForIssue(ctx, "octo", "app", 1, "sponson:pr-1"); err != nil {
		t.Fatal(err)
	}
	if got := s.Issues.IssueLabels("octo/app", 1); strings.Join(got, ",") != "preview" {
		t.Errorf("left: %v", got)
	}
	if _, err := gh.Issues.RemoveLabelForIssue(ctx, "octo", "app", 1, "sponson:pr-1"); status(err) != http.StatusNotFound {
		t.Errorf("remove of a label not there: %v", err)
	}
	if _, _, err := gh.Issues.ListLabelsByIssue(ctx, "octo", "app", 99, nil); status(err) != http.StatusNotFound {
		t.Errorf("labels of an unknown issue: %v", err)
	}
	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, "octo", "app", 1, []string{" "}); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("a blank label: %v", err)
	}
	s.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	_, resp, err := client(t, s, "ro").Issues.AddLabelsToIssue(ctx, "octo", "app", 1, []string{"x"})
	refused(t, "add labels read-only", resp, err, "issues=write; pull_requests=write")
	noViolations(t, s)
}

// TestAddLabelsBodyShapes sends the three body shapes the description
// allows, and one it does not.
func TestAddLabelsBodyShapes(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	s := githubtest.Serve(t, githubtest.Options{Report: rec})
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/app", Branches: map[string]string{"feature": "f"}}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "wf", Identity: githubtest.ActionsBot})
	if _, err := s.AddPull(githubtest.PullRequest{Repo: "octo/app", Head: githubtest.Ref{Ref: "feature"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body  string
		want  int
		label string
	}{
		{`{"labels":["a",{"name":"b"}]}`, 200, "b"},
		{`["c"]`, 200, "c"},
		{`[{"name":"d"}]`, 200, "d"},
		{`{"labels":[]}`, 422, ""},
	} {
		rec.msgs = nil
		req, _ := http.NewRequest("POST", s.APIURL+"/repos/octo/app/issues/1/labels", strings.NewReader(c.body))
		req.Header.Set("Authorization", "token wf")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want || (c.want == 422) != (len(rec.msgs) > 0) {
			t.Errorf("%s: %d (want %d), violations %v", c.body, resp.StatusCode, c.want, rec.msgs)
		}
		if c.label != "" && !containsString(s.Issues.IssueLabels("octo/app", 1), c.label) {
			t.Errorf("%s: label %s missing from %v", c.body, c.label, s.Issues.IssueLabels("octo/app", 1))
		}
	}
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// seededRecording is seeded with the violations collected instead of
// failing the test.
func seededRecording(t *testing.T) (*githubtest.Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	s := githubtest.Serve(t, githubtest.Options{Report: rec})
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/app", Branches: map[string]string{"feature": "add feature"}}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "wf", Identity: githubtest.ActionsBot, Repos: []string{"octo/app"}})
	if _, err := s.AddPull(githubtest.PullRequest{Repo: "octo/app", Head: githubtest.Ref{Ref: "feature"}}); err != nil {
		t.Fatal(err)
	}
	return s, rec
}

func TestCommentReactions(t *testing.T) {
	t.Parallel()
	s, _ := seededRecording(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	id := s.AddComment("octo/app", 1, githubtest.Identity{Login: "alice"}, "/sponson apply")
	r, resp, err := gh.Reactions.CreateIssueCommentReaction(ctx, "octo", "app", id, "eyes")
	if err != nil || resp.StatusCode != 201 || r.GetContent() != "eyes" || r.GetUser().GetLogin() != "github-actions[bot]" {
		t.Fatalf("react: %d %+v %v", resp.StatusCode, r, err)
	}
	again, resp, err := gh.Reactions.CreateIssueCommentReaction(ctx, "octo", "app", id, "eyes")
	if err != nil || resp.StatusCode != 200 || again.GetID() != r.GetID() {
		t.Errorf("the same reaction again: %d %+v %v", resp.StatusCode, again, err)
	}
	if _, _, err := gh.Reactions.CreateIssueCommentReaction(ctx, "octo", "app", id, "rocket"); err != nil {
		t.Fatal(err)
	}
	rs, _, err := gh.Reactions.ListIssueCommentReactions(ctx, "octo", "app", id, nil)
	if err != nil || len(rs) != 2 {
		t.Fatalf("list: %+v %v", rs, err)
	}
	if got := s.Issues.Reactions(id); len(got) != 2 || got[1].Content != "rocket" {
		t.Errorf("stored: %+v", got)
	}
	if _, _, err := gh.Reactions.CreateIssueCommentReaction(ctx, "octo", "app", id, "thumbsup"); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("a content outside the enum: %v", err)
	}
	if _, _, err := gh.Reactions.ListIssueCommentReactions(ctx, "octo", "app", 424242, nil); status(err) != http.StatusNotFound {
		t.Errorf("reactions of an unknown comment: %v", err)
	}
	s.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	_, resp, err = client(t, s, "ro").Reactions.CreateIssueCommentReaction(ctx, "octo", "app", id, "+1")
	refused(t, "react read-only", resp, err, "issues=write; pull_requests=write")
	if v := s.Violations(); len(v) != 1 || !strings.Contains(v[0], "reactions/create-for-issue-comment") {
		t.Errorf("violations (only the bad content): %v", v)
	}
}

func TestCheckRunsForRef(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	sha := s.Branches("octo/app")["feature"]
	for _, name := range []string{"sponson", "sponson", "lint"} {
		if _, _, err := gh.Checks.CreateCheckRun(ctx, "octo", "app", github.CreateCheckRunOptions{Name: name, HeadSHA: sha, Status: github.String("in_progress")}); err != nil {
			t.Fatal(err)
		}
	}
	res, _, err := gh.Checks.ListCheckRunsForRef(ctx, "octo", "app", "feature", nil)
	if err != nil || res.GetTotal() != 2 || len(res.CheckRuns) != 2 {
		t.Fatalf("latest per name by branch: %+v %v", res, err)
	}
	res, resp, err := gh.Checks.ListCheckRunsForRef(ctx, "octo", "app", sha, &github.ListCheckRunsOptions{Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 2}})
	if err != nil || res.GetTotal() != 3 || len(res.CheckRuns) != 2 || resp.NextPage != 2 {
		t.Fatalf("all by sha: total %d, %d on the page, next %d, %v", res.GetTotal(), len(res.CheckRuns), resp.NextPage, err)
	}
	res, _, err = gh.Checks.ListCheckRunsForRef(ctx, "octo", "app", sha, &github.ListCheckRunsOptions{CheckName: github.String("lint")})
	if err != nil || res.GetTotal() != 1 || res.CheckRuns[0].GetName() != "lint" {
		t.Fatalf("by name: %+v %v", res, err)
	}
	if _, _, err := gh.Checks.ListCheckRunsForRef(ctx, "octo", "app", "main", nil); err != nil {
		t.Errorf("a ref without runs: %v", err)
	}
	if _, _, err := gh.Checks.ListCheckRunsForRef(ctx, "octo", "app", "nowhere", nil); status(err) != http.StatusUnprocessableEntity {
		t.Errorf("an unknown ref: %v", err)
	}
	s.AddToken(githubtest.Token{Value: "nochecks", Identity: githubtest.ActionsBot, Permissions: map[string]string{"contents": "read"}})
	_, resp, err = client(t, s, "nochecks").Checks.ListCheckRunsForRef(ctx, "octo", "app", "main", nil)
	refused(t, "check runs without checks", resp, err, "checks=read")
	noViolations(t, s)
}

func TestGetContent(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	plan := "version: 1\nplaces: []\n"
	sha, err := s.Git.CommitFiles("octo/app", "feature", "add plan", map[string]string{"release.plan.yaml": plan, "deploy/preview/env.txt": "A=1", "deploy/readme.md": "# r"})
	if err != nil {
		t.Fatal(err)
	}
	file, _, _, err := gh.Repositories.GetContents(ctx, "octo", "app", "release.plan.yaml", &github.RepositoryContentGetOptions{Ref: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := file.GetContent(); err != nil || got != plan || file.GetType() != "file" || file.GetSize() != len(plan) {
		t.Errorf("file: %q %v %s %d", got, err, file.GetType(), file.GetSize())
	}
	nested, _, _, err := gh.Repositories.GetContents(ctx, "octo", "app", "deploy/preview/env.txt", &github.RepositoryContentGetOptions{Ref: sha})
	if got, _ := nested.GetContent(); err != nil || got != "A=1" || nested.GetPath() != "deploy/preview/env.txt" {
		t.Errorf("nested by sha: %q %v", got, err)
	}
	_, dir, _, err := gh.Repositories.GetContents(ctx, "octo", "app", "deploy", &github.RepositoryContentGetOptions{Ref: "feature"})
	var names []string
	for _, e := range dir {
		names = append(names, e.GetName()+":"+e.GetType())
	}
	sort.Strings(names)
	if err != nil || strings.Join(names, ",") != "preview:dir,readme.md:file" {
		t.Errorf("directory: %v %v", names, err)
	}
	// The default branch does not have the file.
	if _, _, _, err := gh.Repositories.GetContents(ctx, "octo", "app", "release.plan.yaml", nil); status(err) != http.StatusNotFound {
		t.Errorf("a path missing on the default branch: %v", err)
	}
	if _, _, _, err := gh.Repositories.GetContents(ctx, "octo", "app", "release.plan.yaml", &github.RepositoryContentGetOptions{Ref: "gone"}); status(err) != http.StatusNotFound {
		t.Errorf("an unknown ref: %v", err)
	}
	s.AddToken(githubtest.Token{Value: "meta", Identity: githubtest.ActionsBot, Permissions: map[string]string{"metadata": "read"}})
	_, _, resp, err := client(t, s, "meta").Repositories.GetContents(ctx, "octo", "app", "release.plan.yaml", &github.RepositoryContentGetOptions{Ref: "feature"})
	refused(t, "contents without contents: read", resp, err, "contents=read")
	noViolations(t, s)
}

func TestCollaboratorPermission(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	for login, role := range map[string]string{"mia": "maintain", "tri": "triage", "wes": "write", "rea": "read"} {
		if err := s.Repos.SetCollaborator("octo/app", login, role); err != nil {
			t.Fatal(err)
		}
	}
	s.AddComment("octo/app", 1, githubtest.Identity{Login: "drive-by"}, "/sponson apply")
	for _, c := range []struct{ login, perm, role string }{
		{"octo", "admin", "admin"}, // the owner
		{"mia", "write", "maintain"},
		{"wes", "write", "write"},
		{"tri", "read", "triage"},
		{"rea", "read", "read"},
		{"drive-by", "read", "read"}, // anyone, on a public repository
	} {
		p, _, err := gh.Repositories.GetPermissionLevel(ctx, "octo", "app", c.login)
		if err != nil || p.GetPermission() != c.perm || p.GetUser().GetLogin() != c.login {
			t.Errorf("%s: %s %v, want %s", c.login, p.GetPermission(), err, c.perm)
		}
	}
	if _, _, err := gh.Repositories.GetPermissionLevel(ctx, "octo", "app", "nobody-we-know"); status(err) != http.StatusNotFound {
		t.Errorf("an unknown user: %v", err)
	}
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/secret", Private: true}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "all", Identity: githubtest.Identity{Login: "octo"}})
	if p, _, err := client(t, s, "all").Repositories.GetPermissionLevel(ctx, "octo", "secret", "drive-by"); err != nil || p.GetPermission() != "none" {
		t.Errorf("a stranger on a private repository: %+v %v", p, err)
	}
	if err := s.Repos.SetCollaborator("octo/app", "wes", ""); err != nil {
		t.Fatal(err)
	}
	if p, _, err := gh.Repositories.GetPermissionLevel(ctx, "octo", "app", "wes"); err != nil || p.GetPermission() != "read" {
		t.Errorf("a removed collaborator: %+v %v", p, err)
	}
	s.AddToken(githubtest.Token{Value: "nometa", Identity: githubtest.ActionsBot, Permissions: map[string]string{"contents": "read"}})
	_, resp, err := client(t, s, "nometa").Repositories.GetPermissionLevel(ctx, "octo", "app", "wes")
	refused(t, "permission without metadata", resp, err, "metadata=read")
	noViolations(t, s)
}

func TestTeamMembership(t *testing.T) {
	t.Parallel()
	s, _ := seeded(t)
	gh := client(t, s, "wf")
	ctx := context.Background()
	if err := s.Apply(githubtest.Seed{TeamMembers: []githubtest.Member{
		{Org: "octo", Team: "deployers", Login: "alice"},
		{Org: "octo", Team: "deployers", Login: "bob", Role: "maintainer", State: "pending"},
	}}); err != nil {
		t.Fatal(err)
	}
	m, _, err := gh.Teams.GetTeamMembershipBySlug(ctx, "octo", "deployers", "alice")
	if err != nil || m.GetRole() != "member" || m.GetState() != "active" {
		t.Fatalf("alice: %+v %v", m, err)
	}
	if m, _, err := gh.Teams.GetTeamMembershipBySlug(ctx, "octo", "deployers", "bob"); err != nil || m.GetRole() != "maintainer" || m.GetState() != "pending" {
		t.Errorf("bob: %+v %v", m, err)
	}
	if _, _, err := gh.Teams.GetTeamMembershipBySlug(ctx, "octo", "deployers", "carol"); status(err) != http.StatusNotFound {
		t.Errorf("not on the team: %v", err)
	}
	if _, _, err := gh.Teams.GetTeamMembershipBySlug(ctx, "octo", "no-team", "alice"); status(err) != http.StatusNotFound {
		t.Errorf("no such team: %v", err)
	}
	if err := s.Repos.AddTeamMember(githubtest.Member{Org: "octo", Team: "t", Login: "x", Role: "owner"}); err == nil {
		t.Error("a role GitHub does not have was accepted")
	}
	s.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Permissions: githubtest.ReadOnly()})
	_, resp, err := client(t, s, "ro").Teams.GetTeamMembershipBySlug(ctx, "octo", "deployers", "alice")
	refused(t, "membership without members", resp, err, "members=read")
	noViolations(t, s)
}
