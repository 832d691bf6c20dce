package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/clock"
)

// Provider names: the path prefix each provider is served under and the
// Provider field of write-log entries and chaos rules.
const (
	ProviderVercel       = "vercel"
	ProviderNeon         = "neon"
	ProviderSupabase     = "supabase"
	ProviderAuth0        = "auth0"
	ProviderHTTP         = "http"
	ProviderClerk        = "clerk"
	ProviderCloudflare   = "cloudflare"
	ProviderNetlify      = "netlify"
	ProviderLaunchDarkly = "launchdarkly"
	ProviderPlanetScale  = "planetscale"
)

// Providers lists every provider the cloud serves, in a fixed order.
var Providers = func() []string {
	var names []string
	for _, mk := range providers {
		names = append(names, mk(&core{}).api().name)
	}
	return names
}()

// The environment variables of the generic http API. The sim chooses them:
// a plan's providers.http block names them (base_url_env, auth.bearer_env).
const (
	HTTPURLVar   = "SIM_HTTP_URL"
	HTTPTokenVar = "SIM_HTTP_TOKEN"
)

// Origin says who made a record: tests tell what Sponson created ("api")
// from what was there before ("seed") and what a person changed behind its
// back ("console", made by a drift edit).
type Origin string

// The origins of records.
const (
	OriginSeed    Origin = "seed"
	OriginAPI     Origin = "api"
	OriginConsole Origin = "console"
)

// Tokens are the bearer tokens the sim accepts, one per provider.
type Tokens struct {
	Vercel        string `json:"vercel"`
	Neon          string `json:"neon"`
	Supabase      string `json:"supabase"`
	Auth0         string `json:"auth0"`
	HTTP          string `json:"http"`
	Clerk         string `json:"clerk"`
	Cloudflare    string `json:"cloudflare"`
	Netlify       string `json:"netlify"`
	LaunchDarkly  string `json:"launchdarkly"`
	PlanetScaleID string `json:"planetscaleid"`
	PlanetScale   string `json:"planetscale"`
}

// DefaultTokens are the placeholder tokens printed by Env.
func DefaultTokens() Tokens {
	return Tokens{
		Vercel:        "sim-vercel-token",
		Neon:          "sim-neon-api-key",
		Supabase:      "sbp_sim_supabase_access_token",
		Auth0:         "sim-auth0-management-token",
		HTTP:          "sim-http-token",
		Clerk:         "sk_test_simclerksecretkey",
		Cloudflare:    "sim-cloudflare-api-token",
		Netlify:       "nfp_simnetlifyaccesstoken",
		LaunchDarkly:  "api-sim-launchdarkly-token",
		PlanetScaleID: "sim-planetscale-token-id",
		PlanetScale:   "pscale_tkn_simplanetscaletoken",
	}
}

// Options configure a Cloud. The zero value is usable.
type Options struct {
	// Tokens accepted per provider; empty fields take DefaultTokens.
	Tokens Tokens
	// Clock tells the time for timestamps and duration-based lifecycles
	// (slow deployments, Neon operations) and waits out chaos latency.
	// Default clock.System.
	Clock clock.Clock
	// Now, when Clock is nil, tells the time instead of the system clock
	// (latency is then waited out on the system clock).
	Now func() time.Time
	// Seed seeds the generator of ids, passwords and latency jitter, so a
	// run is reproducible. Zero is a valid seed.
	Seed uint64
	// Neon operations (branch creation is asynchronous) finish after
	// NeonOpsAfterRequests further requests to the same Neon project, or
	// after NeonOpsAfter has passed on the clock, whichever comes first.
	// Both zero means after 2 requests. NeonOpsImmediate finishes them at
	// once (no 423 ever).
	NeonOpsAfterRequests int
	NeonOpsAfter         time.Duration
	NeonOpsImmediate     bool
	// NeonLockProject makes a running operation lock every branch write of
	// the whole project (a 423 for a create next to a running create), as
	// Neon's "overlapping operations per project" limit can. By default only
	// writes that touch the busy branch (delete it, branch from it) get 423.
	NeonLockProject bool
	// MaxBodyBytes bounds request bodies; default 1 MiB.
	MaxBodyBytes int64
	// OnViolation, when set, is told of every request a provider's
	// description does not allow and every answer that breaks one (see
	// describe.go), as it happens; Violations keeps them all the same.
	OnViolation func(Violation)
}

