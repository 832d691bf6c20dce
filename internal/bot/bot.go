package bot

import (
	"context"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// RepoGitHub is what the handlers ask of GitHub about one repository,
// authenticated as the App's installation.
type RepoGitHub interface {
	sweep.GitHub
	Comments
}

// Workspace is one repository ready to work on: its receipt store (the
// git-branch store on the repository itself), an engine over it with the
// providers' ops, and its GitHub.
type Workspace struct {
	Store  receipt.Store
	Engine *engine.Engine
	GitHub RepoGitHub
	// Refused, when set, is why no provider work may be done for the
	// repository (CREDENTIALS_NOT_FOUND, CREDENTIALS_INVALID): Engine is
	// then nil, and the handlers say so on the pull request instead.
	Refused error
	// Close, when set, ends the workspace's run (its redactor's hold on
	// the store's token).
	Close func()
}

func (w *Workspace) close() {
	if w != nil && w.Close != nil {
		w.Close()
	}
}

// Workspaces opens repositories (internal/wire in production).
type Workspaces interface {
	Open(ctx context.Context, r Repository) (*Workspace, error)
}

// Installations lists every repository the App is installed on (GitHub's
// /app/installations and /installation/repositories), the set to sweep.
type Installations interface {
	Repositories(ctx context.Context) ([]Repository, error)
}

// Bot handles webhook deliveries and sweeps. Build it with the fields
// set, then serve Handler() and Run the queue (Serve does both).
type Bot struct {
	Secret    []byte
	Identity  string // "<app-slug>[bot]": the login of the bot's own comments
	Workspace Workspaces
	Installed Installations // nil: only repositories learnt from deliveries are swept
	// Approvers is "org/team-slug", a team whose active members may run
	// comment commands that write production, besides the repository's
	// admins ("" none).
	Approvers string

	// Clock stamps and times the bot's work and drives its waits (the
	// look-again on a held lease, Connect's retries, the sweeps' interval).
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *Metrics
	Queue   *Queue
	Dedup   *Dedup
	Sweeper *sweep.Sweeper
	// Ready checks what /readyz reports beyond the queue: the JWT signs
	// and GitHub answers GET /app. nil: ready.
	Ready func(ctx context.Context) error
	// Connect, when set, is what the bot must do before it handles
	// deliveries or sweeps: learn who it is from GitHub (Identity). Serve
	// runs it until it succeeds, staying unready meanwhile (connect.go).
	Connect func(ctx context.Context) error
	// MaxBody bounds a delivery's body (DefaultMaxBody when 0).
	MaxBody int64
	// MaxUnverified bounds the bytes of bodies held, across all requests at
	// once, before their signatures are checked (DefaultMaxUnverified when
	// 0): past it a delivery is answered 503 with Retry-After.
	MaxUnverified int64
	// Workers is how many deliveries are handled at once.
	Workers int
	// LockWait is how long a handler waits for a scope lease another run
	// holds before leaving the scope to the next sweep.
	LockWait time.Duration
	// StuckAfter: /readyz fails when queued work has not moved for this
	// long (DefaultStuckAfter when 0).
	StuckAfter time.Duration

	unverified byteBudget // bytes of bodies held before their signature is checked

	routesOnce sync.Once
	routes     map[string]webhookHandler // by event type (event.go)

	mu    sync.Mutex
	repos map[string]Repository // the set to sweep, by full name
	conn  connection
}

// Defaults of the Bot.
const (
	DefaultMaxBody = 25 << 20
	// DefaultMaxUnverified lets two largest deliveries be read at once.
	DefaultMaxUnverified = 2 * DefaultMaxBody
	DefaultLockWait      = 2 * time.Minute
	DefaultStuckAfter    = 5 * time.Minute
)

func (b *Bot) now() time.Time { return clock.Or(b.Clock).Now() }

func (b *Bot) log() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}

func (b *Bot) owner() receipt.Owner {
	host, _ := os.Hostname()
	return receipt.Owner{Kind: receipt.KindBot, Host: host, PID: os.Getpid(), Actor: b.Identity}
}

// Known returns the repositories to sweep, sorted.
func (b *Bot) Known() []Repository {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Repository, 0, len(b.repos))
	for _, r := range b.repos {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FullName() < out[j].FullName() })
	return out
}

