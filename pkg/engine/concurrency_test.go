package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/internal/testing/parallel"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt/localstore"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
)

// I9: no entry of a shared parent list is lost, whatever the interleaving
// of scopes writing it — shown with scopes in goroutines (the fake cloud,
// optest.SetLatency opening the list's read-modify-write window) and in
// separate processes (a list in a file, see fileItem), both on the local
// store, over many rounds in which every scope adds and removes its own
// entries (apply; destroy while others re-apply). Each has a control case
// with the parent lock switched off, which must show the loss: the test
// can fail.

// helperEnv makes the test binary run one child of the multi-process test
// instead of the tests (the helper-process pattern).
const helperEnv = "SPONSON_ENGINE_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "i9" {
		os.Exit(i9Child())
	}
	// The tests that run in parallel wait on git remotes and child processes.
	parallel.AtLeast(8)
	os.Exit(m.Run())
}

const (
	i9Scopes  = 6
	i9Pool    = 4 // entries each scope may own
	i9Latency = 3 * time.Millisecond
)

// i9Rounds is the number of rounds: SPONSON_I9_ROUNDS, else def (a third
// of it under -short).
func i9Rounds(def int) int {
	if n, err := strconv.Atoi(os.Getenv("SPONSON_I9_ROUNDS")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return max(def/3, 2)
	}
	return def
}

// i9Op is what one scope does in one round: destroy, or apply a plan that
// declares the entries items (entries dropped from the plan stay as
// orphans until the scope is destroyed).
type i9Op struct {
	destroy bool
	items   []int
}

func (o i9Op) String() string {
	if o.destroy {
		return "d"
	}
	s := make([]string, len(o.items))
	for i, k := range o.items {
		s[i] = strconv.Itoa(k)
	}
	return "a" + strings.Join(s, ".")
}

func parseI9Op(s string) i9Op {
	if s == "d" {
		return i9Op{destroy: true}
	}
	var o i9Op
	for _, x := range strings.Split(strings.TrimPrefix(s, "a"), ".") {
		k, _ := strconv.Atoi(x)
		o.items = append(o.items, k)
	}
	return o
}

// i9Schedule draws every scope's op for every round: round 0 applies
// everywhere (every scope creates at once); later a third of the scopes
// destroy while the others re-apply other subsets.
func i9Schedule(seed uint64, rounds int) [][]i9Op {
	rnd := rand.New(rand.NewPCG(seed, 9))
	out := make([][]i9Op, rounds)
	for r := range out {
		out[r] = make([]i9Op, i9Scopes)
		for s := range out[r] {
			if r > 0 && rnd.IntN(3) == 0 {
				out[r][s] = i9Op{destroy: true}
				continue
			}
			perm := rnd.Perm(i9Pool)[:1+rnd.IntN(i9Pool-1)]
			sort.Ints(perm)
			out[r][s] = i9Op{items: perm}
		}
	}
	return out
}

func i9Scope(s int) string              { return fmt.Sprintf("pr-%d", 100+s) }
func i9Item(scope string, k int) string { return fmt.Sprintf("https://%s-%d.example", scope, k) }

// i9Expect is what every scope owns after the rounds so far.
type i9Expect struct{ owned []map[string]bool }

func newI9Expect() *i9Expect {
	x := &i9Expect{}
	for range i9Scopes {
		x.owned = append(x.owned, map[string]bool{})
	}
	return x
}

func (x *i9Expect) step(round []i9Op) {
	for s, op := range round {
		if op.destroy {
			x.owned[s] = map[string]bool{}
			continue
		}
		for _, k := range op.items {
			x.owned[s][i9Item(i9Scope(s), k)] = true
		}
	}
}

func (x *i9Expect) all() []string {
	var out []string
	for _, m := range x.owned {
		for it := range m {
			out = append(out, it)
		}
	}
	sort.Strings(out)
	return out
}

