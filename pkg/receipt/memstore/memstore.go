package memstore

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Method names a Store method, for faults and call counts.
type Method string

// The methods faults can target.
const (
	MethodRead         Method = "Read"
	MethodList         Method = "List"
	MethodWrite        Method = "Write"
	MethodWriteMany    Method = "WriteMany"
	MethodHistory      Method = "History"
	MethodAcquire      Method = "Acquire"
	MethodRenew        Method = "Renew"
	MethodRelease      Method = "Release"
	MethodForceRelease Method = "ForceRelease"
	MethodLease        Method = "Lease"
	MethodLocks        Method = "Locks"
	MethodScopes       Method = "Scopes"
)

// Fault makes matching calls fail. Faults are consulted in the order they
// were injected; the first that matches a call applies to it.
type Fault struct {
	Method Method
	// Target limits the fault to calls on this target (a WriteMany matches
	// when any of its writes does); nil matches every call.
	Target *receipt.Target
	// Err is what the call returns.
	Err error
	// Lost makes the call take effect first and then return Err: the store
	// did it, the caller was never told (a lost answer).
	Lost bool
	// Skip lets this many matching calls through before the fault applies.
	Skip int
	// Times is how many matching calls fail: 0 means once, < 0 every one.
	Times int
}

type stored struct {
	data    []byte
	version receipt.Version
}

// Store is the in-memory store. The zero value is not usable: call New.
type Store struct {
	clock       clock.Clock
	atomicMulti bool

	mu       sync.Mutex
	receipts map[receipt.Target]stored
	leases   map[receipt.Target]receipt.Lease
	gens     map[receipt.Target]int64
	history  map[receipt.Target][]receipt.Event
	recorded map[receipt.Target]map[string]bool // receipt.Provenance: what put introduced
	faults   []*Fault
	calls    map[Method]int
	writes   int64
}

var _ receipt.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// NonAtomicMulti makes WriteMany behave like a store without atomic
// multi-writes (Capabilities().AtomicMulti false): after the fencing check,
// writes land one by one, each consulting MethodWrite faults, so a fault
// with Skip: n stops it after n writes — a crash part-way.
func NonAtomicMulti() Option { return func(s *Store) { s.atomicMulti = false } }