func (b *Bot) learn(add []Repository, remove []Repository) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.repos == nil {
		b.repos = map[string]Repository{}
	}
	for _, r := range add {
		if r.Owner != "" && r.Name != "" {
			b.repos[r.FullName()] = r
		}
	}
	for _, r := range remove {
		delete(b.repos, r.FullName())
	}
}

// Handle runs one job (the queue's workers call it) with the handler of
// its event. Every log line carries the delivery, installation,
// repository, pull request and scope.
func (b *Bot) Handle(ctx context.Context, j Job) {
	log := b.log().With("delivery", j.Delivery, "event", j.Event).With(j.Subject.attrs()...)
	start := b.now()
	err := b.safeHandle(withLog(ctx, log), j)
	outcome := OutcomeHandled
	if err != nil {
		outcome = OutcomeFailed
		// A redelivery of a failed delivery is handled again.
		if b.Dedup != nil {
			b.Dedup.Forget(j.Delivery, j.Sum)
		}
		log.Error("delivery failed", "code", string(errs.CodeOf(err)), "error", errs.Coded(err).Message)
	} else {
		log.Info("delivery handled", "seconds", b.now().Sub(start).Seconds())
	}
	if b.Metrics != nil {
		// The delivery was counted when it was answered (accepted); what
		// the worker made of it is the histogram's count.
		b.Metrics.HandlerLatency.WithLabelValues(j.Event, outcome).Observe(b.now().Sub(start).Seconds())
	}
}

// safeHandle is the job's handler with a panic turned into INTERNAL: one
// job's bug must not stop the other workers (what it did is recorded; the
// sweep finishes what it left).
func (b *Bot) safeHandle(ctx context.Context, j Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errs.New(errs.INTERNAL, "the handler of %s %s panicked: %v", j.Event, j.Subject.Action, p)
		}
	}()
	h := b.handler(j.Event)
	if h == nil {
		return errs.New(errs.INTERNAL, "no handler for %s events", j.Event)
	}
	return h.Handle(ctx, j.Event, j.Delivery, j.Payload)
}

// changeInstallation learns the repositories added to an installation and
// forgets those removed (all of them when it is uninstalled).
func (b *Bot) changeInstallation(ctx context.Context, c installChange) {
	removed := c.Removed
	if c.Uninstalled {
		for _, r := range b.Known() {
			if r.Installation == c.Installation {
				removed = append(removed, r)
			}
		}
	}
	b.learn(c.Added, removed)
	logOf(ctx).Info("repositories to sweep changed", "added", len(c.Added), "removed", len(c.Removed), "known", len(b.Known()))
}

// inWorkspace runs do on repository r's workspace, learning r as one to
// sweep.
func (b *Bot) inWorkspace(ctx context.Context, r Repository, do func(ws *Workspace) error) error {
	b.learn([]Repository{r}, nil)
	ws, err := b.Workspace.Open(ctx, r)
	if err != nil {
		return err
	}
	defer ws.close()
	defer wire.LogStoreWarnings(logOf(ctx), ws.Store)
	return do(ws)
}

func (b *Bot) sweepRepo(ws *Workspace, r Repository) sweep.Repo {
	var gone engine.HolderGone
	if ws.Engine != nil {
		gone = ws.Engine.HolderGone
	}
	return sweep.Repo{Name: r.FullName(), Store: ws.Store, Engine: ws.Engine, GitHub: ws.GitHub, Owner: b.owner(), Actor: b.Identity, HolderGone: gone,
		Idle: idleNotices{gh: ws.GitHub, log: b.log().With("repository", r.FullName())}}
}

func envHas(refs []receipt.ScopeRef, env, sc string) bool {
	for _, r := range refs {
		if r.Env == env && r.Scope == sc && r.HasReceipt {
			return true
		}
	}
	return false
}

func (b *Bot) lockWait() time.Duration {
	if b.LockWait > 0 {
		return b.LockWait
	}
	return DefaultLockWait
}

// sleep waits d on the bot's Clock.
func (b *Bot) sleep(ctx context.Context, d time.Duration) error {
	return clock.Or(b.Clock).Sleep(ctx, d)
}

func first(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
