package optest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

var bg = context.Background()

func objReq(params map[string]any) adapter.Request {
	return adapter.Request{Line: "obj", Params: params, Provider: adapter.Provider{"project": "p1"}, Run: adapter.RunCtx{Env: "preview", Scope: "pr-1"}}
}

func itemReq(list, item string) adapter.Request {
	return adapter.Request{Line: "cb", Params: map[string]any{"list": list, "item": item}, Provider: adapter.Provider{"project": "p1"}, Run: adapter.RunCtx{Env: "preview", Scope: "pr-1"}}
}

// intents records what Apply declared, in order, and can fail.
type intents struct {
	mu   sync.Mutex
	keys []string
	err  error
}

func (i *intents) intend(keys ...string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.err != nil {
		return i.err
	}
	i.keys = append(i.keys, keys...)
	return nil
}

func (i *intents) got() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.keys)
}

// inspect is Read then Diff, failing the test on error.
func inspect(t *testing.T, op adapter.Op, req adapter.Request) (*adapter.Live, adapter.ResourceDiff) {
	t.Helper()
	live, err := op.Read(bg, req)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	ds, err := op.Diff(live, req)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	if len(ds) != 1 {
		t.Fatalf("Diff returned %d diffs, want 1", len(ds))
	}
	return live, ds[0]
}

// apply is Read, Diff, Apply with a recording intend.
func apply(t *testing.T, op adapter.Op, req adapter.Request) (*adapter.Result, adapter.ResourceDiff, *intents) {
	t.Helper()
	live, d := inspect(t, op, req)
	in := &intents{}
	res, err := op.Apply(bg, req, live, in.intend)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res, d, in
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", code)
	}
	if !errors.Is(err, code) {
		t.Fatalf("err = %v, want code %s", err, code)
	}
}

func wantWrites(t *testing.T, c *optest.Cloud, want ...optest.Write) {
	t.Helper()
	if got := c.Writes(); !slices.Equal(got, want) {
		t.Fatalf("writes:\n got  %+v\n want %+v", got, want)
	}
}

func w(op, method, key string) optest.Write { return optest.Write{Op: op, Method: method, Key: key} }
