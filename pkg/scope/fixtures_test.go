package scope_test

import (
	"github.com/sponson/apply/internal/testing/ghfixtures"

	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

// webhooksDir is the folder of GitHub's webhook payload examples:
// $SPONSON_FIXTURES_DIR/github/webhooks (or $SPONSON_FIXTURES_DIR itself when
// it is the webhooks folder), else the shared fixtures beside the repository.
func webhooksDir(t *testing.T) string { return ghfixtures.Webhooks(t) }

// The oracle decodes each payload on its own, with no code of the package
// but the error codes.
type fixture struct {
	event string
	p     map[string]any
}

func (f fixture) get(path string) any {
	var v any = f.p
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (f fixture) str(path string) string { s, _ := f.get(path).(string); return s }
func (f fixture) num(path string) int    { n, _ := f.get(path).(float64); return int(n) }

var (
	notAllowed = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
	hexSHA     = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// expectBranch is the scope GitHub's own fields say a branch has.
func (f fixture) expectBranch(branch string) string {
	if branch == f.str("repository.default_branch") {
		return "main"
	}
	return "branch-" + notAllowed.ReplaceAllString(branch, "-")
}

// expect is what Compute must return for a fixture.
type expect struct {
	code     errs.Code // USAGE when there is no scope
	scope    string
	pr       int
	branch   string
	sha      string
	repo     string
	defBr    string
	fork     bool
	headRepo string
	deleted  bool
}

func prRule(f fixture, _ *int) expect {
	head, base := f.str("pull_request.head.repo.full_name"), f.str("pull_request.base.repo.full_name")
	return expect{
		scope: "pr-" + strconv.Itoa(f.num("pull_request.number")), pr: f.num("pull_request.number"),
		branch: f.str("pull_request.head.ref"), sha: f.str("pull_request.head.sha"),
		repo: f.str("repository.full_name"), defBr: f.str("repository.default_branch"),
		fork: head != base, headRepo: head,
	}
}

func noScopeRule(fixture, *int) expect { return expect{code: errs.USAGE} }

// rules says, per event folder, what the payload's own fields require.
var rules = map[string]func(f fixture, deploymentPR *int) expect{
	"pull_request":                prRule,
	"pull_request_target":         prRule,
	"pull_request_review":         prRule,
	"pull_request_review_comment": prRule,
	"push": func(f fixture, _ *int) expect {
		ref := f.str("ref")
		if !strings.HasPrefix(ref, "refs/heads/") {
			return expect{code: errs.USAGE} // tags
		}
		branch := strings.TrimPrefix(ref, "refs/heads/")
		deleted, _ := f.get("deleted").(bool)
		sha := f.str("after")
		if deleted {
			sha = f.str("before")
		}
		return expect{scope: f.expectBranch(branch), branch: branch, sha: sha, deleted: deleted,
			repo: f.str("repository.full_name"), defBr: f.str("repository.default_branch")}
	},
	"issue_comment": func(f fixture, _ *int) expect {
		if f.get("issue.pull_request") == nil {
			return expect{code: errs.USAGE}
		}
		n := f.num("issue.number")
		return expect{scope: "pr-" + strconv.Itoa(n), pr: n,
			repo: f.str("repository.full_name"), defBr: f.str("repository.default_branch")}
	},
	// With the open PR the caller found: that PR, the deployed commit and
	// branch. Without: the deployed branch, never a guessed PR; a deployed
	// tag or bare commit has no scope.
	"deployment_status": func(f fixture, deploymentPR *int) expect {
		ref, sha := f.str("deployment.ref"), f.str("deployment.sha")
		branch := ref
		if hexSHA.MatchString(ref) || strings.HasPrefix(ref, "refs/tags/") {
			branch = ""
		}
		branch = strings.TrimPrefix(branch, "refs/heads/")
		e := expect{branch: branch, sha: sha, repo: f.str("repository.full_name"), defBr: f.str("repository.default_branch")}
		switch {
		case deploymentPR != nil:
			e.scope, e.pr = "pr-"+strconv.Itoa(*deploymentPR), *deploymentPR
		case branch == "":
			return expect{code: errs.USAGE}
		default:
			e.scope = f.expectBranch(branch)
		}
		return e
	},
	"ping":                      noScopeRule,
	"installation":              noScopeRule,
	"installation_repositories": noScopeRule,
}

func TestWebhookFixtures(t *testing.T) {
	dir := webhooksDir(t)
	events, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, ev := range events {
		if !ev.IsDir() {
			continue
		}
		event := ev.Name()
		rule, ok := rules[event]
		if !ok {
			t.Errorf("fixtures for the %s event have no expectation rule: add one to rules in fixtures_test.go", event)
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, event, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s: no payloads", event)
		}
		for _, file := range files {
			total++
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f := fixture{event: event}
			if err := json.Unmarshal(body, &f.p); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var prs []*int
			prs = append(prs, nil)
			if event == "deployment_status" {
				prs = append(prs, num(99))
			}
			for _, dpr := range prs {
				// As the Action sees it (GITHUB_SHA is a merge commit that must
				// never become git.sha) and as the bot sees it (a webhook).
				inputs := map[string]scope.Input{
					"action": {LookupEnv: envOf("GITHUB_ACTIONS", "true", "GITHUB_EVENT_NAME", event, "GITHUB_SHA", shaMerge), Event: body, DeploymentPR: dpr},
					"bot":    {EventName: event, Event: body, DeploymentPR: dpr},
				}
				for how, in := range inputs {
					name := event + "/" + filepath.Base(file) + "/" + how
					if dpr != nil {
						name += "/with-pr"
					}
					t.Run(name, func(t *testing.T) {
						checkFixture(t, rule(f, dpr), in)
					})
				}
			}
		}
	}
	if total == 0 {
		t.Fatalf("no payloads found under %s", dir)
	}
}

func checkFixture(t *testing.T, want expect, in scope.Input) {
	t.Helper()
	got, err := scope.Compute(in)
	if want.code != "" {
		if !errors.Is(err, want.code) {
			t.Fatalf("want %s, got %v (scope %q)", want.code, err, got.Scope)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	type fields struct {
		Scope, Branch, SHA, Repo, DefaultBranch, HeadRepo string
		PR                                                *int
		Fork, Deleted                                     bool
	}
	w := fields{want.scope, want.branch, want.sha, want.repo, want.defBr, want.headRepo, nil, want.fork, want.deleted}
	if want.pr != 0 {
		w.PR = &want.pr
	}
	g := fields{got.Scope, got.Git.Branch, got.Git.SHA, got.Repo, got.DefaultBranch, got.HeadRepo, got.PR.Number, got.Fork, got.Deleted}
	if d := diff(t, w, g); d != "" {
		t.Errorf("Compute against the payload's own fields (-want +got):\n%s\nreason: %s\nsources: %v", d, got.Reason, got.Sources)
	}
	checkInvariants(t, got)
}
