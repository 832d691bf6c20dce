package engine

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
)

// propertyRuns is SPONSON_PROPERTY_RUNS, default 100 (CI stays fast;
// thousands on demand).
func propertyRuns() int {
	if n, err := strconv.Atoi(os.Getenv("SPONSON_PROPERTY_RUNS")); err == nil && n > 0 {
		return n
	}
	return 100
}

// setPropertyRuns makes rapid run propertyRuns() cases, unless
// -rapid.checks was given on the command line.
func setPropertyRuns(t *testing.T) { setPropertyRunsTo(t, propertyRuns()) }

// setPropertyRunsTo makes rapid run n cases, unless -rapid.checks was given
// on the command line.
func setPropertyRunsTo(t *testing.T, n int) {
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.checks" })
	if explicit {
		return
	}
	if f := flag.Lookup("rapid.checks"); f != nil {
		if err := f.Value.Set(strconv.Itoa(n)); err != nil {
			t.Fatal(err)
		}
	}
}

const propSecret = "prop-secret-value-9f8e7d6c5b4a"

type gline struct {
	id     string
	item   bool
	name   string // object name / item literal
	list   string
	v      int
	secret bool
	deploy bool
	from   string // "lN.url" / "lN.deploy_url"
	deps   []string
	keep   bool // adopt the seeded object "kept"
	prod   bool
}

func genLines(t *rapid.T) []gline {
	n := rapid.IntRange(1, 6).Draw(t, "lines")
	var out []gline
	var objects []int
	for i := 0; i < n; i++ {
		l := gline{id: fmt.Sprintf("l%d", i)}
		l.item = len(objects) > 0 && rapid.Bool().Draw(t, "item")
		if !l.item && rapid.IntRange(0, 9).Draw(t, "keep") == 0 {
			l.keep = true
		}
		if len(objects) > 0 && rapid.Bool().Draw(t, "hasFrom") {
			src := out[objects[rapid.IntRange(0, len(objects)-1).Draw(t, "from")]]
			out := "url"
			if src.deploy && rapid.Bool().Draw(t, "deployFrom") {
				out = "deploy_url"
			}
			l.from = src.id + "." + out
		}
		for j := 0; j < i; j++ {
			if rapid.IntRange(0, 3).Draw(t, "dep") == 0 {
				l.deps = append(l.deps, fmt.Sprintf("l%d", j))
			}
		}
		if l.item {
			l.list = []string{"cb", "origins"}[rapid.IntRange(0, 1).Draw(t, "list")]
			l.name = fmt.Sprintf("i%d-${ctx.scope}", i)
		} else if !l.keep {
			l.name = fmt.Sprintf("o%d-${ctx.scope}", i)
			l.v = rapid.IntRange(0, 2).Draw(t, "v")
			l.secret = rapid.IntRange(0, 2).Draw(t, "secret") == 0
			l.deploy = rapid.IntRange(0, 3).Draw(t, "deploy") == 0
			l.prod = rapid.IntRange(0, 15).Draw(t, "prod") == 0
			objects = append(objects, i)
		}
		out = append(out, l)
	}
	return out
}

func renderPlan(lines []gline, bump int) string {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "  - id: %s\n    adapter: fake\n", l.id)
		switch {
		case l.item:
			fmt.Fprintf(&b, "    op: item\n    list: %s\n", l.list)
			if l.from != "" {
				fmt.Fprintf(&b, "    item: { from: %s }\n", l.from)
			} else {
				fmt.Fprintf(&b, "    item: %q\n", l.name)
			}
		case l.keep:
			b.WriteString("    op: object\n    name: kept\n    fields: { keep: true }\n")
		default:
			fmt.Fprintf(&b, "    op: object\n    name: %q\n    fields:\n      v: %d\n", l.name, l.v+bump)
			if l.secret {
				b.WriteString("      s: { secret: \"env://PROP_SECRET\" }\n")
			}
			if l.from != "" {
				fmt.Fprintf(&b, "      ref: { from: %s }\n", l.from)
			}
			if l.deploy {
				b.WriteString("    deploy: true\n")
			}
			if l.prod {
				b.WriteString("    production: true\n")
			}
		}
		if len(l.deps) > 0 {
			fmt.Fprintf(&b, "    depends_on: [%s]\n", strings.Join(l.deps, ", "))
		}
	}
	return b.String()
}

// TestPropertyInvariants drives random plans through random sequences of
// applies, plans, destroys, drift and deploy events, with random faults
// (provider failures, lost answers, crashes before and after a create, a
// cancelled run, a lease taken over mid-run, a failed final write), and
// checks I1–I8, I10 and I11 after every step.
func TestPropertyInvariants(t *testing.T) {
	setPropertyRuns(t)
	propStats = map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		propertyRun(t, rt)
	})
	t.Logf("steps that exercised: %v", propStats)
}

