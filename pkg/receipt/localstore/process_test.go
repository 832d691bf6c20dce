package localstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/localstore"
)

// The helper-process pattern: the test binary re-executes itself with
// helperEnv set, and TestMain runs the helper instead of the tests.
const helperEnv = "SPONSON_LOCALSTORE_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

var contended = receipt.ScopeTarget("preview", "pr-7")

// helper runs one child process. It reports on stdout and exits non-zero
// when it saw the contract broken.
func helper(mode string) int {
	root := os.Getenv("HELPER_ROOT")
	id := os.Getenv("HELPER_ID")
	ctx := context.Background()
	switch mode {
	case "contend":
		n, _ := strconv.Atoi(os.Getenv("HELPER_N"))
		s := localstore.New(root, nil)
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute) // only a broken lock takes this long
		defer cancel()
		for i := 0; i < n; i++ {
			run := fmt.Sprintf("p%s-%d", id, i)
			lease, err := acquireWhenFree(ctx, s, receipt.Owner{RunID: run, Kind: receipt.KindCLI, PID: os.Getpid()})
			if err != nil {
				fmt.Println("acquire:", err)
				return 2
			}
			// Exactly one holder at a time: a second one would find the
			// marker.
			marker := filepath.Join(root, "inside")
			f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				fmt.Println("OVERLAP: two holders at once:", err)
				return 3
			}
			f.Close()
			r, _, err := s.Read(ctx, contended.Env, contended.Scope)
			if err != nil {
				fmt.Println("read:", err)
				return 2
			}
			if r == nil {
				r = &receipt.Receipt{Env: contended.Env, Scope: contended.Scope}
			}
			r.RunID, r.Operation, r.Status = run, receipt.OpApply, receipt.StatusComplete
			r.Ledger = append(r.Ledger, receipt.LedgerEntry{Adapter: "http", Op: "request", Key: run, CreatedBy: receipt.CreatedBySponson})
			if err := s.Write(ctx, r, lease); err != nil {
				fmt.Println("write:", err)
				return 2
			}
			os.Remove(marker)
			if err := s.Release(ctx, lease); err != nil {
				fmt.Println("release:", err)
				return 2
			}
		}
		fmt.Println("done", n)
		return 0

	case "takeover":
		// This process's clock is told to be past the parent's lease.
		at, err := time.Parse(time.RFC3339Nano, os.Getenv("HELPER_NOW"))
		if err != nil {
			fmt.Println(err)
			return 2
		}
		s := localstore.New(root, clock.NewFake(at))
		l, pre, err := s.Acquire(ctx, contended, receipt.Owner{RunID: "child", Kind: receipt.KindBot, PID: os.Getpid()}, time.Hour)
		if err != nil {
			fmt.Println("acquire:", err)
			return 2
		}
		if err := s.Write(ctx, &receipt.Receipt{Env: contended.Env, Scope: contended.Scope, RunID: "child", LockPreempted: pre}, l); err != nil {
			fmt.Println("write:", err)
			return 2
		}
		out, _ := json.Marshal(struct {
			Lease     receipt.Lease
			Preempted *receipt.Lease
		}{l, pre})
		fmt.Println(string(out))
		return 0
	}
	fmt.Println("unknown helper mode", mode)
	return 2
}

// acquireWhenFree takes the contended lease as soon as the other processes
// let it go. Another process's release cannot be waited for in-process, so
// it polls Acquire with the one backoff (a full-jitter wait under half a
// millisecond, no fixed sleep) until it wins or ctx ends. A growing wait
// would leave the lease idle between holders: it took the test from 4.5 s
// to 6.5 s.
func acquireWhenFree(ctx context.Context, s *localstore.Store, owner receipt.Owner) (receipt.Lease, error) {
	wait := clock.Backoff{Base: 500 * time.Microsecond, Max: 500 * time.Microsecond}
	for attempt := 1; ; attempt++ {
		l, _, err := s.Acquire(ctx, contended, owner, time.Minute)
		if !errors.Is(err, errs.LOCK_HELD) {
			return l, err
		}
		if err := (clock.System{}).Sleep(ctx, wait.Delay(attempt)); err != nil {
			return receipt.Lease{}, fmt.Errorf("still held: %w", err)
		}
	}
}

