package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/gittest"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

// gitWorld is a world whose store is the git store on a real remote
// (file://): the store that implements receipt.Sessions.
func gitWorld(t *testing.T) (*world, *gitstore.Store, string) {
	t.Helper()
	w := newWorld(t)
	w.env["API_KEY"] = theSecret
	dir, url := gittest.NewBareRepo(t)
	gs, err := gitstore.New(context.Background(), gitstore.Options{URL: url, Clock: w.tm})
	if err != nil {
		t.Fatal(err)
	}
	w.eng = w.engine(gs)
	return w, gs, dir
}

// subjects are the subjects of the scope branch's commits, newest first.
func subjects(t *testing.T, dir, ref string) []string {
	t.Helper()
	out := gittest.Run(t, dir, "log", "--format=%s", "refs/heads/sponson-receipts/"+ref)
	return strings.Split(strings.TrimSpace(out), "\n")
}

// A run that writes nothing to a provider takes no lease: its receipt is
// one commit, conditional on the version it read. A run that writes takes
// the lease on the version it read and ends with one commit that writes
// the receipt and releases the lease.
func TestSessionCommits(t *testing.T) {
	w, gs, dir := gitWorld(t)
	p := mustPlan(t, basicPlan)
	w.mustApply(p, prCtx(12), Options{})
	first := subjects(t, dir, "preview/pr-12")
	if !strings.HasPrefix(first[0], "apply preview/pr-12 ") || !strings.HasPrefix(first[len(first)-1], "acquire ") {
		t.Fatalf("the first apply's commits: %q", first)
	}
	for _, s := range first {
		if strings.HasPrefix(s, "release ") {
			t.Errorf("a separate release commit: %q", first)
		}
	}
	res := w.mustApply(p, prCtx(12), Options{})
	if res.Receipt.Status != receipt.StatusComplete {
		t.Fatalf("steady apply: %s", res.Receipt.Status)
	}
	after := subjects(t, dir, "preview/pr-12")
	if added := len(after) - len(first); added != 1 || !strings.HasPrefix(after[0], "apply preview/pr-12 "+res.Receipt.RunID+" complete") {
		t.Fatalf("a no-op apply added %d commits: %q", added, after[:len(after)-len(first)])
	}
	if l, err := gs.Lease(context.Background(), receipt.ScopeTarget("preview", "pr-12")); err != nil || l != nil {
		t.Fatalf("lease after the apply: %v, %v", l, err)
	}
	hist, err := gs.History(context.Background(), receipt.ScopeTarget("preview", "pr-12"))
	if err != nil || len(hist) != 2 || hist[1].RunID != res.Receipt.RunID {
		t.Fatalf("History = %+v, %v", hist, err)
	}
}

// interloper is the git store with another run's write slipped in between
// the run's read (View) and its acquire: the run must read again, and what
// the other run recorded must survive.
type interloper struct {
	*gitstore.Store
	once func()
}

func (s *interloper) AcquireAt(ctx context.Context, t receipt.Target, o receipt.Owner, ttl time.Duration, v receipt.Version) (receipt.Lease, *receipt.Lease, error) {
	if s.once != nil {
		f := s.once
		s.once = nil
		f()
	}
	return s.Store.AcquireAt(ctx, t, o, ttl, v)
}

func (s *interloper) WriteAt(ctx context.Context, r *receipt.Receipt, v receipt.Version) error {
	if s.once != nil {
		f := s.once
		s.once = nil
		f()
	}
	return s.Store.WriteAt(ctx, r, v)
}

func TestSessionScopeMovedAfterTheRead(t *testing.T) {
	for _, steady := range []bool{true, false} {
		name := map[bool]string{true: "no-op run", false: "run that writes"}[steady]
		t.Run(name, func(t *testing.T) {
			w, gs, _ := gitWorld(t)
			ctx := context.Background()
			w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{})
			target := receipt.ScopeTarget("preview", "pr-12")
			other, err := gitstore.New(ctx, gitstore.Options{URL: gs.URL(), Clock: w.tm})
			if err != nil {
				t.Fatal(err)
			}
			const extra = "object:p1:left-by-another-run"
			st := &interloper{Store: gs, once: func() {
				l, _, err := other.Acquire(ctx, target, receipt.Owner{RunID: "other"}, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				r, _, _ := other.Read(ctx, "preview", "pr-12")
				r.RunID = "other"
				r.Ledger = append(r.Ledger, receipt.LedgerEntry{Adapter: "fake", Op: "object", Provider: map[string]any{"project": "p1"},
					Key: extra, ID: "x1", CreatedBy: receipt.CreatedBySponson, Line: "gone"})
				if err := other.WriteRelease(ctx, r, l); err != nil {
					t.Fatal(err)
				}
			}}
			w.eng = w.engine(st)
			src := basicPlan
			if !steady {
				src = strings.Replace(src, "fields: { size: 1 }", "fields: { size: 2 }", 1)
			}
			res := w.mustApply(mustPlan(t, src), prCtx(12), Options{})
			if st.once != nil {
				t.Fatal("vacuous: the other run never wrote")
			}
			if res.Receipt.Status != receipt.StatusComplete {
				t.Fatalf("status %s", res.Receipt.Status)
			}
			stored, _, err := gs.Read(ctx, "preview", "pr-12")
			if err != nil || stored.RunID != res.Receipt.RunID {
				t.Fatalf("stored receipt %v, %v", stored, err)
			}
			if !slices.ContainsFunc(stored.Ledger, func(e receipt.LedgerEntry) bool { return e.Key == extra }) {
				t.Fatalf("the other run's entry was lost: %v", ledgerKeys(stored))
			}
		})
	}
}
