package receipttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Factory makes a fresh, empty store whose time comes from clock.
type Factory func(t *testing.T, clock *clock.Fake) receipt.Store

// PlantFunc stores raw bytes as the receipt of env/scope in s, bypassing its
// encoder and leases.
type PlantFunc func(t *testing.T, s receipt.Store, env, scope string, raw []byte)

// Option tunes the suite.
type Option func(*config)

type config struct {
	plant      PlantFunc
	racers     int
	raceRounds int
}

// WithPlant lets the suite plant raw receipt bytes, enabling the corrupt and
// newer-version tests (skipped without it).
func WithPlant(f PlantFunc) Option { return func(c *config) { c.plant = f } }

// WithRacers sets how many goroutines race for one lease, and for how many
// rounds (default 8 and 5). A slow store may lower them.
func WithRacers(goroutines, rounds int) Option {
	return func(c *config) { c.racers, c.raceRounds = goroutines, rounds }
}

// Start is the fake clock's starting time in every subtest.
var Start = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

// Run runs the conformance suite against stores made by newStore.
func Run(t *testing.T, newStore Factory, opts ...Option) {
	cfg := &config{racers: 8, raceRounds: 5}
	for _, o := range opts {
		o(cfg)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"ReadNothing", testReadNothing},
		{"WriteReadRoundTrip", testRoundTrip},
		{"ListIsPerEnvironment", testList},
		{"SegmentsAreEncoded", testSegments},
		{"Scopes", testScopes},
		{"Locks", testLocks},
		{"AcquireHeldRelease", testAcquireHeldRelease},
		{"NotReentrant", testNotReentrant},
		{"ReleaseByNonHolderIsNoop", testReleaseNonHolder},
		{"RenewExtends", testRenew},
		{"ExpiryBoundary", testExpiryBoundary},
		{"ExpiredTakeoverFencesOldHolder", testTakeover},
		{"ExpiredButNotTakenOverStillWrites", testExpiredStillFences},
		{"WriteWithoutLease", testWriteWithoutLease},
		{"WriteWithWrongLease", testWriteWrongLease},
		{"ParentLeasesAreIndependent", testParentIndependent},
		{"ForceRelease", testForceRelease},
		{"History", testHistory},
		{"ConcurrentAcquirers", testConcurrentAcquire},
		{"WriteRacesTakeover", testWriteRacesTakeover},
		{"WriteMany", testWriteMany},
		{"InvalidArguments", testInvalid},
		{"CanceledContext", testCanceled},
		{"CorruptAndNewerReceipts", testCorrupt},
		{"Capabilities", testCapabilities},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := clock.NewFake(Start)
			h := &harness{cfg: cfg, clock: clock, ctx: context.Background()}
			h.s = newStore(t, clock)
			tc.fn(t, h)
		})
	}
}

type harness struct {
	cfg   *config
	clock *clock.Fake
	s     receipt.Store
	ctx   context.Context
}

func owner(run string) receipt.Owner {
	return receipt.Owner{RunID: run, Operation: receipt.OpApply, Kind: receipt.KindAction, Host: "runner-1",
		PID: 4242, GitHubRunID: 99, GitHubRunAttempt: 2, Actor: "octocat"}
}

func (h *harness) acquire(t *testing.T, target receipt.Target, run string, ttl time.Duration) receipt.Lease {
	t.Helper()
	l, pre, err := h.s.Acquire(h.ctx, target, owner(run), ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", target, run, err)
	}
	if pre != nil {
		t.Fatalf("Acquire(%s, %s): preempted %+v on a free target", target, run, *pre)
	}
	return l
}

func (h *harness) write(t *testing.T, r *receipt.Receipt, l receipt.Lease) {
	t.Helper()
	if err := h.s.Write(h.ctx, r, l); err != nil {
		t.Fatalf("Write(%s, run %s, generation %d): %v", r.Target(), r.RunID, l.Generation, err)
	}
}

// readSame fails unless the stored receipt of want's scope encodes exactly
// as want (I6).
func (h *harness) readSame(t *testing.T, want *receipt.Receipt) receipt.Version {
	t.Helper()
	got, v, err := h.s.Read(h.ctx, want.Env, want.Scope)
	if err != nil {
		t.Fatalf("Read(%s): %v", want.Target(), err)
	}
	if got == nil {
		t.Fatalf("Read(%s): no receipt, want run %s's", want.Target(), want.RunID)
	}
	if v == "" {
		t.Errorf("Read(%s): empty version token for a stored receipt", want.Target())
	}
	sameReceipt(t, got, want)
	return v
}

func sameReceipt(t *testing.T, got, want *receipt.Receipt) {
	t.Helper()
	g, err1 := receipt.Encode(got)
	w, err2 := receipt.Encode(want)
	if err1 != nil || err2 != nil {
		t.Fatalf("encode: %v %v", err1, err2)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("receipt of %s differs from the one written\n--- got\n%s--- want\n%s", want.Target(), g, w)
	}
}

func wantCode(t *testing.T, err error, code errs.Code, what string) *errs.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	if !errors.Is(err, code) {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
	return errs.As(err)
}

func newReceipt(h *harness, env, scope, run string) *receipt.Receipt {
	now := h.clock.Now()
	return &receipt.Receipt{
		Version: receipt.FormatVersion, Env: env, Scope: scope, RunID: run,
		Operation: receipt.OpApply, Status: receipt.StatusComplete,
		Lines: map[string]receipt.LineResult{"db": {Status: "created", Resources: []string{"branch:" + scope}}},
		Ledger: receipt.Ledger{{Adapter: "neon", Op: "branch", Provider: map[string]any{"project": "proj_abc"},
			Key: "branch:sponson/" + scope, ID: "br-" + run, CreatedBy: receipt.CreatedBySponson, Line: "db"}},
		StartedAt: now, FinishedAt: now.Add(time.Second),
	}
}

