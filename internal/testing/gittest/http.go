package gittest

import (
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// Server serves one bare repository over HTTP on 127.0.0.1: the same
// smart-HTTP protocol a hosting service speaks, with git's own upload-pack
// answering every fetch and git's own receive-pack deciding every push.
// By default the services run straight from an in-process handler
// (smartHTTP); WithHTTPBackend puts `git http-backend` (net/http/cgi) in
// between, as a web server hosting git does.
type Server struct {
	// URL is the repository's URL, http://127.0.0.1:<port>/<repo>.
	URL string

	requests atomic.Int64
	sent     atomic.Int64 // response body bytes written to clients
	mu       sync.Mutex
	log      []string
	lose     int // pushes whose answer is lost
	fail     int // requests refused with failCode
	failCode int
	cfg      serverConfig
}

type serverConfig struct {
	user, password string
	readOnly       bool
	protocolV0     bool
	httpBackend    bool
}

// Option configures a Server.
type Option func(*serverConfig)

// WithBasicAuth makes the server require HTTP basic auth with this user
// and password: 401 without credentials or with wrong ones.
func WithBasicAuth(user, password string) Option {
	return func(c *serverConfig) { c.user, c.password = user, password }
}

// WithReadOnly makes the server answer 403 to every push (receive-pack),
// as a hosting service does for a token that may read but not write.
func WithReadOnly() Option {
	return func(c *serverConfig) { c.readOnly = true }
}

// WithProtocolV0 makes the server speak protocol v0 only, as a server
// that predates v2 does: the client's Git-Protocol header (which
// `git http-backend` otherwise passes to upload-pack as GIT_PROTOCOL) is
// dropped.
func WithProtocolV0() Option {
	return func(c *serverConfig) { c.protocolV0 = true }
}

// WithHTTPBackend serves through `git http-backend` run as a CGI program
// for each request, instead of running upload-pack and receive-pack
// straight from the test binary: for the tests that vouch for the store
// against git's own HTTP server. It costs a process per request.
func WithHTTPBackend() Option {
	return func(c *serverConfig) { c.httpBackend = true }
}

// Serve serves the bare repository dir (made by NewBareRepo) over HTTP
// until the test ends.
func Serve(t TB, dir string, opts ...Option) *Server {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatalf("serve %s: %v", dir, err)
	}
	s := &Server{}
	for _, o := range opts {
		o(&s.cfg)
	}
	backend := SmartHTTP(abs, filepath.Base(abs))
	if s.cfg.httpBackend {
		execPath, err := ExecPath()
		if err != nil {
			t.Fatalf("serve %s: %v", dir, err)
		}
		backend = &cgi.Handler{
			Path: filepath.Join(execPath, "git-http-backend"),
			Root: "/",
			Env: append(Env(homeDir()),
				"GIT_PROJECT_ROOT="+filepath.Dir(abs),
				"GIT_HTTP_EXPORT_ALL=1",
			),
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("serve %s: %v", dir, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		w := &countingWriter{ResponseWriter: rw, n: &s.sent}
		s.mu.Lock()
		s.log = append(s.log, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		s.mu.Unlock()
		if s.cfg.user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != s.cfg.user || p != s.cfg.password {
				w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if s.cfg.readOnly && (strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack") {
			http.Error(w, "Permission to repository denied: this token may read but not write.", http.StatusForbidden)
			return
		}
		if s.cfg.protocolV0 {
			r.Header.Del("Git-Protocol")
		}
		s.mu.Lock()
		fail, code := s.fail > 0, s.failCode
		if fail {
			s.fail--
		}
		lose := s.lose > 0 && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
		if lose {
			s.lose--
		}
		s.mu.Unlock()
		switch {
		case fail:
			http.Error(w, "injected failure", code)
		case lose:
			// The push takes effect; the client never hears so.
			rec := httptest.NewRecorder()
			backend.ServeHTTP(rec, r)
			http.Error(w, "injected: the answer was lost", http.StatusBadGateway)
		default:
			backend.ServeHTTP(w, r)
		}
	})}
	go srv.Serve(ln) //nolint:errcheck // returns when closed
	t.Cleanup(func() { srv.Close() })
	s.URL = "http://" + ln.Addr().String() + "/" + filepath.Base(abs)
	return s
}

// ServeHTTP serves the bare repository dir over HTTP and returns its URL.
func ServeHTTP(t TB, dir string, opts ...Option) string {
	t.Helper()
	return Serve(t, dir, opts...).URL
}

// Requests is the number of HTTP requests the server has received: the
// ground truth for a client's round-trip count.
func (s *Server) Requests() int64 { return s.requests.Load() }

// BytesSent is the number of response body bytes the server has sent
// (ref advertisements, packfiles, push reports), before any transport
// compression: what a client downloads from git.
func (s *Server) BytesSent() int64 { return s.sent.Load() }

// countingWriter adds the body bytes written through it to n.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	k, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(k))
	return k, err
}

// Flush passes a flush on (the CGI handler streams packfiles).
func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// LoseNextAnswers makes the next n pushes (receive-pack requests) take
// effect on the server while the client receives 502 Bad Gateway instead of
// the server's answer: a write that landed but whose answer was lost.
func (s *Server) LoseNextAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose = n
}

// FailNext makes the next n requests fail with HTTP status code, without
// reaching git.
func (s *Server) FailNext(n, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.failCode = n, code
}

// Log returns "METHOD path?query" of every request so far.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}
