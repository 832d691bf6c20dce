package scope

import (
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// Kind is the kind of a scope.
type Kind string

// The three kinds of scope.
const (
	KindPR     Kind = "pr"     // pr-<number>: inside a pull request
	KindMain   Kind = "main"   // main: the repository's default branch
	KindBranch Kind = "branch" // branch-<name>: any other branch
)

// Main is the scope of the repository's default branch.
const Main = "main"

// PRScope is the scope of pull request n: "pr-<n>". n must be positive;
// Compute never calls it with anything else.
func PRScope(n int) string { return "pr-" + strconv.Itoa(n) }

// BranchScope is the scope of a branch other than the default branch:
// "branch-" followed by the name with every run of characters outside
// [A-Za-z0-9._-] turned into one "-" ("feat/x" → "branch-feat-x",
// "a//b c" → "branch-a-b-c", "fix/ü" → "branch-fix-"). Nothing else is
// changed: leading and trailing runs stay as "-", so the rule is easy to
// predict from the branch name alone. Several names can give the same scope;
// CheckCollision refuses to share one.
func BranchScope(name string) string {
	var b strings.Builder
	b.WriteString("branch-")
	inRun := false
	for _, r := range name {
		if allowed(r) {
			b.WriteRune(r)
			inRun = false
			continue
		}
		if !inRun {
			b.WriteByte('-')
			inRun = true
		}
	}
	return b.String()
}

func allowed(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '-'
}

// Parse splits a scope into its kind and value: ("pr", "42") for "pr-42",
// ("branch", "feat-x") for "branch-feat-x", ("main", "") for "main".
// Anything else is USAGE. A valid scope is always usable as one component
// of a git ref name (sponson-receipts/<env>/<scope>): so a branch value
// may not contain "..", nor end with "." or ".lock", and a PR number is
// positive and written without leading zeros.
func Parse(scope string) (Kind, string, error) {
	switch {
	case scope == Main:
		return KindMain, "", nil
	case strings.HasPrefix(scope, "pr-"):
		v := scope[len("pr-"):]
		if !digits(v) || v[0] == '0' {
			return "", "", invalid(scope, "the number after pr- must be a positive decimal number without leading zeros")
		}
		if _, err := strconv.Atoi(v); err != nil {
			return "", "", invalid(scope, "the pull request number is too large")
		}
		return KindPR, v, nil
	case strings.HasPrefix(scope, "branch-"):
		v := scope[len("branch-"):]
		if v == "" {
			return "", "", invalid(scope, "the branch part is empty")
		}
		for _, r := range v {
			if !allowed(r) {
				return "", "", invalid(scope, "the branch part may only hold A-Z, a-z, 0-9, '.', '_' and '-'")
			}
		}
		if strings.Contains(v, "..") || strings.HasSuffix(v, ".") || strings.HasSuffix(v, ".lock") {
			return "", "", invalid(scope, `it is not a valid git ref name (it contains ".." or ends with "." or ".lock")`)
		}
		return KindBranch, v, nil
	}
	return "", "", invalid(scope, "a scope is pr-<number>, main or branch-<name>")
}

// Validate is Parse without the parts: nil for a valid scope, USAGE otherwise.
func Validate(scope string) error {
	_, _, err := Parse(scope)
	return err
}

func invalid(scope, why string) error {
	return errs.New(errs.USAGE, "scope %q is not valid: %s", scope, why).With("scope", scope)
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CheckCollision refuses to share a branch scope between two branches whose
// names collapse to it ("feat/x" and "feat-x" are both branch-feat-x).
// recordedBranch is the branch recorded in the scope's receipt, branch the
// branch of this run. It returns SCOPE_COLLISION when both are known and
// differ, for a branch- scope only: a pr- scope is named by its number and
// main by the repository, so a branch change there (a renamed default
// branch, a PR whose head moved) is not a collision. An empty recorded branch
// (a new scope, or a receipt from before branches were recorded) or an empty
// branch is never a collision. An invalid scope is USAGE.
func CheckCollision(scope, recordedBranch, branch string) error {
	kind, _, err := Parse(scope)
	if err != nil {
		return err
	}
	if kind != KindBranch || recordedBranch == "" || branch == "" || recordedBranch == branch {
		return nil
	}
	return errs.New(errs.SCOPE_COLLISION,
		"branch %q and branch %q both map to scope %s, whose receipt belongs to %q", branch, recordedBranch, scope, recordedBranch).
		With("scope", scope).
		With("recorded_branch", recordedBranch).
		With("branch", branch)
}