// New returns an empty store that takes its time from clock (nil: the
// system clock).
func New(c clock.Clock, opts ...Option) *Store {
	s := &Store{
		clock:       clock.Or(c),
		atomicMulti: true,
		receipts:    map[receipt.Target]stored{},
		leases:      map[receipt.Target]receipt.Lease{},
		gens:        map[receipt.Target]int64{},
		history:     map[receipt.Target][]receipt.Event{},
		recorded:    map[receipt.Target]map[string]bool{},
		calls:       map[Method]int{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Inject adds a fault.
func (s *Store) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults removes every fault.
func (s *Store) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Calls is how many times m was called (faulted calls included).
func (s *Store) Calls(m Method) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[m]
}

// Plant stores raw bytes as the receipt of env/scope, bypassing the
// encoder and the lease: a corrupt or newer receipt, for tests.
func (s *Store) Plant(env, scope string, raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.receipts[receipt.ScopeTarget(env, scope)] = stored{data: append([]byte(nil), raw...), version: s.nextVersion()}
}

// Raw returns the stored bytes of env/scope's receipt, or nil.
func (s *Store) Raw(env, scope string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.receipts[receipt.ScopeTarget(env, scope)].data...)
}

// Capabilities: everything, AtomicMulti unless NonAtomicMulti.
func (s *Store) Capabilities() receipt.Capabilities {
	return receipt.Capabilities{Locking: true, FencedWrites: true, AtomicMulti: s.atomicMulti, History: true}
}

// begin counts the call, checks ctx, and returns the fault that applies to
// it (nil if none). Called with s.mu held.
func (s *Store) begin(ctx context.Context, m Method, targets ...receipt.Target) (*Fault, error) {
	s.calls[m]++
	if err := receipt.Interrupted(ctx, fmt.Sprintf("memstore %s", m)); err != nil {
		return nil, err
	}
	return s.match(m, targets...), nil
}

func (s *Store) match(m Method, targets ...receipt.Target) *Fault {
	for i, f := range s.faults {
		if f.Method != m {
			continue
		}
		if f.Target != nil {
			hit := false
			for _, t := range targets {
				hit = hit || t == *f.Target
			}
			if !hit {
				continue
			}
		}
		if f.Skip > 0 {
			f.Skip--
			return nil
		}
		switch {
		case f.Times < 0:
		case f.Times <= 1:
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		default:
			f.Times--
		}
		return f
	}
	return nil
}

// run applies fault f (maybe nil) around op.
func run[T any](f *Fault, op func() (T, error)) (T, error) {
	if f != nil && !f.Lost {
		var zero T
		return zero, f.Err
	}
	v, err := op()
	if f != nil {
		return v, f.Err
	}
	return v, err
}

func (s *Store) nextVersion() receipt.Version {
	s.writes++
	return receipt.Version(fmt.Sprintf("m%d", s.writes))
}

// Read implements receipt.Receipts.
func (s *Store) Read(ctx context.Context, env, scope string) (*receipt.Receipt, receipt.Version, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := receipt.ScopeTarget(env, scope)
	f, err := s.begin(ctx, MethodRead, t)
	if err != nil {
		return nil, "", err
	}
	type rv struct {
		r *receipt.Receipt
		v receipt.Version
	}
	out, err := run(f, func() (rv, error) {
		if err := t.Validate(); err != nil {
			return rv{}, err
		}
		st, ok := s.receipts[t]
		if !ok {
			return rv{}, nil
		}
		r, err := receipt.DecodeStored(st.data, t, "receipt of "+t.String())
		return rv{r, st.version}, err
	})
	if err != nil {
		return nil, "", err
	}
	return out.r, out.v, nil
}

// List implements receipt.Receipts.
func (s *Store) List(ctx context.Context, env string) ([]receipt.Stored, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodList)
	if err != nil {
		return nil, err
	}
	return run(f, func() ([]receipt.Stored, error) {
		var out []receipt.Stored
		for t, st := range s.receipts {
			if t.Env != env {
				continue
			}
			r, err := receipt.DecodeStored(st.data, t, "receipt of "+t.String())
			if err != nil {
				// One damaged scope blocks only itself.
				out = append(out, receipt.Stored{Env: t.Env, Scope: t.Scope, Err: err})
				continue
			}
			out = append(out, receipt.Stored{Env: t.Env, Scope: t.Scope, Receipt: r, Version: st.version})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Scope < out[j].Scope })
		return out, nil
	})
}

// Write implements receipt.Receipts.
func (s *Store) Write(ctx context.Context, r *receipt.Receipt, lease receipt.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodWrite, lease.Target)
	if err != nil {
		return err
	}
	_, err = run(f, func() (struct{}, error) {
		data, err := s.check(r, lease)
		if err != nil {
			return struct{}{}, err
		}
		s.put(r, lease, data)
		return struct{}{}, nil
	})
	return err
}

// check validates and fences one write and encodes its receipt.
func (s *Store) check(r *receipt.Receipt, lease receipt.Lease) ([]byte, error) {
	if err := receipt.CheckWrite(r, lease); err != nil {
		return nil, err
	}
	if err := s.fence(lease); err != nil {
		return nil, err
	}
	return receipt.Encode(r)
}

func (s *Store) fence(lease receipt.Lease) error {
	var cur *receipt.Lease
	if l, ok := s.leases[lease.Target]; ok {
		cur = &l
	}
	return receipt.CheckFence(lease, cur)
}

