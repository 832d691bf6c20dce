package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at build time (-ldflags "-X github.com/sponson/apply/internal/cli.Version=v1.2.3");
// otherwise it comes from the module's build information.
var Version = ""

// BuildInfo is what `sponson version` reports.
type BuildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Dirty   bool   `json:"dirty,omitempty"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

// ReadBuildInfo reports the version of this binary.
func ReadBuildInfo() BuildInfo {
	b := BuildInfo{Version: Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Dirty = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of sponson",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			b := ReadBuildInfo()
			a.result = map[string]any{"version": b}
			a.text = func(w io.Writer) {
				fmt.Fprintf(w, "sponson %s", b.Version)
				if b.Commit != "" {
					c := b.Commit
					if len(c) > 12 {
						c = c[:12]
					}
					fmt.Fprintf(w, " (%s", c)
					if b.Dirty {
						fmt.Fprint(w, ", modified")
					}
					fmt.Fprint(w, ")")
				}
				fmt.Fprintf(w, " %s %s/%s\n", b.Go, b.OS, b.Arch)
			}
			return nil
		},
	}
}
