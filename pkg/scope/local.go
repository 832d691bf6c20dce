package scope

import (
	"errors"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/pkg/errs"
)

// LocalGit is what the local checkout says: the last layer of Compute.
type LocalGit struct {
	Branch        string // HEAD's branch; "" on a detached HEAD
	SHA           string // HEAD's commit; "" in a repository with no commits
	DefaultBranch string // the branch refs/remotes/origin/HEAD points at, when set
	Repo          string // owner/name from origin's URL, when it has that form
	Origin        string // origin's URL as configured; "" without an origin
}

// ReadLocalGit reads the repository that contains dir (dir itself or a
// parent, like git does; a linked worktree's refs and remotes are those of
// the repository it belongs to). It is the one function of this package that does
// I/O. No repository is (nil, nil), not an error: the scope may come from
// elsewhere. A repository it cannot read is USAGE.
func ReadLocalGit(dir string) (*LocalGit, error) {
	repo, err := OpenRepository(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, nil
	}
	if err != nil {
		return nil, unreadable(err, dir)
	}
	l := &LocalGit{}
	head, err := repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return nil, unreadable(err, dir)
	}
	if head.Type() == plumbing.SymbolicReference {
		if head.Target().IsBranch() {
			l.Branch = strings.TrimPrefix(head.Target().String(), "refs/heads/")
		}
		ref, err := repo.Reference(head.Target(), true)
		switch {
		case err == nil:
			l.SHA = ref.Hash().String()
		case !errors.Is(err, plumbing.ErrReferenceNotFound): // not found: no commit yet
			return nil, unreadable(err, dir)
		}
	} else {
		l.SHA = head.Hash().String() // detached
	}
	if r, err := repo.Remote("origin"); err == nil && len(r.Config().URLs) > 0 {
		l.Origin = r.Config().URLs[0]
		l.Repo = repoFromURL(l.Origin)
	}
	if ref, err := repo.Storer.Reference("refs/remotes/origin/HEAD"); err == nil && ref.Type() == plumbing.SymbolicReference {
		l.DefaultBranch = strings.TrimPrefix(ref.Target().String(), "refs/remotes/origin/")
	}
	return l, nil
}

// OpenRepository opens the repository that contains dir as git would: dir
// or a parent, and for a linked worktree (a .git file) the repository it
// belongs to, whose refs, remotes and objects it shares.
// git.ErrRepositoryNotExists when there is none.
func OpenRepository(dir string) (*git.Repository, error) {
	return git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
}

func unreadable(err error, dir string) error {
	return errs.Wrap(err, errs.USAGE, "cannot read the git repository at %s", dir).
		WithHint("Repair the repository, or give the scope with --pr or --branch and the commit with --sha.")
}

// repoFromURL is owner/name for a remote URL with a host and a two-part path
// (https://github.com/acme/shop.git, git@github.com:acme/shop.git,
// ssh://git@host/acme/shop), "" for anything else (a local path, a nested
// group path): never a guess.
func repoFromURL(raw string) string {
	var path string
	switch {
	case strings.Contains(raw, "://"):
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Scheme == "file" {
			return ""
		}
		path = u.Path
	default:
		// scp-like: [user@]host:path, where host has no slash and is not a
		// Windows drive letter
		host, p, ok := strings.Cut(raw, ":")
		if !ok || len(host) < 2 || strings.Contains(host, "/") {
			return ""
		}
		path = p
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	parts := strings.Split(path, "/")
	if len(parts) != 2 || !repoRe.MatchString(path) {
		return ""
	}
	return path
}
