package receipttest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/receipt/receipttest"
)

// A suite that cannot fail proves nothing. Each broken store below breaks
// one rule of the contract; the suite, run in a child process, must fail,
// and in the subtest that checks that rule.
const brokenEnv = "RECEIPTTEST_BROKEN"

type broken struct {
	receipt.Store
	how string
}

func (b broken) Write(ctx context.Context, r *receipt.Receipt, l receipt.Lease) error {
	err := b.Store.Write(ctx, r, l)
	if b.how == "unfenced" && errors.Is(err, errs.LOCK_LOST) && r != nil {
		// Write anyway, as a store that only locks acquisition would.
		b.Store.ForceRelease(ctx, l.Target, "broken", "broken")
		nl, _, aerr := b.Store.Acquire(ctx, l.Target, receipt.Owner{RunID: l.Holder}, time.Hour)
		if aerr != nil {
			return aerr
		}
		return b.Store.Write(ctx, r, nl)
	}
	return err
}

func (b broken) Release(ctx context.Context, l receipt.Lease) error {
	if b.how == "release-anyones" {
		_, err := b.Store.ForceRelease(ctx, l.Target, "broken", "broken")
		return err
	}
	return b.Store.Release(ctx, l)
}

func (b broken) Acquire(ctx context.Context, t receipt.Target, o receipt.Owner, ttl time.Duration) (receipt.Lease, *receipt.Lease, error) {
	l, pre, err := b.Store.Acquire(ctx, t, o, ttl)
	switch b.how {
	case "no-preempted":
		pre = nil
	case "reentrant":
		if held, ok := receipt.HeldLease(err); ok && held.Holder == o.RunID {
			return held, nil, nil
		}
	case "bare-held":
		if errors.Is(err, errs.LOCK_HELD) {
			return l, pre, errs.New(errs.LOCK_HELD, "held")
		}
	}
	return l, pre, err
}

func (b broken) Renew(ctx context.Context, l receipt.Lease) (receipt.Lease, error) {
	if b.how == "renew-noop" {
		return l, nil
	}
	return b.Store.Renew(ctx, l)
}

func (b broken) List(ctx context.Context, env string) ([]receipt.Stored, error) {
	out, err := b.Store.List(ctx, env)
	if b.how == "list-prefix" && err == nil {
		more, _ := b.Store.List(ctx, env+"-2")
		out = append(out, more...)
	}
	return out, err
}

func TestBrokenStore(t *testing.T) {
	how := os.Getenv(brokenEnv)
	if how == "" {
		t.Skip("run by TestSuiteFailsOnBrokenStores in a child process")
	}
	receipttest.Run(t, func(t *testing.T, clock *clock.Fake) receipt.Store {
		return broken{Store: memstore.New(clock), how: how}
	})
}

func TestSuiteFailsOnBrokenStores(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip()
	}
	cases := map[string][]string{
		"unfenced":        {"ExpiredTakeoverFencesOldHolder", "WriteWithoutLease", "WriteRacesTakeover"},
		"release-anyones": {"ReleaseByNonHolderIsNoop", "ExpiredTakeoverFencesOldHolder"},
		"no-preempted":    {"ExpiryBoundary", "ExpiredTakeoverFencesOldHolder"},
		"reentrant":       {"NotReentrant"},
		"bare-held":       {"AcquireHeldRelease"},
		"renew-noop":      {"RenewExtends"},
		"list-prefix":     {"ListIsPerEnvironment"},
	}
	for how, subtests := range cases {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			// Only the subtests expected to fail run: the rest of the
			// suite has nothing to prove here and would only cost time.
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStore$/^("+strings.Join(subtests, "|")+")$", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+how)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store that is broken (%s):\n%s", how, out)
			}
			for _, st := range subtests {
				if !strings.Contains(string(out), "--- FAIL: TestBrokenStore/"+st+" ") {
					t.Errorf("broken store %q: subtest %s did not fail\n%s", how, st, out)
				}
			}
		})
	}
}

