package githubtest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/internal/testing/gittest"
)

// resolveRef is resolve without running git for what it is asked most
// (seeding thousands of pull requests asks for the tip of a branch each
// time): a branch or tag that names a commit, or a full commit id, read
// from the bare repository in this process. "" sends the caller to git
// (rev-parse) for anything else.
func (gt *Git) resolveRef(full, rev string) string {
	repo, err := git.PlainOpen(gt.gitDir(full))
	if err != nil {
		return ""
	}
	for _, name := range []plumbing.ReferenceName{plumbing.NewBranchReferenceName(rev), plumbing.NewTagReferenceName(rev)} {
		ref, err := repo.Reference(name, true)
		if err != nil {
			continue
		}
		if c, err := repo.CommitObject(ref.Hash()); err == nil {
			return c.Hash.String()
		}
		return "" // an annotated tag, or not a commit: git peels it
	}
	if len(rev) == 40 && plumbing.IsHash(rev) {
		if c, err := repo.CommitObject(plumbing.NewHash(rev)); err == nil {
			return c.Hash.String()
		}
	}
	return ""
}

// isGitPath reports whether path is a git smart-HTTP path:
// /{owner}/{repo}.git/... (or /{owner}/{repo}/info/refs, which git also
// asks when the remote URL has no .git).
func isGitPath(path string) bool {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) < 3 {
		return false
	}
	return strings.HasSuffix(segs[1], ".git") || (len(segs) >= 4 && segs[2] == "info" && segs[3] == "refs") ||
		segs[2] == "git-upload-pack" || segs[2] == "git-receive-pack"
}

// gitDir is the bare repository of full ("owner/name").
func (gt *Git) gitDir(full string) string {
	return filepath.Join(gt.f.opts.GitRoot, strings.ToLower(full)+".git")
}

func (gt *Git) homeDir() string { return filepath.Join(gt.f.opts.GitRoot, ".home") }

