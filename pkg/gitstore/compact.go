package gitstore

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Compaction keeps every branch bounded (docs/adr/0009-bounded-branches.md).
//
// Every commit the store makes carries Sponson-Depth: the length of its
// first-parent line down to the branch's root. A write whose base is at
// Options.MaxDepth (DefaultMaxDepth) is made instead on a squash of the
// base: a parentless commit with the base's tree plus compacted.json (what
// the replaced history said: its latest events, and which ledger entries
// Sponson's own writes introduced), so the branch's tip reaches at most
// MaxDepth commits, whatever its number of runs. The push is the same
// compare-and-swap as every other (RequireRemoteRefs on the exact old tip,
// which receive-pack checks again under its lock); it is not a fast-forward,
// so a remote that refuses those (GitHub's "Block force pushes",
// receive.denyNonFastForwards) refuses it: the store then writes the
// ordinary way in the same operation, for the rest of its life, and says so
// once (STORE_UNCOMPACTED, Warnings).
//
// Knowing the depth costs nothing: it is in the tip, which every mutation
// holds already. Only the compaction itself reads the branch's history (one
// fetch of at most MaxDepth commits, once every MaxDepth commits), and so
// does the first write on a tip without the trailer (a branch from before
// compaction, or a hand-made commit), which learns the depth by walking.

// DefaultMaxDepth bounds the commits a branch's tip reaches. A run makes
// one to a few commits (its lease, checkpoints, its receipt), so 200
// commits hold well over the 100 runs a receipt's own history keeps; the
// squash carries the latest carriedEvents events besides, so `receipt
// --history` always has at least the last 100 runs. Whole-history reads
// (Recorded, History) fetch at most this many commits.
const DefaultMaxDepth = 200

// minDepth is the smallest bound that works: the squash and the write.
const minDepth = 2

// carriedEvents is how many events (runs at their latest write, and
// force-releases) a squash keeps of the history it replaces.
const carriedEvents = 100

// compacted is compacted.json: what a squash keeps of the history it
// replaced.
type compacted struct {
	// Format is 1.
	Format int `json:"format"`
	// Squashed is how many commits this squash and those before it
	// replaced, in all.
	Squashed int64 `json:"squashed"`
	// Events are the latest events of the replaced history, oldest first:
	// each run once, at its latest write, and every force-release; at most
	// carriedEvents. Dropped says older ones were left out.
	Events  []receipt.Event `json:"events"`
	Dropped bool            `json:"dropped,omitempty"`
	// Recorded is receipt.Provenance over the replaced history: the
	// identities of the ledger entries that Sponson's own receipt writes
	// introduced, narrowed to those the squashed receipt still holds (an
	// entry that left the ledger must be introduced again to count).
	// Proven says the history had a Sponson receipt write at all.
	Recorded []string `json:"recorded"`
	Proven   bool     `json:"proven"`
}

// depthOf is a commit's Sponson-Depth; false when it has none (a commit
// from before compaction, or made by hand).
func depthOf(c *object.Commit) (int, bool) {
	v, ok := trailer(c.Message, trailerDepth)
	if !ok {
		return 0, false
	}
	d, err := strconv.Atoi(v)
	if err != nil || d < 1 {
		return 0, false
	}
	return d, true
}

// isSquash reports whether c is a squash the store made: parentless, with
// the trailer.
func isSquash(c *object.Commit) bool {
	if len(c.ParentHashes) != 0 {
		return false
	}
	_, ok := trailer(c.Message, trailerSquash)
	return ok
}

// summaryOf is the compacted.json of a squash; nil, nil for a commit that
// is not one. An unreadable one is RECEIPT_CORRUPT: what it stood for is
// unknown.
func summaryOf(t *tipState) (*compacted, error) {
	if !t.exists() || !isSquash(t.commit) {
		return nil, nil
	}
	data, ok, err := t.file(CompactedFile)
	if err != nil {
		return nil, err
	}
	var c compacted
	if !ok || json.Unmarshal(data, &c) != nil || c.Format != 1 {
		return nil, errs.New(errs.RECEIPT_CORRUPT, "the squash %s of %s has no readable %s", t.hash, shortRef(t.ref), CompactedFile)
	}
	return &c, nil
}