// propStats counts what the property runs exercised, so a run shows that
// its faults fired (a fault that never fires proves nothing).
var propStats map[string]int

func propertyRun(tt *testing.T, t *rapid.T) {
	w := newWorld(tt)
	w.env["PROP_SECRET"] = propSecret
	rec := &recordingStore{Store: w.store}
	w.eng.Store = rec
	w.cloud.SeedObject("default", "kept", map[string]any{"owner": "ops"}, nil)
	w.cloud.SeedObject("default", "stray", map[string]any{"x": 1}, nil)
	w.cloud.SeedItem("default", "cb", "https://someone-else.example")
	seeded := []string{optest.ObjectKey("default", "kept"), optest.ObjectKey("default", "stray"), optest.ItemKey("default", "cb", "https://someone-else.example")}

	lines := genLines(t)
	cut := rapid.IntRange(1, len(lines)).Draw(t, "cut")
	plans := []string{renderPlan(lines, 0), renderPlan(lines[:cut], 1)}
	c := prCtx(7)
	var out bytes.Buffer // every byte any result or error would print
	parsed := 0          // receipts written and checked so far

	check := func(step string) {
		// I1: no secret anywhere.
		leaks := []string{propSecret}
		for _, o := range w.cloud.Objects() {
			leaks = append(leaks, o.Token)
		}
		for _, s := range leaks {
			if bytes.Contains(out.Bytes(), []byte(s)) || bytes.Contains(w.progress.Bytes(), []byte(s)) {
				t.Fatalf("%s: I1: a secret reached an output", step)
			}
			for _, r := range rec.written[parsed:] {
				if bytes.Contains(r, []byte(s)) {
					t.Fatalf("%s: I1: a secret reached a receipt", step)
				}
			}
		}
		// I5: nothing Sponson does not manage was written.
		for _, wr := range w.cloud.Writes() {
			if slices.Contains(seeded, wr.Key) {
				t.Fatalf("%s: I5: %s %s of a resource Sponson does not manage", step, wr.Method, wr.Key)
			}
		}
		// I6: every receipt written parses.
		for i, r := range rec.written[parsed:] {
			if _, err := receipt.Decode(r); err != nil {
				t.Fatalf("%s: I6: write %d does not parse: %v", step, parsed+i, err)
			}
		}
		parsed = len(rec.written)
		// I11: every resource Sponson created is in the ledger.
		st, _, err := w.store.Read(context.Background(), c.Env, c.Scope)
		if err != nil {
			t.Fatalf("%s: read: %v", step, err)
		}
		known := map[string]bool{}
		if st != nil {
			for _, e := range st.Ledger {
				known[e.Key] = true
			}
		}
		for _, k := range w.cloud.Keys() {
			if !w.cloud.IsSeeded(k) && !known[k] {
				t.Fatalf("%s: I11: %s exists, was created by Sponson, and the ledger forgot it\nledger %v", step, k, ledgerKeys(st))
			}
		}
	}

	emit := func(v any, err error) {
		out.WriteString(dump(v))
		if err != nil {
			out.WriteString(err.Error())
		}
	}

	steps := rapid.IntRange(1, 8).Draw(t, "steps")
	for s := 0; s < steps; s++ {
		kind := rapid.IntRange(0, 9).Draw(t, "step")
		step := fmt.Sprintf("step %d", s)
		switch {
		case kind <= 4: // apply, with a random fault
			which := rapid.IntRange(0, 1).Draw(t, "plan")
			p := mustPlan(tt, plans[which])
			step += fmt.Sprintf(" apply plan %d", which)
			o := Options{Reconcile: rapid.Bool().Draw(t, "reconcile"), ApprovedBy: []string{"", "alice"}[rapid.IntRange(0, 1).Draw(t, "approver")]}
			fault := rapid.IntRange(0, 8).Draw(t, "fault")
			key := w.randomKey(t, lines, c)
			step += fmt.Sprintf(" fault %d on %s", fault, key)
			ctx, cancel := context.WithCancel(context.Background())
			crashed := false
			took := false
			switch fault {
			case 1:
				m := []string{optest.MethodCreate, optest.MethodUpdate, optest.MethodDelete, optest.MethodRead, optest.MethodLookup}[rapid.IntRange(0, 4).Draw(t, "method")]
				w.cloud.FailNext(optest.Match{Key: key, Method: m}, nil, 1)
			case 2:
				w.cloud.LoseResponse(optest.Match{Key: key})
			case 3:
				w.cloud.CrashAfter(optest.Match{Key: key, Method: optest.MethodCreate}, func() { panic("crash") })
			case 4:
				w.cloud.Crash(optest.Match{Key: key, Method: optest.MethodCreate}, func() { panic("crash") })
			case 5:
				w.cloud.OnCall(optest.Match{Key: key}, cancel)
			case 6:
				w.cloud.OnCall(optest.Match{Key: key, Method: optest.MethodCreate}, func() { took = w.takeOver(c) })
			case 7:
				w.store.Inject(memstore.Fault{Method: memstore.MethodWrite, Skip: rapid.IntRange(0, 3).Draw(t, "skip"), Err: errs.New(errs.STORE_UNAVAILABLE, "remote hung up")})
			}
			before := w.cloud.Keys()
			writesBefore := len(rec.written)
			var res *RunResult
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						if r != "crash" {
							panic(r)
						}
						crashed = true
					}
				}()
				res, err = w.eng.Apply(ctx, p, c, o)
			}()
			cancel()
			w.cloud.ClearFaults()
			w.store.ClearFaults()
			if !crashed {
				emit(res, err)
			}
			switch {
			case crashed:
				propStats["crash"]++
			case took:
				propStats["takeover"]++
			case res != nil && res.Unsaved != nil:
				propStats["unsaved"]++
			case res != nil && res.Receipt.Status == receipt.StatusFailed:
				propStats["failed"]++
			case res != nil && res.Receipt.Status == receipt.StatusPartial:
				propStats["partial"]++
			case res != nil && res.Receipt.Stale:
				propStats["stale"]++
			case res != nil:
				propStats["complete"]++
			default:
				propStats["refused "+string(errs.CodeOf(err))]++
			}
			if res != nil {
				for _, l := range res.Receipt.Lines {
					if l.Status == LineRolledBack || l.Status == LineRollbackFailed {
						propStats[l.Status]++
					}
				}
			}
			hasProd := strings.Contains(plans[which], "production: true")
			// I7: production is never written without an approver.
			if hasProd && o.ApprovedBy == "" {
				if errs.CodeOf(err) != errs.ENV_NOT_APPROVED || len(rec.written) != writesBefore || !slices.Equal(w.cloud.Keys(), before) {
					t.Fatalf("%s: I7: %v", step, err)
				}
				break
			}
			if took {
				// I10: the run that lost its lease could not write; the
				// successor's receipt stands. The unsaved receipt is pushed.
				st := w.stored(c)
				if st == nil || st.RunID != "intruder" {
					t.Fatalf("%s: I10: the stored receipt is not the successor's (%v, err %v)", step, st, err)
				}
				if errs.CodeOf(err) != errs.LOCK_LOST {
					t.Fatalf("%s: I10: err %v, want LOCK_LOST", step, err)
				}
				w.releaseIntruder(c)
			}
			if res != nil && res.Unsaved != nil && res.Unsaved.Path != "" {
				data, _ := os.ReadFile(res.Unsaved.Path)
				out.Write(data)
				pres, perr := w.eng.PushUnsaved(context.Background(), res.Unsaved.Path, PushAdoptMissing, Options{})
				emit(pres, perr)
				if perr != nil {
					t.Fatalf("%s: push unsaved: %v", step, perr)
				}
			}
			if crashed || took {
				break
			}
			// I6: the store returns the run's own receipt.
			if res != nil && !res.Receipt.Stale && res.Unsaved == nil && fault != 7 {
				if st := w.stored(c); st == nil || st.RunID != res.Receipt.RunID {
					t.Fatalf("%s: I6: stored receipt is not the run's own", step)
				}
			}
			code := errs.CodeOf(err)
			// I2: a failed run whose rollback succeeded leaves the world as it was.
			if res != nil && res.Receipt.Status == receipt.StatusFailed && code != errs.ROLLBACK_FAILED && code != errs.INTERRUPTED && code != errs.LOCK_LOST && res.Unsaved == nil {
				if got := w.cloud.Keys(); !slices.Equal(got, before) {
					t.Fatalf("%s: I2: after rollback %v, before %v (err %v)\n%s", step, got, before, err, dump(res.Receipt.Lines))
				}
			}
			// I3: applying again against the unchanged world writes nothing.
			if err == nil {
				w.cloud.ResetWrites()
				res2, err2 := w.eng.Apply(context.Background(), p, c, o)
				emit(res2, err2)
				if err2 != nil || writes(w.cloud) != 0 {
					t.Fatalf("%s: I3: second apply: %v, writes %v", step, err2, w.cloud.Writes())
				}
			}
		case kind == 5: // plan
			which := rapid.IntRange(0, 1).Draw(t, "plan")
			step += " plan"
			n, raw := len(w.cloud.Writes()), string(w.store.Raw(c.Env, c.Scope))
			acq, wr := w.store.Calls(memstore.MethodAcquire), w.store.Calls(memstore.MethodWrite)
			emit(w.eng.Plan(context.Background(), mustPlan(tt, plans[which]), c, Options{}))
			// I4: plan writes nothing, anywhere.
			if len(w.cloud.Writes()) != n || string(w.store.Raw(c.Env, c.Scope)) != raw ||
				w.store.Calls(memstore.MethodAcquire) != acq || w.store.Calls(memstore.MethodWrite) != wr {
				t.Fatalf("%s: I4: plan wrote", step)
			}
		case kind == 6: // drift, on what Sponson manages (the seeded objects stay)
			key := w.randomKey(t, lines, c)
			if slices.Contains(seeded, key) {
				break
			}
			step += " drift " + key
			switch rapid.IntRange(0, 2).Draw(t, "drift") {
			case 0:
				w.cloud.Edit(key, map[string]any{"v": 99})
			case 1:
				w.cloud.Delete(key)
			case 2:
				w.cloud.Recreate(key)
			}
		case kind == 7: // deployments finish
			step += " deploy"
			for _, o := range w.cloud.Objects() {
				if o.Deploy.Status == optest.DeployPending {
					w.cloud.Deploy(o.Key, []string{optest.DeployReady, optest.DeployFailed}[rapid.IntRange(0, 1).Draw(t, "outcome")])
				}
			}
		default: // destroy, maybe with a fault
			step += " destroy"
			if rapid.Bool().Draw(t, "destroyFault") {
				w.cloud.FailNext(optest.Match{Key: w.randomKey(t, lines, c), Method: optest.MethodDelete}, nil, 1)
			}
			res, err := w.eng.Destroy(context.Background(), c, Options{})
			w.cloud.ClearFaults()
			emit(res, err)
			if err == nil {
				w.checkDestroyed(t, step, seeded)
			}
		}
		check(step)
	}
	// The end of every story: the scope is destroyed and nothing is left (I8).
	res, err := w.eng.Destroy(context.Background(), c, Options{})
	emit(res, err)
	if err != nil {
		t.Fatalf("final destroy: %v\n%s", err, dump(res))
	}
	w.checkDestroyed(t, "final destroy", seeded)
	check("final destroy")
}