// git runs git in dir with the clean environment of internal/testing/gittest,
// commit dates from the fake's clock.
func (gt *Git) git(dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	ts := strconv.FormatInt(gt.f.opts.now().Unix(), 10) + " +0000"
	cmd.Env = append(gittest.Env(gt.homeDir()), "GIT_AUTHOR_DATE="+ts, "GIT_COMMITTER_DATE="+ts)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// initGit makes the bare repository of r.
func (gt *Git) initGit(r Repo) error {
	dir := gt.gitDir(r.FullName)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if _, err := gt.git("", nil, "init", "--bare", "-q", "-b", r.DefaultBranch, dir); err != nil {
		return err
	}
	for _, kv := range [][2]string{
		{"http.receivepack", "true"},
		{"gc.auto", "0"},
		{"receive.autogc", "false"},
		{"receive.fsckObjects", "true"},
		{"core.logAllRefUpdates", "false"},
		{"uploadpack.allowAnySHA1InWant", "true"},
	} {
		if _, err := gt.git(dir, nil, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// commit appends an empty-tree commit with message to branch (created at
// the default branch's tip when missing) and returns its id.
func (gt *Git) commit(full, branch, message string) (string, error) {
	dir := gt.gitDir(full)
	tree, err := gt.git(dir, []byte{}, "mktree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", tree, "-m", message}
	parent, _ := gt.git(dir, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch+"^{commit}")
	if parent == "" {
		gt.f.mu.Lock()
		def := ""
		if rs := gt.f.repos[strings.ToLower(full)]; rs != nil {
			def = rs.DefaultBranch
		}
		gt.f.mu.Unlock()
		if def != "" && def != branch {
			parent, _ = gt.git(dir, nil, "rev-parse", "--verify", "-q", "refs/heads/"+def+"^{commit}")
		}
	}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	sha, err := gt.git(dir, nil, args...)
	if err != nil {
		return "", err
	}
	if _, err := gt.git(dir, nil, "update-ref", "refs/heads/"+branch, sha); err != nil {
		return "", err
	}
	return sha, nil
}

// refs lists refs under prefix as name → id.
func (gt *Git) refs(full, prefix string) map[string]string {
	out, err := gt.git(gt.gitDir(full), nil, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	refs := map[string]string{}
	if err != nil {
		return refs
	}
	for _, line := range strings.Split(out, "\n") {
		if name, id, ok := strings.Cut(line, " "); ok {
			refs[name] = id
		}
	}
	return refs
}

// branchNames returns the sorted branch names of full.
func (gt *Git) branchNames(full string) ([]string, map[string]string) {
	refs := gt.refs(full, "refs/heads/")
	var names []string
	m := map[string]string{}
	for ref, id := range refs {
		n := strings.TrimPrefix(ref, "refs/heads/")
		names = append(names, n)
		m[n] = id
	}
	sort.Strings(names)
	return names, m
}

// resolve turns a branch name or commit id into a commit id ("" unknown).
func (gt *Git) resolve(full, rev string) string {
	if sha := gt.resolveRef(full, rev); sha != "" {
		return sha
	}
	dir := gt.gitDir(full)
	for _, cand := range []string{"refs/heads/" + rev, "refs/tags/" + rev, rev} {
		if out, err := gt.git(dir, nil, "rev-parse", "--verify", "-q", cand+"^{commit}"); err == nil && out != "" {
			return out
		}
	}
	return ""
}

// serveGit serves git smart HTTP with GitHub's token auth: HTTP basic
// with the token as password (user x-access-token, or any), contents:
// read to fetch and contents: write to push (403 otherwise).
func (gt *Git) serveGit(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	full := segs[0] + "/" + strings.TrimSuffix(segs[1], ".git")
	op := "info-refs"
	switch {
	case strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
		op = "git-upload-pack"
	case strings.HasSuffix(r.URL.Path, "/git-receive-pack"):
		op = "git-receive-pack"
	}
	push := op == "git-receive-pack" || r.URL.Query().Get("service") == "git-receive-pack"
	rec := &statusWriter{ResponseWriter: w}
	// Logged before git answers (status filled in after), so a client that
	// has its answer finds its call in the log.
	entry := gt.f.Log.record(r, 0, op, "")
	defer func() { gt.f.Log.setStatus(entry, rec.code()) }()

	_, pass, ok := r.BasicAuth()
	if !ok {
		rec.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(rec, "Authentication required", http.StatusUnauthorized)
		return
	}
	tok, _ := gt.f.Apps.lookupToken(pass)
	if tok == nil {
		rec.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(rec, "Invalid username or token. Password authentication is not supported for Git operations.", http.StatusUnauthorized)
		return
	}
	if !gt.f.Apps.canSee(tok, full) {
		http.Error(rec, "Repository not found.", http.StatusNotFound)
		return
	}
	need := "contents:read"
	if push {
		need = "contents:write"
	}
	if !gt.f.Apps.permits(tok, need) {
		http.Error(rec, fmt.Sprintf("Permission to %s.git denied to %s.", full, tok.Identity.Login), http.StatusForbidden)
		return
	}
	fl := gt.f.Log.takeFault(r.Method, op, true)
	if fl != nil && !fl.Lost {
		http.Error(rec, "injected: "+http.StatusText(fl.Status), fl.Status)
		return
	}
	// The repository's folder is lower case; git's path is as asked. git's
	// own upload-pack and receive-pack answer, as behind http-backend.
	r2 := r.Clone(r.Context())
	rest := strings.Join(segs[2:], "/")
	prefix := strings.ToLower(full) + ".git"
	r2.URL.Path = "/" + prefix + "/" + rest
	h := gittest.SmartHTTP(filepath.Join(gt.f.opts.GitRoot, prefix), prefix, "REMOTE_USER="+tok.Identity.Login)
	if fl != nil {
		// The request takes effect; the client never hears so.
		h.ServeHTTP(httptest.NewRecorder(), r2)
		http.Error(rec, "injected: the answer was lost", fl.Status)
		return
	}
	h.ServeHTTP(rec, r2)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(c int) {
	if s.status == 0 {
		s.status = c
	}
	s.ResponseWriter.WriteHeader(c)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Flush lets git's streaming answers through.
func (s *statusWriter) Flush() {
	if fl, ok := s.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}
