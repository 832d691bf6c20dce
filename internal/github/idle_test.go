package github_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
)

// What idle expiry reads of GitHub comes from calls the client already
// makes: a pull request's labels from the listing (no request per pull
// request), its head branch's tip's committer time from the branch, and
// the bot's own comment carrying a marker (never another author's).
func TestIdleReads(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	w.time.Advance(3 * time.Hour)
	pushed := w.time.Now()
	if _, err := w.Git.CommitFiles("octo/app", "feature", "more", map[string]string{"a.txt": "a"}); err != nil {
		t.Fatal(err)
	}
	w.time.Advance(time.Hour)
	if err := c.AddLabel(ctx, "octo", "app", 1, "sponson:keep"); err != nil {
		t.Fatal(err)
	}
	prs, err := c.ListPullRequests(ctx, "octo", "app", "open")
	if err != nil || len(prs) != 1 || !slices.Equal(prs[0].Labels, []string{"sponson:keep"}) {
		t.Fatalf("listed: %+v %v", prs, err)
	}
	pr, err := c.GetPullRequest(ctx, "octo", "app", 1)
	if err != nil || !slices.Equal(pr.Labels, []string{"sponson:keep"}) {
		t.Fatalf("pull request: %+v %v", pr, err)
	}
	b, err := c.GetBranch(ctx, "octo", "app", "feature")
	if err != nil || !b.Committed.Equal(pushed) {
		t.Fatalf("branch: %+v %v, want committed %s", b, err, pushed)
	}

	w.AddComment("octo/app", 1, githubtest.Identity{Login: "mallory"}, "<!-- m --> forged")
	if _, found, err := github.OwnComment(ctx, c, "octo", "app", 1, "<!-- m -->"); err != nil || found {
		t.Fatalf("another author's comment was taken as ours: %v %v", found, err)
	}
	if _, _, err := c.UpsertComment(ctx, "octo", "app", 1, "<!-- m -->", "<!-- m -->\nours"); err != nil {
		t.Fatal(err)
	}
	cm, found, err := github.OwnComment(ctx, c, "octo", "app", 1, "<!-- m -->")
	if err != nil || !found || cm.Body != "<!-- m -->\nours" || cm.Author != githubtest.ActionsBot.Login {
		t.Fatalf("own comment: %+v %v %v", cm, found, err)
	}
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("requests GitHub's description refuses: %v", v)
	}
}
