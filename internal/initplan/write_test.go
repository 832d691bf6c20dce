package initplan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sponson/apply/pkg/errs"
)

// A file is written whole with its mode kept; create refuses one that
// exists; a failure leaves the old file and no temporary one.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".gitignore")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new\n"), true); errs.CodeOf(err) != errs.USAGE {
		t.Errorf("create over an existing file: %v, want USAGE", err)
	}
	if err := WriteFile(p, []byte("new\n"), false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "new\n" || st.Mode().Perm() != 0o600 {
		t.Errorf("got %q mode %v", b, st.Mode().Perm())
	}
	// A directory where the file should be: the rename fails, as it does
	// for root too.
	sub := filepath.Join(dir, "release.plan.yaml")
	if err := os.MkdirAll(filepath.Join(sub, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(sub, []byte("lost\n"), false); errs.CodeOf(err) != errs.FILE_UNWRITABLE {
		t.Errorf("a directory in the way: %v, want FILE_UNWRITABLE", err)
	}
	entries, _ := os.ReadDir(dir)
	b, _ = os.ReadFile(p)
	if len(entries) != 2 || string(b) != "new\n" {
		t.Errorf("after a failure: %d entries (want .gitignore and the directory), content %q", len(entries), b)
	}
}
