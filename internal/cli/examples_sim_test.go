package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"

	splan "github.com/sponson/apply/pkg/plan"
)

// simHeader returns the shell lines an example's header gives for a run
// against `sponson sim` (the indented lines of its leading comment that
// follow "Against `sponson sim`"), and fails the test on a line it cannot
// follow: the header's vocabulary is "export K=V ...", where V may be
// $NAME, and "mkdir -p DIR && echo TEXT > FILE".
func simHeader(t *testing.T, src string) []string {
	t.Helper()
	var cmds []string
	in := false
	for _, l := range strings.Split(src, "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		if strings.Contains(l, "Against `sponson sim`") {
			in = true
			continue
		}
		if cmd, ok := strings.CutPrefix(l, "#   "); ok && in {
			cmds = append(cmds, strings.TrimSpace(cmd))
		}
	}
	return cmds
}

var mkdirEcho = regexp.MustCompile(`^mkdir -p (\S+) && echo (\S+) > (\S+)$`)

// followHeader does what the header's lines say, in vars (the run's
// environment, holding what sim.env exported) and dir (the checkout).
func followHeader(t *testing.T, cmds []string, vars map[string]string, dir string) {
	t.Helper()
	for _, cmd := range cmds {
		if m := mkdirEcho.FindStringSubmatch(cmd); m != nil {
			if err := os.MkdirAll(filepath.Join(dir, m[1]), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, m[3]), []byte(m[2]+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		}
		rest, ok := strings.CutPrefix(cmd, "export ")
		if !ok {
			t.Fatalf("the header says %q, which is neither export nor mkdir && echo", cmd)
		}
		for _, kv := range strings.Fields(rest) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("the header's export %q has no value", kv)
			}
			if name, ok := strings.CutPrefix(v, "$"); ok {
				val, set := vars[name]
				if !set {
					t.Fatalf("the header's export %s=%s: `sponson sim` exports no %s", k, v, name)
				}
				v = val
			}
			vars[k] = v
		}
	}
}

// checkout makes dir a git checkout of acme/shop with one commit on
// branch feature/x, as the README's "Try it" runs from a checkout, and
// returns the commit.
func checkout(t *testing.T, dir string) string {
	t.Helper()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"https://github.com/acme/shop.git"}}); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("release.plan.yaml"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "Dev", Email: "dev@acme.dev", When: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	h, err := wt.Commit("plan", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// TestExamplesPlanAndApplyAsTheirHeadersSay runs every plan in examples/
// the way README.md's "Try it" does: the environment `sponson sim`
// exports, then what the example's header says to do against it, then
// plan and apply with --pr 1 from a checkout; every environment the plan
// names beside preview with --env <env> --branch main --approved-by.
// Both exit 0 with no line in error or blocked, and apply ends complete
// or partial (waiting on a deploy or a person) after writing to the fake
// cloud. (A production run may write nothing: the Sentry release of the
// commit is the preview run's.)
func TestExamplesPlanAndApplyAsTheirHeadersSay(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) != 7 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each example has its own fake cloud and checkout
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := splan.Parse(name, src)
			if err != nil {
				t.Fatal(err)
			}
			cloud, vars := exampleCloud(t)
			delete(vars, "SPONSON_CTX_SHA") // the checkout's commit
			env := testEnv(t, vars, map[string]string{"release.plan.yaml": string(src)})
			sha := checkout(t, env.Dir)
			followHeader(t, simHeader(t, string(src)), vars, env.Dir)
			for _, envName := range p.Environments {
				scope := []string{"--pr", "1", "--receipts", "local"}
				if envName != "preview" {
					scope = []string{"--env", envName, "--branch", "main", "--sha", sha, "--receipts", "local"}
				}
				r := runCLI(t, env, append([]string{"plan", "--json"}, scope...)...)
				if r.code != 0 {
					t.Fatalf("plan %s: exit %d\n%s%s", envName, r.code, r.out, r.err)
				}
				for _, l := range oneDocument(t, r)["lines"].([]any) {
					if st := l.(map[string]any)["status"]; st == "error" || st == "blocked" {
						t.Errorf("plan %s: line %v: %v\n%s", envName, l.(map[string]any)["id"], st, r.out)
					}
				}
				before := len(cloud.Writes())
				args := append([]string{"apply", "--json"}, scope...)
				if envName != "preview" {
					args = append(args, "--approved-by", "Release Manager")
				}
				r = runCLI(t, env, args...)
				if r.code != 0 {
					t.Fatalf("apply %s: exit %d\n%s%s", envName, r.code, r.out, r.err)
				}
				doc := oneDocument(t, r)
				rec, _ := doc["receipt"].(map[string]any)
				if st := rec["status"]; st != "complete" && st != "partial" {
					t.Errorf("apply %s: status %v\n%s", envName, st, r.out)
				}
				if len(cloud.Writes()) == before && envName == "preview" {
					t.Errorf("apply %s wrote nothing to the fake cloud\n%s", envName, r.out)
				}
			}
		})
	}
}

// An output path that names nothing in the object the API answers is the
// plan's mistake, not Sponson's: the line that needs it fails PARAM_INVALID
// naming the line, the path and where the plan writes it, never INTERNAL,
// and what the run created is rolled back.
func TestWrongOutputPathIsTheUsersError(t *testing.T) {
	src, err := os.ReadFile("../../examples/http-generic.release.plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(string(src), "slug: /key", "slug: /flag_key", 1)
	if wrong == string(src) {
		t.Fatal("the example has no output slug: /key")
	}
	cloud, vars := exampleCloud(t)
	delete(vars, "SPONSON_CTX_SHA")
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": wrong})
	checkout(t, env.Dir)
	followHeader(t, simHeader(t, wrong), vars, env.Dir)
	r := runCLI(t, env, "apply", "--json", "--pr", "1", "--receipts", "local")
	if r.code != 1 {
		t.Fatalf("apply: exit %d, want 1 (a line failed after the run started)\n%s%s", r.code, r.out, r.err)
	}
	e := oneDocument(t, r)["error"].(map[string]any)
	msg, _ := e["message"].(string)
	for _, want := range []string{"PARAM_INVALID", `line "flag"`, "/flag_key", "outputs.slug", "release.plan.yaml:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(r.out, "INTERNAL") || strings.Contains(r.out, "Report it") {
		t.Errorf("a wrong output path is reported as Sponson's bug:\n%s", r.out)
	}
	if hint, _ := e["hint"].(string); !strings.Contains(hint, "outputs.slug") {
		t.Errorf("hint %q does not say what to fix", hint)
	}
	for _, o := range cloud.State().HTTP {
		if o.Collection == "v1/flags" {
			t.Errorf("the flag the run created is still there: %+v", o)
		}
	}
}
