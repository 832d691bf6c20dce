package scope_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

func TestBranchScope(t *testing.T) {
	cases := []struct{ branch, want string }{
		{"feat/x", "branch-feat-x"},
		{"feat-x", "branch-feat-x"},
		{"Feat_X.1", "branch-Feat_X.1"},
		{"a//b", "branch-a-b"},
		{"a / b", "branch-a-b"},
		{"fix this", "branch-fix-this"},
		{"tab\tand\nnewline", "branch-tab-and-newline"},
		{"fix/ü", "branch-fix-"},
		{"ünïcödé", "branch--n-c-d-"},
		{"日本語/ブランチ", "branch--"},
		{"rocket-🚀-x", "branch-rocket---x"}, // the run is only the emoji; the dashes around it stay
		{"/leading", "branch--leading"},
		{"trailing/", "branch-trailing-"},
		{"dots.in.name", "branch-dots.in.name"},
		{"x~1^2:3?*[4]", "branch-x-1-2-3-4-"},
		{"a@{b}", "branch-a-b-"},
		{"renovate/github.com-go-git-go-git-5.x", "branch-renovate-github.com-go-git-go-git-5.x"},
		{"dependabot/go_modules/golang.org/x/net-0.57.0", "branch-dependabot-go_modules-golang.org-x-net-0.57.0"},
		{"UPPER/lower", "branch-UPPER-lower"},
		{"--", "branch---"},
		{"", "branch-"},
	}
	for _, tc := range cases {
		if got := scope.BranchScope(tc.branch); got != tc.want {
			t.Errorf("BranchScope(%q) = %q, want %q", tc.branch, got, tc.want)
		}
	}
}

var scopeChars = regexp.MustCompile(`^branch-[A-Za-z0-9._-]*$`)

// FuzzBranchScope checks the rule for any name: only allowed characters,
// and a sanitised name is its own scope (the rule is idempotent).
func FuzzBranchScope(f *testing.F) {
	for _, s := range []string{"feat/x", "ü//ñ", " a b ", "x..y", "\x00\xff", "a@{1}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := scope.BranchScope(name)
		if !scopeChars.MatchString(got) {
			t.Fatalf("BranchScope(%q) = %q has characters outside [A-Za-z0-9._-]", name, got)
		}
		if again := scope.BranchScope(strings.TrimPrefix(got, "branch-")); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", name, got, again)
		}
	})
}

