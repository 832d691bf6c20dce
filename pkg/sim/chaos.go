package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// The kinds of chaos rule.
const (
	// KindLatency delays matching requests by Latency plus up to Jitter.
	// Every matching latency rule applies (their delays add up).
	KindLatency = "latency"
	// KindFail answers matching requests with Status (default 503) in the
	// provider's error format; nothing is applied.
	KindFail = "fail"
	// KindRateLimit answers 429 in the provider's format, with Retry-After
	// (whole seconds, rounded up) and the provider's rate-limit headers.
	KindRateLimit = "ratelimit"
	// KindDrop applies the request, logs it (Lost), then closes the
	// connection without a response byte: a lost response.
	KindDrop = "drop"
	// KindHang never answers: the request waits until the client gives up
	// or the rule is released, then the connection is closed. Nothing is
	// applied.
	KindHang = "hang"
	// KindHold pins a request before it is applied, until the rule is
	// released (then it proceeds normally) or the client gives up (then it
	// is never applied). Use it to stop one client mid read-modify-write.
	KindHold = "hold"
	// KindPageSize caps the page size of the list routes that paginate
	// (Vercel deployments, Neon branches, http collections).
	KindPageSize = "page_size"
)

// Rule is one chaos rule. A request matches when Provider, Method and Path
// all match; latency rules all apply, page_size takes the first match, and
// of the other kinds the first match (in the order added) acts.
type Rule struct {
	// ID names the rule; chosen by the caller or assigned ("r1", "r2", ...).
	ID   string `json:"id,omitempty"`
	Kind string `json:"kind"`
	// Provider is "vercel", "neon", "supabase", "auth0", "http", or ""/"*"
	// for any.
	Provider string `json:"provider,omitempty"`
	// Method is an HTTP method, "WRITE" for any of POST/PUT/PATCH/DELETE,
	// or ""/"*" for any.
	Method string `json:"method,omitempty"`
	// Path is a pattern on the path beneath the provider prefix: segments
	// are globs (path.Match), "**" matches any number of segments, "" any
	// path. Example: "/api/v2/clients/*", "/projects/*/branches/**".
	Path string `json:"path,omitempty"`
	// Count is how many matching requests the rule applies to; 0 is
	// unlimited (until released or cleared).
	Count int `json:"count,omitempty"`
	// Status for KindFail (default 503).
	Status int `json:"status,omitempty"`
	// Latency and Jitter for KindLatency.
	Latency Duration `json:"latency,omitempty"`
	Jitter  Duration `json:"jitter,omitempty"`
	// RetryAfter for KindRateLimit (default 1s).
	RetryAfter Duration `json:"retry_after,omitempty"`
	// PageSize for KindPageSize.
	PageSize int `json:"page_size,omitempty"`

	// Read-only state, reported by Rules and GET /_chaos.
	Hits     int  `json:"hits"`     // requests the rule applied to
	Held     int  `json:"held"`     // requests waiting on it now (hold, hang)
	Released bool `json:"released"` // released: it matches no more
}

// Duration is a time.Duration that reads JSON as "150ms"-style strings or
// as a number of milliseconds, and writes the string form.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes "150ms".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "150ms" or 150 (milliseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("duration must be a string like \"150ms\" or a number of milliseconds")
	}
	*d = Duration(time.Duration(ms * float64(time.Millisecond)))
	return nil
}

type rule struct {
	Rule
	left    int // uses left; -1 unlimited
	release chan struct{}
}

func (r *rule) live() bool { return !r.Released && r.left != 0 }

func (r *rule) use() {
	r.Hits++
	if r.left > 0 {
		r.left--
	}
}

func (r *rule) matches(provider, method, p string) bool {
	if r.Provider != "" && r.Provider != "*" && r.Provider != provider {
		return false
	}
	switch m := strings.ToUpper(r.Method); m {
	case "", "*":
	case "WRITE":
		if !isWrite(method) {
			return false
		}
	default:
		if m != method {
			return false
		}
	}
	return matchPath(r.Path, p)
}

// matchPath matches a path against a pattern of glob segments, where "**"
// stands for any number of segments. The empty pattern matches any path.
func matchPath(pattern, p string) bool {
	if pattern == "" || pattern == "**" || pattern == "/**" {
		return true
	}
	return matchSegs(split(pattern), split(p))
}

func split(s string) []string {
	s = strings.Trim(s, "/")
	if s == "" {
		return nil
	}
	return strings.Split(s, "/")
}

func matchSegs(ps, xs []string) bool {
	for len(ps) > 0 {
		if ps[0] == "**" {
			for i := 0; i <= len(xs); i++ {
				if matchSegs(ps[1:], xs[i:]) {
					return true
				}
			}
			return false
		}
		if len(xs) == 0 {
			return false
		}
		if ok, err := path.Match(ps[0], xs[0]); err != nil || !ok {
			return false
		}
		ps, xs = ps[1:], xs[1:]
	}
	return len(xs) == 0
}

