package optest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

func TestFailNext(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	key := optest.ObjectKey("p1", "web")
	req := objReq(map[string]any{"name": "web"})

	// Default error, n = 2, only creates: the read passes, two creates fail
	// without effect, the third succeeds.
	c.FailNext(optest.Match{Op: optest.OpObject, Method: "create"}, nil, 2)
	live, _ := inspect(t, op, req)
	for i := range 2 {
		_, err := op.Apply(bg, req, live, nil)
		wantCode(t, err, errs.PROVIDER_TRANSIENT)
		if c.Exists(key) {
			t.Fatalf("failed create %d took effect", i)
		}
	}
	if _, err := op.Apply(bg, req, live, nil); err != nil {
		t.Fatalf("third create: %v", err)
	}
	failed := optest.Write{Op: optest.OpObject, Method: "create", Key: key, Failed: true}
	wantWrites(t, c, failed, failed, w(optest.OpObject, "create", key))

	// A given error, matched by key only: another key is not affected.
	auth := errs.New(errs.PROVIDER_AUTH, "token refused")
	c.FailNext(optest.Match{Key: key}, auth, 1)
	if _, err := op.Read(bg, objReq(map[string]any{"name": "other"})); err != nil {
		t.Fatalf("another key failed: %v", err)
	}
	_, err := op.Read(bg, req)
	if !errors.Is(err, auth) {
		t.Fatalf("err = %v, want the given error", err)
	}
	if _, err := op.Read(bg, req); err != nil {
		t.Fatalf("fault not consumed: %v", err)
	}

	// Method and op matching: an item fault never fires on objects; a
	// lookup fault only on lookups; n = 0 is nothing.
	c.FailNext(optest.Match{Op: optest.OpItem}, nil, 1)
	c.FailNext(optest.Match{Method: "lookup"}, nil, 1)
	c.FailNext(optest.Match{}, nil, 0)
	if _, err := op.Read(bg, req); err != nil {
		t.Fatalf("item or lookup fault fired on an object read: %v", err)
	}
	_, err = op.Lookup(bg, nil, adapter.RunCtx{}, key)
	wantCode(t, err, errs.PROVIDER_TRANSIENT)
	_, err = c.ItemOp().Read(bg, itemReq("l", "i"))
	wantCode(t, err, errs.PROVIDER_TRANSIENT)
	if _, err := c.ItemOp().Read(bg, itemReq("l", "i")); err != nil {
		t.Fatal(err)
	}
}

func TestFailNextConcurrentIsExact(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	c.FailNext(optest.Match{Method: "read"}, nil, 10)
	var failed atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := op.Read(bg, objReq(map[string]any{"name": fmt.Sprint("o", i)})); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 10 {
		t.Fatalf("%d reads failed, want exactly 10", failed.Load())
	}
	if c.Calls()["fake.object.read"] != 50 {
		t.Fatalf("calls = %v", c.Calls())
	}
}

func TestLoseResponse(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	key := optest.ObjectKey("p1", "web")
	req := objReq(map[string]any{"name": "web"})

	c.LoseResponse(optest.Match{Op: optest.OpObject})
	live, _ := inspect(t, op, req) // a read is never matched
	in := &intents{}
	_, err := op.Apply(bg, req, live, in.intend)
	wantCode(t, err, errs.PROVIDER_TIMEOUT)
	if !slices.Equal(in.got(), []string{key}) {
		t.Fatalf("intended %v", in.got())
	}
	got, err := op.Lookup(bg, nil, adapter.RunCtx{}, key)
	if err != nil || got == nil {
		t.Fatalf("the create did not happen: %+v, %v", got, err)
	}
	wantWrites(t, c, w(optest.OpObject, "create", key))

	// Consumed: the next write answers.
	if err := op.Destroy(bg, nil, adapter.RunCtx{}, *got); err != nil {
		t.Fatal(err)
	}

	// Items: the PUT lands, the answer is lost.
	c.LoseResponse(optest.Match{Op: optest.OpItem, Method: "create"})
	_, err = c.ItemOp().Apply(bg, itemReq("cb", "x"), nil, nil)
	wantCode(t, err, errs.PROVIDER_TIMEOUT)
	if !slices.Equal(c.List("p1", "cb"), []string{"x"}) {
		t.Fatalf("list = %v", c.List("p1", "cb"))
	}
}

