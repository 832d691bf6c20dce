package httpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
)

// Defaults of Config.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultBudget      = 2 * time.Minute
	DefaultMaxAttempts = 8
	DefaultBaseDelay   = 250 * time.Millisecond
	DefaultMaxDelay    = 15 * time.Second
	// maxBody is the most of a response body that is read.
	maxBody = 32 << 20
)

// Config configures a Client. Zero fields take the defaults.
type Config struct {
	// Timeout bounds one attempt (SPONSON_HTTP_TIMEOUT).
	Timeout time.Duration
	// Budget bounds all attempts of one request, waits included.
	Budget time.Duration
	// MaxAttempts bounds the attempts of one request.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff: attempt n waits a random
	// duration in [0, min(MaxDelay, BaseDelay·2ⁿ⁻¹)) (full jitter).
	BaseDelay, MaxDelay time.Duration
	// Transport sends the requests; when nil, one transport shared by the
	// process's clients: http.DefaultTransport's settings, keeping up to
	// IdleConnsPerHost connections to each provider host open.
	Transport http.RoundTripper
	// Clock stamps and waits (clock.System when nil). Sleep returns the
	// context's error when it ends first.
	Clock clock.Clock
	// Now and Sleep, when set and Clock is not, stand in for the clock's
	// Now and Sleep (the clock.System's for the one not set).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand draws the backoff's jitter, in [0, 1); math/rand when nil.
	Rand func() float64
	// UserAgent is sent with every request.
	UserAgent string
}

// IdleConnsPerHost is how many idle connections to one provider host the
// shared transport keeps. Lines run several at once (engine parallelism,
// 4 by default) against one API: with net/http's default of 2, every
// request past the second would open, and on a real network handshake, a
// connection of its own.
const IdleConnsPerHost = 16

var sharedTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = IdleConnsPerHost
	return t
}()

// Client sends provider requests with timeouts, retries and error mapping.
// It is safe for concurrent use.
type Client struct {
	cfg     Config
	clock   clock.Clock
	backoff clock.Backoff
	http    *http.Client
}

// New returns a client; zero fields of cfg take the defaults.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = DefaultBaseDelay
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.Transport == nil {
		cfg.Transport = sharedTransport
	}
	cfg.Clock = funcs(cfg)
	b := clock.Backoff{Base: cfg.BaseDelay, Max: cfg.MaxDelay}
	if cfg.Rand != nil {
		draw := cfg.Rand
		b.Rand = func(n int64) int64 { return int64(draw() * float64(n)) }
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "sponson"
	}
	return &Client{cfg: cfg, clock: cfg.Clock, backoff: b, http: &http.Client{
		Transport: cfg.Transport,
		// Redirects are not followed: a provider API that redirects is
		// misconfigured, and following one would send the token elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Config returns the client's effective configuration.
func (c *Client) Config() Config { return c.cfg }

// funcs is the configuration's clock: Clock, else one made of the Now and
// Sleep it sets over clock.System.
func funcs(cfg Config) clock.Clock {
	if cfg.Clock != nil || (cfg.Now == nil && cfg.Sleep == nil) {
		return clock.Or(cfg.Clock)
	}
	f := funcClock{Clock: clock.System{}, now: cfg.Now, sleep: cfg.Sleep}
	if f.now == nil {
		f.now = time.Now
	}
	if f.sleep == nil {
		f.sleep = f.Clock.Sleep
	}
	return f
}

type funcClock struct {
	clock.Clock
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

func (f funcClock) Now() time.Time                                   { return f.now() }
func (f funcClock) Sleep(ctx context.Context, d time.Duration) error { return f.sleep(ctx, d) }

// ParseTimeout reads a SPONSON_HTTP_TIMEOUT value: a Go duration ("45s",
// "2m") or a number of seconds ("45"). USAGE when it is neither or not
// positive.
func ParseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) || n > 24*3600 {
			return 0, errs.New(errs.USAGE, "SPONSON_HTTP_TIMEOUT=%q is not a positive number of seconds", s)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errs.New(errs.USAGE, "SPONSON_HTTP_TIMEOUT=%q is neither a duration (45s) nor a number of seconds", s).
			WithHint("Set SPONSON_HTTP_TIMEOUT to a duration such as 45s or 2m, or unset it for the default (%s).", DefaultTimeout)
	}
	return d, nil
}

// Request is one provider request.
type Request struct {
	// Provider names the provider in messages ("vercel").
	Provider string
	Method   string
	// BaseURL and Path make the URL: BaseURL has no trailing slash, Path
	// starts with "/" and holds no query.
	BaseURL string
	Path    string
	Query   url.Values
	// Token is sent as "Authorization: Bearer <Token>" when not empty. It
	// never appears in an error.
	Token string
	// TokenVar names the variable Token came from, for the hint of a 401
	// or 403 ("VERCEL_TOKEN").
	TokenVar string
	// RawToken sends Token as the whole Authorization value, for providers
	// whose scheme is not Bearer (PlanetScale's "<id>:<token>",
	// LaunchDarkly's access token).
	RawToken bool
	// Header holds extra headers; a Content-Type here replaces the JSON
	// default (LaunchDarkly's semantic-patch media type).
	Header http.Header
	// Body is sent as JSON; a []byte or json.RawMessage is sent as is.
	Body any
	// Idempotent declares a POST or PATCH safe to repeat (an upsert, a PATCH
	// that sets absolute values). GET, HEAD, PUT, DELETE and OPTIONS always
	// are.
	Idempotent bool
}

// idempotent reports whether the request may be repeated after a failure
// that may have reached the provider.
func (r *Request) idempotent() bool {
	switch strings.ToUpper(r.Method) {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return true
	}
	return r.Idempotent
}

// Response is a provider's successful answer.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte
	Attempts int
	req      *Request
}

