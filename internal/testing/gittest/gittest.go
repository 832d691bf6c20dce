// Package gittest gives tests real git remotes: bare repositories made by
// `git init --bare`, reachable as file:// URLs (git's own receive-pack and
// upload-pack run for every push and fetch) and over HTTP on 127.0.0.1
// (Serve: git's upload-pack and receive-pack run with --stateless-rpc
// from an in-process smart-HTTP handler, or through `git http-backend`
// with WithHTTPBackend).
//
// Compare-and-swap tests must run against these, never against go-git's
// in-process server (plumbing/transport/server), which ignores the
// expected old value of a push (quality.md, stores.md) and refuses
// shallow fetches, which the store makes: git's own services decide
// behind both of Serve's front ends.
//
// Every git command the helpers run gets a clean environment: no system or
// global configuration, a fixed identity, no background gc, so tests do not
// depend on the machine's git setup and leave nothing running when
// t.TempDir is removed.
package gittest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TB is the part of testing.TB the helpers use, so benchmarks and helper
// processes can use them too.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

var _ TB = (testing.TB)(nil)

// Env is the environment every git command of this package runs with:
// os.Environ() without GIT_* variables and HOME, plus a clean
// configuration and a fixed identity. Tests that run git themselves (the
// git CLI racing the store) use it too.
func Env(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=gittest", "GIT_AUTHOR_EMAIL=gittest@example.com",
		"GIT_COMMITTER_NAME=gittest", "GIT_COMMITTER_EMAIL=gittest@example.com",
	)
}

// Run runs git with args in dir (the clean Env) and returns its standard
// output. A failure fails the test with git's output.
func Run(t TB, dir string, args ...string) string {
	t.Helper()
	out, err := Try(dir, nil, args...)
	if err != nil {
		t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

// RunInput is Run with stdin.
func RunInput(t TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	out, err := Try(dir, stdin, args...)
	if err != nil {
		t.Fatalf("git %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

// Try runs git and returns its combined output and error, for tests that
// expect git to fail (a push that loses a race).
func Try(dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env(homeDir())
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// homeDir is HOME for every git command: a directory that does not exist,
// so git reads no user configuration and writes nothing there.
func homeDir() string { return filepath.Join(os.TempDir(), "gittest-no-home") }

// NewBareRepo makes an empty bare repository in a fresh temporary directory
// and returns its directory and its file:// URL. It accepts pushes over
// HTTP (http.receivepack), never runs gc or maintenance in the background
// (gc.auto 0, receive.autogc false, maintenance.auto false), checks every
// object it receives (receive.fsckObjects: a malformed commit or tree is
// refused, so a store that builds one fails its tests), and serves partial
// clones (uploadpack.allowFilter), as GitHub does.
//
// The repository is a copy, files only, of one template that `git init
// --bare` and `git config` made (eight git processes, paid once per
// machine, not once per remote): see template.
func NewBareRepo(t TB) (dir, fileURL string) {
	t.Helper()
	tmpl, err := template()
	if err != nil {
		t.Fatalf("the template repository: %v", err)
	}
	dir = filepath.Join(t.TempDir(), "remote.git")
	if err := os.CopyFS(dir, os.DirFS(tmpl)); err != nil {
		t.Fatalf("copy the template repository: %v", err)
	}
	return dir, FileURL(dir)
}

// bareConfig is the configuration of every repository NewBareRepo makes.
var bareConfig = [][2]string{
	{"http.receivepack", "true"},
	{"gc.auto", "0"},
	{"receive.autogc", "false"},
	{"receive.fsckObjects", "true"},
	{"core.logAllRefUpdates", "false"},
	{"uploadpack.allowFilter", "true"}, // partial clone, as GitHub serves it
	// A repository that fetches (a test's scratch repository) starts no
	// `git maintenance run --auto` after each fetch.
	{"maintenance.auto", "false"},
}

var templateOnce = sync.OnceValues(makeTemplate)

// template is the directory of the empty bare repository NewBareRepo
// copies. It lives in the temporary directory under a name that holds the
// git binary's identity and bareConfig, so another git or another
// configuration gets its own; it is made in a directory of its own and
// renamed into place, so test binaries running at once never see half of
// one.
func template() (string, error) { return templateOnce() }

func makeTemplate() (string, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %d %d %v", bin, fi.Size(), fi.ModTime().UnixNano(), bareConfig)
	final := filepath.Join(os.TempDir(), fmt.Sprintf("gittest-template-%x", h.Sum(nil)[:8]))
	repo := filepath.Join(final, "remote.git")
	if _, err := os.Stat(filepath.Join(repo, "config")); err == nil {
		return repo, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "gittest-template-new-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // gone once renamed
	dir := filepath.Join(tmp, "remote.git")
	if out, err := Try("", nil, "init", "--bare", "-q", "-b", "main", dir); err != nil {
		return "", fmt.Errorf("git init: %v: %s", err, out)
	}
	for _, kv := range bareConfig {
		if out, err := Try(dir, nil, "config", kv[0], kv[1]); err != nil {
			return "", fmt.Errorf("git config %s: %v: %s", kv[0], err, out)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(repo, "config")); serr == nil {
			return repo, nil // another test binary made it first
		}
		return "", err
	}
	return repo, nil
}

// FileURL is the file:// URL of a local repository directory. Never hand a
// store a plain path: go-git then walks the remote's whole object graph on
// every push (stores.md).
func FileURL(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// Hook installs an executable hook (pre-receive, update, post-receive) in
// the bare repository dir. script is the hook's body after "#!/bin/sh".
func Hook(t TB, dir, name, script string) {
	t.Helper()
	path := filepath.Join(dir, "hooks", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("hook: %v", err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatalf("hook: %v", err)
	}
}

// RemoveHook removes a hook installed by Hook.
func RemoveHook(t TB, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "hooks", name)); err != nil && !os.IsNotExist(err) {
		t.Fatalf("remove hook: %v", err)
	}
}

// Refs lists the refs of repository dir under prefix (e.g.
// "refs/heads/sponson-receipts/") as name → commit id.
func Refs(t TB, dir, prefix string) map[string]string {
	t.Helper()
	out := Run(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, id, ok := strings.Cut(line, " "); ok {
			refs[name] = id
		}
	}
	return refs
}

// Fsck runs `git fsck --strict` on repository dir and fails the test with
// its output if it reports anything.
func Fsck(t TB, dir string) {
	t.Helper()
	out, err := Try(dir, nil, "fsck", "--strict", "--no-progress", "--no-dangling")
	var report []string
	for _, line := range strings.Split(out, "\n") {
		// "notice: HEAD points to an unborn branch" is not a defect of
		// the objects: a bare remote's default branch may never exist.
		if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "notice:") {
			report = append(report, line)
		}
	}
	if err != nil || len(report) > 0 {
		t.Fatalf("git fsck --strict in %s: %v\n%s", dir, err, out)
	}
}

// ExecPath is `git --exec-path`: where git-http-backend and the other
// helpers live.
func ExecPath() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("git --exec-path: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
