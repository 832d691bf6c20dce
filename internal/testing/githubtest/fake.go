package githubtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/routers"

	"github.com/sponson/apply/internal/testing/ghfixtures"
	"github.com/sponson/apply/pkg/clock"
)

// Reporter receives the calls GitHub would reject and the responses
// GitHub's description does not allow. testing.TB satisfies it.
type Reporter interface {
	Errorf(format string, args ...any)
}

// Options configure a Fake.
type Options struct {
	// Spec is GitHub's OpenAPI description (default: the fixtures'
	// openapi-subset.json, through internal/testing/ghfixtures).
	Spec *Spec
	// Report receives every violation of the description (default: they
	// are only kept, see Violations).
	Report Reporter
	// Clock stamps comments and expires tokens and JWTs (default the
	// system clock).
	Clock clock.Clock
	// GitRoot is the folder of the bare repositories (required).
	GitRoot string
	// BaseURL is the server's URL as clients reach it (set by Start and
	// Listen); used in URLs and Link headers the fake writes.
	BaseURL string
}

// Fake is the fake GitHub: an http.Handler serving REST under /api/v3 and
// git smart HTTP at /{owner}/{repo}.git. Safe for concurrent use.
type Fake struct {
	opts Options
	spec *Spec

	// The parts, one per area of GitHub (parts.go).
	Log     *Log
	Git     *Git
	Repos   *Repos
	Issues  *Issues
	Deploys *Deploys
	Apps    *Apps
	rest    *rest

	mu          sync.Mutex
	nextID      int64
	tokens      map[string]*Token
	repos       map[string]*repoState
	comments    map[int64]*Comment
	runs        map[string]*WorkflowRun // "owner/name#id"
	deployments map[string][]*Deployment
	apps        map[int64]*App
	insts       map[int64]*Installation
	usage       map[string]*usage // token → its primary rate-limit window
	checks      []*CheckRun
	statuses    []*CommitStatus
	hooks       map[string][]*Hook            // repository → its webhooks
	reactions   map[int64][]*Reaction         // comment id → its reactions
	collabs     map[string]map[string]string  // repository → login → role
	teams       map[string]map[string]*Member // "org/slug" → login → membership
	users       map[string]bool               // logins seeded as collaborators or team members
	faults      []*Fault
	log         []Request
	violations  []string
	jwtSeen     int
}

// usage is one token's primary rate-limit window.
type usage struct {
	used  int
	reset time.Time
}

type repoState struct {
	Repo
	id      int64
	pulls   map[int]*PullRequest
	issues  int               // last issue/PR number
	renamed map[string]string // old branch name → new
	labels  map[string]*Label // the repository's labels by lower-case name
	onIssue map[int][]string  // issue number → its label names
}

