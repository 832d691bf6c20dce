package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sponson/apply/internal/wire"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// GCOptions are `sponson gc`'s: the bot's sweep, run once, for teams
// without the bot (an Actions schedule with the workflow token). Same code
// as the bot's timer (internal/sweep).
type GCOptions struct {
	f           *Factory
	Repo        string
	Plan        PlanFile
	Store       StoreOptions
	Retention   string
	Concurrency int
	ApprovedBy  string
}

func newCmdGC(f *Factory, runF func(*GCOptions) error) *cobra.Command {
	opts := &GCOptions{f: f}
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Destroy what closed pull requests and deleted branches left behind; prune old tombstones",
		Long: `Sweeps the repository's receipt store once, the same sweep the bot runs on a timer: every
pr-<n> scope whose pull request is closed and still has resources is destroyed (from its ledger,
under its lease, leaving the tombstone), every branch-<name> scope whose branch is gone is
destroyed, failed teardowns are retried, tombstoned receipt branches older than --retention are
deleted (compare-and-swap), and leases that expired without release are reported. A scope whose
pull request is open or whose lease is live is never touched; GitHub is asked again right before
each destroy. Needs GITHUB_TOKEN (contents: write, pull-requests: read) and the repository
(--repo, else GITHUB_REPOSITORY); GITHUB_API_URL for GitHub Enterprise. A resource of production (a production variable, a
production deployment) is destroyed only with --approved-by NAME (default SPONSON_APPROVED_BY);
without it, gc leaves it in the ledger and says so (ENV_NOT_APPROVED).`,
		Example: `  GITHUB_TOKEN=... sponson gc --repo OWNER/NAME --receipts-remote https://github.com/OWNER/NAME.git
  sponson gc --retention 30d --approved-by alice --json`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, gcRun),
	}
	addRepoFlag(cmd, &opts.Repo)
	addPlanFlag(cmd, &opts.Plan)
	addStoreFlags(cmd, &opts.Store)
	cmd.Flags().StringVar(&opts.Retention, "retention", "", "delete tombstoned receipt branches older than this (default SPONSON_RETENTION, else 14d)")
	cmd.Flags().IntVar(&opts.Concurrency, "concurrency", sweep.DefaultConcurrency, "scopes judged at once")
	cmd.Flags().StringVar(&opts.ApprovedBy, "approved-by", "", "who approved destroying resources of production (default SPONSON_APPROVED_BY); without it they are left")
	return cmd
}

func gcRun(opts *GCOptions) error {
	f := opts.f
	ret, err := parseRetention(opts.Retention, f.Env.Getenv("SPONSON_RETENTION"))
	if err != nil {
		return err
	}
	repo := cmp.Or(opts.Repo, f.Env.Getenv("GITHUB_REPOSITORY"))
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" {
		return errs.New(errs.USAGE, "gc needs the repository as owner/name (--repo, or GITHUB_REPOSITORY); got %q", repo).
			WithHint("Run it as `sponson gc --repo OWNER/NAME` with GITHUB_TOKEN set (in Actions, GITHUB_REPOSITORY is set for you).")
	}
	gh, err := opts.github()
	if err != nil {
		return err
	}
	st, eng, err := opts.store()
	if err != nil {
		return err
	}
	id := f.identity()
	actor := "sponson gc"
	if id.Actor != "" && id.Actor != "unknown" {
		actor = "sponson gc (" + id.Actor + ")"
	}
	s := &sweep.Sweeper{Retention: ret, Concurrency: opts.Concurrency, Clock: clock.Or(f.Clock)}
	rep, err := s.Sweep(f.Context, sweep.Repo{Name: repo, Store: st, Engine: eng, GitHub: sweep.ClientRepo{Client: gh, Owner: owner, Name: name},
		Owner: receipt.Owner{Kind: id.Kind, Host: id.Host, PID: id.PID, Actor: id.Actor, GitHubRunID: id.GitHubRunID, GitHubRunAttempt: id.GitHubRunAttempt}, Actor: actor,
		ApprovedBy: cmp.Or(opts.ApprovedBy, f.Env.Getenv("SPONSON_APPROVED_BY"))})
	if err != nil {
		return err
	}
	f.answer.set(map[string]any{"repo": repo, "scopes": rep.Scopes, "findings": rep.Findings, "retention": ret.String()}, func(w io.Writer) { renderSweep(w, rep) })
	for _, fd := range rep.Findings {
		if fd.Kind == sweep.DestroyFailed {
			return errs.New(errs.DESTROY_FAILED, "gc: the teardown of %s/%s left %d resource(s); the next gc retries", fd.Env, fd.Scope, len(fd.Failed)).
				With("findings", rep.Findings)
		}
	}
	return nil
}