// checkDestroyed is I8: nothing Sponson created survives a successful
// destroy, and what it does not manage is still there.
func (w *world) checkDestroyed(t *rapid.T, step string, seeded []string) {
	for _, k := range w.cloud.Keys() {
		if !w.cloud.IsSeeded(k) {
			t.Fatalf("%s: I8: %s survived the destroy", step, k)
		}
	}
	for _, k := range seeded {
		if !w.cloud.Exists(k) {
			t.Fatalf("%s: I5: %s was removed", step, k)
		}
	}
}

// randomKey picks the key of one of the plan's resources (or a seeded one).
func (w *world) randomKey(t *rapid.T, lines []gline, _ any) string {
	keys := []string{optest.ObjectKey("default", "kept")}
	for _, l := range lines {
		switch {
		case l.keep:
		case l.item && l.from == "":
			keys = append(keys, optest.ItemKey("default", l.list, strings.ReplaceAll(l.name, "${ctx.scope}", "pr-7")))
		case l.item:
			src, out, _ := strings.Cut(l.from, ".")
			n := strings.TrimPrefix(src, "l")
			if out == "url" {
				keys = append(keys, optest.ItemKey("default", l.list, "https://o"+n+"-pr-7.fake.test"))
			}
		default:
			keys = append(keys, optest.ObjectKey("default", strings.ReplaceAll(l.name, "${ctx.scope}", "pr-7")))
		}
	}
	return keys[rapid.IntRange(0, len(keys)-1).Draw(t, "key")]
}

