package wire

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/progress"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/secret"
)

// Config is everything one run is built from. The zero value of every
// optional field means "the default"; no field is read from the process
// environment behind the caller's back.
type Config struct {
	// Store says where receipts and leases live (Choose for a CLI;
	// StoreConfig{Kind: StoreGit, Remote: RepositoryRemote(...), Token: ...}
	// for the Action and the bot). Ignored by Build, which is given an
	// opened store.
	Store StoreConfig

	// Identity is who runs (IdentityFromEnv); every run's lease owner is it
	// plus a fresh run id.
	Identity Identity

	// LookupEnv is the environment the adapters (provider credentials,
	// SPONSON_HTTP_*), secret references (env://NAME) and SPONSON_LEASE_TTL
	// are read from. nil is an empty environment.
	LookupEnv func(string) (string, bool)
	// ReadFile reads file:// secrets (nil: none can be read).
	ReadFile func(string) ([]byte, error)
	// Dir is the working directory: relative file:// secrets, the local
	// store and unsaved receipts (.sponson/unsaved) are under it.
	Dir string

	// Ops are the runnable ops; nil is the built-in adapters over an HTTP
	// client configured from LookupEnv. Tests inject a fake cloud's here.
	Ops *adapter.Registry
	// Redactor is the run's one redactor; nil makes a new one. The caller
	// that prints must create it before its first byte of output and pass
	// it here (the CLI wraps its streams in it).
	Redactor *redact.Redactor

	// LeaseTTL is the TTL of every lease this run takes; 0 is
	// SPONSON_LEASE_TTL from LookupEnv, else receipt.DefaultTTL (15 min).
	LeaseTTL time.Duration
	// LockWait is the default Options.LockWait (Run.Options): how long a
	// run waits for a lease another run holds, without waiting for external
	// events. The Action's lock_wait input lands here.
	LockWait time.Duration
	// WaitTimeout is the default Options.WaitTimeout (0: the engine's 10 min).
	WaitTimeout time.Duration

	// Progress receives human progress lines while a run waits; nil
	// discards them. Events receives the same waits typed (pkg/progress):
	// a front end that draws its own status line sets Events only.
	Progress io.Writer
	Events   progress.Sink
	// Hooks are the questions the engine asks the world.
	Hooks Hooks

	// Clock stamps leases and receipts and is the engine's one seam for
	// time (nil: the system clock); tests inject a fake.
	Clock clock.Clock
}

// Hooks are the questions the engine cannot answer by itself. A caller
// fills them from where it runs: the CLI from the local checkout, the
// Action from the GitHub API. nil means "cannot be decided here".
type Hooks struct {
	// Ancestry reports whether ancestor is an ancestor of (or equal to)
	// descendant: the stale-run check. An error means it cannot be decided
	// (the run is then not stale, with a warning). LocalAncestry(dir)
	// answers from a checkout.
	Ancestry func(ancestor, descendant string) (bool, error)
	// HolderGone says whether the holder of a live lease that blocks a run
	// is certainly gone (its GitHub workflow run completed or was
	// cancelled), so the lease is taken over at once (engine.HolderGone).
	HolderGone engine.HolderGone
}

// Run is a ready run: an engine over an opened store, with the run's
// redactor. It answers with the engine's typed results; callers render
// them. A Run is for one command (one webhook delivery in the bot): its
// redactor accumulates that command's secrets. Close it when done.
type Run struct {
	Engine   *engine.Engine
	Store    *Store
	Redactor *redact.Redactor

	cfg  Config
	stop func()
}

// New opens cfg.Store and builds a run on it (Build).
func New(ctx context.Context, cfg Config) (*Run, error) {
	st, err := OpenStore(ctx, cfg.Store, cfg.Dir, cfg.Clock)
	if err != nil {
		return nil, err
	}
	return Build(st, cfg)
}

