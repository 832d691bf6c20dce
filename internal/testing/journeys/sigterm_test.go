package journeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exitGuard bounds how long a test waits for a signalled process: a
// failure guard only, never the measure: the time to exit is logged (and
// recorded in docs/performance.md). A process still running after it has
// ignored the signal.
const exitGuard = 2 * time.Minute

// lease is one row of `sponson locks --json`.
type lease struct {
	Target, Kind, Scope, Holder string
}

// leases reads the store, from another process: every lease held now.
func (w *world) leases() []lease {
	w.t.Helper()
	code, out := w.run("locks", "--json")
	if code != 0 {
		w.t.Fatalf("locks: exit %d\n%s", code, out)
	}
	var doc struct{ Locks []lease }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		w.t.Fatalf("locks is not JSON: %v\n%s", err, out)
	}
	return doc.Locks
}

// held reports the leases of scope, and whether the parent lease (the
// Auth0 callback list's) is held by the same holder as scope's.
func held(ls []lease, scope string) (scopeHeld, parentHeld bool) {
	holder := ""
	for _, l := range ls {
		if l.Kind == "scope" && l.Scope == scope {
			scopeHeld, holder = true, l.Holder
		}
	}
	for _, l := range ls {
		// A parent lease's holder is the run's, with the line that took it.
		if l.Kind == "parent" && holder != "" && (l.Holder == holder || strings.HasPrefix(l.Holder, holder+"/")) {
			parentHeld = true
		}
	}
	return scopeHeld, parentHeld
}