// i9PlanSrc is scope's plan for op: its entries on the shared list, on the
// fake cloud (dir "") or on the file list in dir.
func i9PlanSrc(scope string, op i9Op, dir string) string {
	var b strings.Builder
	b.WriteString("version: 1\nproviders:\n")
	adapterName := "fake"
	if dir == "" {
		b.WriteString("  fake: { project: p1 }\n")
	} else {
		adapterName = "filelist"
		fmt.Fprintf(&b, "  filelist: { dir: %q }\n", dir)
	}
	b.WriteString("changes:\n")
	for _, k := range op.items {
		fmt.Fprintf(&b, "  - { id: i%d, adapter: %s, op: item, list: shared, item: %q }\n", k, adapterName, i9Item(scope, k))
	}
	return b.String()
}

// fastSleep shortens every foreground wait (lease backoff) a hundredfold:
// the leases' times stay real, only the polling is quicker.
func fastSleep(ctx context.Context, d time.Duration) error {
	return sleepOn(clock.System{}, ctx, max(d/100, 200*time.Microsecond))
}

// fastClock is the system clock whose foreground waits are fastSleep's.
type fastClock struct{ clock.System }

func (fastClock) Sleep(ctx context.Context, d time.Duration) error { return fastSleep(ctx, d) }

// i9Engine is one scope's engine, as its own process would build it: its
// own store instance on the shared root, the real clock.
func i9Engine(root string, ops *adapter.Registry, unsaved string, locksOff bool) *Engine {
	e := &Engine{Store: localstore.New(root, nil), Ops: ops, Redactor: redact.New(), Clock: fastClock{}, UnsavedDir: unsaved}
	e.unlockedParents = locksOff
	return e
}

// waitCounter counts the "waiting for lock" progress lines: proof that the
// scopes really contended for the list.
type waitCounter struct {
	mu sync.Mutex
	n  int
}

func (w *waitCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += strings.Count(string(p), "waiting for lock on parent")
	return len(p), nil
}

func (w *waitCounter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// i9Do runs one scope's op of one round.
func i9Do(e *Engine, sc string, op i9Op, dir string) error {
	n, _ := strconv.Atoi(strings.TrimPrefix(sc, "pr-"))
	c := scope.Ctx{Env: "preview", Scope: sc, PR: scope.PR{Number: &n}, Repo: "acme/shop"}
	o := Options{Wait: true, WaitTimeout: time.Minute, Parallelism: 2}
	if op.destroy {
		_, err := e.Destroy(context.Background(), c, o)
		return err
	}
	p, err := parsePlan(i9PlanSrc(sc, op, dir))
	if err != nil {
		return err
	}
	_, err = e.Apply(context.Background(), p, c, o)
	return err
}

// i9Check compares the list and every scope's ledger with what is expected;
// it returns a description of the difference, "" when none.
func i9Check(root string, list []string, x *i9Expect) string {
	sort.Strings(list)
	want := x.all()
	if !slices.Equal(list, want) {
		var lost, extra []string
		for _, w := range want {
			if !slices.Contains(list, w) {
				lost = append(lost, w)
			}
		}
		for _, g := range list {
			if !slices.Contains(want, g) {
				extra = append(extra, g)
			}
		}
		return fmt.Sprintf("list has %d entries, want %d: lost %v, unexpected %v", len(list), len(want), lost, extra)
	}
	st := localstore.New(root, nil)
	for s := range i9Scopes {
		r, _, err := st.Read(context.Background(), "preview", i9Scope(s))
		if err != nil {
			return err.Error()
		}
		var got []string
		if r != nil {
			for _, en := range r.Ledger {
				_, item, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(en.Key, "item:p1:"), "fileitem:"), ":")
				got = append(got, item)
			}
		}
		sort.Strings(got)
		var own []string
		for it := range x.owned[s] {
			own = append(own, it)
		}
		sort.Strings(own)
		if !slices.Equal(got, own) {
			return fmt.Sprintf("scope %s's ledger %v, want %v", i9Scope(s), got, own)
		}
	}
	return ""
}