// WriteEntry is one write request (POST, PUT, PATCH, DELETE) that reached a
// provider route, whatever its outcome. Reads are not logged; drift edits
// and seeds are not requests and are not logged either.
type WriteEntry struct {
	Seq        int    `json:"seq"`      // 1-based, in completion order
	Provider   string `json:"provider"` // "vercel", "neon", ...
	Method     string `json:"method"`
	Path       string `json:"path"` // beneath the provider prefix, without the query: "/v10/projects/web/env"
	Query      string `json:"query,omitempty"`
	BodySHA256 string `json:"body_sha256"` // hex SHA-256 of the raw request body
	// Status is the status the sim answered (or would have answered, when
	// the response was lost); 0 when no response was produced (the client
	// gave up first, or the request hung).
	Status int `json:"status"`
	// Failed: the write did not take effect (status >= 400, or never
	// processed). A write whose response was lost is not Failed: it happened.
	Failed bool `json:"failed"`
	// Lost: the write was applied, then the connection was dropped before
	// any response byte (chaos kind "drop").
	Lost bool `json:"lost,omitempty"`
}

// Cloud is the fake cloud: the providers (each with its records, see
// provider), the chaos rules and the write log, behind one mutex. All
// methods are safe for concurrent use.
type Cloud struct {
	*core
	maxBody int64

	writes     []WriteEntry
	violations []Violation
	chaos      *chaos

	// Console seeds and moves the world as a person in a console would.
	Console Console

	plugins   []provider      // in the order of providers
	providers map[string]*api // every provider's api by name
	order     []string        // the names, in the order Env lists them
	root      http.Handler
}

// New makes an empty cloud: no projects, no rules, an empty write log.
func New(opts Options) *Cloud {
	c := &Cloud{core: &core{opts: opts}}
	def := DefaultTokens()
	c.tokens = opts.Tokens
	for _, f := range []struct {
		dst *string
		def string
	}{
		{&c.tokens.Vercel, def.Vercel}, {&c.tokens.Neon, def.Neon}, {&c.tokens.Supabase, def.Supabase},
		{&c.tokens.Auth0, def.Auth0}, {&c.tokens.HTTP, def.HTTP}, {&c.tokens.Clerk, def.Clerk}, {&c.tokens.Cloudflare, def.Cloudflare}, {&c.tokens.Netlify, def.Netlify}, {&c.tokens.LaunchDarkly, def.LaunchDarkly}, {&c.tokens.PlanetScaleID, def.PlanetScaleID}, {&c.tokens.PlanetScale, def.PlanetScale},
	} {
		if *f.dst == "" {
			*f.dst = f.def
		}
	}
	c.clock = clock.Or(opts.Clock)
	if opts.Clock == nil && opts.Now != nil {
		c.clock = nowClock{now: opts.Now}
	}
	c.now = c.clock.Now
	c.chaos = &chaos{core: c.core, heldCh: make(chan struct{})}
	c.Console = Console{c: c}
	c.maxBody = opts.MaxBodyBytes
	if c.maxBody <= 0 {
		c.maxBody = 1 << 20
	}
	c.rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	c.providers = map[string]*api{}
	for _, mk := range providers {
		p := mk(c.core)
		c.plugins = append(c.plugins, p)
		c.providers[p.api().name] = p.api()
		c.order = append(c.order, p.api().name)
	}
	c.resetState()
	root := http.NewServeMux()
	root.HandleFunc("GET /_state", c.handleState)
	root.HandleFunc("GET /_chaos", chaosEndpoint{c}.get)
	root.HandleFunc("POST /_chaos", chaosEndpoint{c}.post)
	for name, p := range c.providers {
		root.Handle("/"+name+"/", c.providerHandler(p))
	}
	c.root = root
	return c
}

// Handler serves every provider under its prefix (/vercel, /neon, /supabase,
// /auth0, /http) and the control endpoints POST /_chaos, GET /_chaos and
// GET /_state. Use it with httptest.NewServer, then Env(server.URL).
func (c *Cloud) Handler() http.Handler { return c.root }

// Env returns the NAME=value lines a shell (or a test's environment) needs
// to point the adapters at this cloud served at baseURL.
func (c *Cloud) Env(baseURL string) []string {
	b := strings.TrimRight(baseURL, "/")
	var out []string
	for _, name := range c.order {
		out = append(out, c.providers[name].env(b+"/"+name)...)
	}
	return out
}

// Tokens returns the tokens the cloud accepts.
func (c *Cloud) Tokens() Tokens { return c.tokens }

// Reset empties the cloud: state, rules (releasing every held or hanging
// request) and the write log.
func (c *Cloud) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chaos.releaseAllLocked()
	c.chaos.rules = nil
	c.writes = nil
	c.resetState()
}

func (c *Cloud) resetState() {
	for _, p := range c.plugins {
		p.reset()
	}
}

// Writes returns a copy of the write log.
func (c *Cloud) Writes() []WriteEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]WriteEntry(nil), c.writes...)
}

