package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/version"
)

// VersionOptions are `sponson version`'s.
type VersionOptions struct {
	f *Factory
}

func newCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{f: f}
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of sponson",
		Example: "  sponson version\n  sponson version --json",
		Args:    exactArgs(0),
		RunE:    runWith(opts, runF, versionRun),
	}
}

// versionRun is the answer of `sponson version` and `sponson --version`:
// the one version every program of this build reports (internal/version).
func versionRun(opts *VersionOptions) error {
	b := version.Get()
	opts.f.answer.set(map[string]any{"version": b}, func(w io.Writer) { fmt.Fprintf(w, "sponson %s\n", b) })
	return nil
}
