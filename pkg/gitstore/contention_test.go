package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	testparallel "github.com/sponson/apply/internal/testing/parallel"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// The helper-process pattern: the test binary re-executes itself with
// helperEnv set, and TestMain runs the helper instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	// The tests wait on git processes and servers, not on the CPU.
	testparallel.AtLeast(8)
	code := m.Run()
	gittest.RemoveFixtures()
	os.Exit(code)
}

// TestContention races nine writers — four goroutines with their own Store,
// three processes with a Store, and two git CLI writers pushing with
// --force-with-lease — on one scope branch and on one parent-lock branch,
// over file:// and over HTTP.
//
//   - Rounds: every writer makes one attempt at once; exactly one wins each
//     round, with a generation above every earlier one; the winner does its
//     update under the lease and releases it.
//   - Free-for-all: every writer takes the lease (retrying while held),
//     updates and releases, several times, all at once. Never two holders
//     at once; no update lost (every key in the receipt's ledger, every
//     increment of the counter that stands for a shared provider list).
//
// Afterwards every receipt in the branch's history parses (I6).
func TestContention(t *testing.T) {
	t.Parallel()
	rounds, loops := 6, 1
	if testing.Short() {
		rounds = 2
	}
	for _, tr := range transports {
		for _, target := range []receipt.Target{raceScope, raceParent} {
			kind := "scope"
			if target.IsParent() {
				kind = "parent"
			}
			t.Run(tr+"/"+kind, func(t *testing.T) {
				t.Parallel()
				rem := newRemote(t, tr)
				counter := filepath.Join(t.TempDir(), "counter")
				rs := racerSet(t, rem.url, target, counter, 4, 3, 2)
				var keys []string
				var last int64
				began := time.Now()

				for round := 0; round < rounds; round++ {
					var mu sync.Mutex
					var winners []racer
					var gens []int64
					parallel(rs, func(_ int, r racer) {
						won, gen, err := r.TryAcquire()
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							t.Errorf("round %d: %s: %v", round, r.Name(), err)
						}
						if won {
							winners = append(winners, r)
							gens = append(gens, gen)
						}
					})
					if t.Failed() {
						return
					}
					if len(winners) != 1 {
						names := []string{}
						for _, w := range winners {
							names = append(names, w.Name())
						}
						t.Fatalf("round %d: %d writers won the lease (%v), want exactly 1", round, len(winners), names)
					}
					if gens[0] <= last {
						t.Fatalf("round %d: generation %d after %d", round, gens[0], last)
					}
					last = gens[0]
					key := fmt.Sprintf("round%d-%s", round, winners[0].Name())
					if err := winners[0].Work(key); err != nil {
						t.Fatalf("round %d: %s: work: %v", round, winners[0].Name(), err)
					}
					keys = append(keys, key)
					if err := winners[0].Release(); err != nil {
						t.Fatalf("round %d: %s: release: %v", round, winners[0].Name(), err)
					}
				}

				t.Logf("%d rounds in %s", rounds, time.Since(began).Round(time.Millisecond))
				began = time.Now()
				var holders atomic.Int32
				var mu sync.Mutex
				grants := map[int64]string{}
				// Only a lock never released waits this long: the writers
				// give up a minute before the test binary's own timeout
				// (-timeout), so the failure names who waited, and never
				// because the machine is slow.
				deadline := time.Now().Add(time.Hour)
				if d, ok := t.Deadline(); ok {
					deadline = d.Add(-time.Minute)
				}
				parallel(rs, func(i int, r racer) {
					rnd := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
					// Held: wait 10 ms plus a full-jitter backoff that grows
					// to 400 ms, so eight waiting writers do not poll the
					// remote faster than the holder can finish.
					wait := clock.Backoff{Base: 10 * time.Millisecond, Max: 400 * time.Millisecond, Rand: rnd.Int64N}
					for n := 0; n < loops; n++ {
						var gen int64
						for tries := 1; ; tries++ {
							won, g, err := r.TryAcquire()
							if err != nil {
								t.Errorf("%s: %v", r.Name(), err)
								return
							}
							if won {
								gen = g
								break
							}
							if time.Now().After(deadline) {
								t.Errorf("%s: never got the lease", r.Name())
								return
							}
							time.Sleep(10*time.Millisecond + wait.Delay(tries))
						}
						if !holders.CompareAndSwap(0, 1) {
							t.Errorf("%s holds the lease (generation %d) while another writer does", r.Name(), gen)
							return
						}
						mu.Lock()
						if other, dup := grants[gen]; dup {
							t.Errorf("generation %d granted to %s and %s", gen, other, r.Name())
						}
						grants[gen] = r.Name()
						key := fmt.Sprintf("loop%d-%s", n, r.Name())
						keys = append(keys, key)
						mu.Unlock()
						if err := r.Work(key); err != nil {
							t.Errorf("%s: work: %v", r.Name(), err)
						}
						holders.Store(0)
						if err := r.Release(); err != nil {
							t.Errorf("%s: release: %v", r.Name(), err)
							return
						}
					}
				})
				if t.Failed() {
					return
				}

				t.Logf("%d racers × %d grants in %s", len(rs), loops, time.Since(began).Round(time.Millisecond))
				if target.IsParent() {
					data, _ := os.ReadFile(counter)
					if got := strings.TrimSpace(string(data)); got != strconv.Itoa(len(keys)) {
						t.Fatalf("the counter is %s after %d increments under the lease: an update was lost", got, len(keys))
					}
				} else {
					s := newStore(t, rem.url, nil)
					r, _, err := s.Read(context.Background(), target.Env, target.Scope)
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, e := range r.Ledger {
						got = append(got, e.Key)
					}
					sort.Strings(got)
					sort.Strings(keys)
					if strings.Join(got, " ") != strings.Join(keys, " ") {
						t.Fatalf("the ledger has %d entries, want %d: an update was lost or doubled\n got: %v\nwant: %v", len(got), len(keys), got, keys)
					}
				}
				walkHistory(t, rem.dir, refOf(target).String(), target)
				gittest.Fsck(t, rem.dir)
			})
		}
	}
}

