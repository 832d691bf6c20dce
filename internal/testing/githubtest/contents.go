package githubtest

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sponson/apply/internal/testing/gittest"
)

// CommitFiles commits files (path → content) on top of branch of full (created from the default
// branch when missing) and returns the commit's id: what a push of those
// files does, so the contents API and a clone see them.
func (gt *Git) CommitFiles(full, branch, message string, files map[string]string) (string, error) {
	if gt.f.Repos.repo(full) == nil {
		return "", fmt.Errorf("githubtest: no repository %s", full)
	}
	dir := gt.gitDir(full)
	parent, _ := gt.git(dir, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch+"^{commit}")
	if parent == "" {
		def := gt.f.Repos.repo(full).DefaultBranch
		parent, _ = gt.git(dir, nil, "rev-parse", "--verify", "-q", "refs/heads/"+def+"^{commit}")
	}
	idx, err := os.CreateTemp("", "ghfake-index-*")
	if err != nil {
		return "", err
	}
	idx.Close()
	os.Remove(idx.Name()) // git wants to make it itself
	defer os.Remove(idx.Name())
	run := func(stdin []byte, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		stamp := strconv.FormatInt(gt.f.opts.now().Unix(), 10) + " +0000"
		cmd.Env = append(gittest.Env(gt.homeDir()), "GIT_INDEX_FILE="+idx.Name(), "GIT_AUTHOR_DATE="+stamp, "GIT_COMMITTER_DATE="+stamp)
		if stdin != nil {
			cmd.Stdin = strings.NewReader(string(stdin))
		}
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
			}
			return "", err
		}
		return strings.TrimSpace(string(out)), nil
	}
	if parent != "" {
		if _, err := run(nil, "read-tree", parent); err != nil {
			return "", err
		}
	}
	paths := slices.Sorted(maps.Keys(files))
	for _, p := range paths {
		blob, err := run([]byte(files[p]), "hash-object", "-w", "--stdin")
		if err != nil {
			return "", err
		}
		if _, err := run(nil, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+filepath.ToSlash(p)); err != nil {
			return "", err
		}
	}
	tree, err := run(nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", tree, "-m", message}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	sha, err := run(nil, args...)
	if err != nil {
		return "", err
	}
	old := parent
	if cur, _ := gt.git(dir, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch); cur == "" {
		old = strings.Repeat("0", 40)
	}
	if _, err := gt.git(dir, nil, "update-ref", "refs/heads/"+branch, sha, old); err != nil {
		return "", err
	}
	return sha, nil
}

// contentEntry is one entry of a tree, as git ls-tree -l prints it.
type contentEntry struct {
	mode, typ, sha, path string
	size                 int64
}

// lsTree lists the entries of the tree at rev:dir ("" the root), or with
// self the entry of path itself.
func (gt *Git) lsTree(full, rev, path string, self bool) ([]contentEntry, error) {
	args := []string{"ls-tree", "-l", "-z", rev}
	if self {
		args = append(args, "--", path)
	} else if path != "" {
		args = append(args, "--", path+"/")
	}
	out, err := gt.git(gt.gitDir(full), nil, args...)
	if err != nil {
		return nil, err
	}
	var es []contentEntry
	for _, rec := range strings.Split(out, "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		fs := strings.Fields(meta)
		if len(fs) < 4 {
			continue
		}
		size, _ := strconv.ParseInt(fs[3], 10, 64)
		es = append(es, contentEntry{mode: fs[0], typ: fs[1], sha: fs[2], path: p, size: size})
	}
	return es, nil
}

func (e contentEntry) kind() string {
	switch {
	case e.mode == "120000":
		return "symlink"
	case e.typ == "commit":
		return "submodule"
	case e.typ == "tree":
		return "dir"
	}
	return "file"
}

// contentItem is the part every contents answer shares.
func (c *call) contentItem(m map[string]any, e contentEntry, ref string) map[string]any {
	full := c.full()
	esc := (&url.URL{Path: e.path}).EscapedPath()
	self := c.f.opts.api("/repos/"+full+"/contents/"+esc) + "?ref=" + url.QueryEscape(ref)
	kind := e.kind()
	git := c.f.opts.api("/repos/" + full + "/git/blobs/" + e.sha)
	html := c.f.opts.web("/" + full + "/blob/" + ref + "/" + esc)
	download := any(c.f.opts.web("/" + full + "/raw/" + ref + "/" + esc))
	switch kind {
	case "dir":
		git = c.f.opts.api("/repos/" + full + "/git/trees/" + e.sha)
		html = c.f.opts.web("/" + full + "/tree/" + ref + "/" + esc)
		download = nil
	case "submodule":
		git = c.f.opts.api("/repos/" + full + "/git/trees/" + e.sha)
		download = nil
	}
	m["type"], m["name"], m["path"], m["sha"], m["size"] = kind, filepath.Base(e.path), e.path, e.sha, e.size
	if kind == "dir" || kind == "submodule" {
		m["size"] = 0
	}
	m["url"], m["git_url"], m["html_url"], m["download_url"] = self, git, html, download
	m["_links"] = map[string]any{"self": self, "git": git, "html": html}
	return m
}