func TestOnCall(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	key := optest.ObjectKey("p1", "web")
	req := objReq(map[string]any{"name": "web"})

	// A hook that does nothing lets the call through, once.
	n := 0
	c.OnCall(optest.Match{Op: optest.OpObject, Method: "read"}, func() { n++ })
	inspect(t, op, req)
	inspect(t, op, req)
	if n != 1 {
		t.Fatalf("hook ran %d times, want 1", n)
	}

	// A hook that cancels the context stops the create before it leaves.
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	c.OnCall(optest.Match{Method: "create", Key: key}, cancel)
	live, _ := inspect(t, op, req)
	in := &intents{}
	_, err := op.Apply(ctx, req, live, in.intend)
	wantCode(t, err, errs.PROVIDER_TIMEOUT)
	if !errors.Is(err, context.Canceled) || c.Exists(key) || len(c.Writes()) != 0 || len(in.got()) != 1 {
		t.Fatalf("err %v, exists %v, writes %v, intents %v", err, c.Exists(key), c.Writes(), in.got())
	}

	// A panicking hook (a process crash) propagates with no state change.
	c.OnCall(optest.Match{Method: "create"}, func() { panic("crash") })
	func() {
		defer func() {
			if r := recover(); r != "crash" {
				t.Fatalf("recovered %v", r)
			}
		}()
		_, _ = op.Apply(bg, req, live, nil)
		t.Fatal("no panic")
	}()
	if c.Exists(key) {
		t.Fatal("create took effect despite the crash")
	}
	// The cloud is still usable (no lock held).
	if _, err := op.Apply(bg, req, live, nil); err != nil || !c.Exists(key) {
		t.Fatalf("after the crash: %v", err)
	}
}

func TestCrashAndCrashAfter(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	key := optest.ObjectKey("p1", "web")
	req := objReq(map[string]any{"name": "web"})
	live, _ := inspect(t, op, req)

	ran := false
	c.Crash(optest.Match{Method: "create"}, func() { ran = true })
	_, err := op.Apply(bg, req, live, nil)
	wantCode(t, err, errs.PROVIDER_TIMEOUT)
	if !ran || !errors.Is(err, context.Canceled) || c.Exists(key) || len(c.Writes()) != 0 {
		t.Fatalf("Crash: ran %v, err %v, exists %v, writes %v", ran, err, c.Exists(key), c.Writes())
	}

	ran = false
	c.CrashAfter(optest.Match{Method: "create"}, func() { ran = !c.Exists(key) })
	_, err = op.Apply(bg, req, live, nil)
	wantCode(t, err, errs.PROVIDER_TIMEOUT)
	if ran || !errors.Is(err, context.Canceled) || !c.Exists(key) {
		t.Fatalf("CrashAfter: fn before effect %v, err %v, exists %v", ran, err, c.Exists(key))
	}
	wantWrites(t, c, w(optest.OpObject, "create", key))

	// CrashAfter never matches a read; nil fn is allowed.
	c.CrashAfter(optest.Match{}, nil)
	inspect(t, op, req)
	got, _ := op.Lookup(bg, nil, adapter.RunCtx{}, key)
	err = op.Destroy(bg, nil, adapter.RunCtx{}, *got)
	if !errors.Is(err, context.Canceled) || c.Exists(key) {
		t.Fatalf("CrashAfter on delete: %v, exists %v", err, c.Exists(key))
	}
}

