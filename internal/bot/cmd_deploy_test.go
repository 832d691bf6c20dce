package bot

import (
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/internal/testing/githubtest"
)

// A preview run from its pull request shows there as the Action's runs
// do: /sponson apply makes the deployment of preview/pr-2 at the head
// commit (in progress while a manual step waits), /sponson confirm
// completes it (success, with the URL the plan's environment_url names),
// the commit status sponson/preview follows each run and links to the
// environment's comment, and /sponson destroy marks the deployment
// inactive.
func TestCommentCommandsDeploy(t *testing.T) {
	w := newAppWorld(t)
	if err := w.gh.AddInstallation(githubtest.Installation{ID: 1, App: 4242, Account: "Codertocat", Repos: []string{hello},
		Permissions: map[string]string{"contents": "write", "pull_requests": "write", "actions": "read", "metadata": "read",
			"deployments": "write", "statuses": "write"}}); err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(strings.TrimLeft(stepPlan, "\n"), "changes:\n", "environment_url: { from: cb.item }\nchanges:\n", 1)
	w, sha := stepWorldOf(t, w, src)
	last := func() (githubtest.Deployment, string) {
		t.Helper()
		ds := w.gh.Deploys.Deployments(hello)
		if len(ds) != 1 {
			t.Fatalf("deployments: %+v, want one", ds)
		}
		d := ds[0]
		return d, d.Statuses[len(d.Statuses)-1].State
	}
	status := func() githubtest.CommitStatus {
		t.Helper()
		var got []githubtest.CommitStatus
		for _, s := range w.gh.Deploys.Statuses(hello) {
			if s.SHA == sha && s.Context == "sponson/preview" {
				got = append(got, s)
			}
		}
		if len(got) == 0 {
			t.Fatal("no commit status sponson/preview on the head commit")
		}
		return got[len(got)-1]
	}

	w.say("wes", "/sponson apply --env preview")
	d, state := last()
	if d.Environment != "preview/pr-2" || d.SHA != sha || state != "in_progress" {
		t.Errorf("after /sponson apply: %s at %s is %s, want preview/pr-2 at the head, in_progress (a step waits)", d.Environment, d.SHA, state)
	}
	if s := status(); s.State != "pending" {
		t.Errorf("commit status after the apply: %+v, want pending", s)
	}

	w.say("wes", "/sponson confirm dns --env preview")
	d, state = last()
	if state != "success" || d.Statuses[len(d.Statuses)-1].URL != "https://preview-changes.example.test/cb" {
		t.Errorf("after /sponson confirm: %s with %+v, want success with the callback's URL", state, d.Statuses[len(d.Statuses)-1])
	}
	s := status()
	if s.State != "success" || !strings.Contains(s.TargetURL, "#issuecomment-") {
		t.Errorf("commit status after the confirm: %+v, want success linking to the comment", s)
	}
	if body := w.botComment(report.Marker("preview")); body == "" {
		t.Error("no comment of the preview")
	}

	w.say("wes", "/sponson destroy --env preview")
	if _, state = last(); state != "inactive" {
		t.Errorf("after /sponson destroy the deployment is %s, want inactive", state)
	}
	if v := w.gh.Violations(); len(v) != 0 {
		t.Errorf("calls GitHub would refuse: %v", v)
	}
}
