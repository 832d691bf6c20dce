package gitstore

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore/internal/gitwire"
	"github.com/sponson/apply/pkg/receipt"
)

// surveyBatch bounds the tips one packfile request of ReadSurveyed asks
// for.
const surveyBatch = 500

// Survey is what one ref listing says of every scope branch, and what the
// commits and trees of their tips say without a single blob: the read a
// sweep starts from (internal/sweep). Its Scopes are as of that listing;
// ReadSurveyed reads the receipts and leases of the ones a sweep must
// decide on, from the same listing.
type Survey struct {
	Scopes  []SurveyedScope
	listing *listing
	tips    map[receipt.Target]plumbing.Hash
}

// SurveyedScope is one scope branch as a Survey saw it: Scopes' ScopeRef
// (its Lease is never filled: Locked says one is stored, ReadSurveyed
// reads it), and when its tip was written.
type SurveyedScope struct {
	receipt.ScopeRef
	// Locked: the tip's tree holds lock.json, a lease live or expired.
	Locked bool
	// At is the tip commit's committer time: when the branch was last
	// written (a tombstone's age, for pruning).
	At time.Time
}

// ScopeState is a scope branch's receipt and lease as of a Survey.
type ScopeState struct {
	Env, Scope string
	Receipt    *receipt.Receipt // nil: none
	Version    receipt.Version
	Err        error          // the receipt cannot be read (RECEIPT_CORRUPT, RECEIPT_VERSION): this scope alone
	Lease      *receipt.Lease // the stored lease, live or expired; nil: none
	LeaseErr   error          // lock.json cannot be read
	At         time.Time      // the tip commit's committer time
	ref        plumbing.ReferenceName
	tip        plumbing.Hash
}

// Survey lists the scope branches (one ref listing; none over HTTP when it
// is the store's first operation, see New) and fetches their tips'
// commits and trees without blobs (one packfile request, blob:none, where
// the remote serves partial clones: a few hundred bytes a scope; where it
// does not, the tips whole, as Scopes does). Lock branches are not read.
// A scope whose tip cannot be read is listed with its Problem, as Scopes
// lists it.
func (s *Store) Survey(ctx context.Context) (*Survey, error) {
	if err := receipt.Interrupted(ctx, "list scopes"); err != nil {
		return nil, err
	}
	snap, err := s.wire.Fetch(ctx, storeRefs(func(name string) bool {
		kind, _, _ := parseRef(name)
		return kind == refScope
	}), fetchShapes)
	if err != nil {
		return nil, err
	}
	sv := &Survey{listing: snap.Listing, tips: map[receipt.Target]plumbing.Hash{}}
	if !strings.HasPrefix(s.url, "http") {
		sv.listing = nil // over file:// every session lists the refs again
	}
	for ref, h := range snap.Refs {
		_, target, _ := parseRef(ref.String())
		sv.tips[target] = h
		sc := SurveyedScope{ScopeRef: receipt.ScopeRef{Env: target.Env, Scope: target.Scope}}
		t, err := stateAt(snap.St, ref, h, true)
		if err != nil {
			if errs.CodeOf(err) != errs.RECEIPT_CORRUPT {
				return nil, err
			}
			sc.Problem = errs.Coded(err).Message
			sv.Scopes = append(sv.Scopes, sc)
			continue
		}
		sc.At = t.commit.Committer.When
		_, sc.HasReceipt = t.tree[receipt.ReceiptFile]
		_, sc.Locked = t.tree[receipt.LockFile]
		switch {
		case !sc.HasReceipt && !neverWritten(t.commit):
			// Someone removed receipt.json: listed with its problem, as
			// Scopes lists it.
			sc.Problem = errs.Coded(receipt.Missing(target, "the receipt of "+target.String()+" (branch "+shortRef(ref)+", commit "+h.String()+")")).Message
		case !sc.HasReceipt && !sc.Locked:
			continue
		}
		sv.Scopes = append(sv.Scopes, sc)
	}
	sort.Slice(sv.Scopes, func(i, j int) bool {
		if sv.Scopes[i].Env != sv.Scopes[j].Env {
			return sv.Scopes[i].Env < sv.Scopes[j].Env
		}
		return sv.Scopes[i].Scope < sv.Scopes[j].Scope
	})
	return sv, nil
}

