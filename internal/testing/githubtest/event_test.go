package githubtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/ghfixtures"
	"github.com/sponson/apply/internal/testing/githubtest"
)

func TestSeedFromRealPayloads(t *testing.T) {
	t.Parallel()
	s := githubtest.Start(t, nil)
	s.AddToken(githubtest.Token{Value: "wf", Identity: githubtest.ActionsBot})
	if _, err := s.AddApp(githubtest.App{ID: 29310, Slug: "octoapp", Key: testKey}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ event, file string }{
		{"pull_request", "pull_request/opened.payload.json"},
		{"deployment_status", "deployment_status/payload.json"},
		{"installation", "installation/created.payload.json"},
	} {
		b, err := os.ReadFile(ghfixtures.Payload(t, p.file))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SeedFromEvent(p.event, b); err != nil {
			t.Fatalf("%s: %v", p.file, err)
		}
	}
	gh := client(t, s, "wf")
	ctx := context.Background()
	pr, _, err := gh.PullRequests.Get(ctx, "Codertocat", "Hello-World", 2)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetHead().GetRef() != "changes" || pr.GetHead().GetSHA() != "ec26c3e57ca3a959ca5aad62de7213c562f8c821" || pr.GetState() != "open" {
		t.Errorf("pull request from the payload: %s %s %s", pr.GetHead().GetRef(), pr.GetHead().GetSHA(), pr.GetState())
	}
	prs, _, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, "Codertocat", "Hello-World", "ec26c3e57ca3a959ca5aad62de7213c562f8c821", nil)
	if err != nil || len(prs) != 1 {
		t.Errorf("pull requests of the head commit: %d %v", len(prs), err)
	}
	if ds := s.Deploys.Deployments("Codertocat/Hello-World"); len(ds) != 1 {
		t.Errorf("deployments: %+v", ds)
	}
	now := time.Now()
	if got := get(t, s.APIURL+"/repos/Codertocat/Hello-World/installation", "Bearer "+appJWT(t, testKey, "29310", now, now.Add(time.Minute))); got != 200 {
		t.Errorf("the installation of the payload: %d", got)
	}
	if v := s.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}
