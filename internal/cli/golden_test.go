package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/goldentest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// normalisers make a transcript independent of the run: ids, times, the
// temporary folder, the host and pid, ages and expiries.
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`r-\d{8}T\d{6}Z-[0-9a-f]{8}`), "r-RUN"},
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}Z`), "TIME"},
	{regexp.MustCompile(`host [^ ,)]+ pid \d+`), "host HOST pid PID"},
	{regexp.MustCompile(`on [^ ,)]+ pid \d+`), "on HOST pid PID"},
	{regexp.MustCompile(`\(\d+h\d+m\d+s left|\(\d+m\d+s left|\(\d+s left`), "(LEFT left"},
	{regexp.MustCompile(`\b(in )?\d+(h\d{2}m|m|s)\b`), "${1}AGE"},
}

func normalise(dir, s string) string {
	s = strings.ReplaceAll(s, dir, "$DIR")
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", "golden", name+".txt"), []byte(got))
}

// Every human output of a scope's life, as a person reads it in a log:
// plan, apply, receipt, its history, locks, a held lease, a plan error,
// destroy. stdout, stderr and the exit code of each, normalised.
func TestHumanOutputGolden(t *testing.T) {
	env, cloud, st := fakeWorld(t)
	ctx := context.Background()
	cmd := func(name string, args ...string) {
		t.Helper()
		r := runCLI(t, env, args...)
		got := fmt.Sprintf("$ sponson %s\n%s--- stderr\n%s--- exit %d\n", strings.Join(args, " "), r.out, r.err, r.code)
		goldenFile(t, name, normalise(env.Dir, got))
	}
	local := []string{"--pr", "3", "--branch", "feat/x", "--sha", "0123456789abcdef0123456789abcdef01234567", "--receipts", "local"}
	with := func(args ...string) []string { return append(args, local...) }

	cmd("plan", with("plan")...)
	cmd("apply", with("apply")...)
	cmd("apply_again", with("apply")...)
	cmd("receipt", with("receipt")...)
	cmd("history", with("receipt", "--history")...)

	held, _, err := st.Acquire(ctx, receipt.ScopeTarget("preview", "pr-3"),
		receipt.Owner{RunID: "r-held", Kind: receipt.KindAction, Operation: receipt.OpApply, Actor: "octocat", Repository: "octo/app", GitHubRunID: 99, GitHubRunAttempt: 2}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cmd("locks", "locks", "--receipts", "local")
	cmd("apply_held", with("apply")...)
	if err := st.Release(ctx, held); err != nil {
		t.Fatal(err)
	}

	cloud.FailNext(optest.Match{Op: optest.OpItem, Method: optest.MethodCreate}, errs.New(errs.PROVIDER_INVALID, "the URL https://pr-4.example.dev/cb is not allowed"), 1)
	cmd("apply_failed", "apply", "--pr", "4", "--receipts", "local")

	if err := os.WriteFile(filepath.Join(env.Dir, "typo.yaml"), []byte("version: 1\nchanges:\n  - id: app\n    adapter: fak\n    op: object\n  - id: cb\n   adapter: fake\n    op: item\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd("validate_yaml", "validate", "--plan", "typo.yaml")
	if err := os.WriteFile(filepath.Join(env.Dir, "typo2.yaml"), []byte("version: 1\nchanges:\n  - id: app\n    adapter: fak\n    op: object\n  - id: cb\n    adapter: fake\n    op: iten\n    name: { from: ap.id }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd("validate_names", "validate", "--plan", "typo2.yaml")
	cmd("unknown_command", "aply")

	cmd("destroy", with("destroy")...)
}