// New makes a fake. Options.GitRoot is required.
func New(opts Options) (*Fake, error) {
	if opts.GitRoot == "" {
		return nil, fmt.Errorf("githubtest: Options.GitRoot is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Spec == nil {
		p, err := ghfixtures.OpenAPIPath()
		if err != nil {
			return nil, err
		}
		if opts.Spec, err = LoadSpec(p); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(opts.GitRoot, 0o755); err != nil {
		return nil, err
	}
	f := &Fake{
		opts: opts, spec: opts.Spec, nextID: 1000,
		tokens: map[string]*Token{}, repos: map[string]*repoState{}, comments: map[int64]*Comment{},
		runs: map[string]*WorkflowRun{}, deployments: map[string][]*Deployment{},
		apps: map[int64]*App{}, insts: map[int64]*Installation{}, usage: map[string]*usage{},
		hooks: map[string][]*Hook{}, reactions: map[int64][]*Reaction{}, collabs: map[string]map[string]string{},
		teams: map[string]map[string]*Member{}, users: map[string]bool{},
	}
	makeParts(f)
	return f, nil
}

// TB is what Start needs of a test.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// Server is a Fake listening on 127.0.0.1.
type Server struct {
	*Fake
	// URL is GITHUB_SERVER_URL: git remotes are URL/owner/name.git.
	URL string
	// APIURL is GITHUB_API_URL: URL/api/v3.
	APIURL string
}

// Start serves a fake on 127.0.0.1 until the test ends. Every violation
// of GitHub's description fails the test (t.Errorf). clock may be nil.
func Start(t TB, clock clock.Clock) *Server {
	t.Helper()
	return Serve(t, Options{Clock: clock})
}

// Serve is Start with options: Report defaults to t, Spec to the
// fixtures' description, GitRoot to a temporary folder.
func Serve(t TB, opts Options) *Server {
	t.Helper()
	if opts.Spec == nil {
		spec, err := loadTestSpec(t)
		if err != nil {
			t.Fatalf("githubtest: %v", err)
		}
		opts.Spec = spec
	}
	if opts.Report == nil {
		opts.Report = t
	}
	if opts.GitRoot == "" {
		opts.GitRoot = filepath.Join(t.TempDir(), "git")
	}
	f, err := New(opts)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.opts.BaseURL = srv.URL
	return &Server{Fake: f, URL: srv.URL, APIURL: srv.URL + "/api/v3"}
}

func loadTestSpec(t TB) (*Spec, error) {
	if tb, ok := t.(interface{ Helper() }); ok {
		tb.Helper()
	}
	p, err := ghfixtures.OpenAPIPath()
	if err != nil {
		return nil, err
	}
	return LoadSpec(p)
}

// SetBaseURL tells the fake the URL clients reach it at (for a fake served
// by a program of its own).
func (f *Fake) SetBaseURL(u string) { f.opts.BaseURL = strings.TrimRight(u, "/") }

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/v3/") || r.URL.Path == "/api/v3":
		f.rest.serveREST(w, r)
	case strings.HasPrefix(r.URL.Path, "/_ghfake/"):
		f.rest.serveAdmin(w, r)
	case isGitPath(r.URL.Path):
		f.Git.serveGit(w, r)
	default:
		f.Log.violation("%s %s: not a GitHub URL (REST is under /api/v3, git at /{owner}/{repo}.git)", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "Not Found")
	}
}

// violation records (and reports) a call or answer GitHub's description
// does not allow.
func (lg *Log) violation(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	lg.f.mu.Lock()
	lg.f.violations = append(lg.f.violations, msg)
	lg.f.mu.Unlock()
	if lg.f.opts.Report != nil {
		lg.f.opts.Report.Errorf("githubtest: %s", msg)
	}
}

// Violations returns every violation so far.
func (lg *Log) Violations() []string {
	lg.f.mu.Lock()
	defer lg.f.mu.Unlock()
	return append([]string(nil), lg.f.violations...)
}

// Requests returns the request log.
func (lg *Log) Requests() []Request {
	lg.f.mu.Lock()
	defer lg.f.mu.Unlock()
	return append([]Request(nil), lg.f.log...)
}

// Count is the number of logged requests of operation op (an operationId
// such as "issues/create-comment", or "git-receive-pack").
func (lg *Log) Count(op string) int {
	lg.f.mu.Lock()
	defer lg.f.mu.Unlock()
	n := 0
	for _, r := range lg.f.log {
		if r.Op == op {
			n++
		}
	}
	return n
}

// ResetLog empties the request log.
func (lg *Log) ResetLog() {
	lg.f.mu.Lock()
	defer lg.f.mu.Unlock()
	lg.f.log = nil
}

func (lg *Log) record(r *http.Request, status int, op, login string) int {
	lg.f.mu.Lock()
	defer lg.f.mu.Unlock()
	lg.f.log = append(lg.f.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: status, Op: op, Login: login})
	return len(lg.f.log) - 1
}

// setStatus fills in the status of a logged request once it is known.
func (lg *Log) setStatus(i, status int) {
	lg.f.mu.Lock()
	defer lg.f.mu.Unlock()
	if i < len(lg.f.log) {
		lg.f.log[i].Status = status
	}
}

// Inject adds a fault.
func (lg *Log) Inject(fl Fault) {
	lg.f.mu.Lock()
	defer lg.f.mu.Unlock()
	c := fl
	lg.f.faults = append(lg.f.faults, &c)
}

func isGitFault(fl *Fault) bool {
	return strings.HasPrefix(fl.Path, "git-") || fl.Path == "info-refs"
}

// takeFault takes the next fault for a REST call (path after /api/v3) or,
// with git, a git request (path its kind: git-receive-pack, ...).
func (lg *Log) takeFault(method, path string, git bool) *Fault {
	lg.f.mu.Lock()
	defer lg.f.mu.Unlock()
	for i, fl := range lg.f.faults {
		if isGitFault(fl) != git || fl.Method != "" && fl.Method != method || fl.Path != "" && !strings.HasPrefix(path, fl.Path) {
			continue
		}
		c := *fl
		fl.Count--
		if fl.Count <= 0 {
			lg.f.faults = append(lg.f.faults[:i], lg.f.faults[i+1:]...)
		}
		return &c
	}
	return nil
}

