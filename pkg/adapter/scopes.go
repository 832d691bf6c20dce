package adapter

import (
	"strings"

	"github.com/sponson/apply/pkg/scope"
)

// OtherScope reports the scope in which a line whose value (a name, a URL)
// is value in scope run would write s instead: value with every
// occurrence of run replaced by one other valid scope name (pr-<n>, main,
// branch-<name>), the same at each occurrence. "" when s is no such thing,
// when s is value itself, or when value does not hold run (nothing tells
// another scope's entry from anyone else's then).
//
// It is the rule of unmanaged drift for the ops that list (ScopeLister): a
// line reports what it would own in another scope and no scope's ledger
// holds (made by hand, or left by a run whose receipt was lost), never the
// rest of a shared list (a production callback, a colleague's branch).
func OtherScope(value, run, s string) string {
	if run == "" || s == value {
		return ""
	}
	parts := strings.Split(value, run)
	if len(parts) < 2 || !strings.HasPrefix(s, parts[0]) {
		return ""
	}
	rest := s[len(parts[0]):]
	for j := 1; j <= len(rest); j++ {
		x := rest[:j]
		if !strings.HasPrefix(rest[j:], parts[1]) {
			continue
		}
		if x != run && scope.Validate(x) == nil && strings.Join(parts, x) == s {
			return x
		}
	}
	return ""
}