// Decode decodes the JSON body into out; PROVIDER_RESPONSE when it cannot.
func (r *Response) Decode(out any) error {
	if out == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return errs.Wrap(&ResponseError{Provider: r.req.Provider, Method: r.req.Method, Path: r.req.display(), Err: err.Error()},
			errs.PROVIDER_RESPONSE, "%s answered %s %s with a body Sponson cannot read", r.req.Provider, r.req.Method, r.req.display())
	}
	return nil
}

// Do sends the request, retrying as the package documentation says. A
// non-2xx answer, a network failure and a timeout are coded errors.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	body, err := encodeBody(req.Body)
	if err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "%s %s %s: encoding the request body", req.Provider, req.Method, req.display())
	}
	if err := adapter.BeforeWrite(ctx, req.Method); err != nil {
		return nil, err
	}
	start := c.clock.Now()
	var last error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, c.ctxError(ctx, req, attempt-1)
		}
		resp, wait, err := c.attempt(ctx, req, body, attempt)
		if err == nil {
			return resp, nil
		}
		last = err
		if wait < 0 { // not retryable
			return nil, err
		}
		if attempt >= c.cfg.MaxAttempts {
			return nil, c.gaveUp(req, last, attempt, "")
		}
		if wait == 0 {
			wait = c.delay(attempt)
		}
		if c.clock.Now().Sub(start)+wait > c.cfg.Budget {
			return nil, c.gaveUp(req, last, attempt, wait.String())
		}
		if err := c.clock.Sleep(ctx, wait); err != nil {
			return nil, c.ctxError(ctx, req, attempt)
		}
	}
}

// JSON sends the request and decodes a 2xx answer into out (nil: ignore the
// body).
func (c *Client) JSON(ctx context.Context, req *Request, out any) (*Response, error) {
	resp, err := c.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp, resp.Decode(out)
}

// delay is the backoff's full jitter, uniform in [0, min(MaxDelay,
// BaseDelay·2ⁿ⁻¹)) (clock.Backoff), and never zero: no busy loop, even
// with a zero draw.
func (c *Client) delay(attempt int) time.Duration {
	return max(c.backoff.Delay(attempt), time.Millisecond)
}

