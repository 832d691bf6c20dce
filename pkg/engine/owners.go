package engine

import (
	"context"
	"sync"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// owners names, for the identity of a resource, the other scope of the
// environment that manages it (docs/adr/0008, "The other scopes, on
// demand"). Against a store that reads a scope without its environment
// (receipt.ScopeViewer) the other scopes' receipts are read only when a
// run first asks about a resource its own ledger does not hold: a plan of
// a steady scope never reads them. Otherwise they are all known from the
// run's first read, as before.
//
// Who asks, and so when the environment is read: the judgement of a
// declared resource this scope's ledger does not hold — in apply always
// (before anything is created, adopted or relied on, so another run's
// intent is seen as it was before: I5, I11), in plan when the resource
// exists (adopt, foreign or in transit); plan's unmanaged drift, for what
// exists and is in no ledger of this scope. Destroy reads the whole
// environment itself (its ownership checks), and succession reads the
// scopes it names.
type owners struct {
	me    string // the run's scope
	notes *notes // where a damaged receipt is warned of

	mu    sync.Mutex
	byID  map[string]string   // identity → the other scope that manages it
	rest  receipt.Lister      // the environment, not read yet; nil once read
	named receipt.NamedLister // reads a few named scopes of it; nil: only rest
	known map[string]bool     // scopes already indexed (not read again from rest)
	over  map[string]string   // what this run changed: identity → owner ("": none)
	err   error               // reading rest failed

	// A read of rest started ahead (prefetch): closed once what it
	// read is indexed (or its error kept).
	early chan struct{}
}

func newOwners(me string, n *notes) *owners {
	return &owners{me: me, notes: n, byID: map[string]string{}, known: map[string]bool{}, over: map[string]string{}}
}

// loadForeign indexes the ledgers of the other scopes of the environment
// (intents included: another run is creating that resource right now),
// naming each resource's owner by the succession rule (Owners): an entry
// in transit to a third scope is that scope's. An entry in transit to this
// scope that is not in its ledger yet stays foreign (named after the
// scope that still holds it) until the hand-over is finished.
func (o *owners) load(stored []receipt.Stored) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.index(stored)
}

// index is load with o.mu held.
func (o *owners) index(stored []receipt.Stored) {
	for _, s := range stored {
		o.known[s.Scope] = true
		if s.Scope == o.me || s.Receipt == nil {
			continue
		}
		name := s.Scope
		if inTransit(s.Receipt) && s.Receipt.SupersededBy != o.me {
			name = s.Receipt.SupersededBy
		}
		for _, en := range s.Receipt.Ledger {
			o.byID[en.Ref().Identity()] = name
		}
	}
}

// foreignLater leaves the rest of the environment to be read by rest, the
// first time the run asks for the owner of a resource (nil: stored was all
// of it).
func (o *owners) later(rest receipt.Lister, named receipt.NamedLister) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rest = rest
	if rest != nil {
		o.named = named
	}
}

// knownOwner is the owner of identity id as far as the scopes read so far
// tell (ok: that is the whole environment's answer, or an owner was
// found); it reads nothing.
func (o *owners) knownOwner(id string) (name string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if name, ok := o.over[id]; ok {
		return name, true
	}
	if name := o.byID[id]; name != "" {
		return name, true
	}
	return "", o.rest == nil && o.err == nil
}

// readScopes reads the named scopes of the environment that no read has
// indexed yet, in one exchange, where the store can (receipt.View.Named)
// and the whole environment is not read: the likely owners of resources
// found in other scopes' places (unmanaged drift), at the cost of those
// scopes, not of every scope. Errors are left to the whole read that
// follows when an owner is still unknown.
func (o *owners) readScopes(ctx context.Context, scopes []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rest == nil || o.named == nil || o.early != nil {
		return
	}
	var want []string
	for _, sc := range scopes {
		if !o.known[sc] && sc != o.me {
			want = append(want, sc)
		}
	}
	if len(want) == 0 {
		return
	}
	stored, err := o.named(ctx, want)
	if err != nil {
		return
	}
	for _, s := range stored {
		o.known[s.Scope] = true // a damaged one is warned of once, here
	}
	o.index(readable(stored, o.me, o.notes))
}

