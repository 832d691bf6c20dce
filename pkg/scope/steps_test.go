package scope

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
)

// The steps of Compute and of the GitHub layer, one rule at a time. Compute's
// own table (compute_test.go) checks them together.

func TestFirstOfferDecides(t *testing.T) {
	none := offer[string]{}
	cases := []struct {
		name   string
		offers []offer[string]
		want   offer[string]
	}{
		{"nothing", []offer[string]{none, none}, none},
		{"the first with a value", []offer[string]{none, text("a", "flag"), text("b", "git:HEAD")}, text("a", "flag")},
		{"a refusal stops the search", []offer[string]{none, {note: "not on branch"}, text("b", "git:HEAD")}, offer[string]{note: "not on branch"}},
		{"an empty value is no offer", []offer[string]{text("", "flag"), text("b", "git:HEAD")}, text("b", "git:HEAD")},
	}
	for _, tc := range cases {
		if got := first(tc.offers...); got != tc.want {
			t.Errorf("%s: first = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// SPONSON_CTX_PR="" decides "no pull request": a source with no value.
	set := offer[*int]{source: "env:SPONSON_CTX_PR"}
	n := 5
	if got := first(offer[*int]{}, set, number(&n, "event:number")); got.value != nil || got.source != set.source {
		t.Errorf("a set, empty SPONSON_CTX_PR gave %+v, want no pull request from it", got)
	}
}

func TestEventIsThisRun(t *testing.T) {
	five, seven := 5, 7
	cases := []struct {
		name     string
		gh       *ghLayer
		pr       *int
		want     bool
		wantNote string
	}{
		{"outside GitHub", nil, &five, false, ""},
		{"an event about no pull request", &ghLayer{}, &five, true, ""},
		{"no pull request chosen", &ghLayer{pr: &seven}, nil, true, ""},
		{"the same pull request", &ghLayer{pr: &five}, &five, true, ""},
		{"another pull request", &ghLayer{pr: &seven}, &five, false, "about pull request #7, not #5"},
	}
	for _, tc := range cases {
		got := (&layers{gh: tc.gh}).eventIsThisRun(tc.pr)
		if got.value != tc.want || (tc.wantNote == "") != (got.note == "") || !strings.Contains(got.note, tc.wantNote) {
			t.Errorf("%s: %+v, want %v with a note containing %q", tc.name, got, tc.want, tc.wantNote)
		}
	}
}

// The commit goes only with the branch it belongs to.
func TestSHAGoesWithItsBranch(t *testing.T) {
	head := strings.Repeat("AB", 20)
	five := 5
	prEvent := &ghLayer{pr: &five, branch: "feat/x", refBranch: "feat/x", sha: head, shaSrc: "event:pull_request.head.sha"}
	push := &ghLayer{branch: "feat/x", refBranch: "feat/x", sha: head, shaSrc: "event:after"}
	schedule := &ghLayer{refBranch: "main", sha: head, shaSrc: "env:GITHUB_SHA"}
	cases := []struct {
		name   string
		l      layers
		pr     *int
		branch string
		ghOK   bool
		want   offer[string]
	}{
		{"a flag wins", layers{flag: explicit{sha: "f"}, ctx: explicit{sha: "c"}, gh: push}, nil, "feat/x", true, text("f", "flag")},
		{"SPONSON_CTX_SHA next", layers{ctx: explicit{sha: "c"}, gh: push}, nil, "feat/x", true, text("c", "env:SPONSON_CTX_SHA")},
		{"a pull request's head, whatever the branch", layers{gh: prEvent}, &five, "renamed", true, text(strings.ToLower(head), "event:pull_request.head.sha")},
		{"a push's commit on its branch", layers{gh: push}, nil, "feat/x", true, text(strings.ToLower(head), "event:after")},
		{"a push's commit on another branch", layers{gh: push}, nil, "other", true, offer[string]{note: `git.sha: the event's commit ABABABA is not on branch "other"; pass --sha`}},
		{"a schedule's commit on the default branch", layers{gh: schedule}, nil, "main", true, text(strings.ToLower(head), "env:GITHUB_SHA")},
		{"an event about another pull request", layers{gh: prEvent}, &five, "feat/x", false, offer[string]{}},
		{"local HEAD on the branch", layers{local: &LocalGit{Branch: "feat/x", SHA: head}}, nil, "feat/x", false, text(strings.ToLower(head), "git:HEAD")},
		{"a detached HEAD with any branch", layers{local: &LocalGit{SHA: head}}, nil, "other", false, text(strings.ToLower(head), "git:HEAD")},
		{"local HEAD on another branch", layers{local: &LocalGit{Branch: "feat/x", SHA: head}}, nil, "other", false, offer[string]{note: `git.sha: local HEAD is on branch "feat/x", not "other"; pass --sha`}},
		{"nothing", layers{}, nil, "feat/x", false, offer[string]{}},
	}
	for _, tc := range cases {
		if got := tc.l.sha(tc.pr, tc.branch, tc.ghOK); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestBranchScopeStep(t *testing.T) {
	cases := []struct {
		branch, defaultBranch string
		scope, reason         string
		code                  errs.Code
	}{
		{"trunk", "trunk", Main, `branch "trunk" is the repository's default branch (event:repository.default_branch)`, ""},
		{"main", "trunk", "branch-main", `branch "main" is not the default branch "trunk"`, ""},
		{"main", "", Main, `branch "main", and the default branch is unknown: main and master count as default`, ""},
		{"master", "", Main, `branch "master", and the default branch is unknown: main and master count as default`, ""},
		{"feat/x", "", "branch-feat-x", `branch "feat/x" is not main or master (the default branch is unknown)`, ""},
		{"a..b", "", "", "", errs.USAGE},
	}
	for _, tc := range cases {
		c := Ctx{DefaultBranch: tc.defaultBranch, Sources: map[string]string{"default_branch": "event:repository.default_branch"}}
		err := branchScope(&c, tc.branch)
		if tc.code != "" {
			if e := errs.As(err); e == nil || e.Code != tc.code {
				t.Errorf("%q: %v, want %s", tc.branch, err, tc.code)
			}
			continue
		}
		if err != nil || c.Scope != tc.scope || c.Reason != tc.reason {
			t.Errorf("%q (default %q): %q %q %v, want %q %q", tc.branch, tc.defaultBranch, c.Scope, c.Reason, err, tc.scope, tc.reason)
		}
	}
}

// noEnv is the GITHUB_* reader outside GitHub Actions.
func noEnv(string) string { return "" }

func ghEnvOf(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// layerView is what a rule fills in, for comparison.
type layerView struct {
	branch, branchSrc, refBranch, sha, shaSrc string
	pr                                        int
	deleted                                   bool
	noScope                                   string
	notes                                     int
}

func viewLayer(g *ghLayer) layerView {
	v := layerView{g.branch, g.branchSrc, g.refBranch, g.sha, g.shaSrc, 0, g.deleted, g.noScope, len(g.notes)}
	if g.pr != nil {
		v.pr = *g.pr
	}
	return v
}

func TestEventRules(t *testing.T) {
	after, before := strings.Repeat("56", 20), strings.Repeat("78", 20)
	zero := strings.Repeat("0", 40)
	inActions := ghEnvOf("GITHUB_SHA", "cd", "GITHUB_REF", "refs/heads/main")
	cases := []struct {
		name string
		ev   event
		want layerView
	}{
		{"push to a branch", event{name: "push", p: payload{Ref: "refs/heads/feat/x", After: after}, env: noEnv},
			layerView{branch: "feat/x", branchSrc: "event:ref", refBranch: "feat/x", sha: after, shaSrc: "event:after"}},
		{"push without a ref in the payload", event{name: "push", p: payload{After: after}, env: ghEnvOf("GITHUB_REF", "refs/heads/dev")},
			layerView{branch: "dev", branchSrc: "env:GITHUB_REF", refBranch: "dev", sha: after, shaSrc: "event:after"}},
		{"push deleting a branch", event{name: "push", p: payload{Ref: "refs/heads/feat/x", Deleted: true, Before: before, After: zero}, env: noEnv},
			layerView{branch: "feat/x", branchSrc: "event:ref", refBranch: "feat/x", sha: before, shaSrc: "event:before", deleted: true, notes: 1}},
		{"push deleting a branch with no commit", event{name: "push", p: payload{Ref: "refs/heads/feat/x", Deleted: true, Before: zero}, env: noEnv},
			layerView{branch: "feat/x", branchSrc: "event:ref", refBranch: "feat/x", deleted: true, notes: 1}},
		{"push with a zero after", event{name: "push", p: payload{Ref: "refs/heads/feat/x", After: zero}, env: inActions},
			layerView{branch: "feat/x", branchSrc: "event:ref", refBranch: "feat/x", sha: "cd", shaSrc: "env:GITHUB_SHA"}},
		{"push of a tag", event{name: "push", p: payload{Ref: "refs/tags/v1", After: after}, env: noEnv},
			layerView{sha: after, shaSrc: "event:after", noScope: "a push on the tag v1"}},
		{"push with no ref", event{name: "push", env: noEnv}, layerView{noScope: "a push with no ref"}},
		{"push of another ref", event{name: "push", p: payload{Ref: "refs/notes/x"}, env: noEnv},
			layerView{noScope: "a push on refs/notes/x, which is not a branch"}},
		{"delete of a branch", event{name: "delete", p: payload{Ref: "feat/x", RefType: "branch"}, env: noEnv},
			layerView{branch: "feat/x", branchSrc: "event:ref", refBranch: "feat/x", deleted: true, notes: 1}},
		{"delete of a tag", event{name: "delete", p: payload{Ref: "v1", RefType: "tag"}, env: noEnv},
			layerView{noScope: "the deletion of the tag v1"}},
		{"delete of nothing", event{name: "delete", env: noEnv}, layerView{noScope: "a delete event without a branch"}},
		{"dispatch on a branch", event{name: "workflow_dispatch", p: payload{Ref: "refs/heads/dev"}, env: inActions},
			layerView{branch: "dev", branchSrc: "event:ref", refBranch: "dev", sha: "cd", shaSrc: "env:GITHUB_SHA"}},
		{"schedule", event{name: "schedule", env: inActions},
			layerView{refBranch: "main", sha: "cd", shaSrc: "env:GITHUB_SHA", noScope: "a schedule event (it runs on no branch of its own)"}},
		{"no event name", event{name: "", env: inActions},
			layerView{refBranch: "main", sha: "cd", shaSrc: "env:GITHUB_SHA", noScope: "a GitHub Actions run without GITHUB_EVENT_NAME"}},
		{"an event with no rule", event{name: "ping", env: noEnv},
			layerView{noScope: "a ping event, which has no pull request or branch Sponson derives a scope from"}},
		{"pull request without a payload", event{name: "pull_request", env: ghEnvOf("GITHUB_REF", "refs/pull/12/merge", "GITHUB_HEAD_REF", "feat/x")},
			layerView{pr: 12, branch: "feat/x", branchSrc: "env:GITHUB_HEAD_REF", refBranch: "feat/x", notes: 1}},
		{"pull request without a payload or its ref", event{name: "pull_request_target", env: ghEnvOf("GITHUB_REF", "refs/pull/x1/merge")},
			layerView{noScope: "a pull_request_target event without its payload or a refs/pull/<n>/ GITHUB_REF"}},
	}
	for _, tc := range cases {
		g := &ghLayer{event: tc.ev.name}
		rule, ok := eventRules[tc.ev.name]
		if !ok {
			rule = (*ghLayer).fromOtherEvent
		}
		rule(g, tc.ev)
		if got := viewLayer(g); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestIssueCommentRule(t *testing.T) {
	type issue = struct {
		Number      int             `json:"number"`
		PullRequest json.RawMessage `json:"pull_request"`
	}
	cases := []struct {
		name string
		ev   event
		want layerView
	}{
		{"no payload", event{name: "issue_comment"}, layerView{noScope: "an issue_comment event without its payload (a comment on a pull request cannot be told from one on an issue)"}},
		{"on a pull request", event{name: "issue_comment", hasPayload: true, p: payload{Issue: &issue{8, json.RawMessage(`{"url":"x"}`)}}}, layerView{pr: 8, notes: 1}},
		{"on an issue", event{name: "issue_comment", hasPayload: true, p: payload{Issue: &issue{8, nil}}}, layerView{noScope: "a comment on issue #8, which is not a pull request"}},
		{"pull_request null", event{name: "issue_comment", hasPayload: true, p: payload{Issue: &issue{8, json.RawMessage(`null`)}}}, layerView{noScope: "a comment on issue #8, which is not a pull request"}},
	}
	for _, tc := range cases {
		g := &ghLayer{event: tc.ev.name}
		g.fromIssueComment(tc.ev)
		if got := viewLayer(g); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
