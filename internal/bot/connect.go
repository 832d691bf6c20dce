package bot

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
)

// A bot behind a load balancer starts whether or not GitHub answers: it
// serves /healthz at once, reports unready on /readyz and refuses
// deliveries (503, Retry-After) until Connect has succeeded, retrying it
// with a capped exponential backoff. Only then do the queue's workers and
// the sweeps start, so nothing that needs the bot's identity runs without
// it.

// connectBackoff is the wait before Connect's retries: from a second,
// doubling, at most a minute.
var connectBackoff = clock.Backoff{Base: time.Second, Max: time.Minute}

// connection is what the bot knows of its link to GitHub before it works.
type connection struct {
	mu        sync.Mutex
	connected bool
	lastErr   error
	attempts  int
}

func (c *connection) state() (ok bool, attempts int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected, c.attempts, c.lastErr
}

// isConnected reports whether the bot may handle deliveries: Connect has
// succeeded, or there is none to run.
func (b *Bot) isConnected() bool {
	if b.Connect == nil {
		return true
	}
	ok, _, _ := b.conn.state()
	return ok
}

// connect runs Connect until it succeeds (true) or ctx is done (false).
func (b *Bot) connect(ctx context.Context) bool {
	if b.Connect == nil {
		return true
	}
	for {
		err := b.Connect(ctx)
		b.conn.mu.Lock()
		b.conn.attempts++
		b.conn.lastErr = err
		b.conn.connected = err == nil
		attempts := b.conn.attempts
		b.conn.mu.Unlock()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		e, wait := errs.Coded(err), connectBackoff.Ceiling(attempts)
		b.log().Warn("GitHub does not answer yet: the bot stays unready and tries again", "code", string(e.Code), "error", e.Message,
			"attempt", attempts, "retry_in", wait.String())
		if err := b.sleep(ctx, wait); err != nil {
			return false
		}
	}
}

// gated refuses deliveries until the bot is connected: GitHub records the
// 503 and the sweep later finds whatever the delivery would have done.
func (b *Bot) gated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !b.isConnected() {
			if b.Metrics != nil {
				b.Metrics.Deliveries.WithLabelValues(r.Header.Get("X-GitHub-Event"), OutcomeUnready).Inc()
			}
			w.Header().Set("Retry-After", "30")
			writeJSON(w, http.StatusServiceUnavailable, answer{Outcome: OutcomeUnready, Delivery: r.Header.Get("X-GitHub-Delivery"),
				Message: "the bot has not reached GitHub yet; the sweep will catch up with this delivery"})
			return
		}
		h(w, r)
	}
}

// readyConnection is the github check of /readyz before Connect succeeded
// ("" once connected).
func (b *Bot) readyConnection() string {
	if b.Connect == nil {
		return ""
	}
	ok, attempts, err := b.conn.state()
	switch {
	case ok:
		return ""
	case err == nil:
		return "connecting"
	default:
		return "not reached after " + strconv.Itoa(attempts) + " attempt(s): " + errs.Coded(err).Message
	}
}
