package scope

import (
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// CheckBranchName refuses a name git would not take as a branch
// (git check-ref-format --branch): BRANCH_INVALID for a control
// character, a space or one of ~ ^ : ? * [ \, "..", "@{", the name "@",
// a leading "-", a leading, trailing or doubled "/", a trailing ".", or a
// component that starts with "." or ends in ".lock". Such a name reaches
// Sponson only by hand (--branch, SPONSON_CTX_BRANCH, a crafted event):
// it names no branch, and its scope would be another branch's ("a\nb"
// and "a-b" are both branch-a-b).
func CheckBranchName(name string) error {
	bad := func(why string) error {
		return errs.New(errs.BRANCH_INVALID, "branch name %q is not one git accepts: %s", name, why).
			WithHint("Pass --branch with the name of a real branch (git check-ref-format --branch NAME says whether git takes it).")
	}
	switch {
	case name == "@":
		return bad(`it is "@"`)
	case strings.HasPrefix(name, "-"):
		return bad(`it starts with "-"`)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return bad(`it starts or ends with "/" or holds "//"`)
	case strings.HasSuffix(name, "."):
		return bad(`it ends with "."`)
	case strings.Contains(name, ".."):
		return bad(`it holds ".."`)
	case strings.Contains(name, "@{"):
		return bad(`it holds "@{"`)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return bad("it holds a control character")
		}
		if strings.ContainsRune(" ~^:?*[\\", r) {
			return bad("it holds one of space ~ ^ : ? * [ \\")
		}
	}
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return bad(`a component starts with "." or ends in ".lock"`)
		}
	}
	return nil
}
