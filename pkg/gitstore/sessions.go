package gitstore

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore/internal/gitwire"
	"github.com/sponson/apply/pkg/receipt"
)

var _ receipt.Sessions = (*Store)(nil)

var _ receipt.ScopeViewer = (*Store)(nil)

// View implements receipt.Viewer: the scope's branch and every other scope
// branch of env in one fetch (one ref listing — none when it is the
// store's first operation over HTTP, see New — and at most one packfile).
// The scope's tip is remembered, so an AcquireAt or WriteAt that follows
// pushes on it without reading again.
func (s *Store) View(ctx context.Context, env, scope string) (*receipt.View, error) {
	v, _, err := s.sessions.view(ctx, env, scope, envRefs(env), true)
	return v, err
}

// ViewScope implements receipt.ScopeViewer: View of the scope's branch and
// the branches of the scopes named in also, whatever the number of other
// scopes (one ref listing, none when it is the store's first operation
// over HTTP, and one packfile of those branches' tips). View.Rest is List
// on the same ref listing: over HTTP one packfile request, no listing of
// its own (over file:// every session lists the refs again).
func (s *Store) ViewScope(ctx context.Context, env, scope string, also []string) (*receipt.View, error) {
	v, from, err := s.sessions.view(ctx, env, scope, scopeRefs(env, also), false)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(s.url, "http") {
		from = nil
	}
	v.Rest = func(ctx context.Context) ([]receipt.Stored, error) {
		return s.sessions.list(ctx, env, from, envRefs(env))
	}
	v.Named = func(ctx context.Context, scopes []string) ([]receipt.Stored, error) {
		return s.sessions.list(ctx, env, from, scopeRefs(env, scopes))
	}
	return v, nil
}

// view reads the scope's branch and the other scope branches of env whose
// ref names others matches (a scope branch of env, in canonical form), in one fetch, and returns the listing it read. With
// strict, a damaged receipt of another scope fails the view (View);
// otherwise it is a Stored with Err (ViewScope, as List).
func (x *sessionReader) view(ctx context.Context, env, scope string, others gitwire.Refs, strict bool) (*receipt.View, *listing, error) {
	s := x.s
	if err := receipt.Interrupted(ctx, "read "+env+"/"+scope); err != nil {
		return nil, nil, err
	}
	target := receipt.ScopeTarget(env, scope)
	if err := target.Validate(); err != nil {
		return nil, nil, err
	}
	own := refOf(target)
	snap, err := s.wire.Fetch(ctx, gitwire.Refs{Prefixes: append([]string{own.String()}, others.Prefixes...), Match: func(name string) bool {
		return name == own.String() || others.Match(name)
	}}, fetchTips)
	if err != nil {
		return nil, nil, err
	}
	v := &receipt.View{}
	for ref, h := range snap.Refs {
		_, t, _ := parseRef(ref.String())
		ts, err := stateAt(snap.St, ref, h, true)
		if err != nil {
			return nil, nil, err
		}
		if ref == own {
			if v.Receipt, v.Version, err = receiptOf(ts, target); err != nil {
				return nil, nil, err
			}
			if v.Lease, err = leaseOf(ts, target); err != nil {
				return nil, nil, err
			}
			continue
		}
		r, ver, err := receiptOf(ts, t)
		if err != nil {
			if c := errs.CodeOf(err); strict || c != errs.RECEIPT_CORRUPT && c != errs.RECEIPT_VERSION {
				return nil, nil, err
			}
			v.Others = append(v.Others, receipt.Stored{Env: env, Scope: t.Scope, Err: err})
			continue
		}
		if r != nil {
			v.Others = append(v.Others, receipt.Stored{Env: env, Scope: t.Scope, Receipt: r, Version: ver})
		}
	}
	s.tips.remember(own, snap.Refs[own])
	sort.Slice(v.Others, func(i, j int) bool { return v.Others[i].Scope < v.Others[j].Scope })
	return v, snap.Listing, nil
}

// envRefs matches the scope branches of env (in canonical form). The
// prefix is compared first: most refs of a large remote are other
// environments' or locks.
func envRefs(env string) gitwire.Refs {
	prefix := RefPrefix + receipt.EncodeSegment(env) + "/"
	return gitwire.Refs{Prefixes: []string{prefix}, Match: func(name string) bool {
		if !strings.HasPrefix(name, prefix) {
			return false
		}
		kind, t, _ := parseRef(name)
		return kind == refScope && t.Env == env
	}}
}