// The memory store's fault hooks, which engine tests build on.
func TestMemstoreFaults(t *testing.T) {
	ctx := context.Background()
	clock := clock.NewFake(receipttest.Start)
	s := memstore.New(clock)
	target := receipt.ScopeTarget("preview", "pr-1")
	l, _, err := s.Acquire(ctx, target, receipt.Owner{RunID: "r1"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := &receipt.Receipt{Env: "preview", Scope: "pr-1", RunID: "r1"}

	unavailable := errs.New(errs.STORE_UNAVAILABLE, "injected")
	s.Inject(memstore.Fault{Method: memstore.MethodWrite, Err: unavailable})
	if err := s.Write(ctx, r, l); !errors.Is(err, errs.STORE_UNAVAILABLE) {
		t.Fatalf("injected failure: %v", err)
	}
	if got, _, _ := s.Read(ctx, "preview", "pr-1"); got != nil {
		t.Fatal("a failed write took effect")
	}
	if err := s.Write(ctx, r, l); err != nil {
		t.Fatalf("the fault did not clear after one call: %v", err)
	}

	// A lost answer: the write lands, the caller hears a failure.
	r.Status = receipt.StatusComplete
	s.Inject(memstore.Fault{Method: memstore.MethodWrite, Err: unavailable, Lost: true})
	if err := s.Write(ctx, r, l); !errors.Is(err, errs.STORE_UNAVAILABLE) {
		t.Fatalf("lost answer: %v", err)
	}
	if got, _, _ := s.Read(ctx, "preview", "pr-1"); got == nil || got.Status != receipt.StatusComplete {
		t.Fatalf("the write whose answer was lost did not land: %+v", got)
	}

	// Skip, Times and Target.
	other := receipt.ScopeTarget("preview", "pr-2")
	s.Inject(memstore.Fault{Method: memstore.MethodRead, Target: &other, Err: unavailable, Skip: 1, Times: 2})
	results := []bool{}
	for i := 0; i < 4; i++ {
		_, _, err := s.Read(ctx, "preview", "pr-2")
		results = append(results, err != nil)
		if _, _, err := s.Read(ctx, "preview", "pr-1"); err != nil {
			t.Fatalf("a fault on pr-2 hit pr-1: %v", err)
		}
	}
	if want := []bool{false, true, true, false}; !equal(results, want) {
		t.Errorf("Read failures %v, want %v", results, want)
	}
	if n := s.Calls(memstore.MethodRead); n != 10 {
		t.Errorf("Calls(Read) = %d, want 10", n)
	}

	// A crash in the middle of a non-atomic succession.
	n := memstore.New(clock, memstore.NonAtomicMulti())
	if n.Capabilities().AtomicMulti {
		t.Fatal("NonAtomicMulti store claims atomic multi-writes")
	}
	a, _, _ := n.Acquire(ctx, target, receipt.Owner{RunID: "s"}, time.Minute)
	b, _, _ := n.Acquire(ctx, other, receipt.Owner{RunID: "s"}, time.Minute)
	n.Inject(memstore.Fault{Method: memstore.MethodWrite, Err: unavailable, Skip: 1})
	err = n.WriteMany(ctx, []receipt.Write{
		{Receipt: &receipt.Receipt{Env: "preview", Scope: "pr-1", RunID: "s"}, Lease: a},
		{Receipt: &receipt.Receipt{Env: "preview", Scope: "pr-2", RunID: "s"}, Lease: b},
	})
	if !errors.Is(err, errs.STORE_UNAVAILABLE) {
		t.Fatalf("WriteMany with a crash after one write: %v", err)
	}
	first, _, _ := n.Read(ctx, "preview", "pr-1")
	second, _, _ := n.Read(ctx, "preview", "pr-2")
	if first == nil || second != nil {
		t.Fatalf("after a crash part-way: first %v, second %v; want only the first written", first, second)
	}

	// Planted bytes surface as coded errors.
	s.Plant("preview", "pr-3", []byte(`{"version": 9}`))
	if _, _, err := s.Read(ctx, "preview", "pr-3"); !errors.Is(err, errs.RECEIPT_VERSION) {
		t.Errorf("planted newer receipt: %v", err)
	}
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
