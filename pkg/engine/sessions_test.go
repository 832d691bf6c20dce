package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
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
	t.Parallel()
	w, gs, dir := gitWorld(t)
	p := mustPlan(t, basicPlan)
	w.mustApply(p, prCtx(12), Options{})
	first := subjects(t, dir, "preview/pr-12")
	if !strings.HasPrefix(first[0], "apply preview/pr-12 ") {
		t.Fatalf("the first apply's commits: %q", first)
	}
	for _, s := range first {
		if strings.HasPrefix(s, "release ") || strings.HasPrefix(s, "acquire ") {
			t.Errorf("a separate lease commit: %q", first)
		}
	}
	// The oldest commit took the lease with the first checkpoint.
	root := strings.TrimSpace(gittest.Run(t, dir, "rev-list", "--max-parents=0", "refs/heads/sponson-receipts/preview/pr-12"))
	if body := gittest.Run(t, dir, "log", "-1", "--format=%B", root); !strings.HasPrefix(body, "apply preview/pr-12 ") || !strings.Contains(body, "Sponson-Lease: acquire") {
		t.Errorf("the first commit is not the lease and a checkpoint: %q", body)
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

func (s *interloper) AcquireAtWith(ctx context.Context, t receipt.Target, o receipt.Owner, ttl time.Duration, v receipt.Version, r *receipt.Receipt) (receipt.Lease, *receipt.Lease, error) {
	if s.once != nil {
		f := s.once
		s.once = nil
		f()
	}
	return s.Store.AcquireAtWith(ctx, t, o, ttl, v, r)
}

// sessionStore is the git store without receipt.WriteAcquirer: a run
// takes its lease and writes its first checkpoint in two commits.
type sessionStore interface {
	receipt.Store
	receipt.Sessions
	receipt.ScopeViewer
	receipt.Provenance
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
	t.Parallel()
	for _, tc := range []struct {
		name                    string
		steady, create, combine bool
	}{
		{"no-op run", true, false, true},
		{"run that writes", false, false, true},
		{"run that creates", false, true, true},
		{"run that writes, lease and checkpoint apart", false, false, false},
	} {
		steady := tc.steady
		t.Run(tc.name, func(t *testing.T) {
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
			if !tc.combine {
				w.eng = w.engine(struct{ sessionStore }{st})
			}
			src := basicPlan
			switch {
			case tc.create:
				src += "  - { id: more, adapter: fake, op: object, name: \"more-${ctx.scope}\", fields: { size: 3 } }\n"
			case !steady:
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
			if tc.create && !slices.ContainsFunc(stored.Ledger, func(e receipt.LedgerEntry) bool {
				return e.Line == "more" && e.CreatedBy == receipt.CreatedBySponson
			}) {
				t.Fatalf("the created line is not recorded: %v", ledgerKeys(stored))
			}
		})
	}
}

// objectsPlan is n independent fake objects, o0..o(n-1), each of size
// size, named on the scope.
func objectsPlan(n, size int) string {
	var b strings.Builder
	b.WriteString("version: 1\nproviders:\n  fake: { project: p1 }\nchanges:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - { id: o%d, adapter: fake, op: object, name: \"o%d-${ctx.scope}\", fields: { size: %d } }\n", i, i, size)
	}
	return b.String()
}

// intentsAt is the number of intents in the receipt of commit c.
func intentsAt(t *testing.T, dir, c string) int {
	t.Helper()
	r, err := receipt.Decode([]byte(gittest.Run(t, dir, "show", c+":receipt.json")))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, en := range r.Ledger {
		if en.CreatedBy == receipt.CreatedByIntent {
			n++
		}
	}
	return n
}

// A run from nothing takes the scope lease with its first wave's intents
// in one commit, and ends with the final receipt and the release in one:
// two commits, whichever way its lines reach their first write — a create
// (its intent), or an update (the lease alone) in the same wave.
func TestSessionFirstWaveIsOneCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		before  string // applied first, if not ""
		plan    string
		intents int
	}{
		{"creates", "", objectsPlan(6, 1), 6},
		{"an update and creates", objectsPlan(1, 1), objectsPlan(6, 2), 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _, dir := gitWorld(t)
			ref := "refs/heads/sponson-receipts/preview/pr-12"
			before := 0
			if tc.before != "" {
				w.mustApply(mustPlan(t, tc.before), prCtx(12), Options{})
				before = len(subjects(t, dir, "preview/pr-12"))
			}
			res := w.mustApply(mustPlan(t, tc.plan), prCtx(12), Options{Parallelism: 8})
			if res.Receipt.Status != receipt.StatusComplete {
				t.Fatalf("status %s", res.Receipt.Status)
			}
			got := subjects(t, dir, "preview/pr-12")
			if added := len(got) - before; added != 2 {
				t.Fatalf("the run added %d commits, want 2 (the lease with the intents, the receipt with the release): %q", added, got)
			}
			first := strings.TrimSpace(gittest.Run(t, dir, "rev-parse", ref+"~1"))
			if body := gittest.Run(t, dir, "log", "-1", "--format=%B", first); !strings.Contains(body, "Sponson-Lease: acquire") {
				t.Errorf("the run's first commit did not take the lease: %q", body)
			}
			if n := intentsAt(t, dir, first); n != tc.intents {
				t.Errorf("the lease's commit holds %d intents, want %d", n, tc.intents)
			}
			if n := intentsAt(t, dir, ref); n != 0 {
				t.Errorf("the final receipt holds %d intents", n)
			}
		})
	}
}

