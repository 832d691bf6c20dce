// Package buildtest builds a command's binary for benchmarks the way the
// Dockerfile does, so what they time is what ships.
package buildtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Release builds the main package in the current directory into dir/name
// with the Dockerfile's flags (CGO_ENABLED=0, -trimpath, -s -w, linux) and
// returns its path and size in bytes.
func Release(tb testing.TB, dir, name string) (bin string, size int64) {
	tb.Helper()
	bin = filepath.Join(dir, name)
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		tb.Fatal(err)
	}
	return bin, fi.Size()
}
