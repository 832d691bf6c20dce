package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sponson/apply/pkg/receipt/internal/atomicfile"
)

func TestWriteCreateRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	p := filepath.Join(dir, "f.json")
	if err := atomicfile.Create(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Create(p, []byte("two"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing file: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("a failed Create changed the file: %q", b)
	}
	if err := atomicfile.Write(p, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	if b, _ := os.ReadFile(p); string(b) != "three" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("Write: %q, mode %v", b, fi.Mode())
	}
	if err := atomicfile.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Remove(p); err != nil {
		t.Fatalf("Remove of a missing file: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}
