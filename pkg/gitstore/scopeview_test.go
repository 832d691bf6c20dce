package gitstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/receipt"
)

var _ receipt.ScopeViewer = (*Store)(nil)

// scopesOf is the scope names of a listing, with the version of each.
func scopesOf(stored []receipt.Stored) map[string]receipt.Version {
	out := map[string]receipt.Version{}
	for _, s := range stored {
		out[s.Scope] = s.Version
	}
	return out
}

// ViewScope reads the scope and the scopes it names, whatever the number
// of other scopes; its Rest is List(env) as of the same listing: over
// HTTP one packfile request and no listing of its own.
func TestViewScopeReadsTheScopeAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rem := newRemote(t, "http", gittest.WithProtocolV0()) // v2's counts: protocol_test.go
	seed(t, rem.dir, "preview", 200, true)
	want, err := newStore(t, rem.url, nil).List(ctx, "preview")
	if err != nil || len(want) != 200 {
		t.Fatalf("List: %d, %v", len(want), err)
	}
	s := newStore(t, rem.url, nil)
	before := rem.srv.Requests()
	v, err := s.ViewScope(ctx, "preview", "pr-1", []string{"pr-2", "pr-404"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rem.srv.Requests() - before; got != 1 {
		t.Errorf("ViewScope as the first operation: %d requests, want 1 (New's listing): %v", got, rem.srv.Log()[before:])
	}
	if v.Receipt == nil || v.Receipt.Scope != "pr-1" || len(v.Others) != 1 || v.Others[0].Scope != "pr-2" || v.Rest == nil {
		t.Fatalf("ViewScope = receipt %v, others %v, rest %v", v.Receipt != nil, scopesOf(v.Others), v.Rest != nil)
	}
	before = rem.srv.Requests()
	all, err := v.Rest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := rem.srv.Requests() - before; got != 1 {
		t.Errorf("Rest: %d requests, want 1 (the packfile; the listing is the View's): %v", got, rem.srv.Log()[before:])
	}
	if got, exp := scopesOf(all), scopesOf(want); fmt.Sprint(got) != fmt.Sprint(exp) {
		t.Errorf("Rest = %v, want List's %v", got, exp)
	}
}

// Rest is as of the View's listing: a scope written since keeps the
// version the View listed, and a branch deleted since (its tip no longer
// served) makes Rest list the refs again.
func TestViewScopeRestIsAsOfTheView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			rem := newRemote(t, tr, gittest.WithProtocolV0()) // in v2 Rest lists anew (protocol_test.go)
			seed(t, rem.dir, "preview", 5, false)
			s := newStore(t, rem.url, nil)
			v, err := s.ViewScope(ctx, "preview", "pr-1", nil)
			if err != nil || len(v.Others) != 0 {
				t.Fatalf("ViewScope: %v others, %v", v, err)
			}
			listed, err := newStore(t, rem.url, nil).List(ctx, "preview")
			if err != nil {
				t.Fatal(err)
			}
			old := scopesOf(listed)["pr-3"]
			w := newStore(t, rem.url, nil)
			l := mustLease(t, w, receipt.ScopeTarget("preview", "pr-3"), "later", time.Minute)
			if err := w.WriteRelease(ctx, newReceipt("preview", "pr-3", "later"), l); err != nil {
				t.Fatal(err)
			}
			all, err := v.Rest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := scopesOf(all)
			if len(got) != 5 {
				t.Fatalf("Rest = %v", got)
			}
			if tr == "http" && got["pr-3"] != old {
				t.Errorf("Rest over HTTP: pr-3 at %s, want %s (the View's listing)", got["pr-3"], old)
			}

			// A new store: nothing of the other scopes in its memory.
			v, err = newStore(t, rem.url, nil).ViewScope(ctx, "preview", "pr-1", nil)
			if err != nil {
				t.Fatal(err)
			}
			gittest.Run(t, rem.dir, "update-ref", "-d", RefPrefix+"preview/pr-4")
			gittest.Run(t, rem.dir, "gc", "--prune=now", "--quiet")
			if all, err = v.Rest(ctx); err != nil {
				t.Fatalf("Rest after a branch was deleted: %v", err)
			}
			if got := scopesOf(all); len(got) != 4 {
				t.Errorf("Rest after pr-4 was deleted = %v", got)
			}
		})
	}
}