func (s *Store) put(r *receipt.Receipt, lease receipt.Lease, data []byte) {
	t := r.Target()
	var before *receipt.Receipt // what this write replaces, a planted receipt included
	if st, ok := s.receipts[t]; ok {
		before, _ = receipt.DecodeStored(st.data, t, "receipt of "+t.String())
	}
	ids := s.recorded[t]
	if ids == nil {
		ids = map[string]bool{}
		s.recorded[t] = ids
	}
	receipt.RecordIntroduced(ids, before, r)
	v := s.nextVersion()
	s.receipts[t] = stored{data: data, version: v}
	ev := receipt.Event{At: s.clock.Now(), Target: t, Operation: r.Operation, RunID: r.RunID, Status: r.Status, Version: v, Generation: lease.Generation}
	h := s.history[t]
	for i := range h {
		if h[i].Operation != receipt.OpUnlock && h[i].RunID == r.RunID {
			h = append(h[:i:i], h[i+1:]...)
			break
		}
	}
	s.history[t] = append(h, ev)
}

// WriteMany implements receipt.Receipts.
func (s *Store) WriteMany(ctx context.Context, writes []receipt.Write) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	targets := make([]receipt.Target, len(writes))
	for i, w := range writes {
		targets[i] = w.Lease.Target
	}
	f, err := s.begin(ctx, MethodWriteMany, targets...)
	if err != nil {
		return err
	}
	_, err = run(f, func() (struct{}, error) {
		if err := receipt.CheckWrites(writes); err != nil {
			return struct{}{}, err
		}
		data := make([][]byte, len(writes))
		for i, w := range writes {
			d, err := s.check(w.Receipt, w.Lease)
			if err != nil {
				return struct{}{}, err
			}
			data[i] = d
		}
		for i, w := range writes {
			if !s.atomicMulti {
				if f := s.match(MethodWrite, w.Lease.Target); f != nil {
					if f.Lost {
						s.put(w.Receipt, w.Lease, data[i])
					}
					return struct{}{}, f.Err
				}
			}
			s.put(w.Receipt, w.Lease, data[i])
		}
		return struct{}{}, nil
	})
	return err
}

var _ receipt.Provenance = (*Store)(nil)

// Recorded implements receipt.Provenance from what Write and WriteMany
// recorded; a receipt put in place by Plant (a hand edit) records nothing.
func (s *Store) Recorded(ctx context.Context, target receipt.Target) (map[string]bool, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := receipt.Interrupted(ctx, "history of "+target.String()); err != nil {
		return nil, false, err
	}
	if err := target.Validate(); err != nil {
		return nil, false, err
	}
	ids, ok := s.recorded[target]
	if !ok {
		return nil, false, nil
	}
	out := make(map[string]bool, len(ids))
	for id := range ids {
		out[id] = true
	}
	return out, true, nil
}

// History implements receipt.Receipts.
func (s *Store) History(ctx context.Context, target receipt.Target) ([]receipt.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodHistory, target)
	if err != nil {
		return nil, err
	}
	return run(f, func() ([]receipt.Event, error) {
		if err := target.Validate(); err != nil {
			return nil, err
		}
		return append([]receipt.Event(nil), s.history[target]...), nil
	})
}

type acquired struct {
	lease     receipt.Lease
	preempted *receipt.Lease
}

// Acquire implements receipt.Leases.
func (s *Store) Acquire(ctx context.Context, target receipt.Target, owner receipt.Owner, ttl time.Duration) (receipt.Lease, *receipt.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodAcquire, target)
	if err != nil {
		return receipt.Lease{}, nil, err
	}
	out, err := run(f, func() (acquired, error) {
		if err := receipt.CheckAcquire(target, owner); err != nil {
			return acquired{}, err
		}
		now := s.clock.Now()
		var pre *receipt.Lease
		if cur, ok := s.leases[target]; ok {
			if !cur.Expired(now) {
				return acquired{}, receipt.HeldError(cur, now)
			}
			pre = &cur
		}
		next, err := receipt.NextGeneration(target, s.gens[target])
		if err != nil {
			return acquired{}, err
		}
		s.gens[target] = next
		l := receipt.NewLease(target, owner, next, now, ttl)
		s.leases[target] = l
		return acquired{l, pre}, nil
	})
	if err != nil {
		return receipt.Lease{}, nil, err
	}
	return out.lease, out.preempted, nil
}

