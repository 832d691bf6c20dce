package gitstore

import (
	"context"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// DefaultRetention is how long a tombstoned scope's branch is kept before
// Prune deletes it (stores.md, "Cost and scale").
const DefaultRetention = 14 * 24 * time.Hour

// pruneBatch bounds the refs deleted by one push.
const pruneBatch = 100

// Tombstoned reports whether a receipt marks its scope as gone for good:
// closed (its pull request closed), or destroyed with nothing left in its
// ledger.
func Tombstoned(r *receipt.Receipt) bool {
	return r != nil && (r.Closed != nil || r.Destroyed && len(r.Ledger) == 0)
}

// Prune deletes the branches of tombstoned scopes (Tombstoned) whose last
// commit is older than olderThan (DefaultRetention when <= 0), so the number
// of refs — and with it every ref advertisement — tracks open work, not
// history. A branch with a live lease is never deleted, nor one whose
// receipt does not parse. Each delete is a compare-and-swap (the push
// requires the branch at the commit that was judged), so a branch written
// since is kept; deletes go up to pruneBatch per push, not atomically. It
// returns the scopes deleted, sorted.
//
// Round trips: one fetch of every scope branch (two), then per batch one
// push (two) — plus one listing to tell which deletes landed when a push
// fails.
func (s *Store) Prune(ctx context.Context, olderThan time.Duration) ([]receipt.ScopeRef, error) {
	if err := receipt.Interrupted(ctx, "prune receipts"); err != nil {
		return nil, err
	}
	if olderThan <= 0 {
		olderThan = DefaultRetention
	}
	if !s.wire.DeleteRefs() {
		return nil, errs.New(errs.STORE_REJECTED, "%s does not accept ref deletions; tombstoned receipt branches cannot be pruned", s.safeURL)
	}
	snap, err := s.wire.Fetch(ctx, storeRefs(func(name string) bool {
		kind, _, _ := parseRef(name)
		return kind == refScope
	}), fetchTips)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	var cands []pruneCandidate
	for ref, h := range snap.Refs {
		_, target, _ := parseRef(ref.String())
		t, err := stateAt(snap.St, ref, h, true)
		if err != nil {
			continue
		}
		r, _, err := receiptOf(t, target)
		if err != nil || !Tombstoned(r) {
			continue
		}
		l, err := leaseOf(t, target)
		if err != nil || l != nil && !l.Expired(now) {
			continue
		}
		if now.Sub(t.commit.Committer.When) < olderThan {
			continue
		}
		cands = append(cands, pruneCandidate{ref: ref, hash: h, scope: receipt.ScopeRef{Env: target.Env, Scope: target.Scope, HasReceipt: true, Lease: l}})
	}
	return s.pruner.deleteBranches(ctx, cands)
}

// pruneCandidate is a scope branch judged prunable at tip hash.
type pruneCandidate struct {
	ref   plumbing.ReferenceName
	hash  plumbing.Hash
	scope receipt.ScopeRef
}

// deleteBranches deletes the candidates' branches, each only if still at
// the tip it was judged at, up to pruneBatch per push, and returns the
// scopes deleted, sorted.
func (x *pruner) deleteBranches(ctx context.Context, cands []pruneCandidate) ([]receipt.ScopeRef, error) {
	s := x.s
	sort.Slice(cands, func(i, j int) bool { return cands[i].ref < cands[j].ref })

	var pruned []receipt.ScopeRef
	for len(cands) > 0 {
		n := min(len(cands), pruneBatch)
		batch := cands[:n]
		cands = cands[n:]
		updates := make([]refUpdate, len(batch))
		for i, c := range batch {
			updates[i] = refUpdate{Ref: c.ref, Old: c.hash}
		}
		server, perr := s.wire.Push(ctx, newOpStorage(nil), updates, false)
		if perr == nil {
			for _, c := range batch {
				s.tips.remember(c.ref, plumbing.ZeroHash)
				pruned = append(pruned, c.scope)
			}
			continue
		}
		// A delete may have landed for some refs and not others (the push is
		// not atomic; go-git reports the first failure only), or landed with
		// the answer lost: list the refs again to know.
		f, _ := classify(perr)
		listed, err := s.pruner.listRefs(ctx)
		if err != nil {
			return pruned, err
		}
		for _, c := range batch {
			if _, still := listed[c.ref]; !still {
				s.tips.remember(c.ref, plumbing.ZeroHash)
				pruned = append(pruned, c.scope)
			}
		}
		if f != failLost {
			return pruned, s.msg.transportError(perr, server, "prune tombstoned receipt branches")
		}
		// Lost: some branch moved since it was judged (or go-git's
		// all-or-nothing RequireRemoteRefs check refused the whole batch).
		// Judge the rest again one by one, each with its own compare-and-swap.
		for _, c := range batch {
			if _, still := listed[c.ref]; !still || listed[c.ref] != c.hash {
				continue
			}
			if _, err := s.wire.Push(ctx, newOpStorage(nil), []refUpdate{{Ref: c.ref, Old: c.hash}}, false); err == nil {
				s.tips.remember(c.ref, plumbing.ZeroHash)
				pruned = append(pruned, c.scope)
			}
		}
	}
	sort.Slice(pruned, func(i, j int) bool {
		if pruned[i].Env != pruned[j].Env {
			return pruned[i].Env < pruned[j].Env
		}
		return pruned[i].Scope < pruned[j].Scope
	})
	return pruned, nil
}

// listRefs is one ref advertisement: every ref of the store's namespace.
func (x *pruner) listRefs(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	s := x.s
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	snap, err := s.wire.Fetch(ctx, storeRefs(func(name string) bool {
		kind, _, _ := parseRef(name)
		return kind != refOther
	}), fetchNone)
	if err != nil {
		return nil, err
	}
	for r, h := range snap.Refs {
		refs[r] = h
	}
	return refs, nil
}

// pruner deletes the branches of tombstoned scopes.
type pruner struct{ s *Store }
