package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/pkg/scope"
)

func (a *app) scopeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "scope",
		Short: "Print the context and scope a run would have here",
		Long: `Prints the context a run would have: environment, scope, branch, commit, pull request,
repository, fork, and where each value came from. The scope comes, in this order, from the flags,
from SPONSON_CTX_ENV|BRANCH|SHA|PR, from the GitHub Actions environment and event payload, and
from the local git checkout.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, err := a.computeCtx()
			if err != nil {
				return err
			}
			a.warnings = append(a.warnings, ctx.Warnings()...)
			a.result = map[string]any{"ctx": ctx, "scope": ctx.Scope, "env": ctx.Env}
			a.text = func(w io.Writer) { writeCtx(w, ctx) }
			return nil
		},
	}
}

// computeCtx derives the run's context from the flags, the environment, the
// GitHub event payload and the local checkout.
func (a *app) computeCtx() (scope.Ctx, error) {
	in := scope.Input{
		LookupEnv: a.env.LookupEnv,
		Env:       a.flagPtr("env", a.g.env),
		PR:        a.flagPtr("pr", a.g.pr),
		Branch:    a.flagPtr("branch", a.g.branch),
		SHA:       a.flagPtr("sha", a.g.sha),
		Repo:      a.flagPtr("repo", a.g.repo),
	}
	event, err := scope.ReadEvent(a.env.Getenv, a.readFile)
	if err != nil {
		return scope.Ctx{}, err
	}
	in.Event = event
	local, err := a.localGit()
	if err != nil {
		return scope.Ctx{}, err
	}
	in.Local = local
	return scope.Compute(in)
}

// flagPtr is the flag's value when it was given explicitly, else nil.
func (a *app) flagPtr(name, value string) *string {
	if !a.flagSet[name] {
		return nil
	}
	return &value
}

// readFile reads a file relative to the working directory.
func (a *app) readFile(path string) ([]byte, error) { return a.env.ReadFile(a.env.Path(path)) }

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
	if c.Fork {
		row("fork", "yes: head "+c.HeadRepo)
	}
	if c.Reason != "" {
		row("why", c.Reason)
	}
	if len(c.Sources) > 0 {
		keys := make([]string, 0, len(c.Sources))
		for k := range c.Sources {
			keys = append(keys, k)
		}
		sort.Strings(keys)
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

// localGit reads the checkout once per command (the scope and the receipts
// remote both need it).
func (a *app) localGit() (*scope.LocalGit, error) {
	if !a.local.read {
		a.local.git, a.local.err = scope.ReadLocalGit(a.env.Dir)
		a.local.read = true
	}
	return a.local.git, a.local.err
}