func TestLatency(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	c.SetLatency(optest.OpObject, 5*time.Millisecond)
	req := objReq(map[string]any{"name": "web"})

	start := time.Now()
	live, _ := inspect(t, op, req)
	if d := time.Since(start); d >= 5*time.Millisecond {
		t.Logf("a read took %v (latency applies to writes only; slow machine?)", d)
	}
	start = time.Now()
	if _, err := op.Apply(bg, req, live, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 5*time.Millisecond {
		t.Fatalf("create took %v, want at least the 5ms latency", d)
	}

	// A context that ends during the latency: the write is not sent.
	c.SetLatency(optest.OpItem, time.Hour)
	ctx, cancel := context.WithTimeout(bg, 5*time.Millisecond)
	defer cancel()
	_, err := c.ItemOp().Apply(ctx, itemReq("cb", "x"), nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || len(c.List("p1", "cb")) != 0 {
		t.Fatalf("err %v, list %v", err, c.List("p1", "cb"))
	}
	c.ClearFaults()
	if _, err := c.ItemOp().Apply(bg, itemReq("cb", "x"), nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestDrift(t *testing.T) {
	c := optest.New()
	op := c.ObjectOp()
	key := optest.ObjectKey("p1", "web")
	req := objReq(map[string]any{"name": "web", "fields": map[string]any{"a": 1}})
	res, _, _ := apply(t, op, req)
	id := res.Resources[0].ID
	c.ResetWrites()

	// Edit: new value, same id.
	if err := c.Edit(key, map[string]any{"a": 9, "b": true}); err != nil {
		t.Fatal(err)
	}
	live, d := inspect(t, op, req)
	if live.Resources[0].ID != id || d.Action != adapter.Update || adapter.Equal(live.Resources[0].Value, res.Resources[0].Value) {
		t.Fatalf("after Edit: live %+v diff %+v", live.Resources[0], d)
	}
	if err := c.Edit(key, map[string]any{"a": 1, "b": nil}); err != nil {
		t.Fatal(err)
	}
	if _, d = inspect(t, op, req); d.Action != adapter.Unchanged {
		t.Fatalf("edit back: %+v", d)
	}

	// Recreate: same key and value, new id, seeded; a destroy of the old id
	// leaves it alone (I5).
	if err := c.Recreate(key); err != nil {
		t.Fatal(err)
	}
	live, d = inspect(t, op, req)
	if r := live.Resources[0]; r.ID == id || !adapter.Equal(r.Value, res.Resources[0].Value) || d.Action != adapter.Unchanged || !c.IsSeeded(key) {
		t.Fatalf("after Recreate: %+v %+v seeded %v", r, d, c.IsSeeded(key))
	}
	if err := op.Destroy(bg, nil, adapter.RunCtx{}, res.Resources[0]); err != nil || !c.Exists(key) {
		t.Fatalf("destroy by the old id: %v, exists %v", err, c.Exists(key))
	}
	wantWrites(t, c)

	// Delete: missing.
	if err := c.Delete(key); err != nil {
		t.Fatal(err)
	}
	if _, d = inspect(t, op, req); d.Action != adapter.Create {
		t.Fatalf("after Delete: %+v", d)
	}
	wantCode(t, c.Delete(key), errs.PROVIDER_NOT_FOUND)
	wantCode(t, c.Edit(key, nil), errs.PROVIDER_NOT_FOUND)
	wantCode(t, c.Recreate(key), errs.PROVIDER_NOT_FOUND)

	// Items behind the engine's back.
	iop := c.ItemOp()
	ireq := itemReq("cb", "x")
	apply(t, iop, ireq)
	if err := c.RemoveItem("p1", "cb", "x"); err != nil {
		t.Fatal(err)
	}
	if _, d = inspect(t, iop, ireq); d.Action != adapter.Create {
		t.Fatalf("after RemoveItem: %+v", d)
	}
	c.AddItem("p1", "cb", "x")
	if _, d = inspect(t, iop, ireq); d.Action != adapter.Unchanged || !c.IsSeeded(optest.ItemKey("p1", "cb", "x")) {
		t.Fatalf("after AddItem: %+v", d)
	}
	wantCode(t, c.RemoveItem("p1", "cb", "nope"), errs.PROVIDER_NOT_FOUND)
	if got := c.Writes(); len(got) != 1 {
		t.Fatalf("drift was logged as writes: %v", got)
	}
}

func TestSeedAndInspection(t *testing.T) {
	c := optest.New()
	fields := map[string]any{"a": []any{1}}
	o := c.SeedObject("p1", "legacy", fields, map[string]any{"region": "eu"})
	fields["a"].([]any)[0] = 2 // the cloud holds a copy
	got, ok := c.Object("p1", "legacy")
	if !ok || !got.Seeded || got.ID != o.ID || !adapter.Equal(got.Fields, map[string]any{"a": []any{1}}) || len(got.Token) < 16 {
		t.Fatalf("Object = %+v", got)
	}
	got.Fields["a"] = "mutated" // and hands out copies
	if again, _ := c.Object("p1", "legacy"); !adapter.Equal(again.Fields, map[string]any{"a": []any{1}}) {
		t.Fatal("Object shares state with the cloud")
	}
	c.SeedItem("p1", "cb", "https://a")
	if _, err := c.ObjectOp().Apply(bg, objReq(map[string]any{"name": "mine"}), nil, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"item:p1:cb:https://a", "object:p1:legacy", "object:p1:mine"}
	if keys := c.Keys(); !slices.Equal(keys, want) {
		t.Fatalf("Keys = %v, want %v", keys, want)
	}
	objs := c.Objects()
	if len(objs) != 2 || objs[0].Name != "legacy" || objs[1].Seeded || objs[0].Token == objs[1].Token {
		t.Fatalf("Objects = %+v", objs)
	}
	if c.IsSeeded("object:p1:mine") || !c.IsSeeded("item:p1:cb:https://a") || c.IsSeeded("item:p1:cb:nope") {
		t.Fatal("IsSeeded is wrong")
	}
	// Adopting a seeded object writes nothing when it already matches.
	c.ResetWrites()
	_, d, _ := apply(t, c.ObjectOp(), objReq(map[string]any{"name": "legacy", "fields": map[string]any{"a": []any{1}}, "create_only": map[string]any{"region": "eu"}}))
	if d.Action != adapter.Unchanged {
		t.Fatalf("adoption diff = %+v", d)
	}
	wantWrites(t, c)
}

// TestConcurrentScopes runs many scopes' lines, faults and drift at once;
// its value is under -race.
func TestConcurrentScopes(t *testing.T) {
	c := optest.New()
	c.SetLatency(optest.OpObject, time.Millisecond)
	c.FailNext(optest.Match{Method: "update"}, nil, 3)
	c.LoseResponse(optest.Match{Method: "create"})
	var wg sync.WaitGroup
	for s := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("pr-%d", s)
			for round := range 3 {
				oreq := objReq(map[string]any{"name": name, "fields": map[string]any{"round": round}, "deploy": true})
				if live, err := c.ObjectOp().Read(bg, oreq); err == nil {
					_, _ = c.ObjectOp().Apply(bg, oreq, live, nil)
				}
				_, _ = c.ItemOp().Apply(bg, itemReq(name, "https://"+name), nil, nil)
				_ = c.Deploy(optest.ObjectKey("p1", name), optest.DeployReady)
				_, _ = c.ObjectOp().AwaitExternal(bg, oreq, nil)
				_ = c.Edit(optest.ObjectKey("p1", name), map[string]any{"x": round})
				_ = c.Keys()
				_ = c.Objects()
				_ = c.Writes()
				_ = c.Calls()
			}
		}()
	}
	wg.Wait()
	if n := len(c.Objects()); n != 16 {
		t.Fatalf("%d objects, want 16", n)
	}
	var failed int
	for _, w := range c.Writes() {
		if w.Failed {
			failed++
		}
	}
	if failed != 3 {
		t.Fatalf("%d failed writes, want 3", failed)
	}
}
