package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// parseLease reads a tip's lock.json: nil when none.
func parseLease(t *tipState) (*receipt.Lease, error) {
	data, ok, err := t.file(receipt.LockFile)
	if err != nil || !ok {
		return nil, err
	}
	var l receipt.Lease
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, errs.Wrap(err, errs.RECEIPT_CORRUPT, "lock.json on %s (commit %s) cannot be parsed", shortRef(t.ref), t.hash).
			With("ref", t.ref.String())
	}
	return &l, nil
}

// leaseOf is the lease stored on target's branch, or nil. A lock.json that
// does not parse or names another target is RECEIPT_CORRUPT; its hint names
// the unlock command, which removes it.
func leaseOf(t *tipState, target receipt.Target) (*receipt.Lease, error) {
	l, err := parseLease(t)
	if err == nil && l != nil && l.Target != target {
		err = errs.New(errs.RECEIPT_CORRUPT, "lock.json on %s (commit %s) is for %s, not %s", shortRef(t.ref), t.hash, l.Target, target)
	}
	if err != nil {
		return nil, errs.Coded(err).WithHint("Inspect lock.json on the branch %s; `%s` removes it.", shortRef(t.ref), target.UnlockCommand())
	}
	return l, nil
}

// generationOf is the last generation granted on the branch (0 for none).
func generationOf(t *tipState) (int64, error) {
	data, ok, err := t.file(GenerationFile)
	if err != nil || !ok {
		return 0, err
	}
	g, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, errs.Wrap(err, errs.RECEIPT_CORRUPT, "%s on %s (commit %s) is not a number", GenerationFile, shortRef(t.ref), t.hash)
	}
	return g, nil
}

func generationFile(g int64) []byte { return []byte(strconv.FormatInt(g, 10) + "\n") }

// shortRef is a ref without "refs/heads/", as people see branches.
func shortRef(r plumbing.ReferenceName) string { return strings.TrimPrefix(r.String(), "refs/heads/") }

type acquired struct {
	lease     receipt.Lease
	preempted *receipt.Lease
}

// Acquire implements receipt.Leases: one compare-and-swap of the target's
// branch that adds lock.json and raises the generation file. A branch that
// does not exist yet is created by a create-only push, so of two runs
// creating it, one gets the lease and the other LOCK_HELD.
func (s *Store) Acquire(ctx context.Context, target receipt.Target, owner receipt.Owner, ttl time.Duration) (receipt.Lease, *receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "acquire "+target.String()); err != nil {
		return receipt.Lease{}, nil, err
	}
	if err := receipt.CheckAcquire(target, owner); err != nil {
		return receipt.Lease{}, nil, err
	}
	return s.leases.acquire(ctx, target, owner, ttl, nil, nil)
}

// acquire is Acquire's compare-and-swap; check, when not nil, is a further
// condition on the tip (AcquireAt's version), decided with the lease; with,
// when not nil, is an edit made in the same commit by the lease taken
// (AcquireAtWith's receipt), decided once the lease's generation is known.
// With with, a live lease of owner's run is reported (LOCK_HELD naming it)
// before check is asked: it can only be this very step, landed, its answer
// lost.
func (x *leaseKeeper) acquire(ctx context.Context, target receipt.Target, owner receipt.Owner, ttl time.Duration, check func(*tipState) error, with func(receipt.Lease) (*edit, error)) (receipt.Lease, *receipt.Lease, error) {
	s := x.s
	landed, err := s.cas.update(ctx, "acquire "+target.String(), []plumbing.ReferenceName{refOf(target)}, func(ts []*tipState) ([]*edit, error) {
		t := ts[0]
		cur, err := leaseOf(t, target)
		if err != nil {
			return nil, err
		}
		now := s.clock.Now()
		if with != nil && cur != nil && cur.Holder == owner.RunID && !cur.Expired(now) {
			return nil, receipt.HeldError(*cur, now)
		}
		if check != nil {
			if err := check(t); err != nil {
				return nil, err
			}
		}
		if cur != nil && !cur.Expired(now) {
			return nil, receipt.HeldError(*cur, now)
		}
		last, err := generationOf(t)
		if err != nil {
			return nil, err
		}
		if cur != nil && cur.Generation > last {
			last = cur.Generation
		}
		next, err := receipt.NextGeneration(target, last)
		if err != nil {
			return nil, err
		}
		l := receipt.NewLease(target, owner, next, now, ttl)
		data, err := encodeLease(l)
		if err != nil {
			return nil, err
		}
		ed := &edit{
			set:      map[string][]byte{receipt.LockFile: data, GenerationFile: generationFile(l.Generation), ReadmeFile: readme(target)},
			subject:  subject("acquire", target, owner.RunID, fmt.Sprintf("generation-%d", l.Generation)),
			trailers: []string{trailerLease + "acquire"},
			run:      owner.RunID,
			result:   acquired{lease: l, preempted: cur},
		}
		if with != nil {
			also, err := with(l)
			if err != nil {
				return nil, err
			}
			for name, b := range also.set {
				ed.set[name] = b
			}
			// The commit is the receipt's, as people read the branch; its
			// trailers say it also took the lease.
			ed.subject = also.subject
			ed.trailers = append(also.trailers, ed.trailers...)
		}
		return []*edit{ed}, nil
	})
	if err != nil {
		return receipt.Lease{}, nil, err
	}
	a := landed[0].result.(acquired)
	return a.lease, a.preempted, nil
}