// walkHistory checks every commit of ref: each receipt.json parses (I6) and
// each lock.json is a lease on target.
func walkHistory(t *testing.T, dir, ref string, target receipt.Target) {
	t.Helper()
	commits := strings.Fields(gittest.Run(t, dir, "rev-list", ref))
	if len(commits) == 0 {
		t.Fatalf("%s has no commits", ref)
	}
	var req strings.Builder
	for _, c := range commits {
		fmt.Fprintf(&req, "%s:%s\n%s:%s\n", c, receipt.ReceiptFile, c, receipt.LockFile)
	}
	out := gittest.RunInput(t, dir, []byte(req.String()), "cat-file", "--batch")
	rd := bufio.NewReader(strings.NewReader(out))
	receipts, leases := 0, 0
	for i := 0; i < 2*len(commits); i++ {
		header, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("cat-file --batch: %v", err)
		}
		f := strings.Fields(header)
		if len(f) == 2 && f[1] == "missing" {
			continue
		}
		size, _ := strconv.Atoi(f[2])
		body := make([]byte, size+1)
		if _, err := io.ReadFull(rd, body); err != nil {
			t.Fatalf("cat-file --batch: %v", err)
		}
		body = body[:size]
		if i%2 == 0 {
			if _, err := receipt.Decode(body); err != nil {
				t.Errorf("commit %s: receipt.json does not parse: %v", commits[i/2], err)
			}
			receipts++
		} else {
			var l receipt.Lease
			if err := json.Unmarshal(body, &l); err != nil || l.Target != target {
				t.Errorf("commit %s: lock.json = %s (%v)", commits[i/2], body, err)
			}
			leases++
		}
	}
	if !target.IsParent() && receipts == 0 || leases == 0 {
		t.Errorf("%s: %d commits, %d receipts, %d leases", ref, len(commits), receipts, leases)
	}
}