func (o *Options) now() time.Time { return o.Clock.Now().UTC() }

func (f *Fake) id() int64 {
	f.nextID++
	return f.nextID
}

// response is what a handler answers, before it is validated.
type response struct {
	status int
	header http.Header
	body   []byte
}

// call is one REST request being served.
type call struct {
	f      *Fake
	r      *http.Request
	params map[string]string
	body   []byte
	token  *Token // nil for an app (JWT) call
	app    *App
	resp   response
	lost   *Fault // answer this instead, once the call took effect
}

func (c *call) json(status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c.resp.status = status
	c.resp.header.Set("Content-Type", "application/json; charset=utf-8")
	c.resp.body = b
}

func (c *call) error(status int, msg string) {
	c.json(status, map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": strconv.Itoa(status)})
}

func (c *call) noContent() { c.resp.status = http.StatusNoContent }

// found is every handler's "lock, find what the path names, 404 when it
// is not there": it runs find under the fake's lock and, when find found
// something, use on it still under the lock (to change it and take the
// snapshot the answer is built from); otherwise it answers 404 "Not
// Found". It reports whether find found something.
func found[T any](c *call, find func() *T, use func(*T)) bool {
	c.f.mu.Lock()
	v := find()
	if v != nil && use != nil {
		use(v)
	}
	c.f.mu.Unlock()
	if v == nil {
		c.error(http.StatusNotFound, "Not Found")
	}
	return v != nil
}

func (c *call) query(name string) string { return c.r.URL.Query().Get(name) }

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": strconv.Itoa(status)})
	w.Write(b) //nolint:errcheck
}

func (rs *rest) serveREST(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v3")
	rt, params, h := rs.match(r.Method, path)
	if rt == nil {
		rs.f.Log.violation("%s %s: no such operation in GitHub's description subset", r.Method, path)
		writeError(w, http.StatusNotFound, "Not Found")
		rs.f.Log.record(r, http.StatusNotFound, "", "")
		return
	}
	op := rt.Operation.OperationID
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "Problems reading the body")
		return
	}
	c := &call{f: rs.f, r: r, params: params, body: body, resp: response{header: http.Header{}}}
	login := ""
	switch {
	case r.Header.Get("User-Agent") == "":
		// "Requests with no User-Agent header will be rejected."
		rs.f.Log.violation("%s %s: no User-Agent header: GitHub refuses such requests", r.Method, path)
		c.error(http.StatusForbidden, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header.")
	case !knownAPIVersion(r.Header.Get("X-GitHub-Api-Version")):
		rs.f.Log.violation("%s %s: X-GitHub-Api-Version %q is not a version GitHub supports", r.Method, path, r.Header.Get("X-GitHub-Api-Version"))
		c.error(http.StatusBadRequest, "API version "+r.Header.Get("X-GitHub-Api-Version")+" is not supported.")
	case !rs.authenticate(c, h):
	case rs.f.Log.faultAnswer(c, path):
	case rs.f.Log.primaryLimit(c):
	default:
		if c.token != nil {
			login = c.token.Identity.Login
		} else if c.app != nil {
			login = c.app.Slug
		}
		if err := rs.f.spec.validateRequest(r, rt, params, body); err != nil {
			rs.f.Log.violation("%s %s (%s): GitHub would reject this request: %s", r.Method, path, op, trimErr(err))
			c.error(http.StatusUnprocessableEntity, "Validation Failed: "+trimErr(err))
			break
		}
		if h.perm != "" && c.token != nil && !rs.f.Apps.permits(c.token, h.perm) {
			c.resp.header.Set("X-Accepted-GitHub-Permissions", h.accepted())
			c.error(http.StatusForbidden, "Resource not accessible by integration")
			break
		}
		h.fn(c)
		if c.lost != nil {
			c.resp = response{header: http.Header{}}
			c.faultError(c.lost)
		}
	}
	if c.resp.status == 0 {
		c.error(http.StatusInternalServerError, "githubtest: handler "+op+" answered nothing")
	}
	rs.f.Log.rateHeaders(c)
	if err := rs.f.spec.validateResponse(r, rt, params, c.resp.status, c.resp.header, c.resp.body); err != nil {
		rs.f.Log.violation("%s %s (%s): the fake's answer %d breaks GitHub's description: %s", r.Method, path, op, c.resp.status, trimErr(err))
	}
	// Logged before the answer leaves, so a client that has its answer
	// finds its call in the log.
	rs.f.Log.record(r, c.resp.status, op, login)
	maps.Copy(w.Header(), c.resp.header)
	w.WriteHeader(c.resp.status)
	if len(c.resp.body) > 0 {
		w.Write(c.resp.body) //nolint:errcheck
	}
}

