package gittest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// A fixture is built once, however many tests ask for it, and each gets a
// copy of its own: a push to one copy is not in another, nor in the next.
func TestFixtureIsBuiltOnceAndCopied(t *testing.T) {
	var builds atomic.Int32
	var made string
	f := NewFixture("one commit", func(tb TB, dir string) {
		builds.Add(1)
		work := tb.TempDir()
		c := commit(tb, dir, "seeded")
		Run(tb, dir, "update-ref", "refs/heads/seeded", c)
		made = work
	})
	a, aURL := f.Copy(t)
	b, _ := f.Copy(t)
	if a == b || !strings.HasPrefix(aURL, "file:///") {
		t.Fatalf("copies %s and %s (%s)", a, b, aURL)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Errorf("the build's temporary directory %s outlived the build: %v", made, err)
	}
	seeded := Refs(t, a, "refs/heads/")["refs/heads/seeded"]
	if seeded == "" || Refs(t, b, "refs/heads/")["refs/heads/seeded"] != seeded {
		t.Fatalf("copies hold %v and %v", Refs(t, a, "refs/heads/"), Refs(t, b, "refs/heads/"))
	}
	Run(t, a, "update-ref", "refs/heads/only-a", seeded)
	c, _ := f.Copy(t)
	for _, dir := range []string{b, c} {
		if _, ok := Refs(t, dir, "refs/heads/")["refs/heads/only-a"]; ok {
			t.Errorf("a ref made in one copy is in %s", dir)
		}
	}
	Fsck(t, c)
	if n := builds.Load(); n != 1 {
		t.Errorf("the fixture was built %d times, want 1", n)
	}
}

// A derived fixture starts from its base's repository; the base is not
// changed by it.
func TestDerivedFixture(t *testing.T) {
	base := NewFixture("base", func(tb TB, dir string) {
		Run(tb, dir, "update-ref", "refs/heads/base", commit(tb, dir, "base"))
	})
	derived := base.Derive("derived", func(tb TB, dir string) {
		Run(tb, dir, "update-ref", "refs/heads/derived", commit(tb, dir, "derived"))
	})
	d, _ := derived.Copy(t)
	if refs := Refs(t, d, "refs/heads/"); refs["refs/heads/base"] == "" || refs["refs/heads/derived"] == "" {
		t.Fatalf("the derived fixture holds %v, want base and derived", refs)
	}
	b, _ := base.Copy(t)
	if refs := Refs(t, b, "refs/heads/"); refs["refs/heads/derived"] != "" {
		t.Fatalf("the base holds %v after a fixture derived from it was built", refs)
	}
	Fsck(t, d)
}

// A build that fails fails every test that asks for the fixture, with the
// build's words.
func TestFixtureBuildFailureFailsEachCopy(t *testing.T) {
	f := NewFixture("broken", func(tb TB, dir string) {
		tb.Fatalf("no such %s", "branch")
	})
	for i := 0; i < 2; i++ {
		rec := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.Copy(rec)
		}()
		<-done
		if !strings.Contains(rec.msg, "fixture broken: no such branch") {
			t.Errorf("copy %d: Fatalf(%q), want the build's failure", i, rec.msg)
		}
	}
}

// RemoveFixtures removes what the fixtures built.
func TestRemoveFixtures(t *testing.T) {
	f := NewFixture("removed", func(TB, string) {})
	f.Copy(t)
	if _, err := os.Stat(f.dir); err != nil {
		t.Fatal(err)
	}
	RemoveFixtures()
	if _, err := os.Stat(filepath.Dir(f.dir)); !os.IsNotExist(err) {
		t.Errorf("after RemoveFixtures %s: %v", f.dir, err)
	}
}

// fatalRecorder records Fatalf and ends its goroutine, as testing.T does.
type fatalRecorder struct {
	TB
	msg string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