// lineage is what a new commit on a base is: its depth (0: unknown, no
// trailer), and whether it is made on a squash of the base, with the
// squash's compacted.json.
type lineage struct {
	depth   int
	summary []byte // non-nil: build on a squash of the base carrying it
}

// lineageOf decides how the next commit on base is made. A base below the
// bound costs nothing. A base at the bound (or of unknown depth) has its
// history fetched once — at most MaxDepth commits — to make the squash; a
// fetch that fails, or finds the branch moved, leaves the write an ordinary
// one (the push's compare-and-swap then decides, as always).
func (x *writer) lineageOf(ctx context.Context, base *tipState) lineage {
	s := x.s
	if !base.exists() {
		return lineage{depth: 1}
	}
	d, known := depthOf(base.commit)
	next := lineage{}
	if known {
		next.depth = d + 1
	}
	if known && d < s.maxDepth || s.noRewrite.Load() {
		return next
	}
	snap, err := s.wire.Fetch(ctx, exactRefs(base.ref), fetchHistory)
	if err != nil || snap.Refs[base.ref] != base.hash {
		return next
	}
	chain, err := firstParents(snap.St, base.ref, base.hash, 0)
	if err != nil {
		return next
	}
	if len(chain) < s.maxDepth {
		return lineage{depth: len(chain) + 1}
	}
	sum, err := s.cas.summarize(chain, base)
	if err != nil {
		return next
	}
	return lineage{depth: 2, summary: sum}
}

// firstParents walks from h along first parents, newest first, at most max
// commits (0: all); every commit must be in st.
func firstParents(st *opStorage, ref plumbing.ReferenceName, h plumbing.Hash, max int) ([]*tipState, error) {
	var chain []*tipState
	for !h.IsZero() && (max == 0 || len(chain) < max) {
		t, err := stateAt(st, ref, h, true)
		if err != nil {
			return nil, err
		}
		chain = append(chain, t)
		h = plumbing.ZeroHash
		if len(t.commit.ParentHashes) > 0 {
			h = t.commit.ParentHashes[0]
		}
	}
	return chain, nil
}

// summarize makes the compacted.json of a squash of chain (newest first,
// chain[0] the base).
func (x *writer) summarize(chain []*tipState, base *tipState) ([]byte, error) {
	s := x.s
	root := chain[len(chain)-1]
	prev, err := summaryOf(root)
	if err != nil {
		return nil, err
	}
	c := compacted{Format: 1, Squashed: int64(len(chain)), Recorded: []string{}}
	var prevEvents []receipt.Event
	if prev != nil {
		c.Squashed += prev.Squashed - 1 // the old squash is replaced too, and counted once
		prevEvents, c.Dropped = prev.Events, prev.Dropped
	}
	commits := make([]*object.Commit, len(chain))
	for i, t := range chain {
		commits[i] = t.commit
	}
	evs := chainEvents(commits, prevEvents, nil, 0)
	if len(evs) > carriedEvents {
		evs, c.Dropped = evs[len(evs)-carriedEvents:], true
	}
	c.Events = evs
	if c.Events == nil {
		c.Events = []receipt.Event{}
	}
	if kind, target, _ := parseRef(base.ref.String()); kind == refScope {
		ids, proven, err := provenance(chain, target, s.sign.authentic)
		if err != nil {
			return nil, err
		}
		c.Proven = proven
		// Narrowed to the squashed ledger: only entries in it can be
		// asked about; one that left must be introduced again.
		keep := ids
		if r, _, err := receiptOf(base, target); err == nil && r != nil {
			keep = map[string]bool{}
			for _, en := range r.Ledger {
				if id := en.Ref().Identity(); ids[id] {
					keep[id] = true
				}
			}
		}
		for id := range keep {
			c.Recorded = append(c.Recorded, id)
		}
		sort.Strings(c.Recorded)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "encode %s", CompactedFile)
	}
	return append(b, '\n'), nil
}

