package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	vcs := func(rev, modified string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}, true
		}
	}
	installed := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, stamped, commit string
		read                  func() (*debug.BuildInfo, bool)
		want                  string // the String() up to the Go version
	}{
		{"stamped by the linker wins", "v1.2.3", sha, vcs("ffffffffffffffff", "true"), "v1.2.3 (0123456789ab)"},
		{"go install of a version", "", "", installed, "v1.4.0"},
		{"a build in a checkout", "", "", vcs(sha, "false"), "devel (0123456789ab)"},
		{"a modified checkout", "", "", vcs(sha, "true"), "devel (0123456789ab, modified)"},
		{"nothing known", "", "", none, "devel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := from(tc.stamped, tc.commit, tc.read).String()
			if !strings.HasPrefix(got, tc.want+" go") {
				t.Errorf("got %q, want it to start %q", got, tc.want+" go")
			}
		})
	}
}
