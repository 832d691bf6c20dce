package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

// restCounter is the git store counting how often a run reads the rest of
// the environment (View.Rest), or making that read fail.
type restCounter struct {
	*gitstore.Store
	rests atomic.Int64
	fail  error
}

func (s *restCounter) ViewScope(ctx context.Context, env, sc string, also []string) (*receipt.View, error) {
	v, err := s.Store.ViewScope(ctx, env, sc, also)
	if err != nil || v.Rest == nil {
		return v, err
	}
	rest := v.Rest
	v.Rest = func(ctx context.Context) ([]receipt.Stored, error) {
		s.rests.Add(1)
		if s.fail != nil {
			return nil, s.fail
		}
		return rest(ctx)
	}
	return v, nil
}

// ownersWorld is a git-store world whose engine counts the reads of the
// other scopes.
func ownersWorld(t *testing.T) (*world, *restCounter) {
	t.Helper()
	w, gs, _ := gitWorld(t)
	rc := &restCounter{Store: gs}
	w.eng = w.engine(rc)
	return w, rc
}

const ownObjectPlan = `
version: 1
providers:
  fake: { project: p1 }
changes:
  - { id: db, adapter: fake, op: object, name: "db-${ctx.scope}", prefix: "db-${ctx.scope}", fields: { size: 1 } }
  - { id: cb, adapter: fake, op: item, list: callbacks, item: "https://${ctx.scope}.example", prefix: "https://${ctx.scope}." }
`

