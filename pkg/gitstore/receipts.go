package gitstore

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// receiptOf decodes the receipt in a tip's tree: nil when there is none.
// A branch whose tip has no receipt.json is "none" only when Sponson made
// that tip and recorded that no receipt was ever written (neverWritten);
// otherwise someone removed the file, and it is RECEIPT_CORRUPT: an empty
// ledger in its place would make Sponson forget what the scope created.
// A receipt that names another env or scope than its branch is
// RECEIPT_CORRUPT too (receipt.DecodeStored).
func receiptOf(t *tipState, target receipt.Target) (*receipt.Receipt, receipt.Version, error) {
	where := fmt.Sprintf("the receipt of %s (branch %s, commit %s)", target, shortRef(t.ref), t.hash)
	data, ok, err := t.file(receipt.ReceiptFile)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		if t.exists() && !neverWritten(t.commit) {
			return nil, "", receipt.Missing(target, where)
		}
		return nil, "", nil
	}
	r, err := receipt.DecodeStored(data, target, where)
	if err != nil {
		return nil, "", err
	}
	return r, receiptVersion(t.commit), nil
}

// Read implements receipt.Receipts: one ref advertisement, plus one packfile
// when the tip is not in memory. The version is the commit that wrote the
// receipt.
func (s *Store) Read(ctx context.Context, env, scope string) (*receipt.Receipt, receipt.Version, error) {
	if err := receipt.Interrupted(ctx, "read "+env+"/"+scope); err != nil {
		return nil, "", err
	}
	target := receipt.ScopeTarget(env, scope)
	if err := target.Validate(); err != nil {
		return nil, "", err
	}
	ts, err := s.cas.readStates(ctx, []plumbing.ReferenceName{refOf(target)})
	if err != nil {
		return nil, "", err
	}
	return receiptOf(ts[0], target)
}

// List implements receipt.Receipts: one ref advertisement and at most one
// packfile (every scope branch of env at depth 1), whatever the number of
// scopes.
func (s *Store) List(ctx context.Context, env string) ([]receipt.Stored, error) {
	return s.sessions.list(ctx, env, nil, envRefs(env))
}

// Write implements receipt.Receipts: one commit that replaces receipt.json,
// pushed only if the branch's tip is still the one whose lock.json holds
// the lease (holder and generation).
func (s *Store) Write(ctx context.Context, r *receipt.Receipt, lease receipt.Lease) error {
	return s.WriteMany(ctx, []receipt.Write{{Receipt: r, Lease: lease}})
}

// WriteMany implements receipt.Receipts. When the remote advertises atomic
// pushes (Capabilities().AtomicMulti) every receipt is one commit on its
// branch and all go in one atomic push that requires every branch at the
// tip its lease was checked against: all land or none. Otherwise every
// lease is checked first, then the writes go one by one, in order.
func (s *Store) WriteMany(ctx context.Context, writes []receipt.Write) error {
	if err := receipt.Interrupted(ctx, "write receipts"); err != nil {
		return err
	}
	if err := receipt.CheckWrites(writes); err != nil {
		return err
	}
	if len(writes) == 0 {
		return nil
	}
	data := make([][]byte, len(writes))
	for i, w := range writes {
		d, err := receipt.Encode(w.Receipt)
		if err != nil {
			return err
		}
		data[i] = d
	}
	if len(writes) == 1 || s.wire.Atomic() {
		if len(writes) > 1 && !s.wire.ConfirmAtomic() {
			// Capabilities said atomic (a v2 remote is taken to push
			// atomically) and the caller relied on it: nothing is
			// written; from now on the store says otherwise.
			return errs.New(errs.STORE_REJECTED, "%s does not accept atomic pushes; nothing was written", s.safeURL).
				WithHint("Run again: the store now knows and writes one scope at a time. On a plain git server, `git config receive.advertiseAtomic true` restores atomic writes.")
		}
		return s.receipts.writeFenced(ctx, writes, data)
	}
	refs := make([]plumbing.ReferenceName, len(writes))
	for i, w := range writes {
		refs[i] = refOf(w.Lease.Target)
	}
	ts, err := s.cas.readStates(ctx, refs)
	if err != nil {
		return err
	}
	for i, w := range writes {
		cur, err := leaseOf(ts[i], w.Lease.Target)
		if err != nil {
			return err
		}
		if err := receipt.CheckFence(w.Lease, cur); err != nil {
			return err
		}
	}
	for i := range writes {
		if err := s.receipts.writeFenced(ctx, writes[i:i+1], data[i:i+1]); err != nil {
			return err
		}
	}
	return nil
}

// writeFenced writes receipts in one compare-and-swap (one atomic push for
// several).
func (x *receiptReader) writeFenced(ctx context.Context, writes []receipt.Write, data [][]byte) error {
	s := x.s
	refs := make([]plumbing.ReferenceName, len(writes))
	what := "write the receipt of " + writes[0].Receipt.Target().String()
	for i, w := range writes {
		refs[i] = refOf(w.Lease.Target)
		if i > 0 {
			what += ", " + w.Receipt.Target().String()
		}
	}
	_, err := s.cas.update(ctx, what, refs, func(ts []*tipState) ([]*edit, error) {
		edits := make([]*edit, len(writes))
		now := s.clock.Now()
		for i, w := range writes {
			cur, err := leaseOf(ts[i], w.Lease.Target)
			if err != nil {
				return nil, err
			}
			if err := receipt.CheckFence(w.Lease, cur); err != nil {
				return nil, err
			}
			r := w.Receipt
			ev := receipt.Event{At: now, Target: r.Target(), Operation: r.Operation, RunID: r.RunID, Status: r.Status, Generation: w.Lease.Generation}
			line, err := eventTrailer(ev)
			if err != nil {
				return nil, err
			}
			edits[i] = &edit{
				set:      map[string][]byte{receipt.ReceiptFile: data[i], ReadmeFile: readme(r.Target())},
				subject:  subject(string(r.Operation), r.Target(), r.RunID, string(r.Status)),
				trailers: []string{line},
				run:      r.RunID,
			}
		}
		return edits, nil
	})
	return err
}