// waitFor polls the store's leases until cond holds (exitGuard is the
// failure guard); p's output and the leases are shown on failure.
func (w *world) waitFor(p *proc, what string, cond func([]lease) bool) {
	w.t.Helper()
	deadline := time.Now().Add(exitGuard)
	for {
		ls := w.leases()
		if cond(ls) {
			return
		}
		select {
		case <-p.exited:
			w.t.Fatalf("the run ended before %s: exit %d\n%s", what, p.cmd.ProcessState.ExitCode(), p.output())
		default:
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("gave up waiting: %s; leases %+v\n%s", what, ls, p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// proc is a sponson process under test, its output collected.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (w *world) start(args ...string) *proc {
	p := &proc{cmd: w.cmd(args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	w.t.Cleanup(func() { p.cmd.Process.Kill(); <-p.exited })
	return p
}

// terminate sends SIGTERM and waits for the process to exit (exitGuard
// is the failure guard); it returns the exit code and how long the
// process took.
func (p *proc) terminate(t *testing.T) (int, time.Duration) {
	t.Helper()
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(exitGuard):
		t.Fatalf("still running %s after SIGTERM:\n%s", exitGuard, p.output())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(sent)
}

// SIGTERM ends a run and releases its leases, whatever it is doing: one
// run in a provider write while it holds its scope's lease and the Auth0
// list's (a parent lease), another holding its scope's lease while it
// waits for that list's. Each exits on the signal with INTERRUPTED's
// code, and the store, read by another process afterwards, holds none of
// its leases; the other run's stay held until it is signalled too. How
// long each took is logged, not asserted.
func TestSIGTERMReleasesLeases(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// Every callback write waits at the cloud until the test ends: the
	// run that makes one holds both its leases until signalled.
	w.chaos(`{"rules": [{"kind": "hold", "provider": "auth0", "method": "WRITE"}]}`)
	writer := w.start(args(1, "apply")...)
	w.waitFor(writer, "pr-1 in its callback write, holding its leases", func(ls []lease) bool {
		s, p := held(ls, "pr-1")
		return s && p
	})
	waiter := w.start(args(2, "apply", "--lock-wait", "10m")...)
	w.waitFor(waiter, "pr-2 waiting for the callback list's lease", func(ls []lease) bool {
		s, _ := held(ls, "pr-2")
		return s && strings.Contains(waiter.output(), "waiting for lock on")
	})

	code, took := waiter.terminate(t)
	t.Logf("the waiting run exited %d, %s after SIGTERM", code, took)
	if code != 1 || !strings.Contains(waiter.output(), "INTERRUPTED") {
		t.Errorf("the waiting run: exit %d, want INTERRUPTED (1):\n%s", code, waiter.output())
	}
	ls := w.leases()
	if s, _ := held(ls, "pr-2"); s {
		t.Errorf("pr-2's lease is still held after SIGTERM: %+v", ls)
	}
	if s, p := held(ls, "pr-1"); !s || !p {
		t.Fatalf("pr-1's leases went with pr-2's: %+v", ls)
	}

	code, took = writer.terminate(t)
	t.Logf("the run in a provider write exited %d, %s after SIGTERM", code, took)
	if code != 1 || !strings.Contains(writer.output(), "INTERRUPTED") {
		t.Errorf("the writing run: exit %d, want INTERRUPTED (1):\n%s", code, writer.output())
	}
	if ls := w.leases(); len(ls) != 0 {
		t.Errorf("leases held after both runs were signalled: %+v", ls)
	}
}

// bigPlan writes, beside the world's plan, a plan of just under size bytes:
// the world's own lines, the Vercel line with as many variables as it
// takes (each its own name, the scope interpolated into its value).
func (w *world) bigPlan(size int) string {
	w.t.Helper()
	src, err := os.ReadFile(filepath.Join(w.dir, "release.plan.yaml"))
	if err != nil {
		w.t.Fatal(err)
	}
	var b strings.Builder
	head, tail, ok := strings.Cut(string(src), "      NEXT_PUBLIC_SCOPE: ${ctx.scope}\n")
	if !ok {
		w.t.Fatal("the world's plan has no NEXT_PUBLIC_SCOPE")
	}
	b.WriteString(head)
	pad := strings.Repeat("x", 160)
	for i := 0; b.Len()+len(tail)+len(pad)+64 < size; i++ {
		fmt.Fprintf(&b, "      PAD_%06d: \"${ctx.scope}-%s\"\n", i, pad)
	}
	b.WriteString(tail)
	name := filepath.Join(w.dir, "big.plan.yaml")
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return name
}

// A 4 MiB plan: SIGTERM as soon as the run starts (while it reads the
// plan, or wherever it has got to) and SIGTERM once it holds its scope's
// lease both end the run, and no lease of it is left in the store.
func TestSIGTERMDuringABigPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	plan := w.bigPlan(4 << 20) // the most Sponson reads
	// The variables' writes wait at the cloud: the run holds its lease.
	w.chaos(`{"rules": [{"kind": "hold", "provider": "vercel", "method": "WRITE"}]}`)

	early := w.start(args(3, "apply", "--plan", plan)...)
	code, took := early.terminate(t)
	t.Logf("signalled at once: exit %d after %s", code, took)
	if code == 0 {
		t.Errorf("a run signalled at once succeeded:\n%s", early.output())
	}
	if s, _ := held(w.leases(), "pr-3"); s {
		t.Errorf("pr-3's lease is held after SIGTERM")
	}

	late := w.start(args(4, "apply", "--plan", plan)...)
	w.waitFor(late, "pr-4 holding its lease", func(ls []lease) bool {
		s, _ := held(ls, "pr-4")
		return s
	})
	code, took = late.terminate(t)
	t.Logf("signalled holding its lease: exit %d after %s", code, took)
	if code != 1 || !strings.Contains(late.output(), "INTERRUPTED") {
		t.Errorf("exit %d, want INTERRUPTED (1):\n%s", code, late.output())
	}
	if ls := w.leases(); len(ls) != 0 {
		t.Errorf("leases held after SIGTERM: %+v", ls)
	}
}

// SIGTERM ends a destroy too: one held in its callback's delete, holding
// its scope's lease and the Auth0 list's, exits INTERRUPTED and leaves no
// lease; the next destroy finishes the teardown.
func TestSIGTERMEndsADestroy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if code, out := w.run(args(6, "apply")...); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	w.chaos(`{"rules": [{"id": "cb", "kind": "hold", "provider": "auth0", "method": "WRITE"}]}`)
	d := w.start(args(6, "destroy")...)
	w.waitFor(d, "the destroy in its callback's delete, holding its leases", func(ls []lease) bool {
		s, p := held(ls, "pr-6")
		return s && p
	})
	code, took := d.terminate(t)
	t.Logf("the destroy exited %d, %s after SIGTERM", code, took)
	if code != 1 || !strings.Contains(d.output(), "INTERRUPTED") {
		t.Errorf("destroy: exit %d, want INTERRUPTED (1):\n%s", code, d.output())
	}
	if ls := w.leases(); len(ls) != 0 {
		t.Errorf("leases held after SIGTERM: %+v", ls)
	}
	w.chaos(`{"reset": "rules"}`)
	if code, out := w.run(args(6, "destroy")...); code != 0 {
		t.Fatalf("the destroy after: exit %d\n%s", code, out)
	}
	if left := w.live(6); len(left) != 0 {
		t.Fatalf("the teardown left %v", left)
	}
}
