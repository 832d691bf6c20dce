// Package simtest is the world the adapters' tests run in: the fake cloud
// (pkg/sim) served on a loopback port, the environment it gives the
// adapters (base URLs, tokens), and a shared HTTP client whose retries and
// polls never sleep for real.
//
// Only tests import it: the adapters themselves never import the fake cloud
// (an API misunderstanding written twice would never be caught).
package simtest

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/sim"
)

// World is one fake cloud and what an adapter needs to reach it.
type World struct {
	Cloud  *sim.Cloud
	Env    map[string]string
	Client *httpclient.Client
}

// New serves a fake cloud for the test's lifetime. The test fails for
// every request the cloud receives that the provider's description does
// not allow (sim.Cloud.CheckDescriptions).
func New(t testing.TB, opts sim.Options) *World {
	t.Helper()
	c := sim.New(opts)
	c.CheckDescriptions(t)
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	w := &World{Cloud: c, Env: map[string]string{}}
	for _, kv := range c.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		w.Env[k] = v
	}
	w.Client = httpclient.New(httpclient.Config{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	return w
}

// With is the world's environment with changes; a change to "" unsets.
func (w *World) With(changes map[string]string) httpclient.Env {
	return func(k string) (string, bool) {
		if v, ok := changes[k]; ok {
			return v, v != ""
		}
		v, ok := w.Env[k]
		return v, ok
	}
}

// Lookup is the world's environment unchanged.
func (w *World) Lookup(k string) (string, bool) { return w.With(nil)(k) }

// Writes counts the writes the fake cloud has received.
func (w *World) Writes() int { return len(w.Cloud.Writes()) }

// GoneOp is what ParentGone needs of an op.
type GoneOp interface {
	Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error)
	Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, res adapter.Resource) error
}

// ParentGone checks that a resource whose parent (a project, a site) was
// deleted behind Sponson's back is gone, not an error that blocks the
// scope's teardown for ever: Lookup finds nothing, Destroy succeeds, and
// nothing is written to the cloud.
func (w *World) ParentGone(t testing.TB, op GoneOp, gone adapter.Provider, res adapter.Resource) {
	t.Helper()
	got, err := op.Lookup(context.Background(), gone, adapter.RunCtx{}, res.Key)
	if err != nil || got != nil {
		t.Fatalf("Lookup under a deleted parent (%v) = %+v, %v; want nil, nil", gone, got, err)
	}
	before := w.Writes()
	if err := op.Destroy(context.Background(), gone, adapter.RunCtx{}, res); err != nil {
		t.Fatalf("Destroy under a deleted parent (%v): %v", gone, err)
	}
	if n := w.Writes() - before; n != 0 {
		t.Errorf("%d writes under a deleted parent", n)
	}
}