// richReceipt uses every field, so a store that drops one fails I6.
func richReceipt(h *harness, env, scope, run string) *receipt.Receipt {
	r := newReceipt(h, env, scope, run)
	now := h.clock.Now()
	r.Status = receipt.StatusPartial
	r.Stale = true
	r.Destroyed = true
	r.Closed = &receipt.Tombstone{By: "bot", At: now.Add(-time.Hour), HeadSHA: "c0ffee"}
	r.SupersededBy = "pr-12"
	r.Branch = "feat/x ü <&>"
	r.SHA = strings.Repeat("ab", 20)
	r.HashKey = strings.Repeat("5a", 32)
	r.Lines["cb"] = receipt.LineResult{Status: "error", ErrorCode: errs.PROVIDER_TRANSIENT, Error: "503 from provider",
		Outputs: map[string]any{"url": "https://pr-1.example.dev/cb?a=1&b=<2>", "n": 3.5, "list": []any{"x", 1.0, true, nil},
			"nested": map[string]any{"z": "last", "a": "first"}}}
	r.Ledger = append(r.Ledger, receipt.LedgerEntry{Adapter: "auth0", Op: "callback",
		Provider: map[string]any{"domain": "example.eu.auth0.com", "client": "AbCd123", "opts": map[string]any{"k": 1.0}},
		Key:      "callbacks:https://pr-1.example.dev/cb", Hash: receipt.HashValue(r.HashKey, []byte("v")),
		CreatedBy: receipt.CreatedByIntent, Orphan: true, Outputs: map[string]any{"count": 2.0},
		Parent: "auth0:example.eu.auth0.com:client:AbCd123"})
	pre := receipt.NewLease(r.Target(), owner("run-old"), 7, now.Add(-20*time.Minute), 15*time.Minute)
	r.LockPreempted = &pre
	r.History = []receipt.HistoryEntry{{SHA: "1111111", At: now.Add(-time.Hour), RunID: "run-0", Status: receipt.StatusComplete}}
	r.Warnings = []receipt.Warning{{Code: errs.SHORT_SECRET, Message: "short"}}
	return r
}

func testReadNothing(t *testing.T, h *harness) {
	r, v, err := h.s.Read(h.ctx, "preview", "pr-1")
	if err != nil || r != nil || v != "" {
		t.Fatalf("Read of nothing = %v, %q, %v; want nil, \"\", nil", r, v, err)
	}
	list, err := h.s.List(h.ctx, "preview")
	if err != nil || len(list) != 0 {
		t.Fatalf("List of nothing = %v, %v", list, err)
	}
	scopes, err := h.s.Scopes(h.ctx)
	if err != nil || len(scopes) != 0 {
		t.Fatalf("Scopes of nothing = %v, %v", scopes, err)
	}
	locks, err := h.s.Locks(h.ctx)
	if err != nil || len(locks) != 0 {
		t.Fatalf("Locks of nothing = %v, %v", locks, err)
	}
	l, err := h.s.Lease(h.ctx, receipt.ScopeTarget("preview", "pr-1"))
	if err != nil || l != nil {
		t.Fatalf("Lease of nothing = %v, %v", l, err)
	}
	hist, err := h.s.History(h.ctx, receipt.ScopeTarget("preview", "pr-1"))
	if err != nil || len(hist) != 0 {
		t.Fatalf("History of nothing = %v, %v", hist, err)
	}
}

func testRoundTrip(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	l := h.acquire(t, target, "run-1", time.Minute)
	r := richReceipt(h, "preview", "pr-1", "run-1")
	h.write(t, r, l)
	v1 := h.readSame(t, r)
	if _, v, _ := h.s.Read(h.ctx, "preview", "pr-1"); v != v1 {
		t.Errorf("two reads with no write between: versions %q and %q", v1, v)
	}

	h.clock.Advance(time.Second)
	r2 := newReceipt(h, "preview", "pr-1", "run-1")
	r2.Status = receipt.StatusComplete
	h.write(t, r2, l)
	if v2 := h.readSame(t, r2); v2 == v1 {
		t.Errorf("the version token did not change after a write (%q)", v1)
	}

	// A receipt with no lines, ledger or history reads back with empty
	// collections, never null.
	r3 := &receipt.Receipt{Env: "preview", Scope: "pr-1", RunID: "run-1", Operation: receipt.OpDestroy, Status: receipt.StatusComplete, Destroyed: true}
	h.write(t, r3, l)
	got, _, err := h.s.Read(h.ctx, "preview", "pr-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != receipt.FormatVersion || got.Lines == nil || got.Ledger == nil || got.History == nil {
		t.Errorf("empty receipt read back as %+v", got)
	}
	// The store keeps no reference to the caller's receipt.
	r3.RunID, r3.Lines = "mutated-after-write", map[string]receipt.LineResult{"x": {}}
	if got, _, _ := h.s.Read(h.ctx, "preview", "pr-1"); got.RunID != "run-1" || len(got.Lines) != 0 {
		t.Errorf("a change to the written receipt reached the store: %+v", got)
	}
}

func testList(t *testing.T, h *harness) {
	var want []*receipt.Receipt
	for _, ts := range []receipt.Target{
		receipt.ScopeTarget("preview", "pr-2"), receipt.ScopeTarget("preview", "branch-feat-x"),
		receipt.ScopeTarget("preview", "main"), receipt.ScopeTarget("production", "main"),
		receipt.ScopeTarget("preview-2", "pr-9"),
	} {
		l := h.acquire(t, ts, "run-"+ts.Scope, time.Minute)
		r := newReceipt(h, ts.Env, ts.Scope, "run-"+ts.Env+"-"+ts.Scope)
		h.write(t, r, l)
		if ts.Env == "preview" {
			want = append(want, r)
		}
	}
	// A lease without a receipt is not listed.
	h.acquire(t, receipt.ScopeTarget("preview", "pr-3"), "run-x", time.Minute)

	got, err := h.s.List(h.ctx, "preview")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("List(preview) returned %d receipts, want %d: %+v", len(got), len(want), got)
	}
	byScope := map[string]*receipt.Receipt{}
	for _, r := range want {
		byScope[r.Scope] = r
	}
	for i, st := range got {
		if i > 0 && got[i-1].Scope >= st.Scope {
			t.Errorf("List is not sorted by scope: %q before %q", got[i-1].Scope, st.Scope)
		}
		w := byScope[st.Scope]
		if st.Env != "preview" || w == nil || st.Receipt == nil {
			t.Fatalf("List(preview) returned %s/%s", st.Env, st.Scope)
		}
		sameReceipt(t, st.Receipt, w)
		_, v, err := h.s.Read(h.ctx, st.Env, st.Scope)
		if err != nil || v != st.Version || v == "" {
			t.Errorf("%s/%s: List version %q, Read version %q (%v)", st.Env, st.Scope, st.Version, v, err)
		}
	}
	if got, err := h.s.List(h.ctx, "staging"); err != nil || len(got) != 0 {
		t.Errorf("List of an environment with no receipts = %v, %v", got, err)
	}
}