// maxContentSize is the largest file GitHub returns with its content
// through the JSON answer; a larger one comes with encoding "none".
const maxContentSize = 1 << 20

// getContent answers a file (base64 content), a directory (its entries),
// a symlink or a submodule at ref (default: the default branch), read
// from the repository's real git tree; 404 for a path or ref that is
// not there.
func getContent(c *call) {
	rs := c.repo()
	full := rs.FullName
	ref := c.query("ref")
	if ref == "" {
		ref = rs.DefaultBranch
	}
	sha := c.f.Git.resolve(full, ref)
	if sha == "" {
		c.error(http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	path := strings.Trim(c.params["path"], "/")
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	es, err := c.f.Git.lsTree(full, sha, path, true)
	if err != nil || len(es) != 1 || es[0].path != path {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	e := es[0]
	switch e.kind() {
	case "dir":
		kids, err := c.f.Git.lsTree(full, sha, path, false)
		if err != nil {
			c.error(http.StatusInternalServerError, err.Error())
			return
		}
		out := []any{}
		for _, k := range kids {
			m := map[string]any{}
			out = append(out, c.contentItem(m, k, ref))
		}
		c.json(http.StatusOK, out)
	case "file":
		m := c.contentItem(c.f.spec.Synth("content-file"), e, ref)
		m["encoding"], m["content"] = "base64", ""
		if e.size > maxContentSize {
			m["encoding"] = "none"
		} else {
			raw, err := c.f.Git.catBlob(full, e.sha)
			if err != nil {
				c.error(http.StatusInternalServerError, err.Error())
				return
			}
			m["content"] = wrap60(base64.StdEncoding.EncodeToString(raw))
		}
		c.json(http.StatusOK, m)
	case "symlink":
		m := c.contentItem(c.f.spec.Synth("content-symlink"), e, ref)
		target, _ := c.f.Git.git(c.f.Git.gitDir(full), nil, "cat-file", "blob", e.sha)
		m["target"] = target
		c.json(http.StatusOK, m)
	default:
		m := c.contentItem(c.f.spec.Synth("content-submodule"), e, ref)
		m["submodule_git_url"] = "https://example.invalid/submodule.git"
		c.json(http.StatusOK, m)
	}
}

// catBlob returns a blob's exact bytes (f.git trims its output).
func (gt *Git) catBlob(full, sha string) ([]byte, error) {
	cmd := exec.Command("git", "cat-file", "blob", sha)
	cmd.Dir = gt.gitDir(full)
	cmd.Env = gittest.Env(gt.homeDir())
	return cmd.Output()
}

// wrap60 breaks base64 into lines of 60 characters, as GitHub sends it.
func wrap60(s string) string {
	var b strings.Builder
	for len(s) > 60 {
		b.WriteString(s[:60])
		b.WriteByte('\n')
		s = s[60:]
	}
	b.WriteString(s)
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	return b.String()
}

// listCheckRunsForRef lists the check runs of the commit ref names (a
// sha, branch or tag): filter=latest (the default) keeps the newest run
// of each name; check_name and status narrow; total_count counts all
// that match, the page holds per_page of them.
func listCheckRunsForRef(c *call) {
	full := c.repo().FullName
	ref := c.params["ref"]
	sha := c.f.Git.resolve(full, ref)
	if sha == "" {
		c.validationFailed("CheckRun", "ref", "invalid", "No commit found for SHA: "+ref)
		return
	}
	runs := c.f.Deploys.CheckRuns(full)
	name, status := c.query("check_name"), c.query("status")
	latest := c.query("filter") != "all"
	var sel []CheckRun
	seen := map[string]bool{}
	for i := len(runs) - 1; i >= 0; i-- { // newest first
		r := runs[i]
		if r.HeadSHA != sha || (name != "" && r.Name != name) || (status != "" && r.Status != status) {
			continue
		}
		if latest {
			if seen[r.Name] {
				continue
			}
			seen[r.Name] = true
		}
		sel = append(sel, r)
	}
	out := []any{}
	for _, r := range paginate(c, sel) {
		out = append(out, c.f.Deploys.checkRun(&r))
	}
	c.json(http.StatusOK, map[string]any{"total_count": len(sel), "check_runs": out})
}