// AddRule adds a chaos rule and returns its id. It fails on an unknown kind
// or provider, a duplicate id, or a rule missing what its kind needs.
func (c *Cloud) AddRule(r Rule) (string, error) {
	return c.chaos.add(r, func(name string) bool { _, ok := c.providers[name]; return ok })
}

func (ch *chaos) add(r Rule, known func(provider string) bool) (string, error) {
	switch r.Kind {
	case KindLatency:
		if r.Latency <= 0 && r.Jitter <= 0 {
			return "", fmt.Errorf("sim: latency rule needs latency or jitter")
		}
	case KindFail:
		if r.Status == 0 {
			r.Status = http.StatusServiceUnavailable
		}
		if r.Status < 400 || r.Status > 599 {
			return "", fmt.Errorf("sim: fail rule status %d is not an error status", r.Status)
		}
	case KindRateLimit:
		if r.RetryAfter <= 0 {
			r.RetryAfter = Duration(time.Second)
		}
	case KindDrop, KindHang, KindHold:
	case KindPageSize:
		if r.PageSize < 1 {
			return "", fmt.Errorf("sim: page_size rule needs page_size >= 1")
		}
	default:
		return "", fmt.Errorf("sim: unknown chaos kind %q", r.Kind)
	}
	if r.Provider != "" && r.Provider != "*" {
		if !known(r.Provider) {
			return "", fmt.Errorf("sim: unknown provider %q", r.Provider)
		}
	}
	if r.Count < 0 {
		return "", fmt.Errorf("sim: count must be >= 0")
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if r.ID == "" {
		ch.ruleSeq++
		r.ID = "r" + strconv.Itoa(ch.ruleSeq)
	}
	for _, x := range ch.rules {
		if x.ID == r.ID {
			return "", fmt.Errorf("sim: chaos rule id %q already in use", r.ID)
		}
	}
	r.Hits, r.Held, r.Released = 0, 0, false
	nr := &rule{Rule: r, left: r.Count, release: make(chan struct{})}
	if r.Count == 0 {
		nr.left = -1
	}
	ch.rules = append(ch.rules, nr)
	return r.ID, nil
}

// MustAddRule is AddRule for tests: it panics on an invalid rule.
func (c *Cloud) MustAddRule(r Rule) string {
	id, err := c.AddRule(r)
	if err != nil {
		panic(err)
	}
	return id
}

// Rules returns the rules, with their hits and held counts.
func (c *Cloud) Rules() []Rule {
	return c.chaos.list()
}

func (ch *chaos) list() []Rule {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	out := make([]Rule, 0, len(ch.rules))
	for _, r := range ch.rules {
		out = append(out, r.Rule)
	}
	return out
}

// Release releases a rule: requests held on it proceed (hold) or are
// dropped (hang), and it matches no more. It reports whether the rule exists.
func (c *Cloud) Release(id string) bool {
	return c.chaos.release(id)
}

func (ch *chaos) release(id string) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, r := range ch.rules {
		if r.ID == id {
			ch.releaseLocked(r)
			return true
		}
	}
	return false
}

// ReleaseAll releases every rule. Call it before closing a server that may
// have held or hanging requests.
func (c *Cloud) ReleaseAll() {
	c.chaos.releaseAll()
}

func (ch *chaos) releaseAll() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.releaseAllLocked()
}

// ClearRules releases and removes every rule.
func (c *Cloud) ClearRules() {
	c.chaos.clear()
}

func (ch *chaos) clear() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.releaseAllLocked()
	ch.rules = nil
}

func (ch *chaos) releaseAllLocked() {
	for _, r := range ch.rules {
		ch.releaseLocked(r)
	}
}

func (ch *chaos) releaseLocked(r *rule) {
	if !r.Released {
		r.Released = true
		close(r.release)
	}
}

// Held returns how many requests wait on the rule now.
func (c *Cloud) Held(id string) int {
	return c.chaos.held(id)
}

func (ch *chaos) held(id string) int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, r := range ch.rules {
		if r.ID == id {
			return r.Held
		}
	}
	return 0
}

// WaitHeld waits until at least n requests wait on the rule, so a test can
// act while a client is pinned, without sleeping.
func (c *Cloud) WaitHeld(ctx context.Context, id string, n int) error {
	if err := c.chaos.waitHeld(ctx, id, func(held int) bool { return held >= n }); err != nil {
		return fmt.Errorf("sim: waiting for %d request(s) held on %q: %w", n, id, err)
	}
	return nil
}