// foreignOwner is the other scope that manages the resource of identity
// id, "" when none; it reads the rest of the environment first when it has
// not been read, or waits for the read prefetch started. Errors are
// the store's (STORE_*), and every later call returns the same one.
func (o *owners) owner(ctx context.Context, id string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		if name, ok := o.over[id]; ok {
			return name, nil
		}
		if o.err != nil {
			return "", o.err
		}
		if o.rest == nil {
			return o.byID[id], nil
		}
		if early := o.early; early != nil {
			o.mu.Unlock()
			<-early // it indexed what it read, or kept its error
			o.mu.Lock()
			continue
		}
		stored, err := o.rest(ctx)
		o.absorb(stored, err)
	}
}

// absorbRest indexes the rest of the environment, read (or keeps the
// read's error); o.mu held.
func (o *owners) absorb(stored []receipt.Stored, err error) {
	if err != nil {
		o.err = err
		return
	}
	o.rest = nil
	fresh := stored[:0:0]
	for _, s := range stored {
		if !o.known[s.Scope] {
			fresh = append(fresh, s)
		}
	}
	o.index(readable(fresh, o.me, o.notes))
}

// prefetchOwners starts reading the rest of the environment now, beside
// the run's first provider reads, for a run that will ask (an apply with a
// line its ledger holds nothing of): the read is then off the lines'
// critical path. It is the same read owner would make, as of the
// same listing where the store can (receipt.ScopeViewer).
func (o *owners) prefetch(ctx context.Context) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rest == nil || o.early != nil {
		return
	}
	rest, early := o.rest, make(chan struct{})
	o.early = early
	go func() {
		stored, err := rest(ctx)
		o.mu.Lock()
		o.absorb(stored, err)
		o.mu.Unlock()
		close(early)
	}()
}

// settle waits for a read started ahead to end (it is not left running
// after the run).
func (o *owners) settle() {
	o.mu.Lock()
	early := o.early
	o.mu.Unlock()
	if early != nil {
		<-early
	}
}

// setOwner records that this run changed the owner of identity id (a
// hand-over it finished or previews): "" for none.
func (o *owners) set(id, scope string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.over[id] = scope
}

// view is the run's first read of the scope, at the floor of round trips
// the store offers: a ScopeViewer reads the scope and its succession
// predecessor only, leaving the rest of the environment to View.Rest; a
// Viewer reads the scope and the whole environment; nil when the store
// has neither (the caller reads and lists).
//
// A pull request's scope on a store without atomic multi-writes reads the
// whole environment at once: a hand-over to it may have stopped between
// its writes (superseded_by naming it on any branch scope), and
// succession must finish it before anything else (see succession.go). On
// a store with atomic writes a hand-over is never seen half-done, and
// only the head branch's scope can be inherited.
func (st *start) view(ctx context.Context, pr *prepared) (*receipt.View, error) {
	e := st.e
	kind, _, _ := scope.Parse(pr.scope)
	whole := kind == scope.KindPR && !e.Store.Capabilities().AtomicMulti
	vw, viewer := e.Store.(receipt.Viewer)
	if sv, ok := e.Store.(receipt.ScopeViewer); ok && !(whole && viewer) {
		var also []string
		if b := pr.ctx.Git.Branch; kind == scope.KindPR && b != "" {
			if bs := scope.BranchScope(b); scope.Validate(bs) == nil {
				also = append(also, bs)
			}
		}
		v, err := sv.ViewScope(ctx, pr.env, pr.scope, also)
		if err != nil || v.Rest == nil || !whole {
			return v, err
		}
		all, err := v.Rest(ctx)
		if err != nil {
			return nil, err
		}
		v.Others, v.Rest = all[:0:0], nil
		for _, s := range all {
			if s.Scope != pr.scope {
				v.Others = append(v.Others, s)
			}
		}
		return v, nil
	}
	if viewer {
		return vw.View(ctx, pr.env, pr.scope)
	}
	return nil, nil
}

// ownersError is the refusal of a line whose resource's owner could not be
// learned: nothing is written for it.
func ownersError(err error) verdict {
	c := errs.Coded(err)
	return verdict{Block: c.Code, Message: "the other scopes' receipts could not be read, so who manages it is unknown: " + c.Message}
}