// ReadSurveyed reads the receipts and leases of the scopes named, at the
// tips of sv's listing: one packfile request per surveyBatch of them, no
// listing of its own over HTTP (a tip deleted since makes that batch list
// the refs again, and read the tips it then sees). A scope the survey
// did not list is left out; a damaged receipt or lease is its own
// ScopeState's Err or LeaseErr. The states come back in the order asked.
func (s *Store) ReadSurveyed(ctx context.Context, sv *Survey, targets []receipt.Target) ([]ScopeState, error) {
	if err := receipt.Interrupted(ctx, "read receipts"); err != nil {
		return nil, err
	}
	var out []ScopeState
	from := sv.listing
	for len(targets) > 0 {
		batch := targets[:min(len(targets), surveyBatch)]
		targets = targets[len(batch):]
		want := map[string]receipt.Target{}
		for _, t := range batch {
			if _, ok := sv.tips[t]; ok && t.Validate() == nil {
				want[refOf(t).String()] = t
			}
		}
		if len(want) == 0 {
			continue
		}
		snap, err := s.wire.FetchListed(ctx, from, gitwire.Refs{Prefixes: slices.Collect(maps.Keys(want)), Match: func(name string) bool { _, ok := want[name]; return ok }}, fetchTips)
		if err != nil {
			return nil, err
		}
		if from != nil {
			from = snap.Listing // a batch that had to list again goes on from its listing
		}
		for _, t := range batch {
			ref := refOf(t)
			if _, ok := want[ref.String()]; !ok {
				continue
			}
			h, ok := snap.Refs[ref]
			if !ok {
				continue // deleted since the survey
			}
			ts, err := stateAt(snap.St, ref, h, true)
			st := ScopeState{Env: t.Env, Scope: t.Scope, ref: ref, tip: h}
			if err != nil {
				if errs.CodeOf(err) != errs.RECEIPT_CORRUPT {
					return nil, err
				}
				st.Err = err
				out = append(out, st)
				continue
			}
			st.At = ts.commit.Committer.When
			st.Receipt, st.Version, st.Err = receiptOf(ts, t)
			if st.Err != nil {
				if c := errs.CodeOf(st.Err); c != errs.RECEIPT_CORRUPT && c != errs.RECEIPT_VERSION {
					return nil, st.Err
				}
			}
			st.Lease, st.LeaseErr = leaseOf(ts, t)
			if st.LeaseErr != nil && errs.CodeOf(st.LeaseErr) != errs.RECEIPT_CORRUPT {
				return nil, st.LeaseErr
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// PruneSurveyed is Prune of the scopes whose states a ReadSurveyed
// returned: the tombstoned ones (Tombstoned), with no live lease and no
// damage, last written olderThan ago or more (DefaultRetention when <=
// 0), each deleted only if its branch is still at the tip read (the same
// compare-and-swap deletes, pruneBatch a push). It fetches nothing: with
// nothing to prune it makes no request.
func (s *Store) PruneSurveyed(ctx context.Context, states []ScopeState, olderThan time.Duration) ([]receipt.ScopeRef, error) {
	if err := receipt.Interrupted(ctx, "prune receipts"); err != nil {
		return nil, err
	}
	if olderThan <= 0 {
		olderThan = DefaultRetention
	}
	now := s.clock.Now()
	var cands []pruneCandidate
	for _, st := range states {
		if st.Err != nil || st.LeaseErr != nil || !Tombstoned(st.Receipt) || st.Lease != nil && !st.Lease.Expired(now) {
			continue
		}
		if now.Sub(st.At) < olderThan {
			continue
		}
		cands = append(cands, pruneCandidate{ref: st.ref, hash: st.tip, scope: receipt.ScopeRef{Env: st.Env, Scope: st.Scope, HasReceipt: true, Lease: st.Lease}})
	}
	if len(cands) == 0 {
		return nil, nil
	}
	if !s.wire.DeleteRefs() {
		return nil, errs.New(errs.STORE_REJECTED, "%s does not accept ref deletions; tombstoned receipt branches cannot be pruned", s.safeURL)
	}
	return s.pruner.deleteBranches(ctx, cands)
}
