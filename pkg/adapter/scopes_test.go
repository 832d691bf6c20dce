package adapter_test

import (
	"testing"

	"github.com/sponson/apply/pkg/adapter"
)

func TestOtherScope(t *testing.T) {
	for _, tc := range []struct{ value, run, s, want string }{
		{"sponson/preview/pr-7", "pr-7", "sponson/preview/pr-99", "pr-99"},
		{"sponson/preview/pr-7", "pr-7", "sponson/preview/main", "main"},
		{"sponson/preview/pr-7", "pr-7", "sponson/preview/branch-feat-x", "branch-feat-x"},
		{"sponson/preview/pr-7", "pr-7", "sponson/preview/pr-7", ""},      // the line's own
		{"sponson/preview/pr-7", "pr-7", "sponson/preview/hand-made", ""}, // not a scope
		{"sponson/preview/pr-7", "pr-7", "sponson/production/pr-9", ""},   // another environment's
		{"sponson/preview/pr-7", "pr-7", "sponson/preview/pr-07", ""},     // not a scope name
		{"sponson/preview/pr-7", "pr-7", "sponson/preview/pr-9/x", ""},    // a / is no scope's
		{"https://pr-7.preview.acme.dev/cb", "pr-7", "https://pr-12.preview.acme.dev/cb", "pr-12"},
		{"https://pr-7.preview.acme.dev/cb", "pr-7", "https://branch-fix.v2.preview.acme.dev/cb", "branch-fix.v2"},
		{"https://pr-7.preview.acme.dev/cb", "pr-7", "https://app.acme.dev/cb", ""},
		{"https://pr-7.preview.acme.dev/cb", "pr-7", "https://pr-7.preview.acme.dev/cb/extra", ""},
		{"https://admin-pr-7.preview.acme.dev/cb", "pr-7", "https://admin-main.preview.acme.dev/cb", "main"},
		{"https://pr-7.acme.dev/pr-7/cb", "pr-7", "https://pr-8.acme.dev/pr-8/cb", "pr-8"},
		{"https://pr-7.acme.dev/pr-7/cb", "pr-7", "https://pr-8.acme.dev/pr-9/cb", ""}, // one scope at every place
		{"https://app.acme.dev/cb", "pr-7", "https://pr-8.acme.dev/cb", ""},            // the value holds no scope
		{"https://www.acme.dev", "main", "https://www.acme.dev", ""},
	} {
		if got := adapter.OtherScope(tc.value, tc.run, tc.s); got != tc.want {
			t.Errorf("OtherScope(%q, %q, %q) = %q, want %q", tc.value, tc.run, tc.s, got, tc.want)
		}
	}
}
