package optest

import (
	"context"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
)

// Match selects the calls a fault applies to. Each field empty means "any".
//
//   - Op: OpObject ("fake.object") or OpItem ("fake.item").
//   - Method: which call. Read is "read"; Apply sends "create", "update"
//     (objects only) or, for a replace, "delete" then "create"; Destroy
//     sends "delete"; Lookup is "lookup"; AwaitExternal "await"; ListScope
//     "list". An item's create or delete is one call even though it is a
//     GET and a PUT of the list. An Apply that changes nothing sends no call
//     and fires nothing.
//   - Key: the resource key exactly (ObjectKey, ItemKey). ListScope calls
//     have no key and match only an empty Key.
type Match struct {
	Op, Method, Key string
}

func (m Match) matches(op, method, key string) bool {
	return (m.Op == "" || m.Op == op) && (m.Method == "" || m.Method == method) && (m.Key == "" || m.Key == key)
}

type faultKind int

const (
	faultFail       faultKind = iota // FailNext
	faultLose                        // LoseResponse
	faultBefore                      // OnCall
	faultCrash                       // Crash
	faultCrashAfter                  // CrashAfter
)

type fault struct {
	kind faultKind
	m    Match
	n    int // calls left
	err  error
	fn   func()
}

func isWrite(method string) bool {
	return method == MethodCreate || method == MethodUpdate || method == MethodDelete
}

// FailNext makes the next n matching calls fail with err, without any side
// effect; err nil means a PROVIDER_TRANSIENT error. A failed write is
// logged with Failed set.
func (c *Cloud) FailNext(m Match, err error, n int) {
	if n <= 0 {
		return
	}
	c.inject.addFault(&fault{kind: faultFail, m: m, n: n, err: err})
}

// LoseResponse makes the next matching write (create, update or delete; a
// read, lookup, await or list is never matched) succeed at the provider and
// then return a PROVIDER_TIMEOUT error, as if the response was lost.
func (c *Cloud) LoseResponse(m Match) {
	c.inject.addFault(&fault{kind: faultLose, m: m, n: 1})
}

// OnCall runs fn once, just before the next matching call takes effect (for
// a create: after intend returned). The call then goes on, unless its
// context is done by then (fn cancelled it): then it is not sent, has no
// side effect, and returns a PROVIDER_TIMEOUT error wrapping the context's
// error. A panic in fn propagates out of the op, with no state changed.
func (c *Cloud) OnCall(m Match, fn func()) {
	c.inject.addFault(&fault{kind: faultBefore, m: m, n: 1, fn: fn})
}

// Crash simulates the process dying just before the next matching call
// leaves: fn (may be nil; typically it cancels the run's context) runs,
// then the call returns a PROVIDER_TIMEOUT error wrapping context.Canceled
// and has no side effect. For a create this is the crash between the
// engine's checkpoint (intend) and the create.
func (c *Cloud) Crash(m Match, fn func()) {
	c.inject.addFault(&fault{kind: faultCrash, m: m, n: 1, fn: fn})
}

// CrashAfter simulates the process dying just after the next matching write
// (create, update or delete) reached the provider: the write takes effect,
// fn runs (may be nil), then the call returns a PROVIDER_TIMEOUT error
// wrapping context.Canceled. For a create this is "created, but nobody
// heard the answer": only the intent knows.
func (c *Cloud) CrashAfter(m Match, fn func()) {
	c.inject.addFault(&fault{kind: faultCrashAfter, m: m, n: 1, fn: fn})
}

// SetLatency makes op (OpObject or OpItem) slow: an object write sleeps d
// before it takes effect; an item create or delete sleeps d between reading
// and writing the list (the read-modify-write window). The sleep is real,
// happens only when d > 0, and ends early with the call's context (then the
// write is not sent).
func (c *Cloud) SetLatency(op string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latency[op] = d
}