// attempt sends once. wait < 0: the error is final; wait == 0: retry after
// the backoff; wait > 0: retry after exactly wait (Retry-After).
func (c *Client) attempt(ctx context.Context, req *Request, body []byte, n int) (*Response, time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hreq, err := c.build(actx, req, body)
	if err != nil {
		return nil, -1, err
	}
	hresp, err := c.http.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, c.ctxError(ctx, req, n)
		}
		timeout := actx.Err() != nil || isTimeout(err)
		te := &TransportError{Provider: req.Provider, Method: req.Method, Path: req.display(), Err: transportText(err), Timeout: timeout, Attempts: n}
		if why := permanent(err, hreq.URL.Hostname(), hreq.URL.Host); why != "" {
			// Nothing was sent, and asking again finds the same: a wrong
			// base URL, not a provider having a bad moment.
			return nil, -1, errs.Wrap(te, errs.PROVIDER_UNREACHABLE, "%s %s %s: %s (not retried)", req.Provider, req.Method, req.display(), why).
				With("host", hreq.URL.Host)
		}
		if !req.idempotent() {
			te.Ambiguous = true
			code := errs.PROVIDER_TRANSIENT
			if timeout {
				code = errs.PROVIDER_TIMEOUT
			}
			return nil, -1, errs.Wrap(te, code, "%s %s %s may or may not have been done (no answer; not repeated, it creates)", req.Provider, req.Method, req.display()).
				WithHint("Sponson re-reads the provider to find out; re-run apply if it could not tell.")
		}
		return nil, 0, te
	}
	data, rerr := io.ReadAll(io.LimitReader(hresp.Body, maxBody))
	hresp.Body.Close()
	if rerr != nil {
		if ctx.Err() != nil {
			return nil, -1, c.ctxError(ctx, req, n)
		}
		te := &TransportError{Provider: req.Provider, Method: req.Method, Path: req.display(), Err: transportText(rerr), Timeout: actx.Err() != nil, Attempts: n}
		if hresp.StatusCode/100 == 2 && !req.idempotent() {
			// The provider acted and the answer was lost on the way.
			te.Ambiguous = true
			return nil, -1, errs.Wrap(te, errs.PROVIDER_TRANSIENT, "%s %s %s: the answer was cut off", req.Provider, req.Method, req.display())
		}
		if !req.idempotent() {
			te.Ambiguous = true
			return nil, -1, errs.Wrap(te, errs.PROVIDER_TRANSIENT, "%s %s %s: the answer was cut off", req.Provider, req.Method, req.display())
		}
		return nil, 0, te
	}
	if hresp.StatusCode/100 == 2 {
		return &Response{Status: hresp.StatusCode, Header: hresp.Header, Body: data, Attempts: n, req: req}, 0, nil
	}
	se := &StatusError{Provider: req.Provider, Method: req.Method, Path: req.display(), Status: hresp.StatusCode,
		Message: providerMessage(data, req.Token), Attempts: n, TokenVar: req.TokenVar}
	switch st := hresp.StatusCode; {
	case st == http.StatusTooManyRequests:
		// A refusal: the provider did nothing, so even a create may repeat.
		return nil, c.retryAfter(hresp.Header, true), se
	case st == http.StatusLocked:
		return nil, 0, se
	case st >= 500:
		if !req.idempotent() {
			se.Ambiguous = true
			return nil, -1, errs.Wrap(se, errs.PROVIDER_TRANSIENT, "%s %s %s failed with %d and may or may not have been done (not repeated, it creates)",
				req.Provider, req.Method, req.display(), st).
				WithHint("Sponson re-reads the provider to find out; re-run apply if it could not tell.")
		}
		if st == http.StatusServiceUnavailable {
			return nil, c.retryAfter(hresp.Header, false), se
		}
		return nil, 0, se
	}
	return nil, -1, se.coded()
}

// retryAfter reads Retry-After (seconds or an HTTP date) and, for a 429
// without it, X-RateLimit-Reset (epoch seconds). 0 when neither says.
func (c *Client) retryAfter(h http.Header, rateLimit bool) time.Duration {
	now := c.clock.Now()
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
			if secs < 0 {
				return 0
			}
			// A year at most, capped before it is read: a huge number
			// would overflow a Duration.
			v = strconv.FormatInt(min(secs, 365*24*3600), 10)
		}
		if d, ok := clock.RetryAfter(v, now); ok {
			return clampMin(d)
		}
	}
	if rateLimit {
		if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); v != "" {
			if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs > 0 {
				return clampMin(time.Unix(secs, 0).Sub(now))
			}
		}
	}
	return 0
}

// clampMin makes a told wait of zero or less a minimal positive wait (the
// caller distinguishes 0, "not told").
func clampMin(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Millisecond
	}
	return d
}