// knownAPIVersion: the REST API versions GitHub accepts in
// X-GitHub-Api-Version ("" is the default, 2022-11-28).
func knownAPIVersion(v string) bool {
	return v == "" || v == "2022-11-28" || v == "2026-03-10"
}

// primaryLimit counts the call against its token's RateLimit and answers
// 403 once the hour's calls are spent.
func (lg *Log) primaryLimit(c *call) bool {
	if c.token == nil || c.token.RateLimit == 0 {
		return false
	}
	lg.f.mu.Lock()
	u := lg.f.usage[c.token.Value]
	now := lg.f.opts.now()
	if u == nil || !now.Before(u.reset) {
		u = &usage{reset: now.Add(time.Hour)}
		lg.f.usage[c.token.Value] = u
	}
	limit := c.token.RateLimit
	over := u.used >= limit
	if !over {
		u.used++
	}
	used, reset := u.used, u.reset
	lg.f.mu.Unlock()
	h := c.resp.header
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(limit-used))
	h.Set("X-RateLimit-Used", strconv.Itoa(used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	if over {
		c.error(http.StatusForbidden, "API rate limit exceeded for installation ID "+strconv.FormatInt(c.token.Installation, 10)+".")
	}
	return over
}

// rateHeaders adds GitHub's primary rate-limit headers to every answer
// that has none.
func (lg *Log) rateHeaders(c *call) {
	h := c.resp.header
	if h.Get("X-RateLimit-Limit") == "" {
		h.Set("X-RateLimit-Limit", "5000")
		h.Set("X-RateLimit-Remaining", "4999")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(lg.f.opts.now().Add(time.Hour).Unix(), 10))
		h.Set("X-RateLimit-Used", "1")
		h.Set("X-RateLimit-Resource", "core")
	}
}

func (lg *Log) faultAnswer(c *call, path string) bool {
	fl := lg.takeFault(c.r.Method, path, false)
	if fl == nil {
		return false
	}
	if fl.Lost {
		c.lost = fl // answered after the handler has run
		return false
	}
	c.faultError(fl)
	return true
}

func (c *call) faultError(fl *Fault) {
	msg := fl.Message
	if msg == "" {
		msg = http.StatusText(fl.Status)
	}
	if fl.RetryAfter > 0 {
		c.resp.header.Set("Retry-After", strconv.Itoa(int(fl.RetryAfter/time.Second)))
	}
	if !fl.Reset.IsZero() {
		c.resp.header.Set("X-RateLimit-Limit", "5000")
		c.resp.header.Set("X-RateLimit-Remaining", "0")
		c.resp.header.Set("X-RateLimit-Used", "5000")
		c.resp.header.Set("X-RateLimit-Reset", strconv.FormatInt(fl.Reset.Unix(), 10))
		c.resp.header.Set("X-RateLimit-Resource", "core")
	}
	c.error(fl.Status, msg)
}

// handler serves one operation.
type handler struct {
	method, tmpl string
	auth         authKind
	perm         string // "contents:read", "issues|pull_requests:write"
	fn           func(*call)
	segs         []string
	multi        map[string]bool
}

type authKind int

const (
	authToken authKind = iota // a user, workflow or installation token
	authJWT                   // the App's JWT
)

func (h *handler) accepted() string {
	names, level, _ := strings.Cut(h.perm, ":")
	var sets []string
	for _, n := range strings.Split(names, "|") {
		sets = append(sets, n+"="+level)
	}
	return strings.Join(sets, "; ")
}

// match finds the handler for method and path (after /api/v3).
func (rs *rest) match(method, path string) (*routers.Route, map[string]string, *handler) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, h := range rs.handlers() {
		if h.method != method {
			continue
		}
		if params, ok := h.matchSegs(segs); ok {
			rt := rs.f.spec.route(method, h.tmpl)
			if rt == nil {
				panic("githubtest: handler " + method + " " + h.tmpl + " is not in the description")
			}
			return rt, params, h
		}
	}
	return nil, nil, nil
}