// lostFirstAnswer is the git store whose first AcquireAtWith lands but
// answers as if the connection broke.
type lostFirstAnswer struct {
	*gitstore.Store
	lost bool
}

func (s *lostFirstAnswer) AcquireAtWith(ctx context.Context, t receipt.Target, o receipt.Owner, ttl time.Duration, v receipt.Version, r *receipt.Receipt) (receipt.Lease, *receipt.Lease, error) {
	l, pre, err := s.Store.AcquireAtWith(ctx, t, o, ttl, v, r)
	if err == nil && !s.lost {
		s.lost = true
		return receipt.Lease{}, nil, errs.New(errs.STORE_UNAVAILABLE, "push: connection reset")
	}
	return l, pre, err
}

// The lease and the intents landed, the answer did not: the run cannot
// tell, starts again lease first on a fresh read, finds the lease its own
// and its intents recorded, and creates each object once.
func TestSessionLostAnswerOfTheLeaseCommit(t *testing.T) {
	t.Parallel()
	w, gs, _ := gitWorld(t)
	st := &lostFirstAnswer{Store: gs}
	w.eng = w.engine(st)
	res := w.mustApply(mustPlan(t, objectsPlan(3, 1)), prCtx(12), Options{})
	if !st.lost {
		t.Fatal("vacuous: no answer was lost")
	}
	if res.Receipt.Status != receipt.StatusComplete {
		t.Fatalf("status %s", res.Receipt.Status)
	}
	creates := map[string]int{}
	for _, wr := range w.cloud.Writes() {
		if !wr.Failed {
			creates[wr.Method+" "+wr.Key]++
		}
	}
	if len(creates) != 3 {
		t.Errorf("writes to the cloud: %v, want the 3 creates", creates)
	}
	for k, n := range creates {
		if n != 1 {
			t.Errorf("%s sent %d times", k, n)
		}
	}
	if l, err := gs.Lease(context.Background(), receipt.ScopeTarget("preview", "pr-12")); err != nil || l != nil {
		t.Fatalf("lease after the apply: %v, %v", l, err)
	}
	for _, en := range res.Receipt.Ledger {
		if en.CreatedBy != receipt.CreatedBySponson {
			t.Errorf("%s is %s", en.Key, en.CreatedBy)
		}
	}
}

// writeFirst is the fake object op whose Apply sends a write before its
// intent (adapter.BeforeWrite, as httpclient does) and records whether the
// scope lease was stored when that write went.
type writeFirst struct {
	*optest.ObjectOp
	store  receipt.Store
	target receipt.Target
	mu     sync.Mutex
	leased []bool
}

func (o *writeFirst) Apply(ctx context.Context, req adapter.Request, live *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	if err := adapter.BeforeWrite(ctx, "PATCH"); err != nil {
		return nil, err
	}
	l, err := o.store.Lease(ctx, o.target)
	o.mu.Lock()
	o.leased = append(o.leased, err == nil && l != nil)
	o.mu.Unlock()
	return o.ObjectOp.Apply(ctx, req, live, intend)
}

// A line whose diffs are all creates takes the scope lease with its
// intents; should its op write anything before its intent, that write
// waits for the lease all the same.
func TestSessionWriteBeforeTheIntentWaitsForTheLease(t *testing.T) {
	t.Parallel()
	w, gs, _ := gitWorld(t)
	op := &writeFirst{ObjectOp: w.cloud.ObjectOp(), store: gs, target: receipt.ScopeTarget("preview", "pr-12")}
	w.eng.Ops = adapter.NewRegistry(op, w.cloud.ItemOp())
	res := w.mustApply(mustPlan(t, objectsPlan(3, 1)), prCtx(12), Options{})
	if res.Receipt.Status != receipt.StatusComplete {
		t.Fatalf("status %s", res.Receipt.Status)
	}
	if len(op.leased) != 3 || slices.Contains(op.leased, false) {
		t.Fatalf("the lease was stored at the early writes: %v, want it at all 3", op.leased)
	}
}