// History implements receipt.Receipts from the branch's commits: the whole
// history of the branch (at most Options.MaxDepth commits) is fetched (one
// advertisement, one packfile) and walked along first parents, then the
// events its squash kept, if it was compacted. Each run appears once, at its latest write;
// every force-release appears as an unlock event.
func (s *Store) History(ctx context.Context, target receipt.Target) ([]receipt.Event, error) {
	if err := receipt.Interrupted(ctx, "history of "+target.String()); err != nil {
		return nil, err
	}
	if err := target.Validate(); err != nil {
		return nil, err
	}
	out, _, err := s.receipts.history(ctx, target, 0, 0)
	return out, err
}

// RecentHistory implements receipt.HistoryPager: the branch is fetched
// only as deep as n runs need (a run is one to a few commits: its lease,
// its checkpoints, its receipt), one advertisement and one packfile; when
// that depth holds fewer than n runs and the branch goes on, the whole
// history is fetched once more.
func (s *Store) RecentHistory(ctx context.Context, target receipt.Target, n int) ([]receipt.Event, bool, error) {
	if err := receipt.Interrupted(ctx, "history of "+target.String()); err != nil {
		return nil, false, err
	}
	if err := target.Validate(); err != nil {
		return nil, false, err
	}
	if n <= 0 {
		out, _, err := s.receipts.history(ctx, target, 0, 0)
		return out, false, err
	}
	out, cut, err := s.receipts.history(ctx, target, 4*n+4, n+1)
	if err == nil && cut && len(out) <= n {
		out, _, err = s.receipts.history(ctx, target, 0, n+1)
	}
	if err != nil {
		return nil, false, err
	}
	more := len(out) > n
	if more {
		out = out[len(out)-n:]
	}
	return out, more, nil
}

// history walks target's branch along first parents, fetched to depth
// commits (0: all), and returns its events oldest first, at most limit of
// the newest (0: all), and whether the walk stopped at the fetch's depth.
// A walk that reaches a squash (compact.go) goes on with the events the
// squash kept of the history it replaced.
func (x *receiptReader) history(ctx context.Context, target receipt.Target, depth, limit int) ([]receipt.Event, bool, error) {
	s := x.s
	ref := refOf(target)
	snap, err := s.wire.FetchDepth(ctx, exactRefs(ref), fetchHistory, depth)
	if err != nil {
		return nil, false, err
	}
	h, ok := snap.Refs[ref]
	if !ok {
		return nil, false, nil
	}
	cut := false
	var chain []*object.Commit // newest first
	var carried []receipt.Event
	for !h.IsZero() {
		c, err := object.GetCommit(snap.St, h)
		if err != nil {
			if depth > 0 && len(chain) >= depth {
				cut = true // the shallow fetch's boundary
				break
			}
			return nil, false, errs.Wrap(err, errs.STORE_UNAVAILABLE, "walk the history of %s at %s", shortRef(ref), h)
		}
		chain = append(chain, c)
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		} else if isSquash(c) {
			t, err := stateAt(snap.St, ref, c.Hash, true)
			if err != nil {
				return nil, false, err
			}
			// An unreadable record loses only the history before the
			// squash, never the runs after it.
			if sum, err := summaryOf(t); err == nil && sum != nil {
				carried = sum.Events
			}
		}
		if depth > 0 && len(chain) >= depth && !h.IsZero() {
			cut = true
			break
		}
	}
	return chainEvents(chain, carried, &target, limit), cut, nil
}

var _ receipt.Provenance = (*Store)(nil)

// maxProvenanceCommits bounds the walk of Recorded.
const maxProvenanceCommits = 5000

// Recorded implements receipt.Provenance from the branch's history (one
// advertisement, one packfile), walked oldest first along first parents:
// at every commit Sponson made to write a receipt (a Sponson-Event
// trailer for a receipt operation), what it introduced over the commit
// before it (receipt.RecordIntroduced). A commit made by hand — someone
// with push access editing receipt.json with git — records nothing, and
// what it added is not introduced by the Sponson commits after it. A
// branch that was compacted starts from its squash's record (compact.go):
// what the replaced history introduced, as far as the squashed ledger
// still holds it. ok is false for a branch with no Sponson write, and for
// one whose squash's record cannot be read.
func (s *Store) Recorded(ctx context.Context, target receipt.Target) (map[string]bool, bool, error) {
	if err := receipt.Interrupted(ctx, "history of "+target.String()); err != nil {
		return nil, false, err
	}
	if err := target.Validate(); err != nil {
		return nil, false, err
	}
	ref := refOf(target)
	snap, err := s.wire.Fetch(ctx, exactRefs(ref), fetchHistory)
	if err != nil {
		return nil, false, err
	}
	h, ok := snap.Refs[ref]
	if !ok {
		return nil, false, nil
	}
	chain, err := firstParents(snap.St, ref, h, maxProvenanceCommits)
	if err != nil {
		return nil, false, err
	}
	return provenance(chain, target, s.sign.authentic)
}

// receiptReader writes fenced receipts and reads their history.
type receiptReader struct{ s *Store }