// TestFencingAfterTakeover: a process whose clock is past this process's
// lease takes it over and writes; from then on this process's writes,
// renewals and release are refused or ignored, and a git CLI writer holding
// the old lease refuses to write too (I10).
func TestFencingAfterTakeover(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rem := newRemote(t, tr)
			target := receipt.ScopeTarget("preview", "pr-8")
			s := newStore(t, rem.url, nil)
			a, _, err := s.Acquire(ctx, target, owner("parent"), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(ctx, newReceipt("preview", "pr-8", "parent", "a"), a); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=takeover", "RACER_URL="+rem.url,
				"TAKEOVER_NOW="+time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339Nano))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("takeover process: %v\n%s", err, out)
			}
			var child struct {
				Lease     receipt.Lease
				Preempted *receipt.Lease
			}
			if err := json.Unmarshal(bytes.TrimSpace(out), &child); err != nil {
				t.Fatalf("takeover process said %q: %v", out, err)
			}
			if child.Preempted == nil || !child.Preempted.Same(a) || child.Lease.Generation <= a.Generation {
				t.Fatalf("takeover: %+v, preempted %+v; want to preempt %+v", child.Lease, child.Preempted, a)
			}

			err = s.Write(ctx, newReceipt("preview", "pr-8", "parent", "a", "late"), a)
			e := wantCode(t, err, errs.LOCK_LOST, "Write by the preempted holder")
			if cur, ok := e.Details["current"].(receipt.Lease); !ok || !cur.Same(child.Lease) {
				t.Errorf("LOCK_LOST names %+v as current, want %+v", e.Details["current"], child.Lease)
			}
			_, err = s.Renew(ctx, a)
			wantCode(t, err, errs.LOCK_LOST, "Renew by the preempted holder")
			if err := s.Release(ctx, a); err != nil {
				t.Fatalf("Release by the preempted holder: %v, want a no-op", err)
			}
			cli := newCLIRacer(t, "cli-stale", rem.url, target, "")
			cli.lease = a
			if err := cli.Work("cli-late"); err == nil || !strings.Contains(err.Error(), "lease lost") {
				t.Fatalf("a git CLI writer with the old lease wrote: %v", err)
			}
			r, _, err := s.Read(ctx, "preview", "pr-8")
			if err != nil || r.RunID != "child" || len(r.Ledger) != 1 || r.LockPreempted == nil {
				t.Fatalf("stored receipt = %+v, %v; want the child's", r, err)
			}
			if l, err := s.Lease(ctx, target); err != nil || l == nil || !l.Same(child.Lease) {
				t.Fatalf("stored lease = %+v, %v", l, err)
			}
			walkHistory(t, rem.dir, refOf(target).String(), target)
		})
	}
}

// takeoverMain is the child of TestFencingAfterTakeover: its clock says
// TAKEOVER_NOW.
func takeoverMain() int {
	at, err := time.Parse(time.RFC3339Nano, os.Getenv("TAKEOVER_NOW"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	s, err := New(ctx, Options{URL: os.Getenv("RACER_URL"), Clock: clock.NewFake(at)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	target := receipt.ScopeTarget("preview", "pr-8")
	l, pre, err := s.Acquire(ctx, target, receipt.Owner{RunID: "child", Kind: receipt.KindBot, PID: os.Getpid()}, time.Hour)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acquire:", err)
		return 2
	}
	prev, _, err := s.Read(ctx, target.Env, target.Scope)
	if err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		return 2
	}
	r := newReceipt(target.Env, target.Scope, "child", "a")
	r.LockPreempted = pre
	if prev == nil || len(prev.Ledger) != 1 {
		fmt.Fprintln(os.Stderr, "the preempted holder's receipt is not there:", prev)
		return 2
	}
	if err := s.Write(ctx, r, l); err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		return 2
	}
	out, _ := json.Marshal(struct {
		Lease     receipt.Lease
		Preempted *receipt.Lease
	}{l, pre})
	fmt.Println(string(out))
	return 0
}
