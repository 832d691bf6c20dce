package bot

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sponson/apply/internal/sweep"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
)

// Repositories returns the set to sweep: every repository of every
// installation (Installed), and those learnt from deliveries.
func (b *Bot) Repositories(ctx context.Context) ([]Repository, error) {
	if b.Installed != nil {
		repos, err := b.Installed.Repositories(ctx)
		if err != nil {
			return b.Known(), err
		}
		b.learn(repos, nil)
	}
	return b.Known(), nil
}

// SweepAll sweeps every repository of the set once, one repository after
// another (each sweep has its own bounded concurrency), and returns the
// reports. A repository that cannot be opened or listed is reported and
// skipped; the others are swept.
func (b *Bot) SweepAll(ctx context.Context) []sweep.Report {
	log := b.log().With("sweep", b.now().UTC().Format(time.RFC3339))
	repos, err := b.Repositories(ctx)
	if err != nil {
		log.Warn("the installations' repositories could not be listed; sweeping those known", "code", string(errs.CodeOf(err)), "error", errs.Coded(err).Message)
	}
	var out []sweep.Report
	for _, r := range repos {
		if ctx.Err() != nil {
			break
		}
		rlog := log.With("installation", r.Installation, "repository", r.FullName())
		ws, err := b.Workspace.Open(ctx, r)
		if err != nil {
			rlog.Error("the repository could not be opened for the sweep", "code", string(errs.CodeOf(err)), "error", errs.Coded(err).Message)
			if b.Metrics != nil {
				b.Metrics.Sweeps.WithLabelValues("failed").Inc()
			}
			continue
		}
		if ws.Refused != nil {
			refuseWork(ctx, rlog, b.Metrics, ws, 0, nil, "sweep")
			ws.close()
			continue
		}
		sw := b.Sweeper
		if sw == nil {
			sw = &sweep.Sweeper{}
		}
		s := *sw
		s.Log = rlog
		if s.Clock == nil {
			s.Clock = b.Clock
		}
		if s.Observer == nil && b.Metrics != nil {
			s.Observer = b.Metrics
		}
		rep, err := s.Sweep(ctx, b.sweepRepo(ws, r))
		ws.close()
		outcome := "ok"
		switch {
		case err != nil:
			outcome = "failed"
		case rep.Skipped:
			outcome = "skipped"
		case rep.ClaimLost:
			outcome = "claim_lost"
		}
		if b.Metrics != nil {
			b.Metrics.Sweeps.WithLabelValues(outcome).Inc()
		}
		rlog.Info("swept", "scopes", rep.Scopes, "findings", len(rep.Findings))
		out = append(out, rep)
	}
	return out
}

// Serve runs the bot until ctx is done: the HTTP server on ln, the queue's
// workers, and a sweep at start and every interval (on the bot's Clock). On shutdown it stops taking deliveries, lets the workers finish
// what they run, and returns.
func (b *Bot) Serve(ctx context.Context, ln net.Listener, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	srv := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(b.log().Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// Serving starts before GitHub is reached: /healthz answers and
	// /readyz says why the bot is not ready yet.
	cctx, stopConnecting := context.WithCancel(ctx)
	defer stopConnecting()
	connected := make(chan bool, 1)
	go func() { connected <- b.connect(cctx) }()
	var err error
	select {
	case ok := <-connected:
		if !ok {
			return b.shutdown(ctx, srv, nil)
		}
	case err = <-served:
		stopConnecting()
		<-connected
		return b.shutdown(ctx, srv, err)
	}
	workers := make(chan struct{})
	qctx, stopQueue := context.WithCancel(context.WithoutCancel(ctx))
	defer stopQueue()
	go func() {
		defer close(workers)
		b.Queue.Run(qctx, b.Workers, b.Handle)
	}()
	sweeps := make(chan struct{})
	sctx, stopSweeps := context.WithCancel(ctx)
	defer stopSweeps()
	go func() {
		defer close(sweeps)
		for {
			b.SweepAll(sctx)
			select {
			case <-sctx.Done():
				return
			case <-clock.Or(b.Clock).After(interval):
			}
		}
	}()
	b.log().Info("the bot is serving", "addr", ln.Addr().String(), "workers", b.Workers, "sweep_interval", interval.String())
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	stopSweeps()
	b.Queue.Close() // finish what is queued, take nothing new
	<-workers
	<-sweeps
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	b.log().Info("the bot stopped")
	return err
}

// shutdown stops a server that never got to work (ctx done, or the
// server failed, before GitHub was reached).
func (b *Bot) shutdown(ctx context.Context, srv *http.Server, err error) error {
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	b.Queue.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	b.log().Info("the bot stopped")
	return err
}
