// Package version is what every program of Sponson says it is: the CLI's
// `sponson version` and `--version`, the Action's first log line, the bot's
// `--version`, its start-up log and its sponson_build_info metric all read
// Get, so the three can never disagree.
//
// A release build stamps Version and Commit with the linker
// (-ldflags "-X github.com/sponson/apply/internal/version.Version=v1.2.3
// -X github.com/sponson/apply/internal/version.Commit=<sha>"); the image
// builds (Dockerfile) and the release binaries (.ci/release-build) do. A
// build without them falls back to what the Go toolchain recorded: the
// module version for `go install …@v1.2.3`, the VCS revision for a build in
// a checkout, else "devel".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Stamped by the linker; empty in an ordinary build.
var (
	Version = ""
	Commit  = ""
)

// Info is a binary's identity.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Dirty   bool   `json:"dirty,omitempty"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

// Get reports the running binary's identity.
func Get() Info {
	return from(Version, Commit, readBuildInfo)
}

func readBuildInfo() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() }

// from is Get over its inputs, for tests.
func from(stamped, commit string, read func() (*debug.BuildInfo, bool)) Info {
	in := Info{Version: stamped, Commit: commit, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if info, ok := read(); ok && info != nil {
		if in.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			in.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.modified":
				if commit == "" {
					in.Dirty = s.Value == "true"
				}
			}
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	return in
}

// ShortCommit is the commit's first 12 hex digits ("" when unknown).
func (in Info) ShortCommit() string {
	if len(in.Commit) > 12 {
		return in.Commit[:12]
	}
	return in.Commit
}

// String is the one-line form every program prints: "v1.2.3 (0123456789ab)
// go1.26.8 linux/amd64", with ", modified" inside the parentheses for a
// build from a checkout with local changes.
func (in Info) String() string {
	s := in.Version
	if c := in.ShortCommit(); c != "" {
		s += " (" + c
		if in.Dirty {
			s += ", modified"
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, in.Go, in.OS, in.Arch)
}
