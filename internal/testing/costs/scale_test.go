package costs_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

// scaleSizes are the numbers of other scope branches (each with as many
// parent-lock branches) the plan-at-scale benchmark runs at.
var scaleSizes = []int{0, 5000}

// BenchmarkPlanAtBranches is `sponson plan` of a steady scope (pr-1, the
// 20-line plan) when the receipts remote also holds n other scopes of the
// environment and n parent-lock branches (2n more refs in the ref
// advertisement): issue 11's "plan at 5,000 scope branches vs at 1".
//
//	go test ./internal/testing/costs -run '^$' -bench PlanAtBranches -benchtime 10x -count 5
func BenchmarkPlanAtBranches(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("branches=%d", n+1), func(b *testing.B) {
			w := newWorld(b, plan20)
			w.run("apply", "--pr", "1")
			seedScopes(b, w, n)
			w.run("plan", "--pr", "1") // warm the server's caches, as every later run finds them
			g0 := len(w.git.Log())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.run("plan", "--pr", "1")
			}
			b.StopTimer()
			b.ReportMetric(float64(len(w.git.Log())-g0)/float64(b.N), "git-requests/op")
		})
	}
}

// TestPlanAtManyBranches: a plan of a steady scope makes as many git
// requests at 1,001 scope branches (and 1,000 lock branches) as at two
// (five in protocol v2: the capabilities, then ls-refs and a fetch for
// each read).
// Its first packfile holds one tip, its own; its unmanaged drift meets
// pr-2's callbacks on the shared list (pr-1's URLs with pr-2 in place of
// pr-1) and reads pr-2's receipt alone to name their owner: one more
// request of one tip, whatever the number of scopes. A plan that declares
// another scope's resource reads the whole environment instead, in one
// request (and, in protocol v2, an ls-refs of the environment).
func TestPlanAtManyBranches(t *testing.T) {
	t.Parallel()
	w, parent := planWorld(t)
	wants := w.countWants()
	w.run("apply", "--pr", "1")
	w.run("apply", "--pr", "2")
	wants.take()
	alone := w.measure("plan", "--pr", "1")
	aloneWants := wants.take()

	seedScopes(t, w, 1000)
	many := w.measure("plan", "--pr", "1")
	manyWants := wants.take()
	if many.git != alone.git || many.git > 5 {
		t.Errorf("plan: %d git requests at 1,002 scopes, %d at 2, want the same and at most 5:\n  %s", many.git, alone.git, strings.Join(many.gitLog, "\n  "))
	}
	if !slices.Equal(manyWants, []int{1, 1}) || !slices.Equal(aloneWants, []int{1, 1}) {
		t.Errorf("plan's packfile requests asked for %v at 1,002 scopes and %v at 2, want [1 1]: the scope's own tip, then pr-2's", manyWants, aloneWants)
	}

	// A steady apply: the floor's five requests (protocol v2: the
	// capabilities, ls-refs, one fetch, the push's listing and the push),
	// one tip.
	steady := w.measure("apply", "--pr", "1")
	if got := wants.take(); steady.git > 5 || !slices.Equal(got, []int{1}) {
		t.Errorf("steady apply at 1,002 scopes: %d git requests asking for %v tips, want at most 5 and [1]:\n  %s", steady.git, got, strings.Join(steady.gitLog, "\n  "))
	}

	// pr-2's plan declares an entry of pr-1's on the shared parent: the
	// other scopes are all read, once, to name its owner, in place of the
	// one scope read above (ls-refs of the environment and its packfile).
	shared := strings.Replace(plan20(parent), `item: "https://${ctx.scope}.example.dev/cb0"`, `item: "https://pr-1.example.dev/cb0"`, 1)
	w.writePlan(shared)
	meets := w.measure("plan", "--pr", "2")
	if got := wants.take(); meets.git != many.git || len(got) != 2 || got[0] != 1 || got[1] < 1000 {
		t.Errorf("a plan meeting another scope's entry: %d git requests asking for %v tips, want %d: its own tip, then the environment's:\n  %s",
			meets.git, got, many.git, strings.Join(meets.gitLog, "\n  "))
	}
}

// seedScopes adds n scope branches (pr-1001, pr-1002, ...) to the world's
// receipts remote, each a copy of pr-1's receipt with its keys renamed,
// and n parent-lock branches, in one `git fast-import`, then packs the
// refs as a hosting service keeps them.
func seedScopes(tb testing.TB, w *world, n int) {
	tb.Helper()
	seedScopesFrom(tb, w, 1001, n)
}