// Renew implements receipt.Leases.
func (s *Store) Renew(ctx context.Context, lease receipt.Lease) (receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "renew "+lease.Target.String()); err != nil {
		return receipt.Lease{}, err
	}
	if err := lease.Target.Validate(); err != nil {
		return receipt.Lease{}, err
	}
	target := lease.Target
	landed, err := s.cas.update(ctx, "renew "+target.String(), []plumbing.ReferenceName{refOf(target)}, func(ts []*tipState) ([]*edit, error) {
		cur, err := leaseOf(ts[0], target)
		if err != nil {
			return nil, err
		}
		if err := receipt.CheckFence(lease, cur); err != nil {
			return nil, err
		}
		out := cur.Renewed(s.clock.Now())
		data, err := encodeLease(out)
		if err != nil {
			return nil, err
		}
		return []*edit{{
			set:      map[string][]byte{receipt.LockFile: data},
			subject:  subject("renew", target, lease.Holder, fmt.Sprintf("generation-%d", lease.Generation)),
			trailers: []string{trailerLease + "renew"},
			run:      lease.Holder,
			result:   out,
		}}, nil
	})
	if err != nil {
		return receipt.Lease{}, err
	}
	return landed[0].result.(receipt.Lease), nil
}

// Release implements receipt.Leases: lock.json is removed, the generation
// file stays. A lease that is not the stored one is left alone (nil).
func (s *Store) Release(ctx context.Context, lease receipt.Lease) error {
	if err := receipt.Interrupted(ctx, "release "+lease.Target.String()); err != nil {
		return err
	}
	if err := lease.Target.Validate(); err != nil {
		return err
	}
	target := lease.Target
	_, err := s.cas.update(ctx, "release "+target.String(), []plumbing.ReferenceName{refOf(target)}, func(ts []*tipState) ([]*edit, error) {
		cur, err := leaseOf(ts[0], target)
		if err != nil {
			return nil, err
		}
		if cur == nil || !cur.Same(lease) {
			return nil, nil
		}
		last, err := generationOf(ts[0])
		if err != nil {
			return nil, err
		}
		return []*edit{{
			set:      map[string][]byte{GenerationFile: generationFile(max(last, cur.Generation))},
			remove:   []string{receipt.LockFile},
			subject:  subject("release", target, lease.Holder, fmt.Sprintf("generation-%d", lease.Generation)),
			trailers: []string{trailerLease + "release"},
			run:      lease.Holder,
		}}, nil
	})
	return err
}

// ForceRelease implements receipt.Leases: lock.json is removed whoever
// holds it, and the commit records who, why and the lease (an "unlock"
// event in History). A lock.json that does not parse is removed too (this
// is the escape hatch for it); nil is returned for it.
func (s *Store) ForceRelease(ctx context.Context, target receipt.Target, reason, who string) (*receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "unlock "+target.String()); err != nil {
		return nil, err
	}
	if err := target.Validate(); err != nil {
		return nil, err
	}
	if reason == "" || who == "" {
		return nil, errs.New(errs.USAGE, "unlock %s: a reason and who is unlocking are required", target)
	}
	landed, err := s.cas.update(ctx, "unlock "+target.String(), []plumbing.ReferenceName{refOf(target)}, func(ts []*tipState) ([]*edit, error) {
		t := ts[0]
		cur, err := leaseOf(t, target)
		corrupt := errs.CodeOf(err) == errs.RECEIPT_CORRUPT
		if err != nil && !corrupt {
			return nil, err
		}
		if cur == nil && !corrupt {
			return nil, nil
		}
		last, err := generationOf(t)
		if err != nil && errs.CodeOf(err) != errs.RECEIPT_CORRUPT {
			return nil, err
		}
		ev := receipt.Event{At: s.clock.Now(), Target: target, Operation: receipt.OpUnlock, By: who, Reason: reason, Lease: cur}
		holder := "-"
		if cur != nil {
			ev.RunID, ev.Generation, holder = cur.Holder, cur.Generation, cur.Holder
			last = max(last, cur.Generation)
		}
		evLine, err := eventTrailer(ev)
		if err != nil {
			return nil, err
		}
		return []*edit{{
			set:      map[string][]byte{GenerationFile: generationFile(last)},
			remove:   []string{receipt.LockFile},
			subject:  subject(string(receipt.OpUnlock), target, holder, "forced-by-"+receipt.EncodeSegment(who)),
			trailers: []string{evLine},
			run:      who,
			result:   cur,
		}}, nil
	})
	if err != nil || landed == nil {
		return nil, err
	}
	cur, _ := landed[0].result.(*receipt.Lease)
	return cur, nil
}

