package bot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// appRepo is one repository through an installation's client: what the
// sweep asks, and the pull request comments.
type appRepo struct {
	sweep.ClientRepo
}

var _ RepoGitHub = appRepo{}

// UpsertComment implements Comments through the installation's client,
// whose identity is the App's "<slug>[bot]".
func (a appRepo) UpsertComment(ctx context.Context, n int, marker, body string) error {
	_, _, err := a.Client.UpsertComment(ctx, a.Owner, a.Name, n, marker, body)
	return err
}

// AppWorkspaces opens the repositories of a GitHub App's installations:
// one git-branch store per repository (the repository's own receipt
// branches, authenticated by the installation's refreshing token), kept
// for the process's life, and one run (engine, redactor) per job.
type AppWorkspaces struct {
	App       *github.App
	ServerURL string
	Identity  wire.Identity
	LookupEnv func(string) (string, bool)
	// CredentialsDir, when set, holds each repository's provider
	// credentials (Credentials), read through ReadFile; LookupEnv then
	// gives them no provider credential.
	CredentialsDir string
	ReadFile       func(string) ([]byte, error)
	// Redact, when set, is also given each credentials file's lines
	// (NAME=value) as they are read: the process log's redactor, which
	// knows the process environment's credentials from the start.
	Redact func(environ []string)
	// ReceiptKeys sign every store's receipts (Config.ReceiptKeys).
	ReceiptKeys *receipt.Keys
	Clock       clock.Clock
	// Ops are the runnable ops; nil is the built-in adapters (tests
	// inject a fake cloud's).
	Ops *adapter.Registry
	// Dir holds what a run keeps locally (unsaved receipts); "" is a
	// folder under the system's temporary directory.
	Dir string

	mu     sync.Mutex
	stores map[string]*wire.Store
}

var _ Workspaces = (*AppWorkspaces)(nil)

// client is the client of r's installation (the payload's, else asked of
// GitHub); its token is cached.
func (a *AppWorkspaces) client(ctx context.Context, r Repository) (*github.Client, error) {
	inst := r.Installation
	if inst == 0 {
		in, err := a.App.RepositoryInstallation(ctx, r.Owner, r.Name)
		if err != nil {
			return nil, err
		}
		inst = in.ID
	}
	return a.App.Installation(inst)
}

// Open implements Workspaces.
func (a *AppWorkspaces) Open(ctx context.Context, r Repository) (*Workspace, error) {
	client, err := a.client(ctx, r)
	if err != nil {
		return nil, err
	}
	st, err := a.store(ctx, r, client)
	if err != nil {
		return nil, err
	}
	gh := appRepo{sweep.ClientRepo{Client: client, Owner: r.Owner, Name: r.Name}}
	creds, err := Credentials{Dir: a.CredentialsDir, ReadFile: a.ReadFile, Env: a.LookupEnv}.For(r.Owner, r.Name)
	if err != nil {
		// No engine: nothing of a provider is touched for r, with no
		// other repository's credentials either.
		return &Workspace{Store: st, GitHub: gh, Refused: err}, nil
	}
	dir := a.Dir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sponson-bot")
	}
	// The plans run here come from pull requests: they never see the
	// bot's own settings and secrets (credentials.go).
	providers := builtinProviderVars()
	if a.Ops != nil {
		providers = providerVars(a.Ops)
	}
	lookup := planEnv(creds.Lookup, providers)
	run, err := wire.Build(st, wire.Config{Identity: a.Identity, LookupEnv: lookup, Ops: a.Ops,
		Hooks: wire.Hooks{HolderGone: runHolderGone(client, r.FullName(), LocalHolderGone(a.Identity.Host))}, Dir: filepath.Join(dir, r.Owner, r.Name), Clock: a.Clock})
	if err != nil {
		return nil, err
	}
	guardPlan(run.Engine.Secrets, lookup, providers)
	run.Redactor.RegisterEnv(creds.Environ)
	if a.Redact != nil && len(creds.Environ) > 0 {
		a.Redact(creds.Environ)
	}
	return &Workspace{Store: st, Engine: run.Engine, GitHub: gh, Close: run.Close}, nil
}

// runHolderGone is the engine's HolderGone of a repository's runs: a lease
// of one of its GitHub workflow runs (the Action's) is held by nobody once
// GitHub says the run has completed (cancelled included) or its attempt
// was superseded (asked through the installation's client: actions
// read); any other lease is local's to judge. A lease naming another
// repository's run is not judged: it stands until its TTL.
func runHolderGone(client *github.Client, repo string, local engine.HolderGone) engine.HolderGone {
	return func(ctx context.Context, held receipt.Lease) (string, error) {
		o := held.Owner
		if o.GitHubRunID == 0 {
			return local(ctx, held)
		}
		if o.Repository != "" && !strings.EqualFold(o.Repository, repo) {
			return "", nil
		}
		owner, name, _ := strings.Cut(repo, "/")
		run, err := client.GetWorkflowRun(ctx, owner, name, o.GitHubRunID)
		if err != nil {
			return "", err
		}
		run.ID = o.GitHubRunID
		return run.Gone(o.GitHubRunAttempt, repo), nil
	}
}

func (a *AppWorkspaces) store(ctx context.Context, r Repository, client *github.Client) (*wire.Store, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stores == nil {
		a.stores = map[string]*wire.Store{}
	}
	if st := a.stores[r.FullName()]; st != nil {
		return st, nil
	}
	cfg := wire.GitHubStore(a.ServerURL, r.FullName(), wire.TokenFunc(client.Token))
	cfg.Keys = a.ReceiptKeys
	st, err := wire.OpenStore(ctx, cfg, "", a.Clock)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeOf(err), "open the receipts of %s", r.FullName())
	}
	a.stores[r.FullName()] = st
	return st, nil
}

// AppInstallations lists every repository of every installation of the App.
type AppInstallations struct{ App *github.App }

var _ Installations = AppInstallations{}

// Repositories implements Installations.
func (a AppInstallations) Repositories(ctx context.Context) ([]Repository, error) {
	insts, err := a.App.Installations(ctx)
	if err != nil {
		return nil, err
	}
	var out []Repository
	for _, in := range insts {
		c, err := a.App.Installation(in.ID)
		if err != nil {
			return out, err
		}
		repos, err := c.InstallationRepositories(ctx)
		if err != nil {
			return out, err
		}
		for _, r := range repos {
			out = append(out, Repository{Installation: in.ID, Owner: r.Owner, Name: r.Name})
		}
	}
	return out, nil
}

var _ GitHubCounters = (*github.App)(nil)
