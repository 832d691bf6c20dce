package engine

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// tracedObject is fake.object with a trace of its Apply calls: the order
// they started in, how many ran at once, and an optional delay per object
// name (so a test decides the order lines complete in).
type tracedObject struct {
	*optest.ObjectOp
	mu      sync.Mutex
	started []string
	running int
	most    int
	delay   map[string]time.Duration
}

func (o *tracedObject) Apply(ctx context.Context, req adapter.Request, live *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	name, _ := req.Params["name"].(string)
	o.mu.Lock()
	o.started = append(o.started, req.Line)
	o.running++
	o.most = max(o.most, o.running)
	d := o.delay[name]
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.running--
		o.mu.Unlock()
	}()
	if d > 0 {
		time.Sleep(d)
	}
	return o.ObjectOp.Apply(ctx, req, live, intend)
}

func traced(w *world) *tracedObject {
	o := &tracedObject{ObjectOp: w.cloud.ObjectOp(), delay: map[string]time.Duration{}}
	w.eng.Ops = adapter.NewRegistry(o, w.cloud.ItemOp())
	return o
}

// widePlan: roots r0..r(roots-1), then kids each taking a root's url.
func widePlan(roots, kids int) string {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n")
	for i := range roots {
		fmt.Fprintf(&b, "  - { id: r%d, adapter: fake, op: object, name: \"r%d-${ctx.scope}\", fields: { v: %d } }\n", i, i, i)
	}
	for i := range kids {
		fmt.Fprintf(&b, "  - { id: k%d, adapter: fake, op: object, name: \"k%d-${ctx.scope}\", fields: { up: { from: r%d.url } } }\n", i, i, i%roots)
	}
	return b.String()
}

func TestParallelismBoundsLinesInFlight(t *testing.T) {
	for _, par := range []int{1, 3, 0} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			// The provider's latency keeps lines in flight; in a synctest
			// bubble it is virtual, so how many overlap never depends on
			// how busy the machine is.
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				o := traced(w)
				w.cloud.SetLatency(optest.OpObject, 5*time.Millisecond)
				w.mustApply(mustPlan(t, widePlan(2, 10)), prCtx(1), Options{Parallelism: par})
				want := max(par, 0)
				if par == 0 {
					want = DefaultParallelism
				}
				if o.most != want {
					t.Errorf("%d lines at once, want %d", o.most, want)
				}
			})
		})
	}
}

// Parallelism 1 runs lines in run order: dependencies first, ties by file
// order — here the file lists a line before the one it needs.
func TestParallelismOneIsFileOrder(t *testing.T) {
	w := newWorld(t)
	o := traced(w)
	p := mustPlan(t, `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: a, fields: { up: { from: c.url } } }
  - { id: b, adapter: fake, op: object, name: b }
  - { id: c, adapter: fake, op: object, name: c }
  - { id: d, adapter: fake, op: object, name: d, depends_on: [a] }
  - { id: e, adapter: fake, op: object, name: e }
`)
	res := w.mustApply(p, prCtx(1), Options{Parallelism: 1})
	want := []string{"b", "c", "a", "d", "e"}
	if !slices.Equal(o.started, want) {
		t.Fatalf("ran %v, want %v", o.started, want)
	}
	if !slices.Equal(res.Order, want) {
		t.Errorf("order %v", res.Order)
	}
}

var objID = regexp.MustCompile(`obj_[0-9]+`)

// Whatever the interleaving, the result and the receipt list lines and
// ledger entries in one order: the same as with Parallelism 1.
func TestParallelOutputIsStable(t *testing.T) {
	norm := func(res *RunResult) string {
		r := *res.Receipt
		r.RunID, r.StartedAt, r.FinishedAt, r.History = "", time.Time{}, time.Time{}, nil
		// The provider numbers objects in the order it creates them.
		return objID.ReplaceAllString(dump(struct {
			Order    []string
			Warnings []Warning
			Receipt  receipt.Receipt
		}{res.Order, res.Warnings, r}), "obj_N")
	}
	var want string
	for i, par := range []int{1, 8, 8, 8} {
		// The delays are virtual in a synctest bubble: later lines finish
		// first however busy the machine is.
		synctest.Test(t, func(t *testing.T) {
			w := newWorld(t)
			o := traced(w)
			// Later lines finish first.
			for k := range 8 {
				o.delay[fmt.Sprintf("k%d-pr-1", k)] = time.Duration(8-k) * time.Millisecond
			}
			res := w.mustApply(mustPlan(t, widePlan(2, 8)), prCtx(1), Options{Parallelism: par})
			got := norm(res)
			if i == 0 {
				want = got
				return
			}
			if got != want {
				t.Fatalf("parallelism %d gave another result:\n%s\nwant\n%s", par, got, want)
			}
		})
	}
}

