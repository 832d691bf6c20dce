package engine

import (
	"cmp"
	"context"
	"io"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// start is what every entry point resolves once, in begin: the
// environment (Options.Env, else the context's, else "preview"), the
// options and the run's owner. Every lease a run takes — the scope's,
// a predecessor's or successor's, a parent object's — is taken by
// acquire and given up by release, the one way for each.
type start struct {
	e     *Engine
	env   string
	o     Options
	owner receipt.Owner
}

// envFor is the environment of a run of c with o: the one derivation.
func envFor(o Options, c scope.Ctx) string {
	return cmp.Or(o.Env, c.Env, "preview")
}

// begin checks the engine, puts its progress sink in ctx, resolves the
// environment of c (o.Env first) and, for an operation that writes (op
// not ""), the run's owner.
func (e *Engine) begin(ctx context.Context, c scope.Ctx, o Options, op receipt.Operation) (context.Context, *start, error) {
	if err := e.check(); err != nil {
		return ctx, nil, err
	}
	st := &start{e: e, env: envFor(o, c), o: o}
	st.o.Env = st.env
	if op != "" {
		owner, err := newOwner(e.rand(), o, op)
		if err != nil {
			return ctx, nil, err
		}
		st.owner = owner
	}
	return e.events(ctx), st, nil
}

// target is the scope lease target of sc in the run's environment.
func (st *start) target(sc string) receipt.Target {
	return receipt.ScopeTarget(st.env, sc)
}

// acquire takes the lease on target for owner (the run's, or a parent
// write's), waiting when wait (bounded, see leaseConfig), granted only at
// version at when at is not nil; errors are redacted.
func (st *start) acquire(ctx context.Context, target receipt.Target, owner receipt.Owner, wait bool, at *receipt.Version) (*LeaseKeeper, error) {
	cfg := st.leaseConfig(wait)
	cfg.At = at
	k, err := AcquireLease(ctx, cfg, target, owner)
	if err != nil {
		return nil, st.e.redactor().Error(err)
	}
	return k, nil
}

// deferred is a scope lease taken only when the run first needs it, at the
// version at the run read (DeferLease).
func (st *start) deferred(ctx context.Context, target receipt.Target, at *receipt.Version) *LeaseKeeper {
	cfg := st.leaseConfig(false)
	cfg.At = at
	return DeferLease(ctx, cfg, target, st.owner)
}

// release gives k's lease up (if the run has not already, with its final
// write) and hands a release that failed to warn as a warning. A nil k
// is nothing to release.
func (st *start) release(ctx context.Context, k *LeaseKeeper, warn func(Warning)) {
	if k == nil {
		return
	}
	if rerr := k.Release(context.WithoutCancel(ctx)); rerr != nil && warn != nil {
		warn(Warning{Code: errs.CodeOf(rerr), Message: st.e.redactor().String(errs.Coded(rerr).Message)})
	}
}

// owner is the owner of a run of o doing op, with a fresh run id when o
// names none.
func newOwner(rnd io.Reader, o Options, op receipt.Operation) (receipt.Owner, error) {
	ow := o.Owner
	ow.Operation = op
	if ow.RunID == "" {
		id, err := newRunID(rnd)
		if err != nil {
			return ow, err
		}
		ow.RunID = id
	}
	return ow, nil
}

// leaseConfig is how a lease is taken: waiting up to the wait timeout
// when wait (--wait), else up to Options.LockWait when that is set (a
// lease held by another run is usually released within seconds), else
// not at all.
func (st *start) leaseConfig(wait bool) LeaseConfig {
	e, o := st.e, st.o
	timeout := o.waitTimeout()
	lockOnly := false
	if !wait && o.LockWait > 0 {
		wait, timeout, lockOnly = true, o.LockWait, true
	}
	return LeaseConfig{LockWaitOnly: lockOnly, Store: e.Store, Clock: e.clock(), Rand: e.rand(),
		Progress: func(s string) { e.progress("%s", s) }, TTL: e.ttl(), Wait: wait, WaitTimeout: timeout, HolderGone: e.HolderGone}
}