// github is the GitHub client gc asks whether pull requests are closed and
// branches gone, with the token from the environment.
func (opts *GCOptions) github() (*github.Client, error) {
	f := opts.f
	token := cmp.Or(f.Env.Getenv("SPONSON_GITHUB_TOKEN"), f.Env.Getenv("GITHUB_TOKEN"))
	if token == "" {
		return nil, errs.New(errs.USAGE, "gc asks GitHub whether pull requests are closed and branches gone, and needs a token").
			WithHint("Set GITHUB_TOKEN (in a workflow: `env: { GITHUB_TOKEN: \"${{ github.token }}\" }` with `permissions: { contents: write, pull-requests: read }`).")
	}
	f.Redactor.Register(token, "GITHUB_TOKEN")
	return github.NewToken(github.Config{APIURL: f.Env.Getenv("GITHUB_API_URL"), ServerURL: f.Env.Getenv("GITHUB_SERVER_URL")}, token)
}

// store is the store gc sweeps and the engine that destroys in it.
func (opts *GCOptions) store() (*wire.Store, *engine.Engine, error) {
	f := opts.f
	receipts := opts.Plan.receipts(f)
	// gc destroys: outside a workflow it sweeps the store it was pointed
	// at, never the local one it would fall back to for want of a remote.
	if cfg, err := opts.Store.choose(f, receipts); err == nil && cfg.Kind == wire.StoreLocal && !opts.Store.localChosen(f, receipts) &&
		f.Env.Getenv("GITHUB_ACTIONS") != "true" {
		return nil, nil, errs.New(errs.USAGE, "gc found no receipts remote (no --receipts-remote, SPONSON_RECEIPTS_REMOTE or usable origin) and does not sweep the local store it would fall back to").
			WithHint("Pass --receipts-remote URL to sweep the receipts of a repository, or --receipts local to sweep the local store at %s on purpose.", cfg.Dir)
	}
	st, err := opts.Store.open(f, receipts)
	if err != nil {
		return nil, nil, err
	}
	eng, err := f.engine(st)
	return st, eng, err
}

func parseRetention(flag, env string) (time.Duration, error) {
	v, from := flag, "--retention"
	if v == "" {
		v, from = env, "SPONSON_RETENTION"
	}
	if v == "" {
		return 14 * 24 * time.Hour, nil
	}
	d := time.Duration(0)
	var err error
	if days, ok := strings.CutSuffix(v, "d"); ok {
		var n int
		if _, err = fmt.Sscanf(days, "%d", &n); err == nil {
			d = time.Duration(n) * 24 * time.Hour
		}
	} else {
		d, err = time.ParseDuration(v)
	}
	if err != nil || d < 0 {
		return 0, errs.New(errs.USAGE, "%s=%q is not a duration (such as 14d or 336h)", from, v)
	}
	return d, nil
}

func renderSweep(w io.Writer, rep sweep.Report) {
	fmt.Fprintf(w, "gc %s: %d scope(s), %d finding(s)\n", rep.Repo, rep.Scopes, len(rep.Findings))
	for _, f := range rep.Findings {
		where := f.Env + "/" + f.Scope
		if f.Scope == "" {
			where = "-"
		}
		fmt.Fprintf(w, "  %-28s %-16s %s\n", where, f.Kind, f.Why)
		for _, d := range f.Destroyed {
			fmt.Fprintf(w, "      destroyed %s\n", d)
		}
		for _, d := range f.Failed {
			fmt.Fprintf(w, "      FAILED    %s\n", d)
		}
		if f.Error != "" {
			fmt.Fprintf(w, "      %s: %s\n", f.Code, f.Error)
		}
	}
}
