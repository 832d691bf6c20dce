package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/pkg/scope"
)

// ScopeCmdOptions are `sponson scope`'s.
type ScopeCmdOptions struct {
	f     *Factory
	Scope ScopeOptions
}

func newCmdScope(f *Factory, runF func(*ScopeCmdOptions) error) *cobra.Command {
	opts := &ScopeCmdOptions{f: f}
	cmd := &cobra.Command{
		Use:   "scope",
		Short: "Print the context and scope a run would have here",
		Long: `Prints the context a run would have: environment, scope, branch, commit, pull request,
repository, fork, and where each value came from. The scope comes, in this order, from the flags,
from SPONSON_CTX_ENV|BRANCH|SHA|PR, from the GitHub Actions environment and event payload (or the
documented variables of GitLab CI, CircleCI and Bitbucket Pipelines), and from the local git
checkout, whose open pull request the GitHub CLI names when gh is installed (gh pr view; set
SPONSON_NO_GH=1 not to ask).`,
		Example: `  sponson scope
  sponson scope --pr 42 --branch feat/login --sha 0123456789abcdef0123456789abcdef01234567
  sponson scope --branch main --json`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, scopeRun),
	}
	addScopeFlags(cmd, &opts.Scope)
	return cmd
}

func scopeRun(opts *ScopeCmdOptions) error {
	f := opts.f
	ctx, err := opts.Scope.compute(f)
	if err != nil {
		return err
	}
	f.answer.warn(ctx.Warnings()...)
	f.answer.set(map[string]any{"ctx": ctx, "scope": ctx.Scope, "env": ctx.Env}, func(w io.Writer) { writeCtx(w, ctx) })
	return nil
}

func writeCtx(w io.Writer, c scope.Ctx) {
	row := func(k, v string) {
		if v == "" {
			v = "(none)"
		}
		fmt.Fprintf(w, "%-16s %s\n", k+":", v)
	}
	row("scope", c.Scope)
	row("env", c.Env)
	row("git.branch", c.Git.Branch)
	row("git.sha", c.Git.SHA)
	pr := ""
	if c.PR.Number != nil {
		pr = fmt.Sprint(*c.PR.Number)
	}
	row("pr.number", pr)
	row("repo", c.Repo)
	row("default_branch", c.DefaultBranch)
	if c.Event != "" {
		ev := c.Event
		if c.Action != "" {
			ev += " (" + c.Action + ")"
		}
		row("event", ev)
	}
	if c.CI != "" {
		row("ci", c.CI)
	}
	if c.Fork {
		row("fork", "yes: head "+c.HeadRepo)
	}
	if c.Reason != "" {
		row("why", c.Reason)
	}
	if len(c.Sources) > 0 {
		keys := slices.Sorted(maps.Keys(c.Sources))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + c.Sources[k]
		}
		row("sources", strings.Join(parts, ", "))
	}
	for _, n := range c.Notes {
		row("note", n)
	}
}
