package gittest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
)

// smartHTTP serves git's smart HTTP protocol for one bare repository as
// `git http-backend` does, without the CGI program: it runs git's own
// upload-pack and receive-pack with --stateless-rpc, so every fetch is
// answered and every push decided (old-value check, fsck, hooks, filters,
// shallow fetches) by the same git code, and saves the http-backend
// process each request would start. `git http-backend` stays one
// Option away (WithHTTPBackend) for the tests about it.
//
// What it answers, as http-backend does:
//
//	GET  /<repo>/info/refs?service=git-upload-pack|git-receive-pack
//	POST /<repo>/git-upload-pack, /<repo>/git-receive-pack
//
// with the "# service=..." preamble left out when the client asks for
// protocol version 2 (the Git-Protocol header becomes GIT_PROTOCOL), a
// gzip request body unpacked, a wrong content type refused with 415, and
// the dumb protocol not served (403).
type smartHTTP struct {
	dir  string // the bare repository, absolute
	name string // its base name: the URL path's first element
	env  []string
}

// SmartHTTP is the handler Serve uses: it serves the bare repository dir
// at /<prefix>/info/refs, /<prefix>/git-upload-pack and
// /<prefix>/git-receive-pack (prefix may hold slashes: "owner/repo.git"),
// running git's own services with Env's clean environment plus extraEnv
// (REMOTE_USER=..., as http-backend passes it on to hooks). For fakes of
// hosting services that put their own routing and auth in front.
func SmartHTTP(dir, prefix string, extraEnv ...string) http.Handler {
	return &smartHTTP{dir: dir, name: prefix, env: append(Env(homeDir()), extraEnv...)}
}

// services are the two services served: upload-pack (fetch) and
// receive-pack (push; the repository's http.receivepack is true, as
// NewBareRepo sets it).
var services = map[string]bool{"upload-pack": true, "receive-pack": true}

func (h *smartHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+h.name+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch {
	case rest == "info/refs" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		svc, ok := strings.CutPrefix(r.URL.Query().Get("service"), "git-")
		if !ok || !services[svc] {
			http.Error(w, "the dumb protocol is not served", http.StatusForbidden)
			return
		}
		h.advertise(w, r, svc)
	case r.Method == http.MethodPost && strings.HasPrefix(rest, "git-") && services[strings.TrimPrefix(rest, "git-")]:
		h.rpc(w, r, strings.TrimPrefix(rest, "git-"))
	default:
		http.NotFound(w, r)
	}
}

// advertise answers info/refs: the service's ref advertisement.
func (h *smartHTTP) advertise(w http.ResponseWriter, r *http.Request, svc string) {
	noCache(w)
	w.Header().Set("Content-Type", "application/x-git-"+svc+"-advertisement")
	if !protocolV2(r) {
		line := "# service=git-" + svc + "\n"
		fmt.Fprintf(w, "%04x%s0000", len(line)+4, line)
	}
	h.run(w, r, svc, nil, "--stateless-rpc", "--advertise-refs")
}

// rpc answers one stateless request of the service.
func (h *smartHTTP) rpc(w http.ResponseWriter, r *http.Request, svc string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-git-"+svc+"-request" {
		http.Error(w, "unsupported content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = r.Body
	switch r.Header.Get("Content-Encoding") {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, "bad gzip body: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	noCache(w)
	w.Header().Set("Content-Type", "application/x-git-"+svc+"-result")
	h.run(w, r, svc, body, "--stateless-rpc")
}

// run runs `git <svc> <args> <dir>` with stdin and streams its output to
// w. Its errors go to the test binary's standard error, as http-backend's
// do; a failed service ends the answer early, which the client sees.
func (h *smartHTTP) run(w http.ResponseWriter, r *http.Request, svc string, stdin io.Reader, args ...string) {
	cmd := exec.CommandContext(r.Context(), "git", append(append([]string{svc}, args...), h.dir)...)
	cmd.Env = h.env
	if p := r.Header.Get("Git-Protocol"); p != "" {
		cmd.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], "GIT_PROTOCOL="+p)
	}
	cmd.Stdin = stdin
	cmd.Stdout = flushWriter{w}
	cmd.Stderr = os.Stderr
	_ = cmd.Run() // the client sees a cut answer
}

// protocolV2 reports whether the request asks for protocol version 2.
func protocolV2(r *http.Request) bool {
	for _, kv := range strings.Split(r.Header.Get("Git-Protocol"), ":") {
		if kv == "version=2" {
			return true
		}
	}
	return false
}

// noCache sets the headers http-backend sends so that no proxy keeps an
// answer.
func noCache(w http.ResponseWriter) {
	w.Header().Set("Expires", "Fri, 01 Jan 1980 00:00:00 GMT")
	w.Header().Set("Pragma", "no-cache")
	w.Header().Set("Cache-Control", "no-cache, max-age=0, must-revalidate")
}

// flushWriter flushes after each write, so a packfile streams as
// http-backend streams it.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}
