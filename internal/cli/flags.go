package cli

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/scope"
)

// The flag groups: each command adds the groups it reads, so its help lists
// only the flags it takes.

// ScopeOptions are the flags that say where a run is: its environment and
// scope (addScopeFlags).
type ScopeOptions struct {
	Env, PR, Branch, SHA, Repo string
	changed                    func(name string) bool
}

func addScopeFlags(cmd *cobra.Command, s *ScopeOptions) {
	fl := cmd.Flags()
	fl.StringVar(&s.Env, "env", "", "the environment (default: SPONSON_CTX_ENV, else preview)")
	fl.StringVar(&s.PR, "pr", "", "the pull request number (scope pr-<n>)")
	fl.StringVar(&s.Branch, "branch", "", "the git branch (scope main or branch-<name>)")
	fl.StringVar(&s.SHA, "sha", "", "the git commit")
	addRepoFlag(cmd, &s.Repo)
	s.changed = fl.Changed
}

func addRepoFlag(cmd *cobra.Command, repo *string) {
	cmd.Flags().StringVar(repo, "repo", "", "the repository, owner/name")
}

// given says whether the flag was given explicitly.
func (s *ScopeOptions) given(name string) bool { return s.changed != nil && s.changed(name) }

// ptr is the flag's value when it was given explicitly, else nil.
func (s *ScopeOptions) ptr(name, value string) *string {
	if !s.given(name) {
		return nil
	}
	return &value
}

// compute derives the run's context from the flags, the environment, the
// GitHub event payload and the local checkout.
func (s *ScopeOptions) compute(f *Factory) (scope.Ctx, error) {
	in := scope.Input{
		LookupEnv: f.Env.LookupEnv,
		Env:       s.ptr("env", s.Env),
		PR:        s.ptr("pr", s.PR),
		Branch:    s.ptr("branch", s.Branch),
		SHA:       s.ptr("sha", s.SHA),
		Repo:      s.ptr("repo", s.Repo),
	}
	event, err := scope.ReadEvent(f.Env.Getenv, f.readFile)
	if err != nil {
		return scope.Ctx{}, err
	}
	in.Event = event
	local, err := f.localGit()
	if err != nil {
		return scope.Ctx{}, err
	}
	in.Local = local
	if s.asksGH(f, local) {
		in.LocalPR = scope.ReadGHPR(f.Context, f.Env.Run, f.Env.LookPath, f.Env.Dir)
	}
	c, err := scope.Compute(in)
	if err != nil {
		return c, err
	}
	return c, refuseSecretNames(f, c)
}

// refuseSecretNames refuses, before any I/O, a context whose names hold a
// credential the command's redactor knows (a token given as --branch):
// the env, the scope and the branch are structure, never masked in
// receipts or in --json (structuralMembers), so the run would print them.
func refuseSecretNames(f *Factory, c scope.Ctx) error {
	if f.Redactor == nil {
		return nil
	}
	for _, n := range []struct{ what, text string }{{"the environment's name", c.Env}, {"the scope's name", c.Scope}, {"the branch's name", c.Git.Branch}} {
		if n.text != "" && f.Redactor.String(n.text) != n.text {
			return errs.New(errs.SECRET_IN_STRUCTURE, "a credential of the environment occurs in %s, which Sponson records and prints as it is; nothing was done", n.what).
				WithHint("Pass the real branch (--branch) and scope; a credential is never a name.")
		}
	}
	return nil
}

// asksGH says whether to ask the GitHub CLI for the checkout's pull
// request: outside CI, on a branch, when no flag or SPONSON_CTX_PR says
// already (SPONSON_NO_GH=1 turns it off).
func (s *ScopeOptions) asksGH(f *Factory, local *scope.LocalGit) bool {
	if local == nil || local.Branch == "" || s.given("pr") || scope.InCI(f.Env.LookupEnv) || f.Env.Getenv("SPONSON_NO_GH") != "" {
		return false
	}
	if s.given("branch") && s.Branch != local.Branch {
		return false
	}
	_, set := f.Env.LookupEnv("SPONSON_CTX_PR")
	return !set
}

// PlanFile is --plan (addPlanFlag).
type PlanFile struct {
	Path    string
	changed func(name string) bool
}

func addPlanFlag(cmd *cobra.Command, p *PlanFile) {
	cmd.Flags().StringVar(&p.Path, "plan", "release.plan.yaml", "the plan file")
	p.changed = cmd.Flags().Changed
}

// load reads and parses the plan file.
func (p *PlanFile) load(f *Factory) (*plan.Plan, error) {
	src, err := f.readFile(p.Path)
	if err != nil {
		e := errs.Wrap(err, errs.PLAN_PARSE, "cannot read the plan file %s", p.Path)
		if errors.Is(err, fs.ErrNotExist) {
			e = errs.New(errs.PLAN_PARSE, "there is no plan file at %s", p.Path)
			if p.changed != nil && p.changed("plan") {
				dir := f.Env.Dir
				if dir == "" {
					dir, _ = os.Getwd()
				}
				e = e.WithHint("Check the path given to --plan (a relative path is read from %s).", dir)
			} else {
				e = e.WithHint("Write release.plan.yaml in the repository's root (see examples/), or pass --plan FILE.")
			}
		}
		e.File = p.Path
		return nil, e
	}
	return plan.ParseContext(f.Context, p.Path, src)
}