func spawn(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode}, env...)...)
	return cmd
}

// TestProcessesContendForOneLease: several processes take the lease of one
// scope many times each, and each time read, extend and write the receipt.
// If two ever held it at once, a child sees the other's marker; if a fenced
// write were ever lost or overwritten, the final ledger would miss entries.
func TestProcessesContendForOneLease(t *testing.T) {
	const procs, n = 4, 20
	root := filepath.Join(t.TempDir(), "receipts")
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errsCh := make(chan error, procs)
	for p := 0; p < procs; p++ {
		cmd := spawn(t, "contend", "HELPER_ROOT="+root, fmt.Sprintf("HELPER_ID=%d", p), fmt.Sprintf("HELPER_N=%d", n))
		cmd.Stdout, cmd.Stderr = &outs[p], &outs[p]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				errsCh <- fmt.Errorf("process %d: %v\n%s", p, err, outs[p].String())
			}
		}()
	}
	wg.Wait()
	close(errsCh)
	for err := range errsCh {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	s := localstore.New(root, nil)
	ctx := context.Background()
	r, _, err := s.Read(ctx, contended.Env, contended.Scope)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range r.Ledger {
		seen[e.Key] = true
	}
	if len(r.Ledger) != procs*n || len(seen) != procs*n {
		t.Fatalf("the ledger has %d entries (%d distinct), want %d: a fenced write was lost", len(r.Ledger), len(seen), procs*n)
	}
	if l, _ := s.Lease(ctx, contended); l != nil {
		t.Errorf("a lease is left behind: %+v", *l)
	}
	l, _, err := s.Acquire(ctx, contended, receipt.Owner{RunID: "after"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.Generation != procs*n+1 {
		t.Errorf("generation after %d acquires = %d, want %d", procs*n, l.Generation, procs*n+1)
	}
	hist, err := s.History(ctx, contended)
	if err != nil || len(hist) != procs*n {
		t.Errorf("history has %d runs (%v), want %d", len(hist), err, procs*n)
	}
}

// TestTakeoverAcrossProcesses: this process holds an expired lease; another
// process takes it over and writes; this process's fenced write, renewal and
// release must then all fail to touch anything (I10).
func TestTakeoverAcrossProcesses(t *testing.T) {
	root := filepath.Join(t.TempDir(), "receipts")
	ctx := context.Background()
	clock := clock.NewFake(time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC))
	s := localstore.New(root, clock)
	mine, _, err := s.Acquire(ctx, contended, receipt.Owner{RunID: "parent"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, &receipt.Receipt{Env: contended.Env, Scope: contended.Scope, RunID: "parent"}, mine); err != nil {
		t.Fatal(err)
	}

	cmd := spawn(t, "takeover", "HELPER_ROOT="+root, "HELPER_NOW="+clock.Now().Add(2*time.Minute).Format(time.RFC3339Nano))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var child struct {
		Lease     receipt.Lease
		Preempted *receipt.Lease
	}
	if err := json.Unmarshal(out, &child); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if child.Preempted == nil || !child.Preempted.Same(mine) || child.Lease.Generation <= mine.Generation {
		t.Fatalf("child took %+v preempting %+v; want a takeover of %+v", child.Lease, child.Preempted, mine)
	}

	err = s.Write(ctx, &receipt.Receipt{Env: contended.Env, Scope: contended.Scope, RunID: "parent-late"}, mine)
	if !errors.Is(err, errs.LOCK_LOST) {
		t.Fatalf("Write after a takeover by another process: %v, want LOCK_LOST", err)
	}
	if _, err := s.Renew(ctx, mine); !errors.Is(err, errs.LOCK_LOST) {
		t.Fatalf("Renew after a takeover by another process: %v, want LOCK_LOST", err)
	}
	if err := s.Release(ctx, mine); err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Read(ctx, contended.Env, contended.Scope)
	if err != nil || r.RunID != "child" || r.LockPreempted == nil || r.LockPreempted.Holder != "parent" {
		t.Fatalf("stored receipt = %+v, %v; want the child's, recording the preempted lease", r, err)
	}
	if l, err := s.Lease(ctx, contended); err != nil || l == nil || !l.Same(child.Lease) {
		t.Fatalf("stored lease = %+v, %v; want the child's", l, err)
	}
}

// TestLayout pins the on-disk layout the design fixes, so the local and git
// stores stay readable by the same eyes.
func TestLayout(t *testing.T) {
	root := filepath.Join(t.TempDir(), "receipts")
	ctx := context.Background()
	clock := clock.NewFake(time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC))
	s := localstore.New(root, clock)
	if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read created the root (%v): reading must never write", err)
	}
	l, _, err := s.Acquire(ctx, receipt.ScopeTarget("preview", "feat/x"), receipt.Owner{RunID: "r1"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, &receipt.Receipt{Env: "preview", Scope: "feat/x", RunID: "r1"}, l); err != nil {
		t.Fatal(err)
	}
	identity := "auth0:example.eu.auth0.com:client:AbCd123"
	if _, _, err := s.Acquire(ctx, receipt.ParentTarget(identity), receipt.Owner{RunID: "r1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"preview/feat%2Fx/receipt.json",
		"preview/feat%2Fx/lock.json",
		"preview/feat%2Fx/generation",
		"preview/feat%2Fx/history/run-r1.json",
		"_locks/" + receipt.ParentLockID(identity) + "/lock.json",
	} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			t.Errorf("layout: %v", err)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "_locks", receipt.ParentLockID(identity), "lock.json"))
	if err != nil || !strings.Contains(string(data), identity) {
		t.Errorf("the parent lock does not record its identity in clear: %s", data)
	}
	data, _ = os.ReadFile(filepath.Join(root, "preview/feat%2Fx/receipt.json"))
	if !bytes.HasSuffix(data, []byte("}\n")) || !bytes.Contains(data, []byte("\n  \"version\": 1,")) {
		t.Errorf("receipt.json is not pretty-printed with a trailing newline:\n%s", data)
	}
	// Stray files and temporaries in the tree are not scopes.
	os.WriteFile(filepath.Join(root, "preview", ".tmp-123"), nil, 0o644)
	os.MkdirAll(filepath.Join(root, "preview", "%41"), 0o755) // not canonical: "A" is spelled "A"
	os.WriteFile(filepath.Join(root, "preview", "%41", "receipt.json"), []byte("{}"), 0o644)
	scopes, err := s.Scopes(ctx)
	if err != nil || len(scopes) != 1 || scopes[0].Scope != "feat/x" {
		t.Errorf("Scopes = %+v, %v", scopes, err)
	}
	if list, err := s.List(ctx, "preview"); err != nil || len(list) != 1 {
		t.Errorf("List = %+v, %v", list, err)
	}
}

// TestCorruptLockFile: a lock.json that does not parse blocks the target
// with a coded error naming the escape hatch, and ForceRelease removes it.
func TestCorruptLockFile(t *testing.T) {
	root := filepath.Join(t.TempDir(), "receipts")
	ctx := context.Background()
	s := localstore.New(root, clock.NewFake(time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)))
	target := receipt.ScopeTarget("preview", "pr-1")
	if err := os.MkdirAll(s.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.Dir(target), "lock.json"), []byte("{garbage"), 0o644)
	_, _, err := s.Acquire(ctx, target, receipt.Owner{RunID: "r1"}, time.Minute)
	if !errors.Is(err, errs.RECEIPT_CORRUPT) || !strings.Contains(errs.As(err).HintText(), "sponson unlock preview pr-1") {
		t.Fatalf("Acquire over a corrupt lock.json: %v", err)
	}
	if _, err := s.ForceRelease(ctx, target, "corrupt lock file", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(ctx, target, receipt.Owner{RunID: "r1"}, time.Minute); err != nil {
		t.Fatalf("Acquire after ForceRelease of a corrupt lock: %v", err)
	}
}