// chainEvents is the events of a first-parent line (newest first) followed
// by carried, the events its root squash kept (oldest first), as History
// gives them: oldest first, each run once at its latest write, every
// force-release; of target only when target is not nil; at most limit of
// the newest (0: all).
func chainEvents(chain []*object.Commit, carried []receipt.Event, target *receipt.Target, limit int) []receipt.Event {
	seenRun := map[string]bool{}
	var out []receipt.Event // newest first
	take := func(ev receipt.Event) {
		if limit > 0 && len(out) >= limit || target != nil && ev.Target != *target {
			return
		}
		if ev.Operation != receipt.OpUnlock {
			if seenRun[ev.RunID] {
				return
			}
			seenRun[ev.RunID] = true
		}
		out = append(out, ev)
	}
	for _, c := range chain {
		ev, ok := commitEvent(c)
		if !ok {
			continue
		}
		if ev.Operation != receipt.OpUnlock {
			ev.Version = receipt.Version(c.Hash.String())
		}
		take(*ev)
	}
	for i := len(carried) - 1; i >= 0; i-- {
		take(carried[i])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// provenance is receipt.Provenance along a first-parent line (newest
// first) that starts at its root: the root squash's record, then, oldest
// first, what every Sponson receipt write introduced over the commit before
// it (receipt.RecordIntroduced). A commit made by hand records nothing. A
// root squash whose record cannot be read makes the answer unknown
// (proven false), never an empty record. Only commits authentic accepts
// count (signer.authentic: with receipt keys, those under a valid MAC): a
// receipt write or a root squash it refuses is taken as made by hand.
func provenance(chain []*tipState, target receipt.Target, authentic func(*tipState) bool) (map[string]bool, bool, error) {
	ids := map[string]bool{}
	found := false
	var before *receipt.Receipt
	for i := len(chain) - 1; i >= 0; i-- {
		t := chain[i]
		r, _, err := receiptOf(t, target)
		if err != nil {
			r = nil // a damaged state introduces nothing
		}
		if i == len(chain)-1 && authentic(t) {
			sum, err := summaryOf(t)
			if err != nil {
				return nil, false, nil
			}
			if sum != nil {
				for _, id := range sum.Recorded {
					ids[id] = true
				}
				found = sum.Proven
				before = r
				continue
			}
		}
		if ev, ok := commitEvent(t.commit); ok && ev.Operation != receipt.OpUnlock && ev.Target == target && r != nil && authentic(t) {
			receipt.RecordIntroduced(ids, before, r)
			found = true
		}
		before = r
	}
	return ids, found, nil
}

// squashSubject is the squash's subject: "compact <key> <run> squash-<n>".
func squashSubject(base *tipState, run string, squashed int64) string {
	return "compact " + trailingKey(base.ref) + " " + receipt.EncodeSegment(run) + " squash-" + strconv.FormatInt(squashed, 10)
}

// trailingKey is a ref's name under RefPrefix.
func trailingKey(r plumbing.ReferenceName) string {
	return strings.TrimPrefix(r.String(), RefPrefix)
}

// Warnings returns what the store found worth saying since the last call
// (STORE_UNCOMPACTED, once in its life), and forgets it.
func (s *Store) Warnings() []*errs.Error {
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	out := s.warnings
	s.warnings = nil
	return out
}

// rewriteRefused remembers, for the store's life, that the remote refuses
// a compaction's push, and warns once.
func (x *writer) rewriteRefused(ref plumbing.ReferenceName, server string, err error) {
	s := x.s
	s.noRewrite.Store(true)
	s.warnMu.Lock()
	defer s.warnMu.Unlock()
	if s.warned {
		return
	}
	s.warned = true
	msg := firstLine(s.msg.serverMessage(server), err)
	s.warnings = append(s.warnings, errs.New(errs.STORE_UNCOMPACTED,
		"%s refused to rewrite %s (%s): receipt branches are written without compaction and grow by one commit per write",
		s.safeURL, shortRef(ref), s.msg.scrubText(msg)).With("ref", ref.String()).
		WithHint("Let the Action and the bot force-push `sponson-receipts/**`: in the README's receipts ruleset they bypass \"Block force pushes\"; on a plain git server, `git config receive.denyNonFastForwards false`."))
}
