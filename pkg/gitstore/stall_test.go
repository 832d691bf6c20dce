package gitstore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/errs"
)

// stalledRemote is a git HTTP server that accepts every request and never
// answers it, until the client gives up.
func stalledRemote(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/acme/shop.git"
}

// A remote that stops answering cannot hold a run: an exchange ends when
// the run is cancelled (INTERRUPTED), and on its own when the store's
// HTTP timeout runs out (STORE_UNAVAILABLE, named as a remote that stopped
// answering). The timeout is shortened here, which changes how long the
// test waits, never its verdict: the server never answers.
func TestStalledRemoteIsBounded(t *testing.T) {
	t.Parallel()
	url := stalledRemote(t)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := New(ctx, Options{URL: url})
		done <- err
	}()
	cancel()
	if err := <-done; errs.CodeOf(err) != errs.INTERRUPTED {
		t.Fatalf("a cancelled connect to a remote that never answers: %v (code %s), want INTERRUPTED", err, errs.CodeOf(err))
	}

	_, err := New(context.Background(), Options{URL: url, HTTPTimeout: 50 * time.Millisecond})
	if errs.CodeOf(err) != errs.STORE_UNAVAILABLE {
		t.Fatalf("a remote that never answers: %v (code %s), want STORE_UNAVAILABLE", err, errs.CodeOf(err))
	}
}

// The guard does not get in the way of a remote that answers: a store
// with a short timeout on a live remote reads and writes as any other.
func TestStallGuardPassesALiveRemote(t *testing.T) {
	t.Parallel()
	dir, _ := gittest.NewBareRepo(t)
	s, err := New(context.Background(), Options{URL: gittest.ServeHTTP(t, dir), HTTPTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(context.Background(), "preview"); err != nil {
		t.Fatal(err)
	}
}
