package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
	"github.com/sponson/apply/pkg/secret"
)

// world is one engine wired to a fake cloud, a memory store and a fake
// time, for engine tests.
type world struct {
	t        *testing.T
	tm       *enginetest.Time
	store    *memstore.Store
	cloud    *optest.Cloud
	eng      *Engine
	red      *redact.Redactor
	env      map[string]string
	progress *bytes.Buffer
	runs     int
	intruder *receipt.Lease
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, tm: enginetest.NewTime(t0), cloud: optest.New(), red: redact.New(),
		env: map[string]string{}, progress: &bytes.Buffer{}}
	w.store = memstore.New(w.tm)
	w.eng = w.engine(w.store)
	return w
}

// engine builds an engine on a store; each engine of a world shares the
// cloud, the time and the environment.
func (w *world) engine(st receipt.Store) *Engine {
	return &Engine{
		Store: st, Ops: w.cloud.Registry(),
		Secrets:  secret.New(secret.Config{LookupEnv: func(n string) (string, bool) { v, ok := w.env[n]; return v, ok }}),
		Redactor: w.red, Clock: w.tm, Rand: &seqRand{},
		Progress: w.progress, UnsavedDir: w.t.TempDir(),
	}
}

// seqRand is a deterministic byte source (splitmix64 of a counter), safe
// for concurrent use.
type seqRand struct {
	mu sync.Mutex
	n  uint64
}

func (s *seqRand) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range p {
		if i%8 == 0 {
			s.n++
		}
		x := s.n + 0x9e3779b97f4a7c15
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
		x = (x ^ (x >> 27)) * 0x94d049bb133111eb
		x ^= x >> 31
		p[i] = byte(x >> (8 * (i % 8)))
	}
	return len(p), nil
}

type planT = plan.Plan

func parsePlan(src string) (*plan.Plan, error) {
	return plan.Parse("release.plan.yaml", []byte(strings.TrimLeft(src, "\n")))
}

func mustPlan(t testing.TB, src string) *plan.Plan {
	t.Helper()
	p, err := parsePlan(src)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

func prCtx(n int) scope.Ctx {
	return scope.Ctx{Env: "preview", Scope: scope.PRScope(n), Git: scope.Git{Branch: "feat/x", SHA: "aaaaaaa1111111111111111111111111111111", ShortSHA: "aaaaaaa"},
		PR: scope.PR{Number: &n}, Repo: "acme/shop"}
}

func (w *world) apply(p *plan.Plan, c scope.Ctx, o Options) (*RunResult, error) {
	w.t.Helper()
	w.runs++
	return w.eng.Apply(context.Background(), p, c, o)
}

func (w *world) mustApply(p *plan.Plan, c scope.Ctx, o Options) *RunResult {
	w.t.Helper()
	res, err := w.apply(p, c, o)
	if err != nil {
		w.t.Fatalf("apply: %v\n%s", err, dump(res))
	}
	return res
}

func (w *world) stored(c scope.Ctx) *receipt.Receipt {
	w.t.Helper()
	r, _, err := w.store.Read(context.Background(), c.Env, c.Scope)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func ledgerKeys(r *receipt.Receipt) []string {
	var out []string
	if r == nil {
		return out
	}
	for _, e := range r.Ledger {
		out = append(out, e.Key)
	}
	return out
}

func writes(c *optest.Cloud) int {
	n := 0
	for _, w := range c.Writes() {
		if !w.Failed {
			n++
		}
	}
	return n
}

const basicPlan = optest.BasicPlan

// recordedOf is receipt.Provenance of a store a test wraps (the wrappers
// embed receipt.Store, which hides it).
func recordedOf(ctx context.Context, st receipt.Store, t receipt.Target) (map[string]bool, bool, error) {
	if pv, ok := st.(receipt.Provenance); ok {
		return pv.Recorded(ctx, t)
	}
	return nil, false, nil
}

func (s *hookStore) Recorded(ctx context.Context, t receipt.Target) (map[string]bool, bool, error) {
	return recordedOf(ctx, s.Store, t)
}

func (s *recordingStore) Recorded(ctx context.Context, t receipt.Target) (map[string]bool, bool, error) {
	return recordedOf(ctx, s.Store, t)
}

func (s *acquireHook) Recorded(ctx context.Context, t receipt.Target) (map[string]bool, bool, error) {
	return recordedOf(ctx, s.Store, t)
}

func (s *parentAudit) Recorded(ctx context.Context, t receipt.Target) (map[string]bool, bool, error) {
	return recordedOf(ctx, s.Store, t)
}

func (s *ownersChecker) Recorded(ctx context.Context, t receipt.Target) (map[string]bool, bool, error) {
	return recordedOf(ctx, s.Store, t)
}

// sleepHook is a clock whose Sleep is a test's: one that steers the run
// (releases a lease, lets an event happen) or watches its waits.
type sleepHook struct {
	clock.Clock
	sleep func(ctx context.Context, d time.Duration) error
}

func (h sleepHook) Sleep(ctx context.Context, d time.Duration) error { return h.sleep(ctx, d) }

// onSleep is c with its Sleep replaced by sleep.
func onSleep(c clock.Clock, sleep func(ctx context.Context, d time.Duration) error) clock.Clock {
	return sleepHook{Clock: c, sleep: sleep}
}
