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
func commit(t *testing.T, dir, content string) string {
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

func TestHTTPRemote(t *testing.T) {
	dir, _ := NewBareRepo(t)
	local, _ := NewBareRepo(t)
	srv := Serve(t, dir)
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