// Lease implements receipt.Leases: one fresh read of the target's branch.
func (s *Store) Lease(ctx context.Context, target receipt.Target) (*receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "read the lease of "+target.String()); err != nil {
		return nil, err
	}
	if err := target.Validate(); err != nil {
		return nil, err
	}
	ts, err := s.cas.readStates(ctx, []plumbing.ReferenceName{refOf(target)})
	if err != nil {
		return nil, err
	}
	return leaseOf(ts[0], target)
}

// scan reads every scope branch and lock branch in one fetch (one ref
// listing, at most one packfile): the scopes with a receipt or a lease,
// every stored lease that can be read, and the ones that cannot. A damaged
// branch is reported, never a reason to hide the others.
func (x *leaseKeeper) scan(ctx context.Context) ([]receipt.ScopeRef, []receipt.Lease, []receipt.Unreadable, error) {
	s := x.s
	snap, err := s.wire.Fetch(ctx, storeRefs(func(name string) bool {
		kind, _, _ := parseRef(name)
		return kind != refOther
	}), fetchTips)
	if err != nil {
		return nil, nil, nil, err
	}
	var (
		scopes []receipt.ScopeRef
		locks  []receipt.Lease
		bad    []receipt.Unreadable
	)
	for ref, h := range snap.Refs {
		kind, target, id := parseRef(ref.String())
		t, err := stateAt(snap.St, ref, h, true)
		if err != nil {
			if errs.CodeOf(err) != errs.RECEIPT_CORRUPT {
				return nil, nil, nil, err
			}
			bad = append(bad, receipt.Unreadable{Where: shortRef(ref), Err: err})
			if kind == refScope {
				scopes = append(scopes, receipt.ScopeRef{Env: target.Env, Scope: target.Scope, Problem: errs.Coded(err).Message})
			}
			continue
		}
		switch kind {
		case refScope:
			_, has := t.tree[receipt.ReceiptFile]
			l, err := leaseOf(t, target)
			if err != nil {
				if errs.CodeOf(err) != errs.RECEIPT_CORRUPT {
					return nil, nil, nil, err
				}
				bad = append(bad, receipt.Unreadable{Where: shortRef(ref), Err: err})
				scopes = append(scopes, receipt.ScopeRef{Env: target.Env, Scope: target.Scope, HasReceipt: has, Problem: errs.Coded(err).Message})
				continue
			}
			if !has && !neverWritten(t.commit) {
				// Someone removed receipt.json (receiptOf): the scope is
				// listed with its problem, never left out as if empty.
				err := receipt.Missing(target, fmt.Sprintf("the receipt of %s (branch %s, commit %s)", target, shortRef(ref), h))
				bad = append(bad, receipt.Unreadable{Where: shortRef(ref), Err: err})
				scopes = append(scopes, receipt.ScopeRef{Env: target.Env, Scope: target.Scope, Lease: l, Problem: errs.Coded(err).Message})
			} else if has || l != nil {
				scopes = append(scopes, receipt.ScopeRef{Env: target.Env, Scope: target.Scope, HasReceipt: has, Lease: l})
			}
			if l != nil {
				locks = append(locks, *l)
			}
		case refLock:
			l, err := parseLease(t)
			if err == nil && l != nil && (!l.Target.IsParent() || receipt.ParentLockID(l.Target.Identity) != id) {
				err = errs.New(errs.RECEIPT_CORRUPT, "lock.json on %s (commit %s) names another object", shortRef(ref), h).
					WithHint("Inspect it and delete the branch %s if no apply is running.", shortRef(ref))
			}
			if err != nil {
				if errs.CodeOf(err) != errs.RECEIPT_CORRUPT {
					return nil, nil, nil, err
				}
				bad = append(bad, receipt.Unreadable{Where: shortRef(ref), Err: err})
				continue
			}
			if l != nil {
				locks = append(locks, *l)
			}
		}
	}
	sort.Slice(scopes, func(i, j int) bool {
		if scopes[i].Env != scopes[j].Env {
			return scopes[i].Env < scopes[j].Env
		}
		return scopes[i].Scope < scopes[j].Scope
	})
	sort.Slice(locks, func(i, j int) bool { return locks[i].Target.Key() < locks[j].Target.Key() })
	sort.Slice(bad, func(i, j int) bool { return bad[i].Where < bad[j].Where })
	return scopes, locks, bad, nil
}

// Locks implements receipt.Leases in one fetch, whatever the number of
// branches.
func (s *Store) Locks(ctx context.Context) ([]receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "list leases"); err != nil {
		return nil, err
	}
	_, locks, bad, err := s.leases.scan(ctx)
	if err != nil {
		return nil, err
	}
	return locks, receipt.NewUnreadable(bad)
}

// Scopes implements receipt.Store in one fetch, whatever the number of
// branches.
func (s *Store) Scopes(ctx context.Context) ([]receipt.ScopeRef, error) {
	if err := receipt.Interrupted(ctx, "list scopes"); err != nil {
		return nil, err
	}
	scopes, _, _, err := s.leases.scan(ctx)
	return scopes, err
}

// leaseKeeper takes leases and lists them.
type leaseKeeper struct{ s *Store }