// receipts is the plan's receipts: setting when a plan file is there and
// parses; commands that do not need the plan still honour it.
func (p *PlanFile) receipts(f *Factory) string {
	src, err := f.readFile(p.Path)
	if err != nil {
		return ""
	}
	pl, err := plan.ParseContext(f.Context, p.Path, src)
	if err != nil {
		return ""
	}
	return pl.Receipts
}

// StoreOptions choose where receipts and leases live (addStoreFlags).
type StoreOptions struct {
	Kind   string // --receipts: local | git-branch | "" (decide)
	Dir    string // --receipts-dir
	Remote string // --receipts-remote
}

func addStoreFlags(cmd *cobra.Command, s *StoreOptions) {
	fl := cmd.Flags()
	fl.StringVar(&s.Kind, "receipts", "", "where receipts live: git-branch or local (default: git-branch when a remote is known)")
	fl.StringVar(&s.Dir, "receipts-dir", "", "the local store's folder (default SPONSON_RECEIPTS_DIR, else .sponson/receipts)")
	fl.StringVar(&s.Remote, "receipts-remote", "", "the git remote of the git-branch store (default SPONSON_RECEIPTS_REMOTE, else the checkout's origin)")
}

// open picks the store (wire.Choose: the flags, the environment, the
// plan's receipts:, the checkout's origin) and opens it; what choosing
// found worth saying joins the command's warnings.
func (s *StoreOptions) open(f *Factory, planReceipts string) (*wire.Store, error) {
	cfg, err := s.choose(f, planReceipts)
	for _, w := range cfg.Warnings {
		if w.Code == errs.LOCAL_RECEIPTS && !f.JSON && !hasTrait(f.cmd, traitWritesReceipts) {
			// Said where it matters: when a receipt is written where CI
			// will not see it. --json reports it on every command.
			continue
		}
		f.answer.warn(w)
	}
	if err != nil {
		return nil, err
	}
	cfg.Warnings = nil
	st, err := wire.OpenStore(f.Context, cfg, f.Env.Dir, clock.Or(f.Clock))
	if err == nil {
		f.answer.stores = append(f.answer.stores, st)
	}
	return st, err
}

// choose is the store a command would open (wire.Choose with this
// command's flags and environment), without opening it.
func (s *StoreOptions) choose(f *Factory, planReceipts string) (wire.StoreConfig, error) {
	return wire.Choose(wire.Choice{
		Kind: s.Kind, Remote: s.Remote, Dir: s.Dir, PlanReceipts: planReceipts,
		Getenv: f.Env.Getenv, WorkDir: f.Env.Dir,
		Origin: func() string {
			local, err := f.localGit()
			if err != nil || local == nil {
				return ""
			}
			return local.Origin
		},
	})
}

// localChosen reports whether the local store was asked for by name
// (--receipts local, SPONSON_RECEIPTS=local, the plan's receipts: local),
// not fallen back to for want of a remote.
func (s *StoreOptions) localChosen(f *Factory, planReceipts string) bool {
	return cmp.Or(s.Kind, f.Env.Getenv("SPONSON_RECEIPTS"), planReceipts) == wire.StoreLocal
}

// RunFlags are the flags of plan, apply, destroy and receipts push
// (addRunFlags).
type RunFlags struct {
	ApprovedBy  string
	Parallelism int
	Wait        bool
	WaitTimeout time.Duration
	LockWait    time.Duration
	Reopen      bool
}

// addRunFlags adds --approved-by and --parallelism, and with leases (a
// command that takes the scope's lease) the waits and --reopen.
func addRunFlags(cmd *cobra.Command, f *RunFlags, leases bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.ApprovedBy, "approved-by", "", "who approved a run that may write production (default SPONSON_APPROVED_BY)")
	fl.IntVar(&f.Parallelism, "parallelism", 0, "how many independent lines run at once (plan: are read at once); 0: 4 for apply and destroy, 16 for plan")
	if !leases {
		return
	}
	fl.BoolVar(&f.Wait, "wait", false, "wait for a held lease and for external outputs instead of ending partial")
	fl.DurationVar(&f.WaitTimeout, "wait-timeout", 10*time.Minute, "how long --wait waits")
	fl.DurationVar(&f.LockWait, "lock-wait", 0, "without --wait, still wait up to this long for a lease another run holds (default SPONSON_LOCK_WAIT; 0 fails at once with LOCK_HELD)")
	fl.BoolVar(&f.Reopen, "reopen", false, "apply to a scope whose pull request was closed")
}
