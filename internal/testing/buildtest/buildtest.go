// Package buildtest builds a command's binary for tests and benchmarks.
//
// Release builds the way the Dockerfile does, so what a benchmark times is
// what ships. Binary builds a main package once for every test binary
// that asks and keeps it in a cache keyed by the hash of every source file
// that goes into it (the files of the package and of all its non-standard
// dependencies, the Go version and the build settings): a second test
// package, or the next `go test -count=1`, finds it there instead of
// linking it again. A source change changes the key, so a stale binary is
// never used.
package buildtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
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

// CacheDir is where Binary keeps what it built, shared by every test
// package and run on the machine (SPONSON_BUILDTEST_CACHE, by default a
// folder of the system's temporary folder).
func CacheDir() string {
	if d := os.Getenv("SPONSON_BUILDTEST_CACHE"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "sponson-buildtest")
}

// staleAfter is how long an entry of the cache that no build asked for
// is kept.
const staleAfter = 72 * time.Hour

var builds sync.Map // import path → func() (string, error)

// Binary returns the path of pkg's binary (an import path of a main
// package of this module), built at most once per test binary and found
// in CacheDir when its sources have not changed since it was built.
// Concurrent callers share one build.
func Binary(tb testing.TB, pkg string) string {
	tb.Helper()
	once, _ := builds.LoadOrStore(pkg, sync.OnceValues(func() (string, error) { return build(pkg) }))
	bin, err := once.(func() (string, error))()
	if err != nil {
		tb.Fatalf("buildtest: %s: %v", pkg, err)
	}
	return bin
}

func build(pkg string) (string, error) {
	key, err := sourceHash(pkg)
	if err != nil {
		return "", err
	}
	dir := CacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := filepath.Base(pkg) + "-" + key[:24]
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		now := time.Now()
		os.Chtimes(bin, now, now) //nolint:errcheck // only for pruning
		return bin, nil
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out, err := exec.Command("go", "build", "-o", filepath.Join(tmp, name), pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	// Rename is atomic: a concurrent build of the same sources by another
	// test binary replaces it with the same bytes.
	if err := os.Rename(filepath.Join(tmp, name), bin); err != nil {
		return "", err
	}
	prune(dir, filepath.Base(pkg)+"-", bin)
	return bin, nil
}

// prune removes the entries for the same command that no build asked
// for in staleAfter.
func prune(dir, prefix, keep string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !strings.HasPrefix(e.Name(), prefix) || p == keep {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleAfter {
			os.Remove(p) //nolint:errcheck
		}
	}
}

// sourceHash hashes what `go build pkg` reads: the Go version, the build
// environment and every file of pkg and of its non-standard dependencies.
func sourceHash(pkg string) (string, error) {
	const format = `{{if not .Standard}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .CgoFiles}}{{$d}}/{{.}}
{{end}}{{range .SFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}`
	var stderr bytes.Buffer
	list := exec.Command("go", "list", "-deps", "-f", format, pkg)
	list.Stderr = &stderr
	files, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	env, err := exec.Command("go", "env", "GOVERSION", "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOEXPERIMENT").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %v", err)
	}
	h := sha256.New()
	h.Write(env)
	for _, f := range strings.Split(strings.TrimSpace(string(files)), "\n") {
		if f == "" {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n", f)
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