// seedScopesFrom is seedScopes of pr-<first>, pr-<first+1>, ...
func seedScopesFrom(tb testing.TB, w *world, first, n int) {
	tb.Helper()
	if n == 0 {
		return
	}
	ctx := context.Background()
	gs, err := gitstore.New(ctx, gitstore.Options{URL: gittest.FileURL(w.dir)})
	if err != nil {
		tb.Fatal(err)
	}
	base, _, err := gs.Read(ctx, "preview", "pr-1")
	if err != nil || base == nil {
		tb.Fatalf("read pr-1: %v, %v", base, err)
	}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Unix()
	var in bytes.Buffer
	commit := func(ref string, files map[string][]byte) {
		msg := "seed " + ref
		fmt.Fprintf(&in, "commit %s\ncommitter seed <seed@example.invalid> %d +0000\ndata %d\n%s\n", ref, at, len(msg), msg)
		for name, data := range files {
			fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", name, len(data), data)
		}
		in.WriteString("\n")
	}
	// One receipt encoded with a placeholder for the scope, copied for
	// each: encoding 10,000 receipts was most of the setup's time.
	const slot = "SEEDSCOPE"
	r, err := base.Clone()
	if err != nil {
		tb.Fatal(err)
	}
	r.Scope, r.RunID = slot, "seed-"+slot
	for j := range r.Ledger {
		r.Ledger[j].Key = strings.ReplaceAll(r.Ledger[j].Key, "pr-1", slot)
		r.Ledger[j].ID = fmt.Sprintf("seed-%s-%d", slot, j)
	}
	tmpl, err := receipt.Encode(r)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		sc := fmt.Sprintf("pr-%d", first+i)
		data := bytes.ReplaceAll(tmpl, []byte(slot), []byte(sc))
		commit(gitstore.RefPrefix+receipt.ScopeTarget("preview", sc).Key(), map[string][]byte{receipt.ReceiptFile: data})
		lock := fmt.Sprintf("%x", sha256.Sum256([]byte(sc)))[:32]
		commit(gitstore.RefPrefix+receipt.LocksDir+"/"+lock, map[string][]byte{"README.md": []byte("seed lock\n")})
	}
	gittest.RunInput(tb, w.dir, in.Bytes(), "fast-import", "--quiet")
	gittest.Run(tb, w.dir, "pack-refs", "--all")
}

// wantCounter is a proxy in front of the world's git server that records,
// for every packfile request (POST git-upload-pack), how many tips it
// asks for.
type wantCounter struct {
	mu    sync.Mutex
	wants []int
}

// countWants puts a wantCounter between the CLI and the git server.
func (w *world) countWants() *wantCounter {
	w.tb.Helper()
	target, err := url.Parse(w.git.URL)
	if err != nil {
		w.tb.Fatal(err)
	}
	c := &wantCounter{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			text := body
			if r.Header.Get("Content-Encoding") == "gzip" {
				if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
					text, _ = io.ReadAll(zr)
				}
			}
			// A protocol v2 ls-refs asks for no objects: only packfile
			// requests are counted.
			if !bytes.Contains(text, []byte("command=ls-refs")) {
				c.mu.Lock()
				c.wants = append(c.wants, bytes.Count(text, []byte("want ")))
				c.mu.Unlock()
			}
		}
		proxy.ServeHTTP(rw, r)
	}))
	w.tb.Cleanup(srv.Close)
	w.vars["SPONSON_RECEIPTS_REMOTE"] = srv.URL + target.Path
	return c
}

// take returns the tips asked for by each packfile request since the last
// take.
func (c *wantCounter) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.wants
	c.wants = nil
	return out
}

// planWorld is a world with the 20-line plan, and the id of its shared
// parent object.
func planWorld(tb testing.TB) (*world, string) {
	var parent string
	w := newWorld(tb, func(p string) string { parent = p; return plan20(p) })
	return w, parent
}

// writePlan replaces the world's plan file.
func (w *world) writePlan(src string) {
	w.tb.Helper()
	if err := os.WriteFile(filepath.Join(w.workDir, "release.plan.yaml"), []byte(src), 0o644); err != nil {
		w.tb.Fatal(err)
	}
}

// BenchmarkStoreAtBranches is the receipts remote's part of that plan: a
// new store (New: the one ref advertisement, which carries every ref) and
// then the scope's read (ViewScope: one packfile request for its tip), at
// the same numbers of branches. What a plan at many branches costs more
// than at one is here.
//
//	go test ./internal/testing/costs -run '^$' -bench StoreAtBranches -benchtime 10x -count 5
func BenchmarkStoreAtBranches(b *testing.B) {
	ctx := context.Background()
	for _, n := range scaleSizes {
		w := newWorld(b, plan20)
		w.run("apply", "--pr", "1")
		seedScopes(b, w, n)
		b.Run(fmt.Sprintf("branches=%d/New", n+1), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := gitstore.New(ctx, gitstore.Options{URL: w.git.URL}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("branches=%d/NewViewScope", n+1), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s, err := gitstore.New(ctx, gitstore.Options{URL: w.git.URL})
				if err != nil {
					b.Fatal(err)
				}
				if v, err := s.ViewScope(ctx, "preview", "pr-1", nil); err != nil || v.Receipt == nil {
					b.Fatalf("ViewScope: %v", err)
				}
			}
		})
	}
}