// The receipt's writes go one at a time and never go back: each
// checkpoint's ledger holds everything the previous one held.
func TestParallelCheckpointsAreMonotonic(t *testing.T) {
	var rec *recordingStore
	// The provider's latency is virtual in a synctest bubble.
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		rec = &recordingStore{Store: w.store}
		w.eng.Store = rec
		w.cloud.SetLatency(optest.OpObject, 2*time.Millisecond)
		w.mustApply(mustPlan(t, widePlan(4, 16)), prCtx(1), Options{Parallelism: 8})
	})
	var prev map[string]bool
	for i, data := range rec.written {
		r, err := receipt.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		cur := map[string]bool{}
		for _, en := range r.Ledger {
			cur[en.Key] = true
		}
		for k := range prev {
			if !cur[k] {
				t.Fatalf("write %d dropped %s", i, k)
			}
		}
		prev = cur
	}
	if len(prev) != 20 {
		t.Errorf("final ledger %d entries", len(prev))
	}
}

// A failure stops new lines from starting; lines in flight finish; the
// rollback destroys in reverse completion order.
func TestParallelFailureAndRollbackOrder(t *testing.T) {
	// The delays order completions; in a synctest bubble they are virtual,
	// so the order never depends on how busy the machine is.
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		o := traced(w)
		o.delay["a"], o.delay["b"], o.delay["c"] = 30*time.Millisecond, 1*time.Millisecond, 15*time.Millisecond
		p := mustPlan(t, `
version: 1
changes:
  - { id: a, adapter: fake, op: object, name: a }
  - { id: b, adapter: fake, op: object, name: b }
  - { id: c, adapter: fake, op: object, name: c }
  - { id: f, adapter: fake, op: object, name: f, depends_on: [a, b, c] }
  - { id: g, adapter: fake, op: object, name: g, depends_on: [f] }
`)
		w.cloud.FailNext(optest.Match{Key: "object:default:f", Method: optest.MethodCreate}, errs.New(errs.PROVIDER_INVALID, "no"), 1)
		res, err := w.apply(p, prCtx(1), Options{Parallelism: 4})
		if errs.CodeOf(err) != errs.PROVIDER_INVALID {
			t.Fatalf("err %v", err)
		}
		var deletes []string
		for _, wr := range w.cloud.Writes() {
			if wr.Method == optest.MethodDelete {
				deletes = append(deletes, wr.Key)
			}
		}
		if want := []string{"object:default:a", "object:default:c", "object:default:b"}; !slices.Equal(deletes, want) {
			t.Fatalf("rollback order %v, want %v (reverse of completion b, c, a)", deletes, want)
		}
		if g := res.Receipt.Lines["g"]; g.Status != LineSkipped || g.ErrorCode != errs.DEPENDENCY_BLOCKED {
			t.Errorf("g %+v", g)
		}
	})
}

// Once a line fails no new line starts, while lines already running
// finish and are rolled back.
func TestParallelStopsStartingLines(t *testing.T) {
	// The delays order completions; in a synctest bubble they are virtual,
	// so the order never depends on how busy the machine is.
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		o := traced(w)
		o.delay["slow"] = 20 * time.Millisecond
		p := mustPlan(t, `
version: 1
changes:
  - { id: slow, adapter: fake, op: object, name: slow }
  - { id: bad, adapter: fake, op: object, name: bad }
  - { id: later1, adapter: fake, op: object, name: later1, depends_on: [slow] }
  - { id: later2, adapter: fake, op: object, name: later2 }
`)
		w.cloud.FailNext(optest.Match{Key: "object:default:bad", Method: optest.MethodCreate}, nil, 1)
		res, _ := w.apply(p, prCtx(1), Options{Parallelism: 2})
		l := res.Receipt.Lines
		if l["slow"].Status != LineRolledBack || l["bad"].Status != LineFailed || l["later1"].Status != LineSkipped || l["later2"].Status != LineSkipped {
			t.Fatalf("%s", dump(l))
		}
		if len(w.cloud.Keys()) != 0 {
			t.Errorf("left %v", w.cloud.Keys())
		}
	})
}

// readTraced is tracedObject counting the reads in flight.
type readTraced struct{ *tracedObject }

func (o readTraced) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	o.mu.Lock()
	o.running++
	o.most = max(o.most, o.running)
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.running--
		o.mu.Unlock()
	}()
	time.Sleep(5 * time.Millisecond)
	return o.ObjectOp.Read(ctx, req)
}

// Plan reads its lines in waves of DefaultPlanParallelism when no
// parallelism is given (reads change nothing), of the parallelism given
// otherwise; apply's default stays DefaultParallelism.
func TestPlanReadsWiderThanApplyWrites(t *testing.T) {
	for _, par := range []int{0, 3} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				o := readTraced{&tracedObject{ObjectOp: w.cloud.ObjectOp(), delay: map[string]time.Duration{}}}
				w.eng.Ops = adapter.NewRegistry(o, w.cloud.ItemOp())
				if _, err := w.eng.Plan(context.Background(), mustPlan(t, widePlan(20, 0)), prCtx(1), Options{Parallelism: par}); err != nil {
					t.Fatal(err)
				}
				want := par
				if par == 0 {
					want = DefaultPlanParallelism
				}
				if o.most != want {
					t.Errorf("%d reads at once, want %d", o.most, want)
				}
			})
		})
	}
}
