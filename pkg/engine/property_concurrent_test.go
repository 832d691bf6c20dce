package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/redact"
	"github.com/sponson/apply/pkg/scope"
)

// concurrentRuns is how many random stories TestPropertyConcurrentScopes
// runs: a third of SPONSON_PROPERTY_RUNS (its stories are longer), at
// least 10; 10 under -short.
func concurrentRuns() int {
	if testing.Short() && os.Getenv("SPONSON_PROPERTY_RUNS") == "" {
		return 10
	}
	return max(propertyRuns()/3, 10)
}

// cscope is one scope of a concurrent story: its lines (items on the
// shared lists, maybe an object whose URL is an item too).
type cscope struct {
	name   string
	ctx    scope.Ctx
	items  []string // list of each item line, by index
	object bool
	eng    *Engine
}

func (c *cscope) plan(keep []bool) string {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n")
	for k, list := range c.items {
		if keep[k] {
			fmt.Fprintf(&b, "  - { id: i%d, adapter: fake, op: item, list: %s, item: \"https://%s-%d.example\" }\n", k, list, c.name, k)
		}
	}
	if c.object && keep[len(c.items)] {
		fmt.Fprintf(&b, "  - { id: o, adapter: fake, op: object, name: \"o-%s\" }\n", c.name)
		fmt.Fprintf(&b, "  - { id: oi, adapter: fake, op: item, list: %s, item: { from: o.url } }\n", c.items[0])
	}
	return b.String()
}

// TestPropertyConcurrentScopes: random sets of scopes whose plans write
// shared lists are applied and destroyed AT ONCE, in random waves, with
// random faults — a failed or lost item create, a crash right after one, a
// parent lease held elsewhere without --wait (the line fails, the run rolls
// back, waiting), a scope lease taken over mid-run — and after every wave:
//
//	I9  every entry a ledger says Sponson created is in its list;
//	I10 a run whose lease was taken over wrote nothing after it (the
//	    successor's receipt stands) and said LOCK_LOST;
//	I11 every resource that exists and was not seeded is known to a
//	    ledger (intents included), once unsaved receipts are pushed;
//
// and at the end, after every scope is destroyed, nothing is left and no
// lease is held.
func TestPropertyConcurrentScopes(t *testing.T) {
	setPropertyRunsTo(t, concurrentRuns())
	cstats = map[string]int{}
	rapid.Check(t, func(rt *rapid.T) { concurrentStory(t, rt) })
	t.Logf("what the stories exercised: %v", cstats)
}

var (
	cstatsMu sync.Mutex
	cstats   map[string]int
)

func cstat(k string) {
	cstatsMu.Lock()
	cstats[k]++
	cstatsMu.Unlock()
}

