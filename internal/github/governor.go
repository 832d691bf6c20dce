package github

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/clock"
)

// Observer hears every HTTP call the governor sends and every wait it
// makes, for metrics (the bot counts them in Prometheus). Methods are
// called synchronously and must be cheap and safe for concurrent use.
type Observer interface {
	// Call is one HTTP request sent to GitHub: op is GitHub's operationId
	// ("issues/list-comments", "apps/create-installation-access-token",
	// ...; "" for a call of no known operation), a label of bounded
	// cardinality; status is 0 when the request failed without an answer
	// (err then set).
	Call(op string, status int, err error)
	// Throttled is one wait before sending op again; reason is
	// "retry-after", "reset" (the primary limit's X-RateLimit-Reset),
	// "backoff" (a rate limit that named no time), "server-error" or
	// "network".
	Throttled(op string, wait time.Duration, reason string)
}

type opKey struct{}

// withOp names the GitHub operation the calls made with ctx belong to.
func withOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

func opOf(ctx context.Context) string {
	op, _ := ctx.Value(opKey{}).(string)
	return op
}

// Stats counts what the governor did since it was made.
type Stats struct {
	Calls         int64         // HTTP requests sent
	RateLimited   int64         // answers that were a rate limit (403/429)
	Retries       int64         // requests sent again after a wait
	GaveUp        int64         // rate limits answered to the caller because the budget was spent
	ThrottledTime time.Duration // total time waited
}

// governor is the one rate-limit transport under go-github. On a 403 or
// 429 that is a rate limit it waits Retry-After, else until
// X-RateLimit-Reset when X-RateLimit-Remaining is 0, else backs off from
// one minute (doubling), and sends again; GitHub did not process a call it
// answered so, which is why a POST is retried too. A 502/503/504 to a GET
// or HEAD is retried twice after a short backoff; a write that met a
// server error is never sent again (it may have been processed).
//
// The waits are bounded: by the request's context deadline (a wait that
// would outlast it is not started), by MaxWait per call and by Budget
// over the governor's life. When the bound is reached the rate-limit
// answer goes to the caller, who gets GITHUB_RATE_LIMITED.
//
// A rate limit pauses every call of the governor, not only the one
// refused (GitHub asks clients to stop all requests): a call that starts
// during the pause waits for its end first ("paused"). When an answer says
// the primary limit is spent (X-RateLimit-Remaining: 0), the governor
// likewise waits for the reset before the next call ("reset"), and removes
// those headers from successful answers so go-github's own client-side
// block (which reads the wall clock) never second-guesses it.
type governor struct {
	clock    clock.Clock // the pauses' times and the waits
	maxWait  time.Duration
	budget   time.Duration // 0: unbounded
	observer Observer

	mu    sync.Mutex
	stats Stats
	// pauseUntil: no call goes out before then (the primary limit is
	// spent until its reset, or a call met a rate limit: GitHub asks
	// clients to stop every request, not just the one refused);
	// pauseReason is "reset" or "paused".
	pauseUntil  time.Time
	pauseReason string
}

func newGovernor(cfg Config) *governor {
	g := &governor{clock: clock.Or(cfg.Clock), maxWait: cfg.MaxWait, budget: cfg.Budget, observer: cfg.Observer}
	if g.maxWait == 0 {
		g.maxWait = 15 * time.Minute
	}
	return g
}

func (g *governor) snapshot() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// wrap returns next behind the governor.
func (g *governor) wrap(next http.RoundTripper) http.RoundTripper {
	return &governed{g: g, next: next}
}

type governed struct {
	g    *governor
	next http.RoundTripper
}

func (t *governed) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.g
	ctx := req.Context()
	var waited time.Duration
	limits := 0 // rate limits that named no time: the backoff's attempt
	serverRetries := 0
	if err := g.waitPaused(ctx, &waited); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			var ok bool
			if r, ok = rewind(req); !ok {
				return nil, errNoReplay
			}
		}
		resp, err := t.next.RoundTrip(r)
		g.count(func(s *Stats) { s.Calls++ })
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		if g.observer != nil {
			g.observer.Call(opOf(ctx), status, err)
		}
		if err != nil {
			// A GET that met a network error is sent again, twice.
			if idempotent(req.Method) && serverRetries < 2 && ctx.Err() == nil {
				serverRetries++
				d := serverBackoff.Ceiling(serverRetries)
				if g.mayWait(ctx, d, waited) {
					if werr := g.doWait(ctx, d, "network", &waited, opOf(ctx)); werr != nil {
						return nil, werr
					}
					g.count(func(s *Stats) { s.Retries++ })
					continue
				}
			}
			return nil, err
		}
		g.noteRemaining(resp)
		wait, reason, limited := g.classify(resp, &limits)
		if !limited {
			if idempotent(req.Method) && serverRetries < 2 && (status == 502 || status == 503 || status == 504) {
				serverRetries++
				wait, reason = serverBackoff.Ceiling(serverRetries), "server-error"
			} else {
				if status < 300 {
					stripExhausted(resp)
				}
				return resp, nil
			}
		} else {
			g.count(func(s *Stats) { s.RateLimited++ })
			g.pause(g.clock.Now().Add(wait), "paused")
		}
		if !g.mayWait(ctx, wait, waited) || (req.Body != nil && req.GetBody == nil) {
			if limited {
				g.count(func(s *Stats) { s.GaveUp++ })
			}
			return resp, nil
		}
		drain(resp)
		if err := g.doWait(ctx, wait, reason, &waited, opOf(ctx)); err != nil {
			return nil, err
		}
		g.count(func(s *Stats) { s.Retries++ })
	}
}

