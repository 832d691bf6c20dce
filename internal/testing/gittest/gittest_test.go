package gittest

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// commit makes a commit with one file in the bare repository dir (no
// worktree: plumbing only) and returns its id.
func commit(t TB, dir, content string) string {
	t.Helper()
	blob := strings.TrimSpace(RunInput(t, dir, []byte(content), "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(RunInput(t, dir, []byte("100644 blob "+blob+"\tf\n"), "mktree"))
	return strings.TrimSpace(Run(t, dir, "commit-tree", tree, "-m", content))
}

func TestFileRemote(t *testing.T) {
	dir, u := NewBareRepo(t)
	if !strings.HasPrefix(u, "file:///") {
		t.Fatalf("file URL = %q", u)
	}
	local, _ := NewBareRepo(t)
	c := commit(t, local, "one")
	Run(t, local, "push", "-q", u, c+":refs/heads/a")
	if got := Refs(t, dir, "refs/heads/"); got["refs/heads/a"] != c {
		t.Fatalf("refs after push = %v", got)
	}
	Fsck(t, dir)
}

// frontEnds are Serve's two ways to HTTP: the in-process smart-HTTP
// handler and `git http-backend`. Every HTTP behaviour is checked on both.
var frontEnds = map[string][]Option{"smart": nil, "http-backend": {WithHTTPBackend()}}

func TestHTTPRemote(t *testing.T) {
	for name, opts := range frontEnds {
		t.Run(name, func(t *testing.T) { testHTTPRemote(t, opts) })
	}
}

func testHTTPRemote(t *testing.T, opts []Option) {
	dir, _ := NewBareRepo(t)
	local, _ := NewBareRepo(t)
	srv := Serve(t, dir, opts...)
	c := commit(t, local, "one")
	Run(t, local, "push", "-q", srv.URL, c+":refs/heads/a")
	if got := Refs(t, dir, "refs/heads/"); got["refs/heads/a"] != c {
		t.Fatalf("refs after an HTTP push = %v", got)
	}
	if out := Run(t, local, "ls-remote", srv.URL); !strings.Contains(out, c+"\trefs/heads/a") {
		t.Fatalf("ls-remote over HTTP = %q", out)
	}
	if srv.Requests() < 3 || len(srv.Log()) != int(srv.Requests()) {
		t.Errorf("requests = %d, log = %v", srv.Requests(), srv.Log())
	}

	// A hook refuses with a message the client sees.
	Hook(t, dir, "pre-receive", `echo "no pushes on Fridays" >&2; exit 1`)
	out, err := Try(local, nil, "push", srv.URL, c+":refs/heads/b")
	if err == nil || !strings.Contains(out, "no pushes on Fridays") {
		t.Fatalf("push past a refusing hook: %v\n%s", err, out)
	}
	RemoveHook(t, dir, "pre-receive")

	// A lost answer: the push lands, the client hears 502.
	srv.LoseNextAnswers(1)
	c2 := commit(t, local, "two")
	if out, err := Try(local, nil, "push", srv.URL, c2+":refs/heads/c"); err == nil {
		t.Fatalf("a push whose answer was lost succeeded:\n%s", out)
	}
	if got := Refs(t, dir, "refs/heads/"); got["refs/heads/c"] != c2 {
		t.Fatalf("the push whose answer was lost did not land: %v", got)
	}
	srv.FailNext(1, http.StatusServiceUnavailable)
	if out, err := Try(local, nil, "ls-remote", srv.URL); err == nil {
		t.Fatalf("ls-remote through an injected 503 succeeded:\n%s", out)
	}
	Fsck(t, dir)
}

// The server decides a push on the ref's old value, serves protocol
// version 2, shallow fetches and partial clones: what the store asks of a
// remote, on both front ends.
func TestHTTPServesWhatTheStoreAsks(t *testing.T) {
	for name, opts := range frontEnds {
		t.Run(name, func(t *testing.T) {
			dir, _ := NewBareRepo(t)
			srv := Serve(t, dir, opts...)
			work := filepath.Join(t.TempDir(), "work.git")
			Run(t, "", "init", "--bare", "-q", work)
			one := commit(t, work, "one")
			Run(t, work, "push", "-q", srv.URL, one+":refs/heads/a")
			two := strings.TrimSpace(Run(t, work, "commit-tree", commit(t, work, "two")+"^{tree}", "-p", one, "-m", "two"))
			Run(t, work, "push", "-q", srv.URL, two+":refs/heads/b")

			// A push that expects a stale old value is refused by the
			// server, whatever the client saw.
			out, err := Try(work, nil, "push", "--force-with-lease=refs/heads/a:"+two, srv.URL, two+":refs/heads/a")
			if err == nil || !strings.Contains(out, "stale info") {
				t.Fatalf("a push with a stale old value: %v\n%s", err, out)
			}
			if got := Refs(t, dir, "refs/heads/"); got["refs/heads/a"] != one {
				t.Fatalf("refs after the refused push = %v", got)
			}

			if out := Run(t, work, "-c", "protocol.version=2", "ls-remote", srv.URL, "refs/heads/a"); !strings.Contains(out, one) {
				t.Fatalf("ls-remote over protocol version 2 = %q", out)
			}
			for _, v := range []string{"0", "2"} {
				clone := filepath.Join(t.TempDir(), "clone.git")
				Run(t, "", "-c", "protocol.version="+v, "clone", "-q", "--bare", "--depth=1", "--filter=blob:limit=1", "--branch=b", srv.URL, clone)
				if shallow := strings.TrimSpace(Run(t, clone, "rev-parse", "--is-shallow-repository")); shallow != "true" {
					t.Errorf("protocol %s: a --depth=1 clone is not shallow", v)
				}
				if promisor := strings.TrimSpace(Run(t, clone, "config", "remote.origin.promisor")); promisor != "true" {
					t.Errorf("protocol %s: a filtered clone is not a partial clone", v)
				}
			}
		})
	}
}

func TestHTTPAuth(t *testing.T) {
	dir, _ := NewBareRepo(t)
	local, _ := NewBareRepo(t)
	c := commit(t, local, "one")
	srv := Serve(t, dir, WithBasicAuth("x-access-token", "s3cret"))

	if out, err := Try(local, nil, "push", srv.URL, c+":refs/heads/a"); err == nil {
		t.Fatalf("a push without credentials was accepted:\n%s", out)
	}
	withCreds, _ := url.Parse(srv.URL)
	withCreds.User = url.UserPassword("x-access-token", "s3cret")
	Run(t, local, "push", "-q", withCreds.String(), c+":refs/heads/a")

	ro := Serve(t, dir, WithReadOnly())
	if out := Run(t, local, "ls-remote", ro.URL); !strings.Contains(out, "refs/heads/a") {
		t.Fatalf("a read-only server refused a read: %q", out)
	}
	out, err := Try(local, nil, "push", ro.URL, c+":refs/heads/b")
	if err == nil || !strings.Contains(out, "403") {
		t.Fatalf("a read-only server accepted a push (or not with 403): %v\n%s", err, out)
	}
}

func TestFileURL(t *testing.T) {
	if got := FileURL("/tmp/a b/r.git"); got != "file:///tmp/a%20b/r.git" {
		t.Errorf("FileURL = %q", got)
	}
	if got := FileURL("r.git"); !strings.HasPrefix(got, "file:///") || !strings.HasSuffix(got, filepath.ToSlash("/r.git")) {
		t.Errorf("FileURL of a relative path = %q", got)
	}
}