func TestPRScope(t *testing.T) {
	for n, want := range map[int]string{1: "pr-1", 42: "pr-42", 100000: "pr-100000"} {
		if got := scope.PRScope(n); got != want {
			t.Errorf("PRScope(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		scope string
		kind  scope.Kind
		value string
		ok    bool
	}{
		{"main", scope.KindMain, "", true},
		{"pr-1", scope.KindPR, "1", true},
		{"pr-42", scope.KindPR, "42", true},
		{"branch-feat-x", scope.KindBranch, "feat-x", true},
		{"branch-a", scope.KindBranch, "a", true},
		{"branch-main", scope.KindBranch, "main", true},
		{"branch--lead-", scope.KindBranch, "-lead-", true},
		{"branch-v1.2_rc", scope.KindBranch, "v1.2_rc", true},
		{"", "", "", false},
		{"Main", "", "", false},
		{"master", "", "", false},
		{"pr-", "", "", false},
		{"pr-0", "", "", false},
		{"pr-01", "", "", false},
		{"pr--1", "", "", false},
		{"pr-x", "", "", false},
		{"pr-1a", "", "", false},
		{"pr-99999999999999999999999", "", "", false},
		{"branch-", "", "", false},
		{"branch-feat/x", "", "", false},
		{"branch-a b", "", "", false},
		{"branch-ü", "", "", false},
		{"branch-a..b", "", "", false},
		{"branch-x.", "", "", false},
		{"branch-x.lock", "", "", false},
		{"feat-x", "", "", false},
	}
	for _, tc := range cases {
		kind, value, err := scope.Parse(tc.scope)
		if tc.ok {
			if err != nil || kind != tc.kind || value != tc.value {
				t.Errorf("Parse(%q) = (%q, %q, %v), want (%q, %q, nil)", tc.scope, kind, value, err, tc.kind, tc.value)
			}
			if err := scope.Validate(tc.scope); err != nil {
				t.Errorf("Validate(%q) = %v", tc.scope, err)
			}
			continue
		}
		if !errors.Is(err, errs.USAGE) {
			t.Errorf("Parse(%q) = (%q, %q, %v), want USAGE", tc.scope, kind, value, err)
		}
		if err := scope.Validate(tc.scope); !errors.Is(err, errs.USAGE) {
			t.Errorf("Validate(%q) = %v, want USAGE", tc.scope, err)
		}
	}
}

func TestParseRoundTripsScopes(t *testing.T) {
	for _, s := range []string{scope.PRScope(7), scope.BranchScope("feat/x"), scope.Main} {
		kind, value, err := scope.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		var back string
		switch kind {
		case scope.KindPR:
			back = "pr-" + value
		case scope.KindBranch:
			back = "branch-" + value
		case scope.KindMain:
			back = scope.Main
		}
		if back != s {
			t.Errorf("Parse(%q) = (%q, %q), which rebuilds %q", s, kind, value, back)
		}
	}
}

func TestCheckCollision(t *testing.T) {
	cases := []struct {
		name                    string
		scope, recorded, branch string
		code                    errs.Code // "" = no error
	}{
		{"two names, one scope", "branch-feat-x", "feat/x", "feat-x", errs.SCOPE_COLLISION},
		{"the other way round", "branch-feat-x", "feat-x", "feat/x", errs.SCOPE_COLLISION},
		{"spaces and slashes", "branch-a-b", "a b", "a/b", errs.SCOPE_COLLISION},
		{"case differs", "branch-Feat", "Feat", "feat", errs.SCOPE_COLLISION},
		{"same branch", "branch-feat-x", "feat/x", "feat/x", ""},
		{"no recorded branch (new scope)", "branch-feat-x", "", "feat/x", ""},
		{"this run's branch unknown", "branch-feat-x", "feat/x", "", ""},
		{"both unknown", "branch-feat-x", "", "", ""},
		{"pr scope: the head branch may change", "pr-4", "feat/x", "feat/y", ""},
		{"main scope: the default branch was renamed", "main", "master", "main", ""},
		{"invalid scope", "feature-x", "a", "b", errs.USAGE},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := scope.CheckCollision(tc.scope, tc.recorded, tc.branch)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.code) {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			if tc.code == errs.SCOPE_COLLISION {
				e := errs.As(err)
				want := map[string]any{"scope": tc.scope, "recorded_branch": tc.recorded, "branch": tc.branch}
				if d := diff(t, want, e.Details); d != "" {
					t.Errorf("details (-want +got):\n%s", d)
				}
				if !strings.Contains(e.Message, tc.recorded) || !strings.Contains(e.Message, tc.branch) {
					t.Errorf("message %q does not name both branches", e.Message)
				}
			}
		})
	}
}

func prCtx() scope.Ctx {
	c, err := scope.Compute(scope.Input{EventName: "pull_request", Event: prPayload(2, "feat/x", shaHead, "stranger/shop", "acme/shop", "main")})
	if err != nil {
		panic(err)
	}
	return c
}

func TestVars(t *testing.T) {
	got := map[string]any{}
	for k, v := range prCtx().Vars() {
		got[k] = v
	}
	want := map[string]any{
		"env": "preview", "scope": "pr-2", "git.branch": "feat/x", "git.sha": shaHead,
		"git.short_sha": "abababa", "pr.number": "2", "repo": "acme/shop",
	}
	if d := diff(t, want, got); d != "" {
		t.Errorf("Vars in a PR (-want +got):\n%s", d)
	}

	c, err := scope.Compute(scope.Input{Branch: str("feat/y")})
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]any{}
	for k, v := range c.Vars() {
		got[k] = v
	}
	want = map[string]any{
		"env": "preview", "scope": "branch-feat-y", "git.branch": "feat/y", "git.sha": nil,
		"git.short_sha": nil, "pr.number": nil, "repo": nil,
	}
	if d := diff(t, want, got); d != "" {
		t.Errorf("Vars outside a PR (-want +got):\n%s", d)
	}
}