// ResetWrites empties the write log; sequence numbers start again at 1.
func (c *Cloud) ResetWrites() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = nil
}

func (c *Cloud) logWrite(e WriteEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.Seq = len(c.writes) + 1
	c.writes = append(c.writes, e)
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

type ctxKey int

const pageSizeKey ctxKey = 1

// pageSizeOf returns the page size a chaos rule imposes on this request, or 0.
func pageSizeOf(r *http.Request) int {
	n, _ := r.Context().Value(pageSizeKey).(int)
	return n
}

// providerHandler runs chaos, authentication and the provider's routes, and
// logs writes. Handlers write into a buffer, so a response can be withheld
// (drop) after the write has been applied.
func (c *Cloud) providerHandler(p *api) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub := strings.TrimPrefix(r.URL.Path, "/"+p.name)
		body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, c.maxBody))
		sum := sha256.Sum256(body)
		entry := WriteEntry{Provider: p.name, Method: r.Method, Path: sub, Query: r.URL.RawQuery, BodySHA256: hex.EncodeToString(sum[:])}
		log := func(status int, failed, lost bool) {
			if isWrite(r.Method) {
				e := entry
				e.Status, e.Failed, e.Lost = status, failed, lost
				c.logWrite(e)
			}
		}
		if readErr != nil {
			p.fail(w, http.StatusRequestEntityTooLarge, "bad_request", "request body unreadable or too large")
			log(http.StatusRequestEntityTooLarge, true, false)
			return
		}

		pl := c.chaos.plan(p.name, r.Method, sub)
		if pl.latency > 0 && c.clock.Sleep(r.Context(), pl.latency) != nil {
			log(0, true, false)
			return
		}
		if a := pl.action; a != nil {
			switch a.Kind {
			case KindFail:
				p.fail(w, a.Status, "sim_injected_failure", "injected failure")
				log(a.Status, true, false)
				return
			case KindRateLimit:
				p.rateLimit(w, a.RetryAfter.D(), c.now())
				log(http.StatusTooManyRequests, true, false)
				return
			case KindHang:
				c.chaos.await(r.Context(), a)
				log(0, true, false)
				abort(w)
				return
			case KindHold:
				if !c.chaos.await(r.Context(), a) {
					log(0, true, false)
					return
				}
			}
		}

		auth := r.Header.Get("Authorization")
		authorized := auth == "Bearer "+p.token()
		if p.authorized != nil {
			authorized = p.authorized(auth)
		}
		if p.authorizedRequest != nil {
			authorized = p.authorizedRequest(r)
		}
		if !authorized {
			rec := newRecorder()
			p.deny(rec, auth == "")
			log(rec.status, true, false)
			rec.flush(w)
			return
		}

		ctx := r.Context()
		if pl.pageSize > 0 {
			ctx = context.WithValue(ctx, pageSizeKey, pl.pageSize)
		}
		ck, viol := c.checkRequest(p.name, r, sub, body)
		if viol != nil {
			c.recordViolation(*viol)
			rec := newRecorder()
			status := http.StatusBadRequest
			if viol.Kind == "route" {
				status = http.StatusNotFound
			}
			p.fail(rec, status, "bad_request", viol.String())
			log(rec.status, true, false)
			rec.flush(w)
			return
		}
		r2 := r.Clone(ctx)
		r2.URL.Path, r2.URL.RawPath = sub, ""
		r2.Body = io.NopCloser(bytes.NewReader(body))
		r2.ContentLength = int64(len(body))
		rec := newRecorder()
		p.mux.ServeHTTP(rec, r2)
		if ck != nil && (!p.described.requestsOnly || (p.described.answersChecked != nil && p.described.answersChecked(sub))) {
			if v := ck.checkResponse(p.name, rec.status, rec.header, rec.body.Bytes()); v != nil {
				c.recordViolation(*v)
			}
		}
		lost := pl.action != nil && pl.action.Kind == KindDrop
		log(rec.status, rec.status >= 400, lost)
		if lost {
			abort(w)
			return
		}
		rec.flush(w)
	})
}

// abort drops the connection without a response byte: the client sees a
// transport error, never a status.
func abort(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// recorder buffers a response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}, status: http.StatusOK} }

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }

func (r *recorder) flush(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}

// writeJSON answers v as JSON with the status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// decodeObject decodes a JSON object body into a map of raw values; ok is
// false when the body is not one JSON object.
func decodeObject(body []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

// Console is what a person does in the providers' consoles, beside what
// Sponson does through their APIs: seed projects and records, deploy,
// move a deployment's state, shape the generic API. Tests arrange a world
// with it; `sponson sim` and the demo seed theirs.
type Console struct{ c *Cloud }
