package scope_test

import (
	"os/exec"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

var branchNames = []struct {
	name string
	ok   bool
}{
	{"feat/x", true}, {"main", true}, {"fix-ü", true}, {"a.b", true}, {"v1.2", true}, {"x@y", true},
	{"a\nb", false}, {"a\tb", false}, {"a\x7fb", false}, {"a b", false}, {"a~1", false}, {"a^", false},
	{"a:b", false}, {"a?", false}, {"a*", false}, {"a[b", false}, {`a\b`, false}, {"a..b", false},
	{"a@{1}", false}, {"@", false}, {"-x", false}, {"/a", false}, {"a/", false}, {"a//b", false},
	{"a.", false}, {".a", false}, {"a/.b", false}, {"a.lock", false}, {"a/b.lock/c", false},
}

// The names git refuses are refused, as BRANCH_INVALID, by the rule and by
// Compute: "a\nb" no longer collapses into branch-a-b.
func TestBranchNamesGitRefuses(t *testing.T) {
	for _, tc := range branchNames {
		err := scope.CheckBranchName(tc.name)
		if (err == nil) != tc.ok || (err != nil && errs.CodeOf(err) != errs.BRANCH_INVALID) {
			t.Errorf("CheckBranchName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		name := tc.name
		_, err = scope.Compute(scope.Input{Branch: &name})
		if got := errs.CodeOf(err) == errs.BRANCH_INVALID; got == tc.ok {
			t.Errorf("Compute(--branch %q) = %v, want refused=%v", tc.name, err, !tc.ok)
		}
	}
}

// The rule agrees with git itself on every row.
func TestBranchNamesAgreeWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	// One git process a row, all at once: they wait on the system, not on
	// each other.
	for _, tc := range branchNames {
		if tc.name == "@" {
			continue // --branch reads "@" as HEAD's branch; refs/heads/@ is refused
		}
		t.Run("", func(t *testing.T) {
			t.Parallel()
			gitOK := exec.Command("git", "check-ref-format", "--branch", tc.name).Run() == nil
			if gitOK != tc.ok {
				t.Errorf("git check-ref-format --branch %q: ok=%v, the table says %v", tc.name, gitOK, tc.ok)
			}
		})
	}
}
