package scope_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/scope"
)

// newRepo makes a repository on branch main in a temporary folder.
func newRepo(t *testing.T) (string, *git.Repository) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, repo
}

func commit(t *testing.T, dir string, repo *git.Repository, file string) plumbing.Hash {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(file+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add(file); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "T", Email: "t@example.com", When: time.Unix(1700000000, 0)}
	h, err := wt.Commit("add "+file, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestReadLocalGit(t *testing.T) {
	t.Run("branch and commit, from a subfolder", func(t *testing.T) {
		dir, repo := newRepo(t)
		h := commit(t, dir, repo, "a.txt")
		wt, _ := repo.Worktree()
		if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("feat/x"), Create: true}); err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(dir, "deep", "er")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := scope.ReadLocalGit(sub)
		if err != nil {
			t.Fatal(err)
		}
		want := &scope.LocalGit{Branch: "feat/x", SHA: h.String()}
		if d := diff(t, want, got); d != "" {
			t.Errorf("ReadLocalGit (-want +got):\n%s", d)
		}
	})

	t.Run("detached HEAD", func(t *testing.T) {
		dir, repo := newRepo(t)
		first := commit(t, dir, repo, "a.txt")
		commit(t, dir, repo, "b.txt")
		wt, _ := repo.Worktree()
		if err := wt.Checkout(&git.CheckoutOptions{Hash: first}); err != nil {
			t.Fatal(err)
		}
		got, err := scope.ReadLocalGit(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := &scope.LocalGit{SHA: first.String()}
		if d := diff(t, want, got); d != "" {
			t.Errorf("ReadLocalGit (-want +got):\n%s", d)
		}
	})

	t.Run("no commits: the branch only", func(t *testing.T) {
		dir, _ := newRepo(t)
		got, err := scope.ReadLocalGit(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := &scope.LocalGit{Branch: "main"}
		if d := diff(t, want, got); d != "" {
			t.Errorf("ReadLocalGit (-want +got):\n%s", d)
		}
	})

	t.Run("origin and origin/HEAD", func(t *testing.T) {
		dir, repo := newRepo(t)
		h := commit(t, dir, repo, "a.txt")
		if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"git@github.com:acme/shop.git"}}); err != nil {
			t.Fatal(err)
		}
		ref := plumbing.NewSymbolicReference("refs/remotes/origin/HEAD", "refs/remotes/origin/develop")
		if err := repo.Storer.SetReference(ref); err != nil {
			t.Fatal(err)
		}
		got, err := scope.ReadLocalGit(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := &scope.LocalGit{Branch: "main", SHA: h.String(), DefaultBranch: "develop", Repo: "acme/shop", Origin: "git@github.com:acme/shop.git"}
		if d := diff(t, want, got); d != "" {
			t.Errorf("ReadLocalGit (-want +got):\n%s", d)
		}
		// And through Compute: main is not the default branch here.
		c, err := scope.Compute(scope.Input{Local: got})
		if err != nil {
			t.Fatal(err)
		}
		if c.Scope != "branch-main" || c.Git.SHA != h.String() || c.Repo != "acme/shop" {
			t.Errorf("Compute = scope %q sha %q repo %q, want branch-main %s acme/shop", c.Scope, c.Git.SHA, c.Repo, h)
		}
	})

	t.Run("no repository", func(t *testing.T) {
		dir := t.TempDir()
		got, err := scope.ReadLocalGit(dir)
		if err != nil || got != nil {
			t.Fatalf("ReadLocalGit(%s) = (%+v, %v), want (nil, nil); is there a .git in a parent of the temporary folder?", dir, got, err)
		}
	})
}

func TestRepoFromRemoteURL(t *testing.T) {
	cases := map[string]string{
		"https://github.com/acme/shop.git":       "acme/shop",
		"https://github.com/acme/shop":           "acme/shop",
		"https://token@github.com/acme/shop.git": "acme/shop",
		"git@github.com:acme/shop.git":           "acme/shop",
		"ssh://git@github.example.com:22/a/b":    "a/b",
		"https://gitlab.com/group/sub/project":   "",
		"/srv/git/shop.git":                      "",
		"../shop":                                "",
		"file:///srv/acme/shop.git":              "",
		"C:/repos/acme":                          "",
	}
	// One repository, its origin set anew for each URL: only origin changes.
	dir, repo := newRepo(t)
	commit(t, dir, repo, "a.txt")
	for url, want := range cases {
		if err := repo.DeleteRemote("origin"); err != nil && !errors.Is(err, git.ErrRemoteNotFound) {
			t.Fatal(err)
		}
		if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
			t.Fatal(err)
		}
		got, err := scope.ReadLocalGit(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.Repo != want {
			t.Errorf("origin %q: repo %q, want %q", url, got.Repo, want)
		}
	}
}

// A linked worktree (git worktree add) has a .git file naming its own
// folder inside the main repository's, and shares the main repository's
// refs and remotes: its branch, commit and origin are read all the same.
func TestReadLocalGitInALinkedWorktree(t *testing.T) {
	dir, repo := newRepo(t)
	first := commit(t, dir, repo, "a.txt")
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"https://github.com/acme/shop.git"}}); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(t.TempDir(), "feature")
	gittest.Run(t, dir, "worktree", "add", "-b", "feat/x", linked)
	if _, err := os.Stat(filepath.Join(linked, ".git")); err != nil {
		t.Fatal(err)
	}
	l, err := scope.ReadLocalGit(filepath.Join(linked))
	if err != nil {
		t.Fatal(err)
	}
	if l == nil || l.Branch != "feat/x" || l.SHA != first.String() || l.Repo != "acme/shop" {
		t.Errorf("linked worktree: %+v, want branch feat/x at %s of acme/shop", l, first)
	}
}