// scopeRefs matches the scope branches of env of the named scopes (in
// canonical form); names that are no valid scope match nothing.
func scopeRefs(env string, scopes []string) gitwire.Refs {
	var refs []plumbing.ReferenceName
	for _, sc := range scopes {
		if t := receipt.ScopeTarget(env, sc); t.Validate() == nil {
			refs = append(refs, refOf(t))
		}
	}
	return exactRefs(refs...)
}

// list is List(env) of the scope branches match names (envRefs(env): all
// of them) on listing from (nil: a listing of its own): one ref
// advertisement, none with from over HTTP, and at most one packfile
// (those branches at depth 1), whatever the number of scopes.
func (x *sessionReader) list(ctx context.Context, env string, from *listing, match gitwire.Refs) ([]receipt.Stored, error) {
	s := x.s
	if err := receipt.Interrupted(ctx, "list "+env); err != nil {
		return nil, err
	}
	if env == "" {
		return nil, errs.New(errs.USAGE, "list: no environment given")
	}
	snap, err := s.wire.FetchListed(ctx, from, match, fetchTips)
	if err != nil {
		return nil, err
	}
	var out []receipt.Stored
	for ref, h := range snap.Refs {
		_, target, _ := parseRef(ref.String())
		t, err := stateAt(snap.St, ref, h, true)
		if err == nil {
			var r *receipt.Receipt
			var v receipt.Version
			if r, v, err = receiptOf(t, target); err == nil && r != nil {
				out = append(out, receipt.Stored{Env: env, Scope: target.Scope, Receipt: r, Version: v})
			}
		}
		if err != nil {
			// One damaged scope blocks only itself; what the store could
			// not reach at all fails the listing.
			if c := errs.CodeOf(err); c != errs.RECEIPT_CORRUPT && c != errs.RECEIPT_VERSION {
				return nil, err
			}
			out = append(out, receipt.Stored{Env: env, Scope: target.Scope, Err: err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scope < out[j].Scope })
	return out, nil
}

// moved is the refusal of AcquireAt and WriteAt when the scope is not as
// the caller read it.
func moved(target receipt.Target, what string) error {
	return errs.New(errs.STORE_CONTENDED, "%s: the scope %s changed since it was read", what, target).
		With("detail", receipt.DetailMoved).
		WithHint("Read the scope again and retry.")
}

// AcquireAt implements receipt.Sessions: Acquire's compare-and-swap, whose
// check also requires the tip's receipt to be at version v. It starts from
// the tip the store last saw (View's), so after a View it is one push.
func (s *Store) AcquireAt(ctx context.Context, target receipt.Target, owner receipt.Owner, ttl time.Duration, v receipt.Version) (receipt.Lease, *receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "acquire "+target.String()); err != nil {
		return receipt.Lease{}, nil, err
	}
	if err := receipt.CheckAcquire(target, owner); err != nil {
		return receipt.Lease{}, nil, err
	}
	return s.leases.acquire(ctx, target, owner, ttl, atVersion(target, v), nil)
}

// atVersion is the check that the tip's receipt is at version v.
func atVersion(target receipt.Target, v receipt.Version) func(*tipState) error {
	return func(t *tipState) error {
		if versionOf(t) != v {
			return moved(target, "acquire "+target.String())
		}
		return nil
	}
}

var _ receipt.WriteAcquirer = (*Store)(nil)

// AcquireAtWith implements receipt.WriteAcquirer: AcquireAt's
// compare-and-swap, in one commit that also writes receipt r under the
// lease it takes (receipt.json, with the event of r's run at the lease's
// generation). After a View it is one push.
func (s *Store) AcquireAtWith(ctx context.Context, target receipt.Target, owner receipt.Owner, ttl time.Duration, v receipt.Version, r *receipt.Receipt) (receipt.Lease, *receipt.Lease, error) {
	if err := receipt.Interrupted(ctx, "acquire "+target.String()); err != nil {
		return receipt.Lease{}, nil, err
	}
	if err := receipt.CheckAcquire(target, owner); err != nil {
		return receipt.Lease{}, nil, err
	}
	if err := receipt.CheckWrite(r, receipt.Lease{Target: target}); err != nil {
		return receipt.Lease{}, nil, err
	}
	data, err := receipt.Encode(r)
	if err != nil {
		return receipt.Lease{}, nil, err
	}
	return s.leases.acquire(ctx, target, owner, ttl, atVersion(target, v), func(l receipt.Lease) (*edit, error) {
		return s.receipts.receiptEdit(r, data, l.Generation)
	})
}

// versionOf is the version of the receipt in a tip's tree ("" for none).
func versionOf(t *tipState) receipt.Version {
	if _, ok := t.tree[receipt.ReceiptFile]; !ok || !t.exists() {
		return ""
	}
	return receiptVersion(t.commit)
}

// WriteRelease implements receipt.Sessions: one commit that replaces
// receipt.json and removes lock.json (the generation file stays), pushed
// only if the branch's tip still holds the lease.
func (s *Store) WriteRelease(ctx context.Context, r *receipt.Receipt, lease receipt.Lease) error {
	if err := receipt.Interrupted(ctx, "write receipts"); err != nil {
		return err
	}
	if err := receipt.CheckWrite(r, lease); err != nil {
		return err
	}
	data, err := receipt.Encode(r)
	if err != nil {
		return err
	}
	target := lease.Target
	what := "write the receipt of " + target.String() + " and release its lease"
	_, err = s.cas.update(ctx, what, []plumbing.ReferenceName{refOf(target)}, func(ts []*tipState) ([]*edit, error) {
		cur, err := leaseOf(ts[0], target)
		if err != nil {
			return nil, err
		}
		if err := receipt.CheckFence(lease, cur); err != nil {
			return nil, err
		}
		last, err := generationOf(ts[0])
		if err != nil {
			return nil, err
		}
		ed, err := s.receipts.receiptEdit(r, data, lease.Generation)
		if err != nil {
			return nil, err
		}
		ed.set[GenerationFile] = generationFile(max(last, cur.Generation))
		ed.remove = []string{receipt.LockFile}
		ed.trailers = append(ed.trailers, trailerLease+"release")
		return []*edit{ed}, nil
	})
	return err
}

// WriteAt implements receipt.Sessions: one commit that replaces
// receipt.json, pushed only if the tip's receipt is at version v and no
// lock.json is in its tree — checked on the tip the push requires, so a
// lease taken since makes it fail.
func (s *Store) WriteAt(ctx context.Context, r *receipt.Receipt, v receipt.Version) error {
	if err := receipt.Interrupted(ctx, "write receipts"); err != nil {
		return err
	}
	if r == nil || r.Env == "" || r.Scope == "" {
		return errs.New(errs.INTERNAL, "write: the receipt names no scope")
	}
	data, err := receipt.Encode(r)
	if err != nil {
		return err
	}
	target := r.Target()
	what := "write the receipt of " + target.String()
	_, err = s.cas.update(ctx, what, []plumbing.ReferenceName{refOf(target)}, func(ts []*tipState) ([]*edit, error) {
		if _, locked := ts[0].tree[receipt.LockFile]; locked || versionOf(ts[0]) != v {
			return nil, moved(target, what)
		}
		ed, err := s.receipts.receiptEdit(r, data, 0)
		if err != nil {
			return nil, err
		}
		return []*edit{ed}, nil
	})
	return err
}

// receiptEdit is the edit that writes receipt r (encoded as data) by the
// lease of generation g (0: none).
func (x *receiptReader) receiptEdit(r *receipt.Receipt, data []byte, g int64) (*edit, error) {
	s := x.s
	ev := receipt.Event{At: s.clock.Now(), Target: r.Target(), Operation: r.Operation, RunID: r.RunID, Status: r.Status, Generation: g}
	line, err := eventTrailer(ev)
	if err != nil {
		return nil, err
	}
	return &edit{
		set:      map[string][]byte{receipt.ReceiptFile: data, ReadmeFile: readme(r.Target())},
		subject:  subject(string(r.Operation), r.Target(), r.RunID, string(r.Status)),
		trailers: []string{line},
		run:      r.RunID,
	}, nil
}

// sessionReader makes a run's views of its scope and environment.
type sessionReader struct{ s *Store }
