package github_test

import (
	"context"
	"testing"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/errs"
)

// The commenter's permission is what GitHub says now: the owner is admin,
// maintain reads as write, triage as read, a stranger read on a public
// repository and none when GitHub does not know the login.
func TestCollaboratorPermission(t *testing.T) {
	w := newWorld(t)
	for login, role := range map[string]string{"mia": "maintain", "tri": "triage", "wes": "write"} {
		if err := w.Repos.SetCollaborator("octo/app", login, role); err != nil {
			t.Fatal(err)
		}
	}
	w.AddComment("octo/app", 1, githubtest.Identity{Login: "drive-by"}, "/sponson destroy")
	c := w.client(t, "wf")
	ctx := context.Background()
	for login, want := range map[string]string{"octo": "admin", "mia": "write", "wes": "write", "tri": "read", "drive-by": "read", "nobody-we-know": "none"} {
		got, err := c.CollaboratorPermission(ctx, "octo", "app", login)
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", login, got, err, want)
		}
	}
	if github.PermissionRank("write") <= github.PermissionRank("read") || github.PermissionRank("admin") <= github.PermissionRank("write") || github.PermissionRank("triage") != 0 {
		t.Error("PermissionRank does not order none < read < write < admin")
	}
	if n := w.Count("repos/get-collaborator-permission-level"); n != 6 {
		t.Errorf("%d permission requests, want 6", n)
	}
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("requests GitHub's description refuses: %v", v)
	}
}

// A reaction is left once: the same one again is GitHub's 200, not an
// error, and the comment carries one.
func TestReactToComment(t *testing.T) {
	w := newWorld(t)
	id := w.AddComment("octo/app", 1, githubtest.Identity{Login: "octo"}, "/sponson plan")
	c := w.client(t, "wf")
	for range 2 {
		if err := c.ReactToComment(context.Background(), "octo", "app", id, "eyes"); err != nil {
			t.Fatal(err)
		}
	}
	rs := w.Issues.Reactions(id)
	if len(rs) != 1 || rs[0].Content != "eyes" || rs[0].User.Login != githubtest.ActionsBot.Login {
		t.Errorf("reactions: %+v", rs)
	}
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("requests GitHub's description refuses: %v", v)
	}
}

// The plan is read at the pull request's head commit: what a later push
// to the branch wrote is not what that commit holds.
func TestFileAt(t *testing.T) {
	w := newWorld(t)
	sha, err := w.Git.CommitFiles("octo/app", "feature", "add the plan", map[string]string{"release.plan.yaml": "version: 1\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Git.CommitFiles("octo/app", "feature", "change it", map[string]string{"release.plan.yaml": "version: 2\n"}); err != nil {
		t.Fatal(err)
	}
	c := w.client(t, "wf")
	ctx := context.Background()
	if got, err := c.FileAt(ctx, "octo", "app", "release.plan.yaml", sha); err != nil || string(got) != "version: 1\n" {
		t.Errorf("at %s: %q %v", sha, got, err)
	}
	if got, err := c.FileAt(ctx, "octo", "app", "release.plan.yaml", "feature"); err != nil || string(got) != "version: 2\n" {
		t.Errorf("at the branch: %q %v", got, err)
	}
	_, err = c.FileAt(ctx, "octo", "app", "release.plan.yaml", "main")
	wantCode(t, err, errs.GITHUB_NOT_FOUND)
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("requests GitHub's description refuses: %v", v)
	}
}

// A label is put on once and taken off once; taking off one not there
// is not an error.
func TestLabels(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	for range 2 {
		if err := c.AddLabel(ctx, "octo", "app", 1, "sponson:keep"); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.Issues.IssueLabels("octo/app", 1); len(got) != 1 || got[0] != "sponson:keep" {
		t.Errorf("labels: %v", got)
	}
	for range 2 {
		if err := c.RemoveLabel(ctx, "octo", "app", 1, "sponson:keep"); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.Issues.IssueLabels("octo/app", 1); len(got) != 0 {
		t.Errorf("labels after removing: %v", got)
	}
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("requests GitHub's description refuses: %v", v)
	}
}

// An approver is an active member of the team; a pending one, a stranger
// and a team that does not exist are not.
func TestTeamMember(t *testing.T) {
	w := newWorld(t)
	for _, m := range []githubtest.Member{{Org: "octo", Team: "approvers", Login: "ada"}, {Org: "octo", Team: "approvers", Login: "pat", State: "pending"}} {
		if err := w.Repos.AddTeamMember(m); err != nil {
			t.Fatal(err)
		}
	}
	c := w.client(t, "wf")
	for _, tc := range []struct {
		team, login string
		want        bool
	}{{"approvers", "ada", true}, {"approvers", "pat", false}, {"approvers", "octo", false}, {"nobody", "ada", false}} {
		got, err := c.TeamMember(context.Background(), "octo", tc.team, tc.login)
		if err != nil || got != tc.want {
			t.Errorf("%s on %s: %v %v, want %v", tc.login, tc.team, got, err, tc.want)
		}
	}
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("requests GitHub's description refuses: %v", v)
	}
}