func (c *Client) build(ctx context.Context, req *Request, body []byte) (*http.Request, error) {
	u := req.BaseURL + req.Path
	if len(req.Query) > 0 {
		u += "?" + req.Query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(ctx, strings.ToUpper(req.Method), u, rd)
	if err != nil {
		// The URL is not printed: it may hold a token in its query.
		return nil, errs.New(errs.INTERNAL, "%s: cannot build %s %s", req.Provider, req.Method, req.display())
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", c.cfg.UserAgent)
	if body != nil && hreq.Header.Get("Content-Type") == "" {
		hreq.Header.Set("Content-Type", "application/json")
	}
	switch {
	case req.Token != "" && req.RawToken:
		hreq.Header.Set("Authorization", req.Token)
	case req.Token != "":
		hreq.Header.Set("Authorization", "Bearer "+req.Token)
	}
	return hreq, nil
}

func encodeBody(b any) ([]byte, error) {
	switch t := b.(type) {
	case nil:
		return nil, nil
	case []byte:
		return t, nil
	case json.RawMessage:
		return t, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// ctxError is the error for a request the caller's context ended.
func (c *Client) ctxError(ctx context.Context, req *Request, attempts int) error {
	te := &TransportError{Provider: req.Provider, Method: req.Method, Path: req.display(), Err: ctx.Err().Error(), Attempts: attempts,
		Ambiguous: attempts > 0 && !req.idempotent()}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		te.Timeout = true
		return errs.Wrap(te, errs.PROVIDER_TIMEOUT, "%s %s %s: out of time", req.Provider, req.Method, req.display())
	}
	return errs.Wrap(te, errs.INTERRUPTED, "%s %s %s: interrupted", req.Provider, req.Method, req.display())
}

// gaveUp is the error once retrying stops.
func (c *Client) gaveUp(req *Request, last error, attempts int, wait string) error {
	var te *TransportError
	var se *StatusError
	why := fmt.Sprintf("gave up after %d attempts", attempts)
	if wait != "" {
		why = fmt.Sprintf("gave up after %d attempts: the next wait (%s) would pass the retry budget of %s", attempts, wait, c.cfg.Budget)
	}
	switch {
	case errors.As(last, &se):
		se.Attempts = attempts
		e := errs.Wrap(se, errs.PROVIDER_TRANSIENT, "%s %s %s: %s", req.Provider, req.Method, req.display(), why).With("status", se.Status)
		if se.Status == http.StatusLocked {
			e.WithHint("The provider kept the object locked (an operation was still running); re-run apply.")
		}
		return e
	case errors.As(last, &te):
		te.Attempts = attempts
		if te.Timeout {
			return errs.Wrap(te, errs.PROVIDER_TIMEOUT, "%s %s %s: %s", req.Provider, req.Method, req.display(), why)
		}
		return errs.Wrap(te, errs.PROVIDER_TRANSIENT, "%s %s %s: %s", req.Provider, req.Method, req.display(), why)
	}
	return last
}

// display is the request's method-free path with credential-like query
// values masked: what messages show.
func (r *Request) display() string {
	if len(r.Query) == 0 {
		return r.Path
	}
	q := url.Values{}
	for k, vs := range r.Query {
		for _, v := range vs {
			if credentialParam(k) || (r.Token != "" && strings.Contains(v, r.Token)) {
				v = "***"
			}
			q.Add(k, v)
		}
	}
	return r.Path + "?" + q.Encode()
}

// credentialParam reports whether a query parameter's name says it holds a
// credential.
func credentialParam(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"token", "secret", "password", "passwd", "signature", "apikey", "api_key", "api-key", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	switch k {
	case "key", "sig", "auth", "code", "session":
		return true
	}
	return false
}

// permanent says why a failure to connect to host is one that retrying
// cannot mend, or "" when it may pass: the name does not exist (an
// authoritative "no such host", not a resolver that timed out or failed),
// or a literal address refuses the connection (nothing listens there; a
// name may resolve to another address on the next attempt, so a refusal
// from a name is retried). Either way the request was never sent.
func permanent(err error, host, hostPort string) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound && !dns.IsTimeout && !dns.IsTemporary {
			return fmt.Sprintf("the host %s does not exist (no such host)", host)
		}
		return ""
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED) && net.ParseIP(host) != nil {
		return fmt.Sprintf("nothing listens at %s (connection refused)", hostPort)
	}
	return ""
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// transportText is a network error's text without the URL (which may hold a
// query token): url.Error's cause only.
func transportText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// providerMessage extracts the provider's error message from a body, with
// the token cut out and the length clipped.
func providerMessage(body []byte, token string) string {
	msg := ""
	var v any
	if json.Unmarshal(body, &v) == nil {
		msg = messageOf(v)
	} else if utf8Text(body) {
		msg = strings.TrimSpace(string(body))
	}
	if token != "" {
		msg = strings.ReplaceAll(msg, token, "***")
	}
	msg = strings.Join(strings.Fields(msg), " ")
	const max = 300
	if len(msg) > max {
		i := max
		for i > 0 && !isRuneStart(msg[i]) {
			i--
		}
		msg = msg[:i] + "…"
	}
	return msg
}

// messageOf finds a message in the error shapes the providers use:
// Vercel {"error":{"code","message"}}, Neon {"code","message"}, Auth0
// {"statusCode","error","message","errorCode"}, Supabase {"message"} and
// OAuth-style {"error","error_description"}.
func messageOf(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if e, ok := m["error"].(map[string]any); ok {
		if s := messageOf(e); s != "" {
			return s
		}
	}
	parts := []string{}
	for _, k := range []string{"code", "errorCode"} {
		if s, ok := m[k].(string); ok && s != "" {
			parts = append(parts, s)
			break
		}
	}
	for _, k := range []string{"message", "error_description", "msg", "error"} {
		if s, ok := m[k].(string); ok && s != "" {
			parts = append(parts, s)
			break
		}
	}
	return strings.Join(parts, ": ")
}

func utf8Text(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b[:min(len(b), 512)] {
		if c == 0 {
			return false
		}
	}
	return true
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