func testSegments(t *testing.T, h *harness) {
	// Names that would escape a directory, nest, hide, or fall into the
	// reserved namespace are still distinct scopes, listed under their own
	// names.
	targets := []receipt.Target{
		receipt.ScopeTarget("staging", "pr-1"),
		receipt.ScopeTarget("staging/eu", ".."),
		receipt.ScopeTarget("staging", "eu/.."),
		receipt.ScopeTarget("_locks", receipt.ParentLockID("x")),
		receipt.ScopeTarget(".hidden", "a b%20c"),
		receipt.ScopeTarget("staging", "x.lock"),
		receipt.ScopeTarget("ü", "branch-ü"),
	}
	for _, ts := range targets {
		l := h.acquire(t, ts, "run-1", time.Minute)
		h.write(t, newReceipt(h, ts.Env, ts.Scope, "run-"+ts.Env+"-"+ts.Scope), l)
	}
	for _, ts := range targets {
		h.readSame(t, newReceipt(h, ts.Env, ts.Scope, "run-"+ts.Env+"-"+ts.Scope))
	}
	list, err := h.s.List(h.ctx, "staging")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range list {
		names = append(names, st.Scope)
	}
	if fmt.Sprint(names) != fmt.Sprint([]string{"eu/..", "pr-1", "x.lock"}) {
		t.Errorf("List(staging) scopes = %q", names)
	}
	scopes, err := h.s.Scopes(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(scopes) != len(targets) {
		t.Errorf("Scopes returned %d scopes, want %d: %+v", len(scopes), len(targets), scopes)
	}
	for _, ts := range targets {
		found := false
		for _, sr := range scopes {
			found = found || sr.Env == ts.Env && sr.Scope == ts.Scope
		}
		if !found {
			t.Errorf("Scopes is missing %q/%q", ts.Env, ts.Scope)
		}
	}
}

func testScopes(t *testing.T, h *harness) {
	pr1 := receipt.ScopeTarget("preview", "pr-1")
	l := h.acquire(t, pr1, "run-1", time.Minute)
	h.write(t, newReceipt(h, "preview", "pr-1", "run-1"), l)
	if err := h.s.Release(h.ctx, l); err != nil {
		t.Fatal(err)
	}
	pr2 := h.acquire(t, receipt.ScopeTarget("preview", "pr-2"), "run-2", time.Minute)
	main := h.acquire(t, receipt.ScopeTarget("production", "main"), "run-3", 30*time.Minute)
	h.write(t, newReceipt(h, "production", "main", "run-3"), main)
	h.acquire(t, receipt.ParentTarget("auth0:example.eu.auth0.com:client:AbCd123"), "run-3", time.Minute)
	h.clock.Advance(2 * time.Minute) // pr-2's lease expires; it is still listed

	got, err := h.s.Scopes(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		env, scope string
		receipt    bool
		lease      *receipt.Lease
	}
	want := []row{{"preview", "pr-1", true, nil}, {"preview", "pr-2", false, &pr2}, {"production", "main", true, &main}}
	if len(got) != len(want) {
		t.Fatalf("Scopes = %+v, want %d rows (parent objects are not scopes)", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Env != w.env || g.Scope != w.scope || g.HasReceipt != w.receipt {
			t.Errorf("Scopes[%d] = %s/%s receipt=%v, want %s/%s receipt=%v", i, g.Env, g.Scope, g.HasReceipt, w.env, w.scope, w.receipt)
		}
		switch {
		case w.lease == nil && g.Lease != nil:
			t.Errorf("Scopes[%d] has lease %+v, want none", i, *g.Lease)
		case w.lease != nil && (g.Lease == nil || !g.Lease.Same(*w.lease) || !g.Lease.ExpiresAt.Equal(w.lease.ExpiresAt)):
			t.Errorf("Scopes[%d] lease = %+v, want %+v", i, g.Lease, *w.lease)
		}
	}
}

func testLocks(t *testing.T, h *harness) {
	identity := "auth0:example.eu.auth0.com:client:AbCd123"
	a := h.acquire(t, receipt.ScopeTarget("preview", "pr-2"), "run-2", time.Minute)
	b := h.acquire(t, receipt.ParentTarget(identity), "run-2", time.Minute)
	c := h.acquire(t, receipt.ScopeTarget("production", "main"), "run-3", time.Minute)
	released := h.acquire(t, receipt.ScopeTarget("preview", "pr-1"), "run-1", time.Minute)
	if err := h.s.Release(h.ctx, released); err != nil {
		t.Fatal(err)
	}
	got, err := h.s.Locks(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("Locks = %+v, want 3 leases", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Target.Key() >= got[i].Target.Key() {
			t.Errorf("Locks not sorted by key: %s before %s", got[i-1].Target.Key(), got[i].Target.Key())
		}
	}
	for _, want := range []receipt.Lease{a, b, c} {
		found := false
		for _, g := range got {
			if g.Same(want) {
				found = true
				if g.Owner != want.Owner || !g.ExpiresAt.Equal(want.ExpiresAt) || !g.AcquiredAt.Equal(want.AcquiredAt) {
					t.Errorf("Locks lease %+v, want %+v", g, want)
				}
			}
		}
		if !found {
			t.Errorf("Locks is missing %s (holder %s)", want.Target, want.Holder)
		}
	}
	l, err := h.s.Lease(h.ctx, receipt.ParentTarget(identity))
	if err != nil || l == nil || l.Target.Identity != identity {
		t.Errorf("Lease(parent) = %+v, %v; the identity must be kept in clear", l, err)
	}
}

func testAcquireHeldRelease(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	a, pre, err := h.s.Acquire(h.ctx, target, owner("run-a"), 10*time.Minute)
	if err != nil || pre != nil {
		t.Fatalf("Acquire = %v, preempted %v", err, pre)
	}
	checkNewLease(t, h, a, target)

	h.clock.Advance(3 * time.Minute)
	_, _, err = h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
	checkHeld(t, err, a)

	checkReleaseFreesTheTarget(t, h, a)
}

// checkNewLease checks the lease run-a just acquired for ten minutes.
func checkNewLease(t *testing.T, h *harness, a receipt.Lease, target receipt.Target) {
	t.Helper()
	now := h.clock.Now()
	if a.Target != target || a.Holder != "run-a" || a.Owner != owner("run-a") || a.Operation != receipt.OpApply {
		t.Fatalf("lease = %+v", a)
	}
	if !a.AcquiredAt.Equal(now) || !a.ExpiresAt.Equal(now.Add(10*time.Minute)) || a.TTL != 10*time.Minute || a.Generation < 1 {
		t.Fatalf("lease = %+v", a)
	}
	if l, err := h.s.Lease(h.ctx, target); err != nil || l == nil || !l.Same(a) {
		t.Fatalf("Lease = %+v, %v; want %+v", l, err, a)
	}
}

// checkHeld checks the LOCK_HELD an Acquire of a's target got: it names
// the holder and says how to wait or release.
func checkHeld(t *testing.T, err error, a receipt.Lease) {
	t.Helper()
	e := wantCode(t, err, errs.LOCK_HELD, "Acquire of a held lease")
	held, ok := receipt.HeldLease(err)
	if !ok || !held.Same(a) || held.Owner != a.Owner || !held.ExpiresAt.Equal(a.ExpiresAt) || !held.AcquiredAt.Equal(a.AcquiredAt) {
		t.Errorf("LOCK_HELD details name %+v, want the holder's lease %+v", held, a)
	}
	for _, s := range []string{"run-a", "octocat", "GitHub run 99"} {
		if !strings.Contains(e.Message, s) {
			t.Errorf("LOCK_HELD message %q does not name %q", e.Message, s)
		}
	}
	for _, s := range []string{"--lock-wait", "sponson unlock preview pr-1 --reason"} {
		if !strings.Contains(e.HintText(), s) {
			t.Errorf("LOCK_HELD hint %q does not say %q", e.HintText(), s)
		}
	}
}

// checkReleaseFreesTheTarget releases a: the target is free, the next
// lease has a later generation, and a no longer fences.
func checkReleaseFreesTheTarget(t *testing.T, h *harness, a receipt.Lease) {
	t.Helper()
	target := a.Target
	if err := h.s.Release(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	if l, err := h.s.Lease(h.ctx, target); err != nil || l != nil {
		t.Fatalf("Lease after release = %+v, %v", l, err)
	}
	b, pre, err := h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
	if err != nil || pre != nil {
		t.Fatalf("Acquire after release = %v, preempted %v", err, pre)
	}
	if b.Generation <= a.Generation {
		t.Errorf("generation after release+acquire = %d, want > %d", b.Generation, a.Generation)
	}
	// The released lease no longer fences.
	wantCode(t, h.s.Write(h.ctx, newReceipt(h, "preview", "pr-1", "run-a"), a), errs.LOCK_LOST, "Write with a released lease")
	if err := h.s.Release(h.ctx, b); err != nil {
		t.Fatal(err)
	}
	c := h.acquire(t, target, "run-a", time.Minute)
	if c.Generation <= b.Generation {
		t.Errorf("generation = %d after %d: the last generation must survive a release", c.Generation, b.Generation)
	}
}

func testNotReentrant(t *testing.T, h *harness) {
	target := receipt.ParentTarget("supabase:proj:uri_allow_list")
	a := h.acquire(t, target, "run-a", time.Minute)
	_, _, err := h.s.Acquire(h.ctx, target, owner("run-a"), time.Minute)
	wantCode(t, err, errs.LOCK_HELD, "second Acquire by the same run")
	if held, ok := receipt.HeldLease(err); !ok || !held.Same(a) {
		t.Errorf("the caller cannot find its own lease in the error: %+v", held)
	}
}

func testReleaseNonHolder(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	a := h.acquire(t, target, "run-a", time.Minute)
	forged := []receipt.Lease{a, a, a}
	forged[0].Holder = "run-b"
	forged[1].Generation++
	forged[2].Generation--
	for _, f := range forged {
		if err := h.s.Release(h.ctx, f); err != nil {
			t.Errorf("Release of a lease that is not the holder's: %v, want nil", err)
		}
	}
	if l, err := h.s.Lease(h.ctx, target); err != nil || l == nil || !l.Same(a) {
		t.Fatalf("a non-holder's release removed the lease: %+v, %v", l, err)
	}
	h.write(t, newReceipt(h, "preview", "pr-1", "run-a"), a)
	if _, err := h.s.Renew(h.ctx, a); err != nil {
		t.Fatalf("Renew by the holder after a non-holder's release: %v", err)
	}
	// Releasing twice is harmless too.
	if err := h.s.Release(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := h.s.Release(h.ctx, a); err != nil {
		t.Fatalf("second Release: %v", err)
	}
}

func testRenew(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	a := h.acquire(t, target, "run-a", 10*time.Minute)
	h.clock.Advance(8 * time.Minute)
	r, err := h.s.Renew(h.ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	now := h.clock.Now()
	if !r.ExpiresAt.Equal(now.Add(10*time.Minute)) || !r.Same(a) || !r.AcquiredAt.Equal(a.AcquiredAt) || r.TTL != a.TTL {
		t.Fatalf("renewed lease = %+v; want expiry %s, same holder, generation and acquisition", r, now.Add(10*time.Minute))
	}
	h.clock.Advance(9 * time.Minute) // past the original expiry, before the renewed one
	_, _, err = h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
	wantCode(t, err, errs.LOCK_HELD, "Acquire of a renewed lease")
	h.write(t, newReceipt(h, "preview", "pr-1", "run-a"), r)
	// Both the old and the renewed copy name the same grant.
	if _, err := h.s.Renew(h.ctx, a); err != nil {
		t.Fatalf("Renew with the pre-renewal copy of the lease: %v", err)
	}

	stale := a
	stale.Generation--
	_, err = h.s.Renew(h.ctx, stale)
	wantCode(t, err, errs.LOCK_LOST, "Renew with a stale generation")
	other := a
	other.Holder = "run-b"
	_, err = h.s.Renew(h.ctx, other)
	wantCode(t, err, errs.LOCK_LOST, "Renew by another holder")
	if err := h.s.Release(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	_, err = h.s.Renew(h.ctx, a)
	wantCode(t, err, errs.LOCK_LOST, "Renew of a released lease")
}

func testExpiryBoundary(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	a := h.acquire(t, target, "run-a", time.Minute)
	h.clock.Advance(time.Minute - time.Millisecond)
	_, _, err := h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
	wantCode(t, err, errs.LOCK_HELD, "Acquire 1ms before expiry")
	h.clock.Advance(time.Millisecond)
	b, pre, err := h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
	if err != nil {
		t.Fatalf("Acquire at the expiry instant: %v", err)
	}
	if pre == nil || !pre.Same(a) {
		t.Fatalf("preempted = %+v, want %+v", pre, a)
	}
	if b.Generation <= a.Generation {
		t.Errorf("takeover generation %d, want > %d", b.Generation, a.Generation)
	}
}

func testTakeover(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	a := h.acquire(t, target, "run-a", time.Minute)
	ra := newReceipt(h, "preview", "pr-1", "run-a")
	h.write(t, ra, a)

	h.clock.Advance(2 * time.Minute)
	b, pre, err := h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
	if err != nil {
		t.Fatalf("takeover of an expired lease: %v", err)
	}
	if pre == nil || !pre.Same(a) || pre.Owner != a.Owner || !pre.AcquiredAt.Equal(a.AcquiredAt) {
		t.Fatalf("preempted = %+v, want the expired lease %+v", pre, a)
	}
	if b.Generation <= a.Generation || b.Holder != "run-b" {
		t.Fatalf("new lease %+v after %+v", b, a)
	}
	rb := newReceipt(h, "preview", "pr-1", "run-b")
	rb.LockPreempted = pre
	h.write(t, rb, b)

	// I10: the old holder is fenced out.
	err = h.s.Write(h.ctx, newReceipt(h, "preview", "pr-1", "run-a"), a)
	e := wantCode(t, err, errs.LOCK_LOST, "Write by the preempted holder")
	if cur, ok := e.Details["current"].(receipt.Lease); !ok || !cur.Same(b) {
		t.Errorf("LOCK_LOST details name %+v as current, want %+v", e.Details["current"], b)
	}
	_, err = h.s.Renew(h.ctx, a)
	wantCode(t, err, errs.LOCK_LOST, "Renew by the preempted holder")
	if err := h.s.Release(h.ctx, a); err != nil {
		t.Errorf("Release by the preempted holder: %v, want a no-op", err)
	}
	h.readSame(t, rb)
	if l, _ := h.s.Lease(h.ctx, target); l == nil || !l.Same(b) {
		t.Fatalf("the successor's lease is gone: %+v", l)
	}
	h.write(t, newReceipt(h, "preview", "pr-1", "run-b"), b)
}

func testExpiredStillFences(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	a := h.acquire(t, target, "run-a", time.Minute)
	h.clock.Advance(5 * time.Minute)
	r := newReceipt(h, "preview", "pr-1", "run-a")
	h.write(t, r, a) // nobody took it over: the holder's last fenced write lands
	h.readSame(t, r)
	a2, err := h.s.Renew(h.ctx, a)
	if err != nil {
		t.Fatalf("Renew of an expired lease nobody took: %v", err)
	}
	_, _, err = h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
	wantCode(t, err, errs.LOCK_HELD, "Acquire after the expired lease was renewed")
	if err := h.s.Release(h.ctx, a2); err != nil {
		t.Fatal(err)
	}
}

func testWriteWithoutLease(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	never := receipt.NewLease(target, owner("run-a"), 1, h.clock.Now(), time.Minute)
	wantCode(t, h.s.Write(h.ctx, newReceipt(h, "preview", "pr-1", "run-a"), never), errs.LOCK_LOST, "Write with a lease never granted")
	if r, _, err := h.s.Read(h.ctx, "preview", "pr-1"); err != nil || r != nil {
		t.Fatalf("a write without a lease was stored: %+v, %v", r, err)
	}
	// A forged lease with the holder's name but another generation.
	a := h.acquire(t, target, "run-a", time.Minute)
	for _, g := range []int64{a.Generation + 1, a.Generation - 1} {
		forged := a
		forged.Generation = g
		wantCode(t, h.s.Write(h.ctx, newReceipt(h, "preview", "pr-1", "run-a"), forged), errs.LOCK_LOST,
			fmt.Sprintf("Write with generation %d while %d is held", g, a.Generation))
	}
	forged := a
	forged.Holder = "run-b"
	wantCode(t, h.s.Write(h.ctx, newReceipt(h, "preview", "pr-1", "run-b"), forged), errs.LOCK_LOST, "Write by a forged holder")
	if r, _, err := h.s.Read(h.ctx, "preview", "pr-1"); err != nil || r != nil {
		t.Fatalf("a fenced-out write was stored: %+v, %v", r, err)
	}
}

func testWriteWrongLease(t *testing.T, h *harness) {
	pr1 := h.acquire(t, receipt.ScopeTarget("preview", "pr-1"), "run-a", time.Minute)
	parent := h.acquire(t, receipt.ParentTarget("preview/pr-2"), "run-a", time.Minute)
	for _, l := range []receipt.Lease{pr1, parent} {
		err := h.s.Write(h.ctx, newReceipt(h, "preview", "pr-2", "run-a"), l)
		wantCode(t, err, errs.INTERNAL, "Write fenced by a lease on another target ("+l.Target.String()+")")
	}
	if r, _, _ := h.s.Read(h.ctx, "preview", "pr-2"); r != nil {
		t.Fatal("a write fenced by another target's lease was stored")
	}
}

func testParentIndependent(t *testing.T, h *harness) {
	identities := []string{
		"auth0:example.eu.auth0.com:client:AbCd123",
		"preview/pr-1",
		"_locks/" + receipt.ParentLockID("x"),
		"x",
		strings.Repeat("ü/..", 300),
	}
	scopes := []receipt.Target{
		receipt.ScopeTarget("preview", "pr-1"),
		receipt.ScopeTarget("_locks", receipt.ParentLockID("x")),
		receipt.ScopeTarget("auth0:example.eu.auth0.com:client", "AbCd123"),
	}
	var leases []receipt.Lease
	for _, id := range identities {
		leases = append(leases, h.acquire(t, receipt.ParentTarget(id), "run-a", time.Minute))
	}
	for _, s := range scopes {
		leases = append(leases, h.acquire(t, s, "run-b", time.Minute))
	}
	for i, l := range leases {
		if l.Target.IsParent() {
			if got, err := h.s.Lease(h.ctx, l.Target); err != nil || got == nil || got.Target.Identity != l.Target.Identity {
				t.Fatalf("Lease(%q) = %+v, %v", l.Target.Identity, got, err)
			}
		}
		// Releasing one leaves all the others held.
		if err := h.s.Release(h.ctx, l); err != nil {
			t.Fatal(err)
		}
		for _, o := range leases[i+1:] {
			if _, err := h.s.Renew(h.ctx, o); err != nil {
				t.Fatalf("releasing %s lost %s: %v", l.Target, o.Target, err)
			}
		}
	}
	// The scope's receipt is fenced by the scope lease, not by a parent
	// lease whose identity spells the scope.
	s := h.acquire(t, receipt.ScopeTarget("preview", "pr-1"), "run-c", time.Minute)
	p := h.acquire(t, receipt.ParentTarget("preview/pr-1"), "run-c", time.Minute)
	if err := h.s.Release(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	h.write(t, newReceipt(h, "preview", "pr-1", "run-c"), s)
	scopesNow, err := h.s.Scopes(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sr := range scopesNow {
		if sr.Env != "preview" || sr.Scope != "pr-1" {
			t.Errorf("Scopes lists %q/%q: parent objects are not scopes", sr.Env, sr.Scope)
		}
	}
}

func testForceRelease(t *testing.T, h *harness) {
	for _, target := range []receipt.Target{receipt.ScopeTarget("preview", "pr-1"), receipt.ParentTarget("auth0:t:client:c")} {
		t.Run(target.String(), func(t *testing.T) {
			a := h.acquire(t, target, "run-a", time.Hour)
			got, err := h.s.ForceRelease(h.ctx, target, "runner died", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !got.Same(a) {
				t.Fatalf("ForceRelease returned %+v, want %+v", got, a)
			}
			if l, err := h.s.Lease(h.ctx, target); err != nil || l != nil {
				t.Fatalf("lease after ForceRelease = %+v, %v", l, err)
			}
			b, pre, err := h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
			if err != nil || pre != nil {
				t.Fatalf("Acquire after ForceRelease = %v, preempted %+v", err, pre)
			}
			if b.Generation <= a.Generation {
				t.Errorf("generation after ForceRelease %d, want > %d", b.Generation, a.Generation)
			}
			_, err = h.s.Renew(h.ctx, a)
			wantCode(t, err, errs.LOCK_LOST, "Renew by the force-released holder")
			if !target.IsParent() {
				wantCode(t, h.s.Write(h.ctx, newReceipt(h, target.Env, target.Scope, "run-a"), a), errs.LOCK_LOST,
					"Write by the force-released holder")
			}
			if err := h.s.Release(h.ctx, b); err != nil {
				t.Fatal(err)
			}
			if got, err := h.s.ForceRelease(h.ctx, target, "again", "alice"); err != nil || got != nil {
				t.Errorf("ForceRelease of a free target = %+v, %v; want nil, nil", got, err)
			}
			_, err = h.s.ForceRelease(h.ctx, target, "", "alice")
			wantCode(t, err, errs.USAGE, "ForceRelease without a reason")
			_, err = h.s.ForceRelease(h.ctx, target, "why", "")
			wantCode(t, err, errs.USAGE, "ForceRelease without who")

			if !h.s.Capabilities().History {
				return
			}
			hist, err := h.s.History(h.ctx, target)
			if err != nil {
				t.Fatal(err)
			}
			var unlocks []receipt.Event
			for _, ev := range hist {
				if ev.Operation == receipt.OpUnlock {
					unlocks = append(unlocks, ev)
				}
			}
			if len(unlocks) != 1 {
				t.Fatalf("history has %d unlock events, want 1: %+v", len(unlocks), hist)
			}
			ev := unlocks[0]
			if ev.By != "alice" || ev.Reason != "runner died" || ev.Lease == nil || !ev.Lease.Same(a) || !ev.At.Equal(h.clock.Now()) || ev.Target != target {
				t.Errorf("unlock event = %+v", ev)
			}
		})
	}
}

func testHistory(t *testing.T, h *harness) {
	if !h.s.Capabilities().History {
		t.Skip("the store keeps no history")
	}
	target := receipt.ScopeTarget("preview", "pr-1")
	a := h.acquire(t, target, "run-1", time.Minute)
	r1 := newReceipt(h, "preview", "pr-1", "run-1")
	r1.Status = receipt.StatusPartial
	h.write(t, r1, a) // a checkpoint
	h.clock.Advance(time.Second)
	r1.Status = receipt.StatusComplete
	h.write(t, r1, a) // the final write of the same run
	if err := h.s.Release(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute)
	b := h.acquire(t, target, "run-2", time.Minute)
	r2 := newReceipt(h, "preview", "pr-1", "run-2")
	r2.Operation, r2.Status = receipt.OpDestroy, receipt.StatusFailed
	h.write(t, r2, b)
	_, v2, _ := h.s.Read(h.ctx, "preview", "pr-1")

	hist, err := h.s.History(h.ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 {
		t.Fatalf("History = %+v, want one event per run (2)", hist)
	}
	if e := hist[0]; e.RunID != "run-1" || e.Status != receipt.StatusComplete || e.Operation != receipt.OpApply || e.Generation != a.Generation || e.Target != target {
		t.Errorf("History[0] = %+v, want run-1's last write", e)
	}
	if e := hist[1]; e.RunID != "run-2" || e.Status != receipt.StatusFailed || e.Operation != receipt.OpDestroy || e.Version != v2 || !e.At.Equal(h.clock.Now()) {
		t.Errorf("History[1] = %+v, want run-2's write (version %q)", e, v2)
	}
	if other, err := h.s.History(h.ctx, receipt.ScopeTarget("preview", "pr-2")); err != nil || len(other) != 0 {
		t.Errorf("History of another scope = %+v, %v", other, err)
	}
}

func testConcurrentAcquire(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	var last int64
	for round := 0; round < h.cfg.raceRounds; round++ {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []receipt.Lease
			start   = make(chan struct{})
		)
		for i := 0; i < h.cfg.racers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, _, err := h.s.Acquire(h.ctx, target, owner(fmt.Sprintf("run-%d-%d", round, i)), time.Minute)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, l)
				case !errors.Is(err, errs.LOCK_HELD):
					t.Errorf("round %d: racer %d: %v, want nil or LOCK_HELD", round, i, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d racers acquired the lease, want exactly 1: %+v", round, len(winners), winners)
		}
		w := winners[0]
		if w.Generation <= last {
			t.Fatalf("round %d: generation %d after %d", round, w.Generation, last)
		}
		last = w.Generation
		h.write(t, newReceipt(h, "preview", "pr-1", w.Holder), w)
		if err := h.s.Release(h.ctx, w); err != nil {
			t.Fatal(err)
		}
	}
}

func testWriteRacesTakeover(t *testing.T, h *harness) {
	target := receipt.ScopeTarget("preview", "pr-1")
	a := h.acquire(t, target, "run-a", time.Minute)
	wrote := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan struct{})
	var acceptedAfterLoss, acceptedAfterTakeover int
	// The old holder writes in a loop while the lease is taken over; once
	// told to stop, it writes a last few times, all of which must fail.
	go func() {
		defer close(done)
		lost := false
		write := func(i int) error {
			return h.s.Write(h.ctx, newReceipt(h, "preview", "pr-1", fmt.Sprintf("run-a-%d", i)), a)
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				for j := 0; j < 3; j++ {
					if write(i+j) == nil {
						acceptedAfterTakeover++
					}
				}
				return
			default:
			}
			err := write(i)
			if i == 0 {
				close(wrote)
			}
			switch {
			case err == nil && lost:
				acceptedAfterLoss++
			case err == nil:
			case errors.Is(err, errs.LOCK_LOST):
				lost = true
			default:
				t.Errorf("Write %d: %v", i, err)
			}
		}
	}()
	<-wrote
	h.clock.Advance(2 * time.Minute)
	b, pre, err := h.s.Acquire(h.ctx, target, owner("run-b"), time.Minute)
	rb := newReceipt(h, "preview", "pr-1", "run-b")
	if err == nil {
		err = h.s.Write(h.ctx, rb, b)
	}
	close(stop)
	<-done
	if err != nil || pre == nil {
		t.Fatalf("takeover and write during the old holder's writes: %v, preempted %v", err, pre)
	}
	if acceptedAfterLoss > 0 || acceptedAfterTakeover > 0 {
		t.Fatalf("writes by the preempted holder were accepted: %d after it got LOCK_LOST, %d after the successor wrote",
			acceptedAfterLoss, acceptedAfterTakeover)
	}
	h.readSame(t, rb)
}

func testWriteMany(t *testing.T, h *harness) {
	branch := h.acquire(t, receipt.ScopeTarget("preview", "branch-feat-x"), "run-s", time.Minute)
	pr := h.acquire(t, receipt.ScopeTarget("preview", "pr-12"), "run-s", time.Minute)
	rb := newReceipt(h, "preview", "branch-feat-x", "run-s")
	rb.Operation, rb.SupersededBy, rb.Ledger = receipt.OpSuccession, "pr-12", receipt.Ledger{}
	rp := newReceipt(h, "preview", "pr-12", "run-s")
	rp.Operation = receipt.OpSuccession
	if err := h.s.WriteMany(h.ctx, []receipt.Write{{Receipt: rp, Lease: pr}, {Receipt: rb, Lease: branch}}); err != nil {
		t.Fatal(err)
	}
	h.readSame(t, rb)
	h.readSame(t, rp)
	if err := h.s.WriteMany(h.ctx, nil); err != nil {
		t.Errorf("WriteMany of nothing: %v", err)
	}

	// One stale lease: LOCK_LOST, and nothing is written.
	h.clock.Advance(2 * time.Minute)
	if _, _, err := h.s.Acquire(h.ctx, branch.Target, owner("run-t"), time.Minute); err != nil {
		t.Fatal(err)
	}
	pr2, err := h.s.Renew(h.ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	rp2 := newReceipt(h, "preview", "pr-12", "run-s2")
	rb2 := newReceipt(h, "preview", "branch-feat-x", "run-s2")
	err = h.s.WriteMany(h.ctx, []receipt.Write{{Receipt: rp2, Lease: pr2}, {Receipt: rb2, Lease: branch}})
	wantCode(t, err, errs.LOCK_LOST, "WriteMany with one lease taken over")
	h.readSame(t, rb)
	h.readSame(t, rp)

	err = h.s.WriteMany(h.ctx, []receipt.Write{{Receipt: rp2, Lease: pr2}, {Receipt: rp2, Lease: pr2}})
	wantCode(t, err, errs.INTERNAL, "WriteMany with one scope twice")
	h.readSame(t, rp)
}

func testInvalid(t *testing.T, h *harness) {
	for _, target := range []receipt.Target{{}, {Env: "preview"}, {Scope: "pr-1"}, {Env: "e", Scope: "s", Identity: "x"}} {
		_, _, err := h.s.Acquire(h.ctx, target, owner("run-a"), time.Minute)
		wantCode(t, err, errs.USAGE, fmt.Sprintf("Acquire(%+v)", target))
	}
	_, _, err := h.s.Acquire(h.ctx, receipt.ScopeTarget("preview", "pr-1"), receipt.Owner{}, time.Minute)
	wantCode(t, err, errs.INTERNAL, "Acquire by an owner without a run id")
	l, _, err := h.s.Acquire(h.ctx, receipt.ScopeTarget("preview", "pr-1"), owner("run-a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.TTL != receipt.DefaultTTL || !l.ExpiresAt.Equal(h.clock.Now().Add(receipt.DefaultTTL)) {
		t.Errorf("Acquire with no TTL: %+v, want the default TTL", l)
	}
	wantCode(t, h.s.Write(h.ctx, nil, l), errs.INTERNAL, "Write(nil)")
}

func testCanceled(t *testing.T, h *harness) {
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	target := receipt.ScopeTarget("preview", "pr-1")
	if _, _, err := h.s.Acquire(ctx, target, owner("run-a"), time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a canceled context: %v, want one wrapping context.Canceled", err)
	}
	l := h.acquire(t, target, "run-b", time.Minute)
	if err := h.s.Write(ctx, newReceipt(h, "preview", "pr-1", "run-b"), l); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a canceled context: %v", err)
	}
	if _, _, err := h.s.Read(ctx, "preview", "pr-1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a canceled context: %v", err)
	}
}

func testCorrupt(t *testing.T, h *harness) {
	if h.cfg.plant == nil {
		t.Skip("the store gives the suite no way to plant raw bytes")
	}
	cases := []struct {
		raw  string
		code errs.Code
	}{
		{"{not json", errs.RECEIPT_CORRUPT},
		{"", errs.RECEIPT_CORRUPT},
		{`{"env": "preview"}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1, "ledger": 7}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1} {"version": 1}`, errs.RECEIPT_CORRUPT},
		{`{"version": 2, "env": "preview"}`, errs.RECEIPT_VERSION},
		{`{"version": 3, "ledger": "a newer shape"}`, errs.RECEIPT_VERSION},
		// A receipt copied from another scope or environment is not this
		// scope's.
		{`{"version": 1, "env": "preview", "scope": "pr-9"}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1, "env": "production", "scope": "pr-1"}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1}`, errs.RECEIPT_CORRUPT},
	}
	// A healthy neighbour: one damaged scope must block only itself.
	ln := h.acquire(t, receipt.ScopeTarget("preview", "pr-3"), "run-n", time.Minute)
	neighbour := newReceipt(h, "preview", "pr-3", "run-n")
	h.write(t, neighbour, ln)
	for _, c := range cases {
		h.cfg.plant(t, h.s, "preview", "pr-1", []byte(c.raw))
		_, _, err := h.s.Read(h.ctx, "preview", "pr-1")
		wantCode(t, err, c.code, fmt.Sprintf("Read of %q", c.raw))
		list, err := h.s.List(h.ctx, "preview")
		if err != nil {
			t.Errorf("List over a damaged pr-1 (%q) failed: %v; it must list the other scopes and name pr-1", c.raw, err)
			continue
		}
		var sawBad, sawGood bool
		for _, st := range list {
			switch st.Scope {
			case "pr-1":
				sawBad = true
				if st.Receipt != nil {
					t.Errorf("List over %q: pr-1 has a receipt %+v", c.raw, st.Receipt)
				}
				wantCode(t, st.Err, c.code, fmt.Sprintf("List's entry of pr-1 over %q", c.raw))
			case "pr-3":
				sawGood = st.Err == nil && st.Receipt != nil && st.Receipt.RunID == "run-n"
			}
		}
		if !sawBad || !sawGood {
			t.Errorf("List over %q = %+v: want pr-1 with its error and pr-3 readable", c.raw, list)
		}
	}
	// An explicit write by the scope's lease holder replaces it
	// (`sponson receipts push --replace`).
	l := h.acquire(t, receipt.ScopeTarget("preview", "pr-1"), "run-a", time.Minute)
	r := newReceipt(h, "preview", "pr-1", "run-a")
	h.write(t, r, l)
	h.readSame(t, r)
	// A valid version-1 receipt written by someone else reads.
	h.cfg.plant(t, h.s, "preview", "pr-2", []byte(`{"version": 1, "env": "preview", "scope": "pr-2", "future_field": true}`))
	if got, _, err := h.s.Read(h.ctx, "preview", "pr-2"); err != nil || got.Scope != "pr-2" {
		t.Errorf("Read of a minimal receipt = %+v, %v", got, err)
	}
}

func testCapabilities(t *testing.T, h *harness) {
	c := h.s.Capabilities()
	if !c.Locking || !c.FencedWrites {
		t.Errorf("Capabilities = %+v: a store passing this suite locks and fences", c)
	}
}
