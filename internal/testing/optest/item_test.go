package optest_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

func TestItemRoundTrip(t *testing.T) {
	c := optest.New()
	op := c.ItemOp()
	const url = "https://pr-1.example.dev:443/cb"
	key := optest.ItemKey("p1", "callbacks", url)
	c.SeedItem("p1", "callbacks", "https://prod.example.dev/cb")
	req := itemReq("callbacks", url)

	if got := op.LockOn(req.Params, req.Provider); got != "fake:p1:list:callbacks" {
		t.Fatalf("LockOn = %q", got)
	}
	if got := op.LockOn(req.Params, nil); got != "fake:default:list:callbacks" {
		t.Fatalf("LockOn without project = %q", got)
	}
	res, d, in := apply(t, op, req)
	if d.Action != adapter.Create || d.Key != key || d.Desired != url {
		t.Fatalf("diff = %+v", d)
	}
	if !slices.Equal(in.got(), []string{key}) || !slices.Equal(res.Created, []string{key}) {
		t.Fatalf("intended %v created %v", in.got(), res.Created)
	}
	r := res.Resources[0]
	if r.Key != key || r.ID != "" || r.Value != url || r.Outputs["item"] != url || res.Outputs["item"] != url {
		t.Fatalf("resource = %+v", r)
	}
	if got := c.List("p1", "callbacks"); !slices.Equal(got, []string{"https://prod.example.dev/cb", url}) {
		t.Fatalf("list = %v", got)
	}
	wantWrites(t, c, w(optest.OpItem, "create", key))

	// Unchanged: zero writes.
	c.ResetWrites()
	c.ResetCalls()
	_, d, in = apply(t, op, req)
	if d.Action != adapter.Unchanged || len(in.got()) != 0 {
		t.Fatalf("second apply: diff %+v intended %v", d, in.got())
	}
	wantWrites(t, c)
	if calls := c.Calls(); len(calls) != 1 || calls["fake.item.read"] != 1 {
		t.Fatalf("calls = %v", calls)
	}

	// Lookup, destroy, destroy again; the seeded entry is untouched.
	got, err := op.Lookup(bg, nil, adapter.RunCtx{}, key)
	if err != nil || got == nil || got.Value != url {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
	if err := op.Destroy(bg, nil, adapter.RunCtx{}, *got); err != nil {
		t.Fatal(err)
	}
	if err := op.Destroy(bg, nil, adapter.RunCtx{}, *got); err != nil {
		t.Fatalf("destroy of a gone item: %v", err)
	}
	wantWrites(t, c, w(optest.OpItem, "delete", key))
	if got, err := op.Lookup(bg, nil, adapter.RunCtx{}, key); got != nil || err != nil {
		t.Fatalf("Lookup after destroy = %+v, %v", got, err)
	}
	seed := optest.ItemKey("p1", "callbacks", "https://prod.example.dev/cb")
	if keys := c.Keys(); !slices.Equal(keys, []string{seed}) || !c.IsSeeded(seed) {
		t.Fatalf("keys = %v, seeded %v", keys, c.IsSeeded(seed))
	}

	_, err = op.Lookup(bg, nil, adapter.RunCtx{}, "object:p1:x")
	wantCode(t, err, errs.PARAM_INVALID)
}

func TestItemListScope(t *testing.T) {
	c := optest.New()
	op := c.ItemOp()
	for _, it := range []string{"https://pr-1.x/cb", "https://pr-2.x/cb", "https://prod.x/cb"} {
		c.AddItem("p1", "cb", it)
	}
	c.AddItem("p1", "other", "https://pr-1.x/cb")
	req := itemReq("cb", "https://pr-1.x/cb")
	req.Params["prefix"] = "https://pr-"
	rs, err := op.ListScope(bg, req)
	if err != nil || len(rs) != 2 || rs[0].Key != optest.ItemKey("p1", "cb", "https://pr-1.x/cb") || rs[1].Value != "https://pr-2.x/cb" {
		t.Fatalf("ListScope = %+v, %v", rs, err)
	}
	delete(req.Params, "prefix")
	if rs, err := op.ListScope(bg, req); err != nil || len(rs) != 3 {
		t.Fatalf("ListScope(all) = %+v, %v", rs, err)
	}
}

// TestLostEntriesWithoutParentLock is the control case of I9: writers of
// one list that do not hold the parent lock lose each other's entries; the
// same writers serialised by a lock (standing in for the engine's parent
// lease, which re-inspects under it) lose none.
func TestLostEntriesWithoutParentLock(t *testing.T) {
	const writers = 8
	run := func(lock *sync.Mutex, round int) (lost int) {
		c := optest.New()
		c.SetLatency(optest.OpItem, 2*time.Millisecond)
		op := c.ItemOp()
		start := make(chan struct{})
		var wg sync.WaitGroup
		errc := make(chan error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := itemReq("callbacks", "https://pr-"+string(rune('a'+i))+".example.dev/cb")
				<-start
				if lock != nil {
					lock.Lock()
					defer lock.Unlock()
				}
				live, err := op.Read(bg, req)
				if err == nil {
					_, err = op.Apply(bg, req, live, (&intents{}).intend)
				}
				errc <- err
			}()
		}
		close(start)
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if n := len(c.Writes()); n != writers {
			t.Fatalf("round %d: %d writes, want %d (every writer believed it wrote)", round, n, writers)
		}
		return writers - len(c.List("p1", "callbacks"))
	}

	lossy := 0
	for round := range 10 {
		if run(nil, round) > 0 {
			lossy++
			break
		}
	}
	if lossy == 0 {
		t.Fatal("no entry was lost without a lock in 10 rounds: the read-modify-write window does not work")
	}
	var mu sync.Mutex
	for round := range 3 {
		if lost := run(&mu, round); lost != 0 {
			t.Fatalf("round %d: %d entries lost under the lock", round, lost)
		}
	}
}