// A plan of a steady scope, and one whose resources do not exist yet,
// read nothing of the other scopes; a steady apply neither. (The lines
// list what they could own by the scope's prefix: what other scopes made
// under the same prefix would be met by the unmanaged-drift listing, which
// must tell it from what nobody manages.)
func TestOwnersNotReadForWhatTheLedgerHolds(t *testing.T) {
	t.Parallel()
	w, rc := ownersWorld(t)
	p := mustPlan(t, ownObjectPlan)
	for _, n := range []int{1, 2, 3} {
		w.mustApply(p, prCtx(n), Options{})
	}
	rc.rests.Store(0)
	res, err := w.eng.Plan(context.Background(), p, prCtx(1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Lines {
		if l.Status != PlanUnchanged {
			t.Fatalf("steady plan: line %s %s", l.ID, l.Status)
		}
	}
	if res, err = w.eng.Plan(context.Background(), p, prCtx(4), Options{}); err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Lines {
		if l.Status != PlanCreate {
			t.Fatalf("plan of a new scope: line %s %s", l.ID, l.Status)
		}
	}
	if st := w.mustApply(p, prCtx(1), Options{}); st.Receipt.Status != receipt.StatusComplete {
		t.Fatalf("steady apply: %s", st.Receipt.Status)
	}
	if n := rc.rests.Load(); n != 0 {
		t.Errorf("the other scopes were read %d times", n)
	}
}

// A plan that meets a resource another scope manages reads the other
// scopes (once) and names its owner.
func TestOwnersPlanNamesTheOwnerOfWhatItMeets(t *testing.T) {
	t.Parallel()
	w, rc := ownersWorld(t)
	shared := strings.ReplaceAll(ownObjectPlan, "${ctx.scope}", "shared")
	w.mustApply(mustPlan(t, shared), prCtx(1), Options{})
	rc.rests.Store(0)
	bigger := strings.Replace(shared, "size: 1", "size: 2", 1)
	res, err := w.eng.Plan(context.Background(), mustPlan(t, bigger), prCtx(2), Options{})
	if errs.CodeOf(err) != errs.OWNED_BY_OTHER_SCOPE {
		t.Fatalf("plan: %v", err)
	}
	byID := map[string]PlanLine{}
	for _, l := range res.Lines {
		byID[l.ID] = l
	}
	if l := byID["db"]; l.Status != PlanBlocked || l.Error == nil || !strings.Contains(l.Error.Message, "scope pr-1") {
		t.Errorf("db: %s %+v", l.Status, l.Error)
	}
	if l := byID["cb"]; l.Status != PlanUnchanged {
		t.Errorf("cb, pr-1's entry relied on: %s %+v", l.Status, l.Error)
	}
	if n := rc.rests.Load(); n != 1 {
		t.Errorf("the other scopes were read %d times, want once", n)
	}
}

// An apply that creates reads the other scopes first: another run's intent
// (a create in flight, here a crashed one) is seen before any create is
// sent.
func TestOwnersApplyCreatingSeesAnotherRunsIntent(t *testing.T) {
	t.Parallel()
	w, rc := ownersWorld(t)
	w.cloud.Crash(optest.Match{Op: optest.OpItem, Method: optest.MethodCreate}, func() { panic("SIGKILL") })
	func() {
		defer func() { recover() }()
		w.apply(mustPlan(t, sharedItemPlan), prCtx(1), Options{})
	}()
	st, _, err := rc.Read(context.Background(), "preview", "pr-1")
	if err != nil || st == nil || len(st.Ledger) != 1 || st.Ledger[0].CreatedBy != receipt.CreatedByIntent {
		t.Fatalf("scope 1: %v %s", err, dump(st))
	}
	w.tm.Advance(testTTL + time.Second)
	rc.rests.Store(0)
	res, err := w.apply(mustPlan(t, sharedItemPlan), prCtx(2), Options{})
	if errs.CodeOf(err) != errs.OWNED_BY_OTHER_SCOPE {
		t.Fatalf("err %v", err)
	}
	if l := res.Receipt.Lines["cb"]; l.Status != LineBlocked || !strings.Contains(l.Error, "scope pr-1") {
		t.Errorf("cb %+v", l)
	}
	if w.cloud.Calls()["fake.item.create"] != 1 {
		t.Error("scope 2 sent a create for scope 1's intent")
	}
	if n := rc.rests.Load(); n != 1 {
		t.Errorf("the other scopes were read %d times, want once", n)
	}
}

// When the other scopes cannot be read, a line that would create is
// refused with the store's error, and nothing is sent.
func TestOwnersUnreadableRefusesTheCreate(t *testing.T) {
	t.Parallel()
	w, rc := ownersWorld(t)
	rc.fail = errs.Wrap(errors.New("connection reset"), errs.STORE_UNAVAILABLE, "list the refs of the remote")
	res, err := w.apply(mustPlan(t, ownObjectPlan), prCtx(1), Options{})
	if err == nil {
		t.Fatal("apply succeeded without knowing who manages what")
	}
	for id, l := range res.Receipt.Lines {
		if l.Status != LineBlocked || l.ErrorCode != errs.STORE_UNAVAILABLE {
			t.Errorf("line %s: %+v", id, l)
		}
	}
	if n := len(w.cloud.Writes()); n != 0 {
		t.Errorf("%d provider writes", n)
	}
	if n := rc.rests.Load(); n != 1 {
		t.Errorf("the other scopes were read %d times, want once (the failure is kept)", n)
	}
}

// On a store without atomic multi-writes a hand-over to a pull request's
// scope may have stopped between its writes, on any branch scope: the
// scope's first read is then of the whole environment, and plan still
// says what apply will inherit.
func TestOwnersPRScopeWithoutAtomicWritesReadsTheEnvironment(t *testing.T) {
	t.Parallel()
	w, _, dir := gitWorld(t)
	gittest.Run(t, dir, "config", "receive.advertiseAtomic", "false")
	gs, err := gitstore.New(context.Background(), gitstore.Options{URL: gittest.FileURL(dir), Clock: w.tm})
	if err != nil || gs.Capabilities().AtomicMulti {
		t.Fatalf("store: atomic %v, %v", gs != nil && gs.Capabilities().AtomicMulti, err)
	}
	rc := &restCounter{Store: gs}
	w.eng = w.engine(rc)
	other := branchCtx()
	other.Scope, other.Git.Branch = "branch-feat-y", "feat/y"
	w.mustApply(mustPlan(t, succPlan), other, Options{})
	ctx := context.Background()
	st, _, err := gs.Read(ctx, "preview", "branch-feat-y")
	if err != nil {
		t.Fatal(err)
	}
	st.SupersededBy = "pr-12" // a hand-over to pr-12 stopped after its first write
	l, _, err := gs.Acquire(ctx, receipt.ScopeTarget("preview", "branch-feat-y"), own("x"), testTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := gs.Write(ctx, st, l); err != nil {
		t.Fatal(err)
	}
	if err := gs.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	rc.rests.Store(0)
	res, err := w.eng.Plan(ctx, mustPlan(t, succPlan), prCtx(12), Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, wr := range res.Warnings {
		found = found || wr.Code == errs.SUCCESSION && strings.Contains(wr.Message, "from scope branch-feat-y")
	}
	if !found {
		t.Errorf("plan does not say pr-12 inherits branch-feat-y's resources: %+v", res.Warnings)
	}
	if n := rc.rests.Load(); n != 0 {
		t.Errorf("the environment was read %d times on demand, want it read with the scope", n)
	}
}

// namedCounter is restCounter that also counts the reads of named scopes
// (View.Named) and the scopes they asked for.
type namedCounter struct {
	restCounter
	named [][]string
}

func (s *namedCounter) ViewScope(ctx context.Context, env, sc string, also []string) (*receipt.View, error) {
	v, err := s.restCounter.ViewScope(ctx, env, sc, also)
	if err != nil || v.Named == nil {
		return v, err
	}
	named := v.Named
	v.Named = func(ctx context.Context, scopes []string) ([]receipt.Stored, error) {
		s.named = append(s.named, scopes)
		return named(ctx, scopes)
	}
	return v, nil
}

// A line that lists the whole list meets the entries of other scopes (its
// item with their name in place of its scope's): plan reads those scopes'
// receipts alone, in one read, to tell them from what nobody manages, and
// the whole environment only for what they do not own.
func TestOwnersUnmanagedDriftReadsOnlyTheScopesItMeets(t *testing.T) {
	t.Parallel()
	w, gs, _ := gitWorld(t)
	nc := &namedCounter{restCounter: restCounter{Store: gs}}
	w.eng = w.engine(nc)
	p := mustPlan(t, `
version: 1
providers:
  fake: { project: p1 }
changes:
  - { id: cb, adapter: fake, op: item, list: callbacks, item: "https://${ctx.scope}.example", prefix: "https://" }
`)
	for _, n := range []int{1, 2, 3} {
		w.mustApply(p, prCtx(n), Options{})
	}
	w.cloud.AddItem("p1", "callbacks", "https://elsewhere.example") // in no scope's place
	nc.named = nil
	nc.rests.Store(0)
	unmanaged := func() []string {
		t.Helper()
		res, err := w.eng.Plan(context.Background(), p, prCtx(1), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, d := range res.Drift {
			if d.Kind == DriftUnmanaged {
				keys = append(keys, d.Key)
			}
		}
		return keys
	}

	if got := unmanaged(); len(got) != 1 || !strings.Contains(got[0], "elsewhere") {
		t.Errorf("unmanaged: %q, want the entry in no scope's place only", got)
	}
	if len(nc.named) != 1 || strings.Join(nc.named[0], " ") != "pr-2 pr-3" {
		t.Errorf("named reads: %q, want one of [pr-2 pr-3]", nc.named)
	}
	if n := nc.rests.Load(); n != 1 {
		t.Errorf("the whole environment was read %d times, want once (for the entry no named scope owns)", n)
	}

	w.cloud.RemoveItem("p1", "callbacks", "https://elsewhere.example")
	nc.named = nil
	nc.rests.Store(0)
	if got := unmanaged(); len(got) != 0 {
		t.Errorf("unmanaged: %q, want none: pr-2's and pr-3's entries are theirs", got)
	}
	if n := nc.rests.Load(); n != 0 || len(nc.named) != 1 {
		t.Errorf("the whole environment was read %d times and named scopes %d times, want 0 and 1", n, len(nc.named))
	}

	// pr-9 has no receipt: its entry is unmanaged, as the whole
	// environment confirms.
	w.cloud.AddItem("p1", "callbacks", "https://pr-9.example")
	nc.named = nil
	nc.rests.Store(0)
	if got := unmanaged(); len(got) != 1 || !strings.Contains(got[0], "pr-9") {
		t.Errorf("unmanaged: %q, want pr-9's entry", got)
	}
	if len(nc.named) != 1 || strings.Join(nc.named[0], " ") != "pr-2 pr-3 pr-9" {
		t.Errorf("named reads: %q", nc.named)
	}
}