// noLeases fails when any lease (scope or parent object) is still held.
func noLeases(t *testing.T, root string) {
	t.Helper()
	locks, err := localstore.New(root, nil).Locks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 0 {
		t.Fatalf("leases left held: %s", dump(locks))
	}
}

func TestI9NoEntryLostGoroutines(t *testing.T) {
	rounds := i9Rounds(12)
	lost := runI9Goroutines(t, rounds, false)
	if lost != "" {
		t.Fatalf("I9: %s", lost)
	}
}

func TestI9ControlWithoutLockLosesEntries(t *testing.T) {
	if lost := runI9Goroutines(t, 20, true); lost == "" {
		t.Fatal("the control case lost no entry in 20 rounds: the I9 test could not fail")
	} else {
		t.Logf("without the parent lock: %s", lost)
	}
}

// runI9Goroutines runs the rounds with every scope in its own goroutine;
// it returns the first loss seen ("" when none). With the lock on, any
// error or loss fails t.
func runI9Goroutines(t *testing.T, rounds int, locksOff bool) string {
	root := t.TempDir()
	cloud := optest.New()
	cloud.SetLatency(optest.OpItem, i9Latency)
	engines := make([]*Engine, i9Scopes)
	waits := &waitCounter{}
	for s := range engines {
		engines[s] = i9Engine(root, cloud.Registry(), t.TempDir(), locksOff)
		engines[s].Progress = waits
	}
	sched := i9Schedule(uint64(time.Now().UnixNano()), rounds)
	x := newI9Expect()
	for r, round := range sched {
		start := make(chan struct{})
		errsOf := make([]error, i9Scopes)
		var wg sync.WaitGroup
		for s, op := range round {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errsOf[s] = i9Do(engines[s], i9Scope(s), op, "")
			}()
		}
		close(start)
		wg.Wait()
		x.step(round)
		for s, err := range errsOf {
			if err != nil && !locksOff {
				t.Fatalf("round %d, scope %s (%v): %v", r, i9Scope(s), round[s], err)
			}
		}
		if diff := i9Check(root, cloud.List("p1", "shared"), x); diff != "" {
			if locksOff {
				return fmt.Sprintf("round %d: %s", r, diff)
			}
			t.Fatalf("round %d (%v): %s", r, round, diff)
		}
	}
	noLeases(t, root)
	if waits.count() == 0 {
		t.Fatal("no scope ever waited for the list's lease: the scopes did not contend, the test proves nothing")
	}
	t.Logf("%d rounds, %d waits for the list's lease", rounds, waits.count())
	return ""
}

func TestI9NoEntryLostProcesses(t *testing.T) {
	if lost := runI9Processes(t, i9Rounds(8), false); lost != "" {
		t.Fatalf("I9: %s", lost)
	}
}

func TestI9ControlWithoutLockLosesEntriesProcesses(t *testing.T) {
	if lost := runI9Processes(t, 12, true); lost == "" {
		t.Fatal("the control case lost no entry in 12 rounds: the I9 test could not fail")
	} else {
		t.Logf("without the parent lock: %s", lost)
	}
}

