package github_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/errs"
)

// TestDeployments: one deployment per commit and environment, its
// statuses, a newer commit's success leaving the older inactive (GitHub's
// auto_inactive), teardown marking the newest inactive, and a commit
// status; every request checked against GitHub's description.
func TestDeployments(t *testing.T) {
	w := newWorld(t)
	c := w.client(t, "wf")
	ctx := context.Background()
	tip := w.Branches("octo/app")["feature"]
	main := w.Branches("octo/app")["main"]

	d, err := c.EnsureDeployment(ctx, "octo", "app", "preview/pr-1", tip, "sponson apply preview/pr-1")
	if err != nil || d.ID == 0 || d.SHA != tip || d.Environment != "preview/pr-1" {
		t.Fatalf("deployment %+v, %v", d, err)
	}
	again, err := c.EnsureDeployment(ctx, "octo", "app", "preview/pr-1", tip, "again")
	if err != nil || again.ID != d.ID {
		t.Fatalf("the same commit deployed twice: %+v, %v", again, err)
	}
	for _, st := range []string{"in_progress", "success"} {
		if err := c.CreateDeploymentStatus(ctx, "octo", "app", d.ID, github.DeploymentStatus{State: st, EnvironmentURL: "https://pr-1.example.dev", LogURL: "https://github.com/octo/app/actions/runs/1", Description: strings.Repeat("x", 200)}); err != nil {
			t.Fatal(err)
		}
	}
	older, err := c.EnsureDeployment(ctx, "octo", "app", "preview/pr-1", main, "")
	if err != nil || older.ID == d.ID {
		t.Fatalf("another commit: %+v, %v", older, err)
	}
	if err := c.CreateDeploymentStatus(ctx, "octo", "app", older.ID, github.DeploymentStatus{State: "success"}); err != nil {
		t.Fatal(err)
	}
	ds := w.Deploys.Deployments("octo/app")
	if len(ds) != 2 {
		t.Fatalf("deployments %+v", ds)
	}
	first := ds[0].Statuses
	if len(first) != 3 || first[1].URL != "https://pr-1.example.dev" || first[2].State != "inactive" || len([]rune(first[1].Description)) != 140 {
		t.Errorf("the first deployment's statuses %+v", first)
	}
	if ds[0].Transient || ds[0].Production {
		t.Errorf("a preview deployment is neither transient (auto_inactive skips those) nor production: %+v", ds[0])
	}

	ok, err := c.DeactivateDeployments(ctx, "octo", "app", "preview/pr-1", "")
	if err != nil || !ok {
		t.Fatalf("deactivate: %v %v", ok, err)
	}
	ds = w.Deploys.Deployments("octo/app")
	if sts := ds[1].Statuses; sts[len(sts)-1].State != "inactive" {
		t.Errorf("the newest deployment is not inactive: %+v", sts)
	}
	if ok, err := c.DeactivateDeployments(ctx, "octo", "app", "preview/pr-9", ""); err != nil || ok {
		t.Errorf("an environment without deployments: %v %v", ok, err)
	}

	if err := c.CreateCommitStatus(ctx, "octo", "app", tip, github.CommitStatus{State: "success", Context: "sponson/preview", TargetURL: "https://github.com/octo/app/pull/1#issuecomment-1", Description: "applied"}); err != nil {
		t.Fatal(err)
	}
	st := w.Deploys.Statuses("octo/app")
	if len(st) != 1 || st[0].Context != "sponson/preview" || st[0].SHA != tip || st[0].State != "success" {
		t.Errorf("commit statuses %+v", st)
	}
	if v := w.Violations(); len(v) != 0 {
		t.Errorf("requests GitHub would refuse: %v", v)
	}
}

// TestDeploymentsWithoutPermission: a token without deployments: write is
// GITHUB_PERMISSION naming the permission; an unknown commit is
// GITHUB_INVALID.
func TestDeploymentsWithoutPermission(t *testing.T) {
	w := newWorld(t)
	w.AddToken(githubtest.Token{Value: "ro", Identity: githubtest.ActionsBot, Repos: []string{"octo/app"}, Permissions: map[string]string{"deployments": "read", "metadata": "read"}})
	ctx := context.Background()
	tip := w.Branches("octo/app")["feature"]
	_, err := w.client(t, "ro").EnsureDeployment(ctx, "octo", "app", "preview/pr-1", tip, "")
	wantCode(t, err, errs.GITHUB_PERMISSION)
	if !strings.Contains(err.Error(), "deployments") {
		t.Errorf("%v does not name the permission", err)
	}
	_, err = w.client(t, "wf").EnsureDeployment(ctx, "octo", "app", "preview/pr-1", strings.Repeat("0", 40), "")
	wantCode(t, err, errs.GITHUB_INVALID)
}