// Renew implements receipt.Leases.
func (s *Store) Renew(ctx context.Context, lease receipt.Lease) (receipt.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodRenew, lease.Target)
	if err != nil {
		return receipt.Lease{}, err
	}
	return run(f, func() (receipt.Lease, error) {
		if err := s.fence(lease); err != nil {
			return receipt.Lease{}, err
		}
		l := s.leases[lease.Target].Renewed(s.clock.Now())
		s.leases[lease.Target] = l
		return l, nil
	})
}

// Release implements receipt.Leases.
func (s *Store) Release(ctx context.Context, lease receipt.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodRelease, lease.Target)
	if err != nil {
		return err
	}
	_, err = run(f, func() (struct{}, error) {
		if s.fence(lease) == nil {
			delete(s.leases, lease.Target)
		}
		return struct{}{}, nil
	})
	return err
}

// ForceRelease implements receipt.Leases.
func (s *Store) ForceRelease(ctx context.Context, target receipt.Target, reason, who string) (*receipt.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodForceRelease, target)
	if err != nil {
		return nil, err
	}
	return run(f, func() (*receipt.Lease, error) {
		if err := target.Validate(); err != nil {
			return nil, err
		}
		if reason == "" || who == "" {
			return nil, errs.New(errs.USAGE, "unlock %s: a reason and who is unlocking are required", target)
		}
		cur, ok := s.leases[target]
		if !ok {
			return nil, nil
		}
		delete(s.leases, target)
		s.history[target] = append(s.history[target], receipt.Event{
			At: s.clock.Now(), Target: target, Operation: receipt.OpUnlock, RunID: cur.Holder,
			Generation: cur.Generation, By: who, Reason: reason, Lease: &cur,
		})
		return &cur, nil
	})
}

// Lease implements receipt.Leases.
func (s *Store) Lease(ctx context.Context, target receipt.Target) (*receipt.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodLease, target)
	if err != nil {
		return nil, err
	}
	return run(f, func() (*receipt.Lease, error) {
		if err := target.Validate(); err != nil {
			return nil, err
		}
		if l, ok := s.leases[target]; ok {
			return &l, nil
		}
		return nil, nil
	})
}

// Locks implements receipt.Leases.
func (s *Store) Locks(ctx context.Context) ([]receipt.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodLocks)
	if err != nil {
		return nil, err
	}
	return run(f, func() ([]receipt.Lease, error) {
		out := make([]receipt.Lease, 0, len(s.leases))
		for _, l := range s.leases {
			out = append(out, l)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Target.Key() < out[j].Target.Key() })
		return out, nil
	})
}

// Scopes implements receipt.Store.
func (s *Store) Scopes(ctx context.Context) ([]receipt.ScopeRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.begin(ctx, MethodScopes)
	if err != nil {
		return nil, err
	}
	return run(f, func() ([]receipt.ScopeRef, error) {
		refs := map[receipt.Target]*receipt.ScopeRef{}
		get := func(t receipt.Target) *receipt.ScopeRef {
			if refs[t] == nil {
				refs[t] = &receipt.ScopeRef{Env: t.Env, Scope: t.Scope}
			}
			return refs[t]
		}
		for t := range s.receipts {
			get(t).HasReceipt = true
		}
		for t, l := range s.leases {
			if !t.IsParent() {
				get(t).Lease = &l
			}
		}
		out := make([]receipt.ScopeRef, 0, len(refs))
		for _, r := range refs {
			out = append(out, *r)
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Env != out[j].Env {
				return out[i].Env < out[j].Env
			}
			return out[i].Scope < out[j].Scope
		})
		return out, nil
	})
}
