package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/version"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/secret"
)

// Env is the world the bot runs in. OSEnv gives the real one.
type Env struct {
	LookupEnv func(string) (string, bool)
	Environ   func() []string
	ReadFile  func(string) ([]byte, error)
	// Stat checks SPONSON_CREDENTIALS_DIR at start (nil: not checked).
	Stat func(string) (fs.FileInfo, error)
	// Context is cancelled when the bot must stop; nil means "on SIGINT
	// or SIGTERM".
	Context context.Context
	// Listen opens the webhook listener (nil: net.Listen).
	Listen func(network, addr string) (net.Listener, error)
	// IsTerminal reports whether a stream is a terminal: the log is text
	// for a person there, JSON lines for a collector everywhere else
	// (nil: never a terminal).
	IsTerminal func(w io.Writer) bool
	// Clock is the bot's (nil: the system clock): its waits, its queue's
	// and its de-duplication's times.
	Clock clock.Clock
}

// OSEnv is the process's own environment.
func OSEnv() Env {
	return Env{LookupEnv: os.LookupEnv, Environ: os.Environ, ReadFile: secret.ReadFile, Stat: os.Stat, IsTerminal: isTerminal}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// logHandler writes JSON lines, or text on a terminal.
func logHandler(w io.Writer, terminal bool) slog.Handler {
	if terminal {
		return slog.NewTextHandler(w, nil)
	}
	return slog.NewJSONHandler(w, nil)
}

// Main runs the bot until it is told to stop and returns the process exit
// code: 0 after a clean stop, the code's exit code when it cannot start
// (CONFIG_INVALID: 2); a GitHub that does not answer does not stop it from
// starting (it serves unready and retries). Its log is JSON lines on
// stderr (text on a terminal), every byte through
// one redactor that knows the webhook secret, the App's key and every
// credential-looking variable.
func Main(args []string, env Env, stdout, stderr io.Writer) int {
	r := redact.New()
	if env.Environ != nil {
		r.RegisterEnv(env.Environ())
	}
	// One line-atomic output: each record leaves whole, redacted, at once;
	// records of concurrent deliveries never cut into one another.
	out := r.Lines(stderr, nil).Writer()
	defer out.Close()
	log := slog.New(logHandler(out, env.IsTerminal != nil && env.IsTerminal(stderr))).With("program", "sponson-bot")
	if len(args) > 0 {
		return mainArgs(args[0], stdout, log)
	}
	cfg, err := ConfigFromEnv(Source{LookupEnv: env.LookupEnv, ReadFile: env.ReadFile, Stat: env.Stat})
	if err != nil {
		return failed(log, err)
	}
	r.Register(string(cfg.WebhookSecret), "SPONSON_WEBHOOK_SECRET")
	r.Register(string(cfg.PrivateKey), "SPONSON_APP_PRIVATE_KEY")

	ctx := env.Context
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	b, err := newBot(cfg, log, env.Clock)
	if err != nil {
		return failed(log, err)
	}
	if ws, ok := b.Workspace.(*AppWorkspaces); ok {
		ws.Redact = func(environ []string) { r.RegisterEnv(environ) }
	}
	ln, err := listen(env, cfg.Addr)
	if err != nil {
		return failed(log, err)
	}
	v := version.Get()
	log.Info("the bot started", "version", v.Version, "commit", v.Commit, "go", v.Go, "addr", ln.Addr().String(),
		"api", cfg.APIURL, "server", cfg.ServerURL, "workers", cfg.Workers, "sweep_interval", cfg.SweepInterval.String(), "retention", cfg.Retention.String(),
		"idle_ttl", cfg.IdleTTL.String(), "idle_warn", cfg.IdleWarn.String())
	if err := b.Serve(ctx, ln, cfg.SweepInterval); err != nil {
		log.Error("the server stopped", "error", err.Error())
		return 1
	}
	return 0
}

// failed logs why the bot did not start and is its exit code.
func failed(log *slog.Logger, err error) int {
	e := errs.Coded(err)
	attrs := []any{"code", string(e.Code), "error", e.Message, "hint", e.HintText()}
	if v, ok := e.Details["variables"]; ok {
		attrs = append(attrs, "variables", v)
	}
	log.Error("the bot did not start", attrs...)
	return e.Code.Exit()
}

// mainArgs answers --help and --version, and refuses any other argument.
func mainArgs(arg string, stdout io.Writer, log *slog.Logger) int {
	switch arg {
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, "usage: sponson-bot [--version]\n\nThe Sponson GitHub App. Configured by its environment; see the README's bot section.")
		return 0
	case "--version", "-version", "version":
		fmt.Fprintf(stdout, "sponson-bot %s\n", version.Get())
		return 0
	}
	return failed(log, errs.New(errs.USAGE, "the bot takes no arguments but --version (got %q); it is configured by its environment", arg).
		WithHint("Run `sponson-bot --help`; the README's bot section lists its variables."))
}

// newBot is the bot of cfg: the App, its workspaces and installations, the
// queue and the metrics.
func newBot(cfg Config, log *slog.Logger, clk clock.Clock) (*Bot, error) {
	q := &Queue{Cap: cfg.QueueSize, Clock: clk}
	var app *github.App
	metrics := NewMetrics(q, func() GitHubCounters {
		if app == nil {
			return nil
		}
		return app
	})
	app, err := github.NewApp(github.Config{APIURL: cfg.APIURL, ServerURL: cfg.ServerURL, Observer: metrics}, cfg.AppID, cfg.PrivateKey)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	ws := &AppWorkspaces{App: app, ServerURL: cfg.ServerURL, LookupEnv: cfg.LookupEnv, ReceiptKeys: cfg.ReceiptKeys,
		CredentialsDir: cfg.CredentialsDir, ReadFile: secret.ReadFile,
		Identity: wire.Identity{Kind: receipt.KindBot, Host: host, PID: os.Getpid()}}
	b := &Bot{
		Secret:    cfg.WebhookSecret,
		Workspace: ws,
		Installed: AppInstallations{App: app},
		Approvers: cfg.Approvers,
		Log:       log,
		Metrics:   metrics,
		Queue:     q,
		Dedup:     &Dedup{Clock: clk},
		Clock:     clk,
		Sweeper: &sweep.Sweeper{Retention: cfg.Retention, Claim: sweep.ClaimTTL(cfg.SweepInterval),
			IdleTTL: cfg.IdleTTL, IdleWarn: cfg.IdleWarn, KeepLabel: KeepLabel},
		Ready:   app.Check,
		Workers: cfg.Workers,
	}
	// Who the bot is (the login of its comments, the actor of its leases)
	// is GitHub's answer to GET /app: until GitHub gives it, the bot
	// serves, unready (connect.go).
	b.Connect = func(ctx context.Context) error {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		info, err := app.Get(sctx)
		if err != nil {
			return err
		}
		b.Identity = info.Login()
		ws.Identity.Actor = b.Identity
		log.Info("the bot reached GitHub", "app", info.Slug, "identity", b.Identity)
		return nil
	}
	return b, nil
}

// listen opens the webhook's listener on addr.
func listen(env Env, addr string) (net.Listener, error) {
	open := env.Listen
	if open == nil {
		open = net.Listen
	}
	ln, err := open("tcp", addr)
	if err != nil {
		// The message (the log's error field) says why, naming the
		// address once: the listener's error ("listen tcp ADDR: bind:
		// ...") would repeat it.
		cause := err
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			cause = op.Err
		}
		return nil, errs.Wrap(err, errs.CONFIG_INVALID, "SPONSON_ADDR=%s cannot be listened on: %v", addr, cause)
	}
	return ln, nil
}