// takeOver simulates another run taking the scope over while this one is
// stalled: renewals fail, the lease expires, the intruder acquires it and
// writes its own receipt (a copy of the stored one).
func (w *world) takeOver(_ any) bool {
	t := receipt.ScopeTarget("preview", "pr-7")
	w.store.Inject(memstore.Fault{Method: memstore.MethodRenew, Err: errs.New(errs.STORE_UNAVAILABLE, "partition"), Times: -1})
	w.tm.Advance(testTTL + time.Second)
	l, _, err := w.store.Acquire(context.Background(), t, receipt.Owner{RunID: "intruder"}, testTTL)
	if err != nil {
		return false
	}
	prev, _, _ := w.store.Read(context.Background(), "preview", "pr-7")
	r := &receipt.Receipt{Env: "preview", Scope: "pr-7", Operation: receipt.OpApply, Status: receipt.StatusComplete}
	if prev != nil {
		r, _ = prev.Clone()
	}
	r.RunID = "intruder"
	if err := w.store.Write(context.Background(), r, l); err != nil {
		return false
	}
	w.intruder = &l
	return true
}

func (w *world) releaseIntruder(_ any) {
	if w.intruder != nil {
		w.store.Release(context.Background(), *w.intruder)
		w.intruder = nil
	}
}