func concurrentStory(tt *testing.T, t *rapid.T) {
	cloud := optest.New()
	cloud.SetLatency(optest.OpItem, time.Duration(rapid.IntRange(0, 2).Draw(t, "latency_ms"))*time.Millisecond)
	cloud.SeedItem("default", "cb", "https://someone-else.example")
	st := memstore.New(nil)
	lists := []string{"cb", "origins"}[:rapid.IntRange(1, 2).Draw(t, "lists")]
	var scopes []*cscope
	for i := range rapid.IntRange(2, 4).Draw(t, "scopes") {
		n := 30 + i
		c := &cscope{name: fmt.Sprintf("pr-%d", n), object: rapid.Bool().Draw(t, "object")}
		c.ctx = scope.Ctx{Env: "preview", Scope: c.name, PR: scope.PR{Number: &n}}
		for range rapid.IntRange(1, 3).Draw(t, "items") {
			c.items = append(c.items, rapid.SampledFrom(lists).Draw(t, "list"))
		}
		c.eng = &Engine{Store: st, Ops: cloud.Registry(), Redactor: redact.New(), Clock: fastClock{}, UnsavedDir: tt.TempDir()}
		scopes = append(scopes, c)
	}

	knownBySomeLedger := func(step string) map[string][]receipt.LedgerEntry {
		out := map[string][]receipt.LedgerEntry{}
		stored, err := st.List(context.Background(), "preview")
		if err != nil {
			t.Fatalf("%s: list: %v", step, err)
		}
		for _, s := range stored {
			out[s.Scope] = s.Receipt.Ledger
		}
		return out
	}
	check := func(step string) {
		ledgers := knownBySomeLedger(step)
		known := map[string]bool{}
		for sc, l := range ledgers {
			for _, en := range l {
				known[en.Key] = true
				// I9: what a ledger says Sponson created is there.
				if en.Op == "item" && en.CreatedBy == receipt.CreatedBySponson && !cloud.Exists(en.Key) {
					t.Fatalf("%s: I9: %s of scope %s is recorded as created and is gone from its list\n%s", step, en.Key, sc, dump(cloud.Keys()))
				}
			}
		}
		// I11: every resource Sponson created is known to a ledger.
		for _, k := range cloud.Keys() {
			if !cloud.IsSeeded(k) && !known[k] {
				t.Fatalf("%s: I11: %s exists and no ledger knows it", step, k)
			}
		}
		if !cloud.Exists("item:default:cb:https://someone-else.example") {
			t.Fatalf("%s: the seeded entry was lost", step)
		}
	}

	waves := rapid.IntRange(1, 4).Draw(t, "waves")
	for wv := range waves {
		step := fmt.Sprintf("wave %d", wv)
		type job struct {
			c       *cscope
			destroy bool
			keep    []bool
			o       Options
			fault   int
			took    *receipt.Lease
			err     error
			res     *RunResult
			crashed bool
		}
		var jobs []*job
		for _, c := range scopes {
			if !rapid.Bool().Draw(t, "runs") {
				continue
			}
			j := &job{c: c, destroy: rapid.IntRange(0, 3).Draw(t, "destroy") == 0,
				o: Options{Wait: rapid.Bool().Draw(t, "wait"), WaitTimeout: 20 * time.Second, Parallelism: rapid.IntRange(1, 4).Draw(t, "par")}}
			j.keep = make([]bool, len(c.items)+1)
			for k := range j.keep {
				j.keep[k] = rapid.IntRange(0, 4).Draw(t, "keep") > 0
			}
			j.keep[0] = j.keep[0] || !slices.Contains(j.keep[:len(c.items)], true) // a plan has a line
			j.fault = rapid.IntRange(0, 7).Draw(t, "fault")
			key := optest.ItemKey("default", c.items[0], fmt.Sprintf("https://%s-0.example", c.name))
			switch {
			case j.destroy && j.fault == 1:
				cloud.FailNext(optest.Match{Key: key, Method: optest.MethodDelete}, nil, 1)
			case j.destroy:
			case j.fault == 1:
				cloud.FailNext(optest.Match{Key: key, Method: optest.MethodCreate}, nil, 1)
			case j.fault == 2:
				cloud.LoseResponse(optest.Match{Key: key, Method: optest.MethodCreate})
			case j.fault == 3:
				cloud.CrashAfter(optest.Match{Key: key, Method: optest.MethodCreate}, func() { panic("crash") })
			case j.fault == 4:
				// Another run takes the scope over while this one writes.
				cloud.OnCall(optest.Match{Key: key, Method: optest.MethodCreate}, func() {
					ctx := context.Background()
					target := receipt.ScopeTarget("preview", c.name)
					st.ForceRelease(ctx, target, "property test", "intruder")
					l, _, err := st.Acquire(ctx, target, receipt.Owner{RunID: "intruder"}, time.Hour)
					if err != nil {
						return
					}
					r := &receipt.Receipt{Env: "preview", Scope: c.name, Operation: receipt.OpApply, Status: receipt.StatusComplete}
					if prev, _, _ := st.Read(ctx, "preview", c.name); prev != nil {
						r, _ = prev.Clone()
					}
					r.RunID = "intruder"
					if st.Write(ctx, r, l) == nil {
						j.took = &l
					}
				})
			}
			jobs = append(jobs, j)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil {
						if r != "crash" {
							panic(r)
						}
						j.crashed = true
					}
				}()
				<-start
				if j.destroy {
					j.res, j.err = j.c.eng.Destroy(context.Background(), j.c.ctx, j.o)
					return
				}
				p, err := parsePlan(j.c.plan(j.keep))
				if err != nil {
					panic(err)
				}
				j.res, j.err = j.c.eng.Apply(context.Background(), p, j.c.ctx, j.o)
			}()
		}
		close(start)
		wg.Wait()
		cloud.ClearFaults()
		for _, j := range jobs {
			what := fmt.Sprintf("%s %s", step, j.c.name)
			switch {
			case j.crashed:
				cstat("crash")
			case j.took != nil:
				cstat("takeover")
				// I10: the successor's receipt stands; the run said LOCK_LOST.
				if r, _, _ := st.Read(context.Background(), "preview", j.c.name); r == nil || r.RunID != "intruder" {
					t.Fatalf("%s: I10: a run that lost its lease wrote its receipt", what)
				}
				if errs.CodeOf(j.err) != errs.LOCK_LOST {
					t.Fatalf("%s: I10: err %v, want LOCK_LOST", what, j.err)
				}
				st.Release(context.Background(), *j.took)
			case j.err != nil:
				cstat("failed " + string(errs.CodeOf(j.err)))
			default:
				cstat("ok")
			}
			if j.res != nil && j.res.Unsaved != nil && j.res.Unsaved.Path != "" {
				if _, err := j.c.eng.PushUnsaved(context.Background(), j.res.Unsaved.Path, PushAdoptMissing, Options{}); err != nil {
					t.Fatalf("%s: push unsaved: %v", what, err)
				}
			}
		}
		check(step)
	}
	// The end of every story: every scope destroyed, nothing left, no lease.
	for _, c := range scopes {
		if _, err := c.eng.Destroy(context.Background(), c.ctx, Options{Wait: true, WaitTimeout: 20 * time.Second}); err != nil {
			t.Fatalf("final destroy of %s: %v", c.name, err)
		}
	}
	check("final destroy")
	if got := cloud.Keys(); !slices.Equal(got, []string{"item:default:cb:https://someone-else.example"}) {
		t.Fatalf("after every destroy: %v", got)
	}
	if locks, _ := st.Locks(context.Background()); len(locks) != 0 {
		t.Fatalf("leases left: %s", dump(locks))
	}
}
