package bot

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/internal/wire"
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
	// Context is cancelled when the bot must stop; nil means "on SIGINT
	// or SIGTERM".
	Context context.Context
	// Listen opens the webhook listener (nil: net.Listen).
	Listen func(network, addr string) (net.Listener, error)
}

// OSEnv is the process's own environment.
func OSEnv() Env {
	return Env{LookupEnv: os.LookupEnv, Environ: os.Environ, ReadFile: secret.ReadFile}
}

// Main runs the bot until it is told to stop and returns the process exit
// code: 0 after a clean stop, the code's exit code when it cannot start
// (CONFIG_INVALID: 2). Its log is JSON lines on stderr, every byte through
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
	log := slog.New(slog.NewJSONHandler(out, nil)).With("program", "sponson-bot")
	fail := func(err error) int {
		e := errs.Coded(err)
		attrs := []any{"code", string(e.Code), "error", e.Message, "hint", e.HintText()}
		if v, ok := e.Details["variables"]; ok {
			attrs = append(attrs, "variables", v)
		}
		log.Error("the bot did not start", attrs...)
		return e.Code.Exit()
	}
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help", "help":
			fmt.Fprintln(stdout, "usage: bot\n\nThe Sponson GitHub App. Configured by its environment; see the README's bot section.")
			return 0
		default:
			return fail(errs.New(errs.USAGE, "the bot takes no arguments (got %q); it is configured by its environment", args[0]))
		}
	}
	cfg, err := ConfigFromEnv(Source{LookupEnv: env.LookupEnv, ReadFile: env.ReadFile})
	if err != nil {
		return fail(err)
	}
	r.Register(string(cfg.WebhookSecret), "SPONSON_WEBHOOK_SECRET")
	r.Register(string(cfg.PrivateKey), "SPONSON_APP_PRIVATE_KEY")

	ctx := env.Context
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	app, err := github.NewApp(github.Config{APIURL: cfg.APIURL, ServerURL: cfg.ServerURL}, cfg.AppID, cfg.PrivateKey)
	if err != nil {
		return fail(err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	info, err := app.Get(sctx)
	cancel()
	if err != nil {
		return fail(err)
	}
	identity := info.Login()
	host, _ := os.Hostname()
	q := &Queue{Cap: cfg.QueueSize}
	b := &Bot{
		Secret:   cfg.WebhookSecret,
		Identity: identity,
		Workspace: &AppWorkspaces{App: app, ServerURL: cfg.ServerURL, LookupEnv: cfg.LookupEnv,
			Identity: wire.Identity{Kind: receipt.KindBot, Host: host, PID: os.Getpid(), Actor: identity}},
		Installed: AppInstallations{App: app},
		Log:       log,
		Metrics:   NewMetrics(q, func() GitHubCounters { return app }),
		Queue:     q,
		Dedup:     &Dedup{},
		Sweeper:   &sweep.Sweeper{Retention: cfg.Retention},
		Ready:     app.Check,
		Workers:   cfg.Workers,
	}
	listen := env.Listen
	if listen == nil {
		listen = net.Listen
	}
	ln, err := listen("tcp", cfg.Addr)
	if err != nil {
		return fail(errs.Wrap(err, errs.CONFIG_INVALID, "SPONSON_ADDR=%s cannot be listened on", cfg.Addr))
	}
	log.Info("the bot started", "app", info.Slug, "identity", identity, "addr", ln.Addr().String(),
		"api", cfg.APIURL, "server", cfg.ServerURL, "workers", cfg.Workers, "sweep_interval", cfg.SweepInterval.String(), "retention", cfg.Retention.String())
	if err := b.Serve(ctx, ln, cfg.SweepInterval, nil); err != nil {
		log.Error("the server stopped", "error", err.Error())
		return 1
	}
	return 0
}
