package scope_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sponson/apply/pkg/scope"
)

// TestGitIdentity: the checkout's user.name and user.email (written by
// git itself), else the global config under the HOME given, else nothing.
func TestGitIdentity(t *testing.T) {
	home := t.TempDir()
	env := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	dir, _ := newRepo(t)
	sub := filepath.Join(dir, "app")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := scope.GitIdentity(sub, env); got != "" {
		t.Errorf("no config: identity %q, want none", got)
	}
	if got := scope.GitIdentity(t.TempDir(), env); got != "" {
		t.Errorf("no repository: identity %q, want none", got)
	}
	// The global config only (git's own writer, under this HOME).
	global := exec.Command("git", "config", "--global", "user.email", "ada@example.com")
	global.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	if out, err := global.CombinedOutput(); err != nil {
		t.Fatalf("git config --global: %v\n%s", err, out)
	}
	if got := scope.GitIdentity(sub, env); got != "ada@example.com" {
		t.Errorf("global email only: %q", got)
	}
	// The checkout's own name wins over nothing; the global email fills in.
	local := exec.Command("git", "-C", dir, "config", "user.name", "Ada Lovelace")
	if out, err := local.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v\n%s", err, out)
	}
	if got := scope.GitIdentity(sub, env); got != "Ada Lovelace <ada@example.com>" {
		t.Errorf("local name, global email: %q", got)
	}
	local = exec.Command("git", "-C", dir, "config", "user.email", "ada@work.example")
	if out, err := local.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v\n%s", err, out)
	}
	if got := scope.GitIdentity(sub, env); got != "Ada Lovelace <ada@work.example>" {
		t.Errorf("local config: %q", got)
	}
}