// Build builds a run on an opened store, which may be shared with other
// runs (the bot keeps one store per repository and builds a run per
// delivery). USAGE for a malformed SPONSON_LEASE_TTL; the HTTP client's
// USAGE for malformed SPONSON_HTTP_* settings.
func Build(st *Store, cfg Config) (*Run, error) {
	lookup := cfg.LookupEnv
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	cfg.LookupEnv = lookup
	ttl, err := leaseTTL(cfg.LeaseTTL, lookup)
	if err != nil {
		return nil, err
	}
	ops := cfg.Ops
	if ops == nil {
		hc, err := httpclient.ConfigFromEnv(lookup)
		if err != nil {
			return nil, err
		}
		ops = adapters.Registry(lookup, httpclient.New(hc))
	}
	r := cfg.Redactor
	if r == nil {
		r = redact.New()
	}
	run := &Run{Store: st, Redactor: r, cfg: cfg, stop: func() {}}
	if st.auth != nil {
		// A changing token is a secret of this run from the moment it is
		// handed out.
		run.stop = st.auth.listen(func(tok string) { r.Register(tok, "the receipts remote's token") })
	}
	if st.token != "" {
		r.Register(st.token, "the receipts remote's token")
	}
	for _, k := range st.keys.Secrets() {
		// At least MinReceiptKeyLen bytes: never too short to mask.
		r.Register(k, receipt.ReceiptKeyVar)
	}
	run.Engine = &engine.Engine{
		Store:      st.Store,
		Ops:        ops,
		Secrets:    Secrets(lookup, cfg.ReadFile, cfg.Dir),
		LookupEnv:  lookup,
		Redactor:   r,
		Clock:      cfg.Clock,
		Progress:   cfg.Progress,
		Events:     cfg.Events,
		Ancestry:   cfg.Hooks.Ancestry,
		HolderGone: cfg.Hooks.HolderGone,
		UnsavedDir: joinDir(cfg.Dir, receipt.DefaultUnsavedDir),
		LeaseTTL:   ttl,
	}
	return run, nil
}

// Checker is the engine of a command's static checks (validate, and the
// refusals plan and apply make before a store is opened): the ops of cfg
// (nil: the built-in adapters, which read no network here), its
// credentials from LookupEnv and the secret sources a run would resolve
// with, and no store. It refuses what a run built from cfg would refuse.
func Checker(cfg Config) *engine.Engine {
	lookup := cfg.LookupEnv
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	ops := cfg.Ops
	if ops == nil {
		ops = adapters.Registry(lookup, nil)
	}
	return &engine.Engine{Ops: ops, LookupEnv: lookup, Redactor: cfg.Redactor,
		Secrets: Secrets(lookup, cfg.ReadFile, cfg.Dir)}
}

// Close ends the run's hold on shared state: a store's changing token is no
// longer registered with this run's redactor. Idempotent.
func (r *Run) Close() {
	r.stop()
	r.stop = func() {}
}

func leaseTTL(ttl time.Duration, lookup func(string) (string, bool)) (time.Duration, error) {
	if ttl > 0 {
		return ttl, nil
	}
	v, _ := lookup("SPONSON_LEASE_TTL")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 500*time.Millisecond {
		return 0, errs.New(errs.USAGE, "SPONSON_LEASE_TTL=%q is not a duration of at least 500ms (such as 15m)", v)
	}
	return d, nil
}

func (r *Run) now() time.Time {
	if r.cfg.Clock != nil {
		return r.cfg.Clock.Now()
	}
	return clock.System{}.Now()
}

// Options are the engine options of one operation of this run: the lease
// owner (the Identity with a fresh run id) and the Config's LockWait and
// WaitTimeout. The caller sets the rest (Env, ApprovedBy, Wait, ...).
func (r *Run) Options(op receipt.Operation) engine.Options {
	return engine.Options{
		Owner:       r.cfg.Identity.Owner(op, r.now()),
		LockWait:    r.cfg.LockWait,
		WaitTimeout: r.cfg.WaitTimeout,
	}
}

// DestroyScope destroys one scope from its ledger, with no plan file and no
// checkout (the bot's teardown, the sweep): the provider settings recorded
// on each ledger entry are used. o.Close leaves a tombstone.
func (r *Run) DestroyScope(ctx context.Context, env, scopeName string, o engine.Options) (*engine.RunResult, error) {
	return r.Engine.Destroy(ctx, scope.Ctx{Env: env, Scope: scopeName}, o)
}

// Succeed moves the ledger of the branch scope from into the pull request
// scope to (engine.Succeed): the bot on pull request open.
func (r *Run) Succeed(ctx context.Context, env, from, to string, o engine.Options) (*engine.SuccessionResult, error) {
	return r.Engine.Succeed(ctx, env, from, to, o)
}

// Secrets is the resolver of a run in the working tree dir: env:// through
// lookup, file:// through readFile, confined to dir and SecretDirs. A
// command's static checks (validate, the refusals before a store is
// opened) use the same one, so they refuse what the run would.
func Secrets(lookup func(string) (string, bool), readFile func(string) ([]byte, error), dir string) *secret.Resolver {
	return secret.New(secret.Config{LookupEnv: lookup, ReadFile: readFile, BaseDir: dir, AllowDirs: SecretDirs(lookup)})
}

// SecretDirs are the directories outside the working tree that file://
// secrets may be read from: SPONSON_SECRET_DIRS, a list separated by the
// OS's path-list separator (':'). Empty by default: file:// secrets stay
// inside the repository's working tree.
func SecretDirs(lookup func(string) (string, bool)) []string {
	if lookup == nil {
		return nil
	}
	v, _ := lookup("SPONSON_SECRET_DIRS")
	var out []string
	for _, d := range filepath.SplitList(v) {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}