func TestCtxJSON(t *testing.T) {
	c := prCtx()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "env": "preview",
  "scope": "pr-2",
  "git": {
    "branch": "feat/x",
    "sha": "` + shaHead + `",
    "short_sha": "abababa"
  },
  "pr": {
    "number": 2
  },
  "repo": "acme/shop",
  "default_branch": "main",
  "fork": true,
  "head_repo": "stranger/shop",
  "event": "pull_request",
  "action": "opened",
  "deleted": false,
  "github_actions": false,
  "ci": null,
  "reason": "inside pull request #2 (event:pull_request.number)",
  "sources": {
    "default_branch": "event:repository.default_branch",
    "env": "default",
    "fork": "event:pull_request.head.repo.full_name",
    "git.branch": "event:pull_request.head.ref",
    "git.sha": "event:pull_request.head.sha",
    "pr.number": "event:pull_request.number",
    "repo": "event:repository.full_name",
    "scope": "event:pull_request.number"
  },
  "notes": []
}`
	if string(b) != want {
		t.Errorf("JSON (-want +got):\n%s", lineDiff(strings.Split(want, "\n"), strings.Split(string(b), "\n")))
	}
	var back scope.Ctx
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := diff(t, c, back); d != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", d)
	}
}

func TestCtxJSONNulls(t *testing.T) {
	c, err := scope.Compute(scope.Input{Branch: str("b")})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	b, _ := json.Marshal(c)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{"git": m["git"], "pr": m["pr"], "repo": m["repo"], "default_branch": m["default_branch"],
		"head_repo": m["head_repo"], "event": m["event"], "action": m["action"], "notes": m["notes"], "ci": m["ci"]}
	want := map[string]any{
		"git": map[string]any{"branch": "b", "sha": nil, "short_sha": nil}, "pr": map[string]any{"number": nil},
		"repo": nil, "default_branch": nil, "head_repo": nil, "event": nil, "action": nil, "notes": []any{}, "ci": nil,
	}
	if d := diff(t, want, got); d != "" {
		t.Errorf("unknown values are null (-want +got):\n%s", d)
	}
}

func TestWarnings(t *testing.T) {
	w := prCtx().Warnings()
	if len(w) != 1 || w[0].Code != errs.FORK_NO_SECRETS || !strings.Contains(w[0].Message, "#2") || !strings.Contains(w[0].Message, "stranger/shop") {
		t.Errorf("fork warnings = %v, want one FORK_NO_SECRETS naming #2 and stranger/shop", w)
	}
	c, err := scope.Compute(scope.Input{EventName: "pull_request", Event: prPayload(2, "x", shaHead, "acme/shop", "acme/shop", "main")})
	if err != nil {
		t.Fatal(err)
	}
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("warnings for a same-repository PR: %v", w)
	}
}

func TestReadEvent(t *testing.T) {
	files := map[string][]byte{"/github/workflow/event.json": []byte(`{"action":"opened"}`)}
	readFile := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, fs.ErrNotExist
	}
	getenv := func(v string) func(string) string {
		return func(k string) string {
			if k == "GITHUB_EVENT_PATH" {
				return v
			}
			return ""
		}
	}
	b, err := scope.ReadEvent(getenv(""), readFile)
	if b != nil || err != nil {
		t.Errorf("unset GITHUB_EVENT_PATH: (%q, %v), want (nil, nil)", b, err)
	}
	b, err = scope.ReadEvent(getenv("/github/workflow/event.json"), readFile)
	if string(b) != `{"action":"opened"}` || err != nil {
		t.Errorf("ReadEvent = (%q, %v)", b, err)
	}
	_, err = scope.ReadEvent(getenv("/missing.json"), readFile)
	if !errors.Is(err, errs.USAGE) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want USAGE wrapping the cause", err)
	}
}

// TestCtxJSONHasEveryField fails when a field is added to Ctx but not to its
// JSON form (MarshalJSON lists the fields by hand to write nulls).
func TestCtxJSONHasEveryField(t *testing.T) {
	var want []string
	ty := reflect.TypeFor[scope.Ctx]()
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	b, err := json.Marshal(prCtx())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(m))
	slices.Sort(want)
	if d := diff(t, want, got); d != "" {
		t.Errorf("JSON keys (-Ctx's tags +marshalled):\n%s", d)
	}
}
