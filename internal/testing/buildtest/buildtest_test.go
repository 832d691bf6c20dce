package buildtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const errdocs = "github.com/sponson/apply/cmd/errdocs"

// A binary is built once into the cache under its sources' hash; the
// next build of the same sources (another test binary, the next run)
// finds it there and does not link again.
func TestBinaryIsBuiltOnceByContentHash(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SPONSON_BUILDTEST_CACHE", dir)
	bin := Binary(t, errdocs)
	if filepath.Dir(bin) != dir {
		t.Fatalf("built %s, want it in the cache %s", bin, dir)
	}
	key, err := sourceHash(errdocs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(bin, "errdocs-"+key[:24]) {
		t.Errorf("binary %s is not named by its sources' hash %s", bin, key[:24])
	}
	out, err := exec.Command(bin, "-h").CombinedOutput()
	if !strings.Contains(string(out), "go run ./cmd/errdocs") {
		t.Errorf("the binary does not run: %v\n%s", err, out)
	}
	// What another test binary does: build from the cache, not again.
	if err := os.WriteFile(bin, []byte("cached"), 0o755); err != nil {
		t.Fatal(err)
	}
	again, err := build(errdocs)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again); again != bin || string(b) != "cached" {
		t.Errorf("the second build of unchanged sources linked again (%s)", again)
	}
	other, err := sourceHash("github.com/sponson/apply/cmd/adapterdocs")
	if err != nil || other == key {
		t.Errorf("two commands share a source hash: %v", err)
	}
}
