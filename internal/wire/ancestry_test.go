package wire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/gittest"
)

// LocalAncestry answers from the checkout's history, in the main working
// tree and in a linked worktree (whose objects are the main repository's).
func TestLocalAncestry(t *testing.T) {
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	sha := func(msg string) string {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(msg), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Run(t, dir, "add", "f")
		gittest.Run(t, dir, "commit", "-q", "-m", msg)
		return strings.TrimSpace(gittest.Run(t, dir, "rev-parse", "HEAD"))
	}
	older, newer := sha("one"), sha("two")
	linked := filepath.Join(t.TempDir(), "linked")
	gittest.Run(t, dir, "worktree", "add", "-q", "-b", "feat", linked)

	for _, at := range []string{dir, linked} {
		anc := LocalAncestry(at)
		if ok, err := anc(older, newer); err != nil || !ok {
			t.Errorf("%s: %s before %s: %v %v, want true", at, older[:7], newer[:7], ok, err)
		}
		if ok, err := anc(newer, older); err != nil || ok {
			t.Errorf("%s: %s before %s: %v %v, want false", at, newer[:7], older[:7], ok, err)
		}
	}
}