// runI9Processes runs every scope in its own process (this test binary
// again, as a helper), all on one local store and one file list. Rounds
// are started together through files in a shared directory: go-<r> starts
// round r, done-<r>-<scope> holds "ok" or the child's error, stop ends
// the children early.
func runI9Processes(t *testing.T, rounds int, locksOff bool) string {
	root, dir, sync := t.TempDir(), t.TempDir(), t.TempDir()
	sched := i9Schedule(uint64(time.Now().UnixNano()), rounds)
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for s := range i9Scopes {
		ops := make([]string, rounds)
		for r := range sched {
			ops[r] = sched[r][s].String()
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.Env = append(os.Environ(), helperEnv+"=i9", "I9_ROOT="+root, "I9_DIR="+dir, "I9_SYNC="+sync,
			"I9_SCOPE="+i9Scope(s), "I9_OPS="+strings.Join(ops, "/"), "I9_UNSAVED="+t.TempDir(),
			"I9_LATENCY="+i9Latency.String(), "I9_LOCKS_OFF="+strconv.FormatBool(locksOff))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	stop := func() {
		os.WriteFile(filepath.Join(sync, "stop"), nil, 0o644)
		for i, c := range cmds {
			if err := c.Wait(); err != nil && !locksOff {
				t.Errorf("child %s: %v\n%s", i9Scope(i), err, outs[i])
			}
		}
	}
	x := newI9Expect()
	lost := ""
	waits := 0
	for r, round := range sched {
		if err := os.WriteFile(filepath.Join(sync, fmt.Sprintf("go-%d", r)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for s := range i9Scopes {
			path := filepath.Join(sync, fmt.Sprintf("done-%d-%s", r, i9Scope(s)))
			for {
				data, err := os.ReadFile(path)
				if err == nil {
					n, ok := strings.CutPrefix(string(data), "ok ")
					if !ok && !locksOff {
						stop()
						t.Fatalf("round %d, scope %s (%v): %s", r, i9Scope(s), round[s], data)
					}
					w, _ := strconv.Atoi(n)
					waits += w
					break
				}
				if time.Now().After(deadline) {
					stop()
					t.Fatalf("round %d: scope %s never finished", r, i9Scope(s))
				}
				time.Sleep(time.Millisecond)
			}
		}
		x.step(round)
		list, err := readFileList(dir, "shared")
		if err != nil {
			t.Fatal(err)
		}
		if diff := i9Check(root, list, x); diff != "" {
			if locksOff {
				lost = fmt.Sprintf("round %d: %s", r, diff)
				break
			}
			stop()
			t.Fatalf("round %d (%v): %s", r, round, diff)
		}
	}
	stop()
	if !locksOff {
		noLeases(t, root)
		if waits == 0 {
			t.Fatal("no process ever waited for the list's lease: they did not contend, the test proves nothing")
		}
		t.Logf("%d rounds, %d waits for the list's lease", rounds, waits)
	}
	return lost
}

// i9Child is one scope's process: for each round it waits for go-<r>, runs
// its op and writes done-<r>-<scope>.
func i9Child() int {
	root, dir, syncDir, sc := os.Getenv("I9_ROOT"), os.Getenv("I9_DIR"), os.Getenv("I9_SYNC"), os.Getenv("I9_SCOPE")
	latency, _ := time.ParseDuration(os.Getenv("I9_LATENCY"))
	locksOff := os.Getenv("I9_LOCKS_OFF") == "true"
	e := i9Engine(root, adapter.NewRegistry(fileItem{latency: latency}), os.Getenv("I9_UNSAVED"), locksOff)
	waits := &waitCounter{}
	e.Progress = waits
	for r, s := range strings.Split(os.Getenv("I9_OPS"), "/") {
		for {
			if _, err := os.Stat(filepath.Join(syncDir, "stop")); err == nil {
				return 0
			}
			if _, err := os.Stat(filepath.Join(syncDir, fmt.Sprintf("go-%d", r))); err == nil {
				break
			}
			time.Sleep(500 * time.Microsecond)
		}
		before := waits.count()
		result := ""
		if err := i9Do(e, sc, parseI9Op(s), dir); err != nil {
			result = fmt.Sprintf("%s: %v", errs.CodeOf(err), err)
		} else {
			result = fmt.Sprintf("ok %d", waits.count()-before) // "ok <waits for the list's lease>"
		}
		done := filepath.Join(syncDir, fmt.Sprintf("done-%d-%s", r, sc))
		if err := os.WriteFile(done+".tmp", []byte(result), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := os.Rename(done+".tmp", done); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	return 0
}