// ClearFaults removes every fault not yet fired and all latency.
func (c *Cloud) ClearFaults() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = nil
	c.latency = map[string]time.Duration{}
}

func (in *injector) addFault(f *fault) {
	in.c.mu.Lock()
	defer in.c.mu.Unlock()
	in.c.faults = append(in.c.faults, f)
}

// take consumes one firing of the oldest fault of one of kinds matching the
// call; c.mu held.
func (in *injector) take(op, method, key string, kinds ...faultKind) *fault {
	for i, f := range in.c.faults {
		if !f.m.matches(op, method, key) {
			continue
		}
		ok := false
		for _, k := range kinds {
			ok = ok || f.kind == k
		}
		if !ok {
			continue
		}
		f.n--
		if f.n <= 0 {
			in.c.faults = append(in.c.faults[:i:i], in.c.faults[i+1:]...)
		}
		return f
	}
	return nil
}

// sent is a call that has left for the provider; finish decides what the
// caller hears after the call took effect.
type sent struct {
	op, method, key string
	lose            bool
	crashAfter      func()
	crashed         bool
}

// begin counts a call and fires the faults that act before it takes
// effect. An error means the call had no side effect.
func (in *injector) begin(ctx context.Context, op, method, key string) (*sent, error) {
	in.c.mu.Lock()
	in.c.calls[op+"."+method]++
	hook := in.take(op, method, key, faultBefore, faultCrash)
	in.c.mu.Unlock()

	if hook != nil {
		if hook.fn != nil {
			hook.fn()
		}
		if hook.kind == faultCrash {
			return nil, errs.Wrap(context.Canceled, errs.PROVIDER_TIMEOUT, "%s %s %s: the process crashed before the request left", op, method, key)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, errs.Wrap(err, errs.PROVIDER_TIMEOUT, "%s %s %s: not sent", op, method, key)
	}

	in.c.mu.Lock()
	defer in.c.mu.Unlock()
	if f := in.take(op, method, key, faultFail); f != nil {
		if isWrite(method) {
			in.c.writes = append(in.c.writes, Write{Op: op, Method: method, Key: key, Failed: true})
		}
		if f.err != nil {
			return nil, f.err
		}
		return nil, errs.New(errs.PROVIDER_TRANSIENT, "%s %s %s: the provider answered 503 (injected)", op, method, key)
	}
	s := &sent{op: op, method: method, key: key}
	if isWrite(method) {
		if f := in.take(op, method, key, faultLose, faultCrashAfter); f != nil {
			if f.kind == faultLose {
				s.lose = true
			} else {
				s.crashed = true
				s.crashAfter = f.fn
			}
		}
	}
	return s, nil
}

// finish is what the caller hears once the call took effect.
func (s *sent) finish() error {
	switch {
	case s.crashed:
		if s.crashAfter != nil {
			s.crashAfter()
		}
		return errs.Wrap(context.Canceled, errs.PROVIDER_TIMEOUT, "%s %s %s: the process crashed after the request left", s.op, s.method, s.key)
	case s.lose:
		return errs.New(errs.PROVIDER_TIMEOUT, "%s %s %s: no response (lost; the write may have happened)", s.op, s.method, s.key)
	}
	return nil
}

// logWrite appends a write; c.mu held.
func (pv *provider) logWrite(op, method, key string, failed bool) {
	pv.c.writes = append(pv.c.writes, Write{Op: op, Method: method, Key: key, Failed: failed})
}

// sleep waits the op's latency, or until ctx is done (an error: the write
// is not sent).
func (in *injector) sleep(ctx context.Context, op, method, key string) error {
	in.c.mu.Lock()
	d := in.c.latency[op]
	in.c.mu.Unlock()
	if d <= 0 {
		return nil
	}
	if err := clock.Or(in.c.Clock).Sleep(ctx, d); err != nil {
		return errs.Wrap(err, errs.PROVIDER_TIMEOUT, "%s %s %s: not sent", op, method, key)
	}
	return nil
}
