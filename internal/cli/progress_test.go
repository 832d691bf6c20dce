package cli

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/progress"
)

var p0 = time.Date(2026, 12, 1, 14, 2, 0, 0, time.UTC)

func wait(attempt int, holder string, done, ok bool) progress.Event {
	return progress.Event{Kind: progress.Lease, Target: "preview/pr-2", Holder: holder, Started: p0,
		Now: p0.Add(time.Duration(attempt) * 10 * time.Second), Deadline: p0.Add(10 * time.Minute), Attempt: attempt, Done: done, OK: ok}
}

// In a log, a wait is one line when it starts, one when its holder
// changes, one when it ends — not one per attempt.
func TestProgressInALog(t *testing.T) {
	var b bytes.Buffer
	v := newProgressView(&b, false, false, 0, nil)
	defer v.Close()
	for i := 1; i <= 5; i++ {
		v.Sink(wait(i, "run r1 (cli, apply)", false, false))
	}
	v.Sink(wait(6, "run r2 (action, apply)", false, false))
	v.Sink(wait(7, "", true, true))
	v.Sink(progress.Event{Kind: progress.Store, Target: "write preview/pr-2", Started: p0, Now: p0, Attempt: 1})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), b.String())
	}
	for i, want := range []string{"held by run r1 (cli, apply) — 10s so far, until 14:12:00", "held by run r2", "done waiting for lock on preview/pr-2 after 1m10s"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q lacks %q", i, lines[i], want)
		}
	}
	if strings.Contains(b.String(), "\x1b") || strings.Contains(b.String(), "\r") {
		t.Errorf("escapes in a log: %q", b.String())
	}
}

// On a terminal the status line is redrawn in place, never wider than the
// terminal, and cleared when the wait ends.
func TestProgressOnATerminal(t *testing.T) {
	var b bytes.Buffer
	v := newProgressView(&b, true, true, 60, clock.NewFake(p0.Add(20*time.Second)))
	v.Sink(wait(1, "run r1 (cli, apply, actor someone-with-a-long-name, host build-agent-17 pid 4242)", false, false))
	v.Sink(wait(2, "run r1 (cli, apply, actor someone-with-a-long-name, host build-agent-17 pid 4242)", false, false))
	v.Sink(wait(3, "", true, true))
	v.Close()
	out := b.String()
	draws := strings.Split(out, "\r\x1b[K")
	if len(draws) < 3 {
		t.Fatalf("not redrawn in place: %q", out)
	}
	for _, d := range draws {
		plain := strings.NewReplacer("\x1b[36m", "", "\x1b[2m", "", "\x1b[0m", "").Replace(d)
		first, _, _ := strings.Cut(plain, "\n")
		if n := len([]rune(first)); n > 60 {
			t.Errorf("a status line of %d columns on a 60-column terminal: %q", n, first)
		}
	}
	if !strings.Contains(out, "done waiting for lock on preview/pr-2") || !strings.HasSuffix(out, "\n") {
		t.Errorf("the end of the wait is not said: %q", out)
	}
}

// The waits of a run as a CI log shows them: golden.
func TestProgressGolden(t *testing.T) {
	var b bytes.Buffer
	v := newProgressView(&b, false, false, 0, nil)
	ext := progress.Event{Kind: progress.External, Target: `deploy of line "env" (env.preview_url)`, Line: "env", Started: p0, Deadline: p0.Add(10 * time.Minute)}
	prov := progress.Event{Kind: progress.Provisioning, Target: "neon operation create_branch of branch br-1", Started: p0, Deadline: p0.Add(2 * time.Minute)}
	parent := progress.Event{Kind: progress.ParentLock, Target: "auth0:acme.eu.auth0.com:client:AbCd", Holder: "run r2/callback (cli, apply, actor mona)",
		HolderUntil: p0.Add(15 * time.Minute), Started: p0, Deadline: p0.Add(30 * time.Second)}
	store := progress.Event{Kind: progress.Store, Target: "write preview/pr-2", Started: p0, Deadline: p0.Add(time.Minute)}
	step := func(e progress.Event, after time.Duration, attempt int, done, ok bool) {
		e.Now, e.Attempt, e.Done, e.OK = p0.Add(after), attempt, done, ok
		v.Sink(e)
	}
	step(prov, time.Second, 1, false, false)
	step(prov, 2*time.Second, 2, false, false)
	step(prov, 3*time.Second, 3, true, true)
	step(parent, 4*time.Second, 1, false, false)
	step(parent, 34*time.Second, 5, true, false)
	for i := 1; i <= 4; i++ {
		step(store, time.Duration(i)*time.Second, i, false, false)
	}
	step(ext, 0, 1, false, false)
	step(ext, 25*time.Second, 6, true, true)
	v.Close()
	path := "testdata/golden/waits.txt"
	if updating() {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || string(want) != b.String() {
		t.Errorf("%s differs (go test -update rewrites it): %v\n--- got\n%s\n--- want\n%s", path, err, b.String(), want)
	}
}

// updating reports whether -update was given (the flag is defined by the
// package's external tests, compiled into the same test binary).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}
