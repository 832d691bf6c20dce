package sweep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// EnvTeardown is what a teardown did in one environment.
type EnvTeardown struct {
	Env       string   `json:"env"`
	Scope     string   `json:"scope"`
	Done      bool     `json:"done"`      // nothing was left to do (already torn down): nothing was written
	Destroyed []string `json:"destroyed"` // "adapter.op key" of what this teardown destroyed
	Forgotten []string `json:"forgotten"` // adopted resources let go of, left in place
	Failed    []string `json:"failed"`    // what it could not destroy (still in the ledger)
	// Undo are the manual steps whose undo waits on a person (the
	// destroy ended partial, the steps still in the ledger).
	Undo  []adapter.Todo `json:"undo,omitempty"`
	RunID string         `json:"run_id,omitempty"`
	Err   error          `json:"-"`
}

// Envs returns the environments in which sc has a receipt or a lease,
// sorted, from one Scopes call.
func Envs(ctx context.Context, st receipt.Store, sc string) ([]string, error) {
	refs, err := st.Scopes(ctx)
	if err != nil {
		return nil, err
	}
	var envs []string
	for _, r := range refs {
		if r.Scope == sc {
			envs = append(envs, r.Env)
		}
	}
	sort.Strings(envs)
	return envs, nil
}

// Teardown destroys scope sc in every environment where it has a receipt,
// each from its ledger (no plan file), under its lease, leaving tombstone
// ts when it is not nil (a pull request closed). It is idempotent: an
// environment whose scope is already torn down (tombstoned, or destroyed,
// with an empty ledger and nothing in transit to it) is not written again.
func Teardown(ctx context.Context, r Repo, sc string, ts *receipt.Tombstone, headSHA string) ([]EnvTeardown, error) {
	envs, err := Envs(ctx, r.Store, sc)
	if err != nil {
		return nil, err
	}
	out := make([]EnvTeardown, 0, len(envs))
	for _, env := range envs {
		out = append(out, TeardownEnv(ctx, r, env, sc, ts, headSHA))
	}
	return out, nil
}

// TeardownEnv is Teardown in one environment.
func TeardownEnv(ctx context.Context, r Repo, env, sc string, ts *receipt.Tombstone, headSHA string) EnvTeardown {
	return teardownEnv(ctx, r, env, sc, ts, headSHA, nil)
}

// teardownEnv is TeardownEnv from receipt rec of the scope when the caller
// has just read it (nil: it is read here). The destroy itself reads the
// scope again under its lease.
func teardownEnv(ctx context.Context, r Repo, env, sc string, ts *receipt.Tombstone, headSHA string, rec *receipt.Receipt) EnvTeardown {
	res := EnvTeardown{Env: env, Scope: sc, Destroyed: []string{}, Forgotten: []string{}, Failed: []string{}}
	if rec == nil {
		var err error
		if rec, _, err = r.Store.Read(ctx, env, sc); err != nil {
			res.Err = err
			return res
		}
	}
	if rec != nil && settled(r.Engine, rec) && (ts == nil || rec.Closed != nil) && !pendingHandOver(ctx, r.Store, env, sc) {
		res.Done = true
		return res
	}
	if rec == nil && ts == nil {
		res.Done = true
		return res
	}
	owner := r.Owner
	owner.RunID = newRunID()
	owner.Operation = receipt.OpDestroy
	res.RunID = owner.RunID
	c := scope.Ctx{Env: env, Scope: sc, Git: scope.Git{SHA: headSHA}}
	if rec != nil {
		c.Git.Branch = rec.Branch
	}
	// Teardowns of one environment share its parent objects (one callback
	// list): wait for a parent's lease rather than fail on it.
	wait := r.LockWait
	if wait == 0 {
		wait = DefaultLockWait
	}
	run, err := r.Engine.Destroy(ctx, c, engine.Options{Env: env, Owner: owner, Close: ts, LockWait: wait, ApprovedBy: r.ApprovedBy})
	res.Err = err
	if run == nil || run.Receipt == nil {
		return res
	}
	res.Undo = run.Todos
	entry := map[string]string{}
	if rec != nil {
		for _, en := range rec.Ledger {
			entry[en.Key] = en.Adapter + "." + en.Op + " " + en.Key
		}
	}
	name := func(key string) string {
		if n, ok := entry[key]; ok {
			return n
		}
		return key
	}
	for _, id := range run.Order {
		lr := run.Receipt.Lines[id]
		for _, k := range lr.Resources {
			if lr.Status == engine.LineDestroyed {
				res.Destroyed = append(res.Destroyed, name(k))
			} else {
				res.Failed = append(res.Failed, name(k))
			}
		}
		for _, k := range lr.Forgotten {
			res.Forgotten = append(res.Forgotten, name(k))
		}
	}
	return res
}

// settled says a scope's teardown has nothing left to do: an empty
// ledger, or, after a destroy, only manual steps whose undo waits on a
// person (destroying again would only show the same undos again).
// The Destroyer says which entries are steps when it can
// (engine.Engine.OnlySteps).
func settled(d Destroyer, rec *receipt.Receipt) bool {
	if len(rec.Ledger) == 0 {
		return true
	}
	j, ok := d.(interface{ OnlySteps(receipt.Ledger) bool })
	return ok && rec.Operation == receipt.OpDestroy && j.OnlySteps(rec.Ledger)
}

// pendingHandOver reports whether a branch scope of env is being handed
// over to sc (a succession stopped part-way): sc's teardown must then run
// to finish the move and destroy what is in transit.
func pendingHandOver(ctx context.Context, st receipt.Store, env, sc string) bool {
	if k, _, err := scope.Parse(sc); err != nil || k != scope.KindPR {
		return false
	}
	stored, err := st.List(ctx, env)
	if err != nil {
		return true // cannot tell: let the engine's destroy decide
	}
	for _, s := range stored {
		if s.Receipt != nil && s.Receipt.SupersededBy == sc && len(s.Receipt.Ledger) > 0 {
			return true
		}
	}
	return false
}

func (t EnvTeardown) finding(base Finding, k Kind, why string) Finding {
	f := base
	f.Kind, f.Why, f.Destroyed, f.Failed, f.RunID = k, why, t.Destroyed, t.Failed, t.RunID
	if t.Err != nil {
		f.Error, f.Code = errs.Coded(t.Err).Message, string(errs.CodeOf(t.Err))
		if len(t.Failed) > 0 || errs.CodeOf(t.Err) == errs.DESTROY_FAILED {
			f.Kind = DestroyFailed
		}
	}
	return f
}

func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "r" + hex.EncodeToString(b)
}
