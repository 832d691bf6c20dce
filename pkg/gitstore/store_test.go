package gitstore

import (
	"context"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/receipttest"
)

var _ receipt.Store = (*Store)(nil)

// transports are the two real remotes every behaviour is tested over:
// file:// (git's own receive-pack run as a process) and smart HTTP on
// 127.0.0.1 (git's own upload-pack and receive-pack behind gittest's
// handler; the conformance suite goes through `git http-backend` itself).
var transports = []string{"file", "http"}

// remote is one test remote: the bare repository and the URL to reach it.
type remote struct {
	dir, url string
	srv      *gittest.Server // nil for file://
}

func newRemote(t testing.TB, transport string, opts ...gittest.Option) remote {
	t.Helper()
	dir, fileURL := gittest.NewBareRepo(t)
	if transport == "file" {
		return remote{dir: dir, url: fileURL}
	}
	srv := gittest.Serve(t, dir, opts...)
	return remote{dir: dir, url: srv.URL, srv: srv}
}

func newStore(t testing.TB, url string, clock clock.Clock, mods ...func(*Options)) *Store {
	t.Helper()
	opts := Options{URL: url, Clock: clock}
	for _, m := range mods {
		m(&opts)
	}
	s, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New(%s): %v", url, err)
	}
	return s
}

// plant stores raw bytes as env/scope's receipt.json, bypassing the
// encoder and the lease (a commit someone else made).
func plant(t *testing.T, st receipt.Store, env, scope string, raw []byte) {
	t.Helper()
	s := st.(*Store)
	target := receipt.ScopeTarget(env, scope)
	_, err := s.cas.update(context.Background(), "plant", []plumbing.ReferenceName{refOf(target)}, func([]*tipState) ([]*edit, error) {
		return []*edit{{set: map[string][]byte{receipt.ReceiptFile: raw}, subject: "plant " + target.Key(), run: "plant"}}, nil
	})
	if err != nil {
		t.Fatalf("plant %s: %v", target, err)
	}
}

// racerRounds is how many rounds the suite's racing goroutines run.
func racerRounds() int {
	if testing.Short() {
		return 2
	}
	return 5
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			receipttest.Run(t, func(t *testing.T, clock *clock.Fake) receipt.Store {
				// Once, the whole contract against git's own HTTP
				// server, CGI and all; every other HTTP test runs the
				// same git services without the CGI process.
				r := newRemote(t, tr, gittest.WithHTTPBackend())
				s := newStore(t, r.url, clock)
				t.Cleanup(func() {
					if !t.Failed() {
						gittest.Fsck(t, r.dir)
					}
				})
				return s
			}, receipttest.WithPlant(plant), receipttest.WithRacers(8, racerRounds()))
		})
	}
}

// copyRemote is a copy of fixture's repository, reached over transport
// (as newRemote).
func copyRemote(t testing.TB, fixture *gittest.Fixture, transport string, opts ...gittest.Option) remote {
	t.Helper()
	dir, fileURL := fixture.Copy(t)
	if transport == "file" {
		return remote{dir: dir, url: fileURL}
	}
	srv := gittest.Serve(t, dir, opts...)
	return remote{dir: dir, url: srv.URL, srv: srv}
}

// twoScopes is a remote where a store wrote preview/pr-1 and preview/pr-2:
// for each a lease, a receipt, the release.
var twoScopes = gittest.NewFixture("two scopes", func(t gittest.TB, dir string) {
	writeScopes(t, dir, false, "pr-1", "pr-2")
})

// writeScopes writes a receipt (run "run-<scope>", one ledger key
// "k-<scope>") for each scope of preview into the bare repository dir with
// a Store, under a lease of a minute on the system clock, as a run does:
// the release a commit of its own, or in one with the receipt (together).
func writeScopes(t gittest.TB, dir string, together bool, scopes ...string) {
	t.Helper()
	ctx := context.Background()
	s, err := New(ctx, Options{URL: gittest.FileURL(dir), Clock: clock.System{}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, scope := range scopes {
		l, _, err := s.Acquire(ctx, receipt.ScopeTarget("preview", scope), owner("run-"+scope), time.Minute)
		if err != nil {
			t.Fatalf("Acquire %s: %v", scope, err)
		}
		r := newReceipt("preview", scope, "run-"+scope, "k-"+scope)
		if together {
			err = s.WriteRelease(ctx, r, l)
		} else if err = s.Write(ctx, r, l); err == nil {
			err = s.Release(ctx, l)
		}
		if err != nil {
			t.Fatalf("write %s: %v", scope, err)
		}
	}
}