// errNoReplay: a request whose body cannot be read again is never resent.
var errNoReplay = &replayError{}

type replayError struct{}

func (*replayError) Error() string { return "github: the request body cannot be sent again" }

func (g *governor) count(f func(*Stats)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(&g.stats)
}

// mayWait reports whether waiting d more stays inside every bound.
func (g *governor) mayWait(ctx context.Context, d, waited time.Duration) bool {
	if waited+d > g.maxWait {
		return false
	}
	// A context's deadline is on the wall clock, whatever Clock is.
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	if g.budget > 0 {
		g.mu.Lock()
		spent := g.stats.ThrottledTime
		g.mu.Unlock()
		if spent+d > g.budget {
			return false
		}
	}
	return true
}

func (g *governor) doWait(ctx context.Context, d time.Duration, reason string, waited *time.Duration, op string) error {
	if g.observer != nil {
		g.observer.Throttled(op, d, reason)
	}
	g.count(func(s *Stats) { s.ThrottledTime += d })
	*waited += d
	return g.clock.Sleep(ctx, d)
}

// waitPaused waits out a pause (within the bounds; past them the call
// goes out and GitHub answers for itself).
func (g *governor) waitPaused(ctx context.Context, waited *time.Duration) error {
	g.mu.Lock()
	until, reason := g.pauseUntil, g.pauseReason
	g.mu.Unlock()
	if until.IsZero() {
		return nil
	}
	d := until.Sub(g.clock.Now())
	if d <= 0 || !g.mayWait(ctx, d, *waited) {
		return nil
	}
	return g.doWait(ctx, d, reason, waited, opOf(ctx))
}

// pause holds every call until until (a later pause wins).
func (g *governor) pause(until time.Time, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if until.After(g.pauseUntil) {
		g.pauseUntil, g.pauseReason = until, reason
	}
}

func (g *governor) noteRemaining(resp *http.Response) {
	if resp.Header.Get("X-RateLimit-Remaining") != "0" {
		return
	}
	if reset, ok := unixHeader(resp.Header.Get("X-RateLimit-Reset")); ok {
		g.pause(reset, "reset")
	}
}

// The governor's backoffs: from one minute, doubling, after a rate limit
// that names no time; 1 s then 2 s before a GET is sent again after a
// server error or a network error. Their ceilings, not a jittered delay:
// a rate limit pauses every call of the governor already.
var (
	limitBackoff  = clock.Backoff{Base: time.Minute}
	serverBackoff = clock.Backoff{Base: time.Second}
)

// classify decides whether resp is a rate limit and how long to wait.
// limits counts the rate limits that named no time: the backoff's
// attempt, one more each time.
func (g *governor) classify(resp *http.Response, limits *int) (time.Duration, string, bool) {
	if !isRateLimit(resp) {
		return 0, "", false
	}
	if d, ok := clock.RetryAfter(resp.Header.Get("Retry-After"), g.clock.Now()); ok {
		return d, "retry-after", true
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, ok := unixHeader(resp.Header.Get("X-RateLimit-Reset")); ok {
			d := reset.Sub(g.clock.Now()) + time.Second
			if d < time.Second {
				d = time.Second
			}
			return d, "reset", true
		}
	}
	*limits++
	return limitBackoff.Ceiling(*limits), "backoff", true
}

// isRateLimit reports whether a 403 or 429 is a rate limit: every 429
// is; a 403 is when it carries Retry-After, says the primary limit is
// spent, or its message says "rate limit" (GitHub's secondary limits:
// "You have exceeded a secondary rate limit"). Any other 403 is a missing
// permission. The body is read and put back.
func isRateLimit(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusForbidden:
	default:
		return false
	}
	if resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0" {
		return true
	}
	body := peekBody(resp)
	return rateLimitMessage(body)
}

// rateLimitMessage is the one place GitHub's text is read: its rate
// limit answers say so in their message, and nothing else does.
func rateLimitMessage(body []byte) bool {
	s := strings.ToLower(string(body))
	return strings.Contains(s, "rate limit") || strings.Contains(s, "abuse detection")
}

func peekBody(resp *http.Response) []byte {
	if resp.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), rest), rest}
	return b
}

func unixHeader(v string) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(n, 0).UTC(), true
}

// stripExhausted removes "the primary limit is spent" from a successful
// answer: the governor has noted it and waits before the next call; left
// in, go-github would refuse the next call on its own, by the wall clock.
func stripExhausted(resp *http.Response) {
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		resp.Header.Del("X-RateLimit-Remaining")
		resp.Header.Del("X-RateLimit-Reset")
	}
}

func idempotent(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == ""
}

func rewind(req *http.Request) (*http.Request, bool) {
	r := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return r, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	b, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	r.Body = b
	return r, true
}

func drain(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) //nolint:errcheck
		resp.Body.Close()
	}
}

// counters gives a governor's totals the shape metrics read.
type counters struct{ g *governor }

// Calls is the number of HTTP requests sent to GitHub.
func (c counters) Calls() int64 { return c.g.snapshot().Calls }

// ThrottledSeconds is the time spent waiting on rate limits, in seconds.
func (c counters) ThrottledSeconds() float64 { return c.g.snapshot().ThrottledTime.Seconds() }