// waitHeld waits until the number of requests the rule holds satisfies ok.
func (ch *chaos) waitHeld(ctx context.Context, id string, ok func(held int) bool) error {
	for {
		ch.mu.Lock()
		held, changed := 0, ch.heldCh
		for _, r := range ch.rules {
			if r.ID == id {
				held = r.Held
			}
		}
		ch.mu.Unlock()
		if ok(held) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// heldChangedLocked wakes every waitHeld. Callers hold ch.mu.
func (ch *chaos) heldChangedLocked() {
	close(ch.heldCh)
	ch.heldCh = make(chan struct{})
}

// await waits on a hold or hang rule; it reports whether the rule was
// released (rather than the client giving up).
func (ch *chaos) await(ctx context.Context, r *rule) bool {
	ch.mu.Lock()
	r.Held++
	ch.heldChangedLocked()
	released := r.release
	ch.mu.Unlock()
	defer func() {
		ch.mu.Lock()
		r.Held--
		ch.heldChangedLocked()
		ch.mu.Unlock()
	}()
	select {
	case <-released:
		return true
	case <-ctx.Done():
		return false
	}
}

// chaos is the cloud's chaos rules and the requests they hold, under the
// cloud's lock.
type chaos struct {
	*core
	rules   []*rule
	ruleSeq int
	heldCh  chan struct{} // closed and replaced when a rule's Held changes
}

type plan struct {
	latency  time.Duration
	action   *rule
	pageSize int
}

// plan decides what chaos does to one request, consuming rule uses.
func (ch *chaos) plan(provider, method, p string) plan {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var pl plan
	for _, r := range ch.rules {
		if !r.live() || !r.matches(provider, method, p) {
			continue
		}
		switch r.Kind {
		case KindLatency:
			d := r.Latency.D()
			if j := r.Jitter.D(); j > 0 {
				d += time.Duration(ch.rng.Int64N(int64(j) + 1))
			}
			pl.latency += d
			r.use()
		case KindPageSize:
			if pl.pageSize == 0 {
				pl.pageSize = r.PageSize
				r.use()
			}
		default:
			if pl.action == nil {
				pl.action = r
				r.use()
			}
		}
	}
	return pl
}

// ChaosRequest is the body of POST /_chaos. Every part is optional; they
// are applied in the order of the fields.
type ChaosRequest struct {
	// Reset: "all" (state, rules, writes), "writes", or "rules".
	Reset string `json:"reset,omitempty"`
	// Release these rule ids; "*" releases all.
	Release []string `json:"release,omitempty"`
	// Add these rules.
	Rules []Rule `json:"rules,omitempty"`
	// Drift edits, as a person in a console would make them.
	Drift []Drift `json:"drift,omitempty"`
	// Deploy starts Vercel deployments with a lifecycle.
	Deploy []DeploySpec `json:"deploy,omitempty"`
	// Push starts the builds a git push starts (Cloud.Push).
	Push []Push `json:"push,omitempty"`
}

// ChaosResponse answers POST /_chaos.
type ChaosResponse struct {
	Rules       []string `json:"rules,omitempty"`       // ids of the rules added
	Drift       []string `json:"drift,omitempty"`       // ids of the records each drift edit touched or made
	Deployments []string `json:"deployments,omitempty"` // uids of the deployments made
	Error       string   `json:"error,omitempty"`
}

// chaosEndpoint serves /_chaos: the controls of `sponson sim` over HTTP.
type chaosEndpoint struct{ c *Cloud }

func (e chaosEndpoint) get(w http.ResponseWriter, r *http.Request) {
	c := e.c
	writeJSON(w, http.StatusOK, map[string]any{"rules": c.Rules()})
}

func (e chaosEndpoint) post(w http.ResponseWriter, r *http.Request) {
	c := e.c
	var req ChaosRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, c.maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, ChaosResponse{Error: "bad chaos request: " + err.Error()})
		return
	}
	var resp ChaosResponse
	fail := func(err error) {
		resp.Error = err.Error()
		writeJSON(w, http.StatusBadRequest, resp)
	}
	switch req.Reset {
	case "":
	case "all":
		c.Reset()
	case "writes":
		c.ResetWrites()
	case "rules":
		c.ClearRules()
	default:
		fail(fmt.Errorf("reset must be all, writes or rules"))
		return
	}
	for _, id := range req.Release {
		if id == "*" {
			c.ReleaseAll()
		} else if !c.Release(id) {
			fail(fmt.Errorf("no chaos rule %q", id))
			return
		}
	}
	for _, ru := range req.Rules {
		id, err := c.AddRule(ru)
		if err != nil {
			fail(err)
			return
		}
		resp.Rules = append(resp.Rules, id)
	}
	for _, d := range req.Drift {
		id, err := c.Drift(d)
		if err != nil {
			fail(err)
			return
		}
		resp.Drift = append(resp.Drift, id)
	}
	for _, d := range req.Deploy {
		ids, err := c.Console.Deploy(d)
		if err != nil {
			fail(err)
			return
		}
		resp.Deployments = append(resp.Deployments, ids...)
	}
	for _, p := range req.Push {
		got, err := c.Push(p)
		if err != nil {
			fail(err)
			return
		}
		resp.Deployments = append(append(resp.Deployments, got.Vercel...), got.Netlify...)
	}
	writeJSON(w, http.StatusOK, resp)
}
