package gittest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// A Fixture is a bare repository filled once per test binary and handed to
// every test that asks for it as a copy, files only: for remotes many tests
// start from (scopes written, a branch shaped by hand), so each of them
// costs a file copy instead of the pushes that made it. What a test then
// does to its copy (pushes, hooks, configuration) touches no other copy.
//
// The repository lives in the temporary directory until RemoveFixtures,
// which the test binary's TestMain calls after the tests.
type Fixture struct {
	name  string
	base  *Fixture // the fixture this one starts from; nil: an empty repository
	build func(t TB, dir string)
	once  sync.Once
	dir   string // the filled repository
	err   error  // why it could not be filled
}

// NewFixture is a fixture that build fills: it is given a bare repository
// made as NewBareRepo makes one (dir; its file:// URL is FileURL(dir)),
// and a TB whose Fatalf ends the build and fails every test that asks for
// the fixture, whose TempDir lasts until the build returns and whose
// Cleanup functions run then.
func NewFixture(name string, build func(t TB, dir string)) *Fixture {
	return &Fixture{name: name, build: build}
}

// Derive is a fixture that starts from a copy of f's repository (where
// NewFixture's start from an empty one) and that build fills further.
func (f *Fixture) Derive(name string, build func(t TB, dir string)) *Fixture {
	return &Fixture{name: name, base: f, build: build}
}

// Copy returns a fresh copy of the fixture's repository, in the test's
// temporary directory, and its file:// URL; the first call fills it.
func (f *Fixture) Copy(t TB) (dir, fileURL string) {
	t.Helper()
	f.once.Do(f.fill)
	if f.err != nil {
		t.Fatalf("fixture %s: %v", f.name, f.err)
	}
	dir = filepath.Join(t.TempDir(), "remote.git")
	if err := os.CopyFS(dir, os.DirFS(f.dir)); err != nil {
		t.Fatalf("copy fixture %s: %v", f.name, err)
	}
	return dir, FileURL(dir)
}

var fixtures struct {
	sync.Mutex
	roots []string
}

// RemoveFixtures removes every fixture's repository: for TestMain, after
// the tests have run.
func RemoveFixtures() {
	fixtures.Lock()
	defer fixtures.Unlock()
	for _, root := range fixtures.roots {
		_ = os.RemoveAll(root)
	}
	fixtures.roots = nil
}

// fill makes the fixture's repository and runs build on it.
func (f *Fixture) fill() {
	root, err := os.MkdirTemp("", "gittest-fixture-")
	if err != nil {
		f.err = err
		return
	}
	fixtures.Lock()
	fixtures.roots = append(fixtures.roots, root)
	fixtures.Unlock()
	from, err := f.start()
	if err != nil {
		f.err = err
		return
	}
	dir := filepath.Join(root, "remote.git")
	if err := os.CopyFS(dir, os.DirFS(from)); err != nil {
		f.err = fmt.Errorf("copy %s: %w", from, err)
		return
	}
	b := &buildTB{root: root}
	defer b.cleanup()
	defer func() {
		if r := recover(); r != nil {
			failed, ok := r.(buildFailed)
			if !ok {
				panic(r)
			}
			f.err = failed
		}
	}()
	f.build(b, dir)
	f.dir = dir
}

// start is the repository f's starts as a copy of: its base's, filled
// first, or the empty template.
func (f *Fixture) start() (string, error) {
	if f.base == nil {
		tmpl, err := template()
		if err != nil {
			return "", fmt.Errorf("the template repository: %w", err)
		}
		return tmpl, nil
	}
	f.base.once.Do(f.base.fill)
	if f.base.err != nil {
		return "", fmt.Errorf("fixture %s: %w", f.base.name, f.base.err)
	}
	return f.base.dir, nil
}

// buildTB is the TB a fixture's build is given.
type buildTB struct {
	root     string
	cleanups []func()
}

// buildFailed is a build's Fatalf, carried out of it by a panic.
type buildFailed string

func (e buildFailed) Error() string { return string(e) }

func (b *buildTB) Helper() {}

func (b *buildTB) Fatalf(format string, args ...any) {
	panic(buildFailed(fmt.Sprintf(format, args...)))
}

func (b *buildTB) TempDir() string {
	dir, err := os.MkdirTemp(b.root, "tmp-")
	if err != nil {
		b.Fatalf("fixture temporary directory: %v", err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (b *buildTB) Cleanup(fn func()) { b.cleanups = append(b.cleanups, fn) }

// cleanup runs the build's Cleanup functions, last first.
func (b *buildTB) cleanup() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}