func (h *handler) matchSegs(segs []string) (map[string]string, bool) {
	params := map[string]string{}
	i := 0
	for j, t := range h.segs {
		if i >= len(segs) {
			return nil, false
		}
		if strings.HasPrefix(t, "{") {
			name := strings.Trim(t, "{}")
			if h.multi[name] {
				rest := len(h.segs) - j - 1
				end := len(segs) - rest
				if end <= i {
					return nil, false
				}
				params[name] = strings.Join(segs[i:end], "/")
				i = end
				continue
			}
			if segs[i] == "" {
				return nil, false
			}
			params[name] = segs[i]
			i++
			continue
		}
		if segs[i] != t {
			return nil, false
		}
		i++
	}
	return params, i == len(segs)
}

// handlers is the routing table over f's description (built once per
// Spec: the path parameters that may span segments come from it).
func (rs *rest) handlers() []*handler {
	sp := rs.f.spec
	sp.handlersOnce.Do(func() {
		sp.handlerList = routes()
		for _, h := range sp.handlerList {
			h.segs = strings.Split(strings.Trim(h.tmpl, "/"), "/")
			h.multi = map[string]bool{}
			if rt := sp.route(h.method, h.tmpl); rt != nil {
				for _, p := range rt.Operation.Parameters {
					if p.Value != nil && p.Value.In == "path" && p.Value.Extensions["x-multi-segment"] == true {
						h.multi[p.Value.Name] = true
					}
				}
			}
		}
	})
	return sp.handlerList
}

// authenticate checks the request's credentials for h; on failure it
// answers 401 (or 404 for a repository the token cannot see) and
// returns false.
func (rs *rest) authenticate(c *call, h *handler) bool {
	auth := c.r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(auth, " ")
	if h.auth == authJWT {
		if !strings.EqualFold(scheme, "bearer") {
			c.error(http.StatusUnauthorized, "A JSON web token could not be decoded")
			return false
		}
		app, err := rs.f.Apps.checkJWT(cred)
		if err != nil {
			c.error(http.StatusUnauthorized, err.Error())
			return false
		}
		c.app = app
		return true
	}
	if !strings.EqualFold(scheme, "token") && !strings.EqualFold(scheme, "bearer") {
		c.error(http.StatusUnauthorized, "Requires authentication")
		return false
	}
	tok, msg := rs.f.Apps.lookupToken(cred)
	if tok == nil {
		c.error(http.StatusUnauthorized, msg)
		return false
	}
	c.token = tok
	if owner, repo := c.params["owner"], c.params["repo"]; owner != "" && repo != "" {
		if !rs.f.Apps.canSee(tok, owner+"/"+repo) {
			c.error(http.StatusNotFound, "Not Found")
			return false
		}
	}
	return true
}

// lookupToken returns a copy of the token, or why it is refused.
func (ap *Apps) lookupToken(value string) (*Token, string) {
	ap.f.mu.Lock()
	defer ap.f.mu.Unlock()
	t := ap.f.tokens[value]
	if t == nil {
		return nil, "Bad credentials"
	}
	if !t.ExpiresAt.IsZero() && !ap.f.opts.now().Before(t.ExpiresAt) {
		return nil, "Bad credentials"
	}
	c := *t
	return &c, ""
}

func (ap *Apps) canSee(t *Token, full string) bool {
	ap.f.mu.Lock()
	_, exists := ap.f.repos[strings.ToLower(full)]
	ap.f.mu.Unlock()
	if !exists {
		return false
	}
	if t.Repos == nil {
		return true
	}
	for _, r := range t.Repos {
		if strings.EqualFold(r, full) {
			return true
		}
	}
	return false
}

// permits reports whether t holds perm ("a|b:level": any one of the
// names at level or above).
func (ap *Apps) permits(t *Token, perm string) bool {
	if t.Permissions == nil {
		return true
	}
	names, level, _ := strings.Cut(perm, ":")
	for _, n := range strings.Split(names, "|") {
		have := t.Permissions[n]
		if have == "write" || have == "admin" || (level == "read" && have == "read") {
			return true
		}
	}
	return false
}

// Dump returns the fake's state as JSON-ready data, for scripts.
func (rs *rest) dumpJSON() []byte {
	st := rs.f.State()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.Encode(st) //nolint:errcheck
	return buf.Bytes()
}
