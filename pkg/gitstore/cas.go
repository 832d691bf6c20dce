package gitstore

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/gitstore/internal/gitwire"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/progress"
	"github.com/sponson/apply/pkg/receipt"
)

// tipState is one ref as an operation sees it: the tip commit and its tree.
type tipState struct {
	ref    plumbing.ReferenceName
	hash   plumbing.Hash // zero: the ref does not exist
	commit *object.Commit
	tree   map[string]object.TreeEntry
	st     *opStorage
	// fresh: read from the remote during this operation, not taken from
	// the store's memory of its last write. Only a fresh state may decide
	// LOCK_HELD, LOCK_LOST or a no-op.
	fresh bool
}

func (t *tipState) exists() bool { return !t.hash.IsZero() }

// file returns the content of a top-level file of the tip's tree. Anything
// but a plain file in its place (a directory, a symbolic link, a
// submodule), a blob the remote did not send (fetch leaves out blobs over
// the store's bound, transport.go) and a blob over receipt.MaxBytes are
// RECEIPT_CORRUPT: the branch is damaged, and only its own target with it.
func (t *tipState) file(name string) ([]byte, bool, error) {
	e, ok := t.tree[name]
	if !ok {
		return nil, false, nil
	}
	where := fmt.Sprintf("%s of %s at %s", name, shortRef(t.ref), t.hash)
	if e.Mode != filemode.Regular && e.Mode != filemode.Executable {
		return nil, false, errs.New(errs.RECEIPT_CORRUPT, "%s is %s, not a file", where, modeName(e.Mode)).
			With("ref", t.ref.String()).
			WithHint("Sponson writes only plain files to its branches; inspect the branch %s and restore the file from its history.", shortRef(t.ref))
	}
	if !t.st.Has(e.Hash) {
		return nil, false, errs.New(errs.RECEIPT_CORRUPT, "%s was not fetched: it is larger than the %d bytes a stored file may have", where, receipt.MaxBytes).
			With("ref", t.ref.String()).
			WithHint("Inspect the branch %s: Sponson never writes a file that large.", shortRef(t.ref))
	}
	b, err := object.GetBlob(t.st, e.Hash)
	if err != nil {
		return nil, false, errs.Wrap(err, errs.RECEIPT_CORRUPT, "%s is not a blob", where).With("ref", t.ref.String())
	}
	if b.Size > receipt.MaxBytes {
		return nil, false, receipt.TooLarge(receipt.Target{}, where, b.Size)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, false, errs.Wrap(err, errs.STORE_UNAVAILABLE, "read %s", where)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, receipt.MaxBytes+1))
	if err == nil && int64(len(data)) > receipt.MaxBytes {
		return nil, false, receipt.TooLarge(receipt.Target{}, where, int64(len(data)))
	}
	if err != nil {
		return nil, false, errs.Wrap(err, errs.STORE_UNAVAILABLE, "read %s", where)
	}
	return data, true, nil
}

// modeName says what a tree entry of mode m is, for messages.
func modeName(m filemode.FileMode) string {
	switch m {
	case filemode.Dir:
		return "a directory"
	case filemode.Symlink:
		return "a symbolic link"
	case filemode.Submodule:
		return "a submodule"
	}
	return "an entry of mode " + m.String()
}

// stateAt builds the state of ref at commit h from st (which must hold the
// commit and its tree).
func stateAt(st *opStorage, ref plumbing.ReferenceName, h plumbing.Hash, fresh bool) (*tipState, error) {
	t := &tipState{ref: ref, hash: h, st: st, fresh: fresh, tree: map[string]object.TreeEntry{}}
	if h.IsZero() {
		return t, nil
	}
	c, err := object.GetCommit(st, h)
	if err != nil {
		return nil, errs.Wrap(err, errs.RECEIPT_CORRUPT, "the tip of %s (%s) is not a commit", ref, h).
			WithHint("Inspect the branch; Sponson writes only commits to it.")
	}
	tree, err := object.GetTree(st, c.TreeHash)
	if err != nil {
		return nil, errs.Wrap(err, errs.STORE_UNAVAILABLE, "read the tree of %s at %s", ref, h)
	}
	t.commit = c
	for _, e := range tree.Entries {
		t.tree[e.Name] = e
	}
	return t, nil
}

// readStates reads refs fresh from the remote: one advertisement and at
// most one packfile for all of them.
func (x *writer) readStates(ctx context.Context, refs []plumbing.ReferenceName) ([]*tipState, error) {
	s := x.s
	snap, err := s.wire.Fetch(ctx, exactRefs(refs...), fetchTips)
	if err != nil {
		return nil, err
	}
	out := make([]*tipState, len(refs))
	for i, r := range refs {
		h := snap.Refs[r]
		if out[i], err = stateAt(snap.St, r, h, true); err != nil {
			return nil, err
		}
		s.tips.remember(r, h)
	}
	return out, nil
}

// cachedStates is the refs at the tips this store last saw (absent ones
// included), when it has all their objects; nil otherwise. A mutation may start from them without a
// read: the push requires the remote tip to be exactly this commit, so a
// stale one costs only a failed check and a re-read.
func (x *writer) cachedStates(refs []plumbing.ReferenceName) []*tipState {
	s := x.s
	out := make([]*tipState, len(refs))
	st := newOpStorage(s.objects)
	for i, r := range refs {
		h, ok := s.tips.tip(r)
		if !ok || !h.IsZero() && !complete(st, h) {
			return nil
		}
		t, err := stateAt(st, r, h, false)
		if err != nil {
			return nil
		}
		out[i] = t
	}
	return out
}

// edit is one ref's new tip: the files that change, and the commit message.
type edit struct {
	set      map[string][]byte // files written
	remove   []string          // files removed
	subject  string
	trailers []string
	run      string // the nonce's prefix
	result   any    // what the operation returns if this edit lands
}

// build makes the commit of ed on top of base in ps (a push storage), with
// base's objects copied in so go-git can leave them out of the packfile.
// Tree entries are sorted the way git sorts them, and every commit carries
// a nonce: `git fsck --strict` stays clean and no two commits are equal.
//
// ln says what the commit is on its branch: its depth (the Sponson-Depth
// trailer) and, for a compaction, the compacted.json of the squash it is
// made on instead of on base (compact.go). The squash has base's tree
// plus that file, no parent; the new commit's tree keeps the file.
func (x *writer) build(ps *opStorage, base *tipState, ed *edit, now time.Time, ln lineage) (plumbing.Hash, error) {
	s := x.s
	entries := map[string]object.TreeEntry{}
	if base.exists() {
		if err := gitwire.CopyCommit(ps, base.st, base.commit); err != nil {
			return plumbing.ZeroHash, err
		}
		for name, e := range base.tree {
			entries[name] = e
		}
	}
	parent := base.hash
	var squashed int64
	if ln.summary != nil && base.exists() {
		h, err := gitwire.PutBlob(ps, ln.summary)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[CompactedFile] = object.TreeEntry{Name: CompactedFile, Mode: filemode.Regular, Hash: h}
		treeHash, err := gitwire.PutTree(ps, entries)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		var c compacted
		_ = json.Unmarshal(ln.summary, &c)
		squashed = c.Squashed
		trailers := []string{trailerSquash + base.hash.String()}
		if _, has := entries[receipt.ReceiptFile]; has {
			trailers = append(trailers, trailerReceipt+string(receiptVersion(base.commit)))
		} else if neverWritten(base.commit) {
			trailers = append(trailers, trailerReceipt+noReceipt)
		}
		trailers = append(trailers, trailerDepth+"1")
		nonce, err := newNonce(ed.run, now)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		sig := author
		sig.When = now
		msg := message(squashSubject(base, ed.run, squashed), append(trailers, nonce)...)
		sq := &object.Commit{Author: sig, Committer: sig, TreeHash: treeHash,
			Message: s.sign.signed(ps, base.ref, nil, treeHash, entries, msg)}
		if parent, err = gitwire.PutObject(ps, sq); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	for _, name := range ed.remove {
		delete(entries, name)
	}
	for name, data := range ed.set {
		h, err := gitwire.PutBlob(ps, data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h}
	}
	treeHash, err := gitwire.PutTree(ps, entries)
	if err != nil {
		return plumbing.ZeroHash, err
	}

	trailers := append([]string(nil), ed.trailers...)
	if _, writes := ed.set[receipt.ReceiptFile]; !writes {
		_, has := entries[receipt.ReceiptFile]
		switch {
		case has && base.exists():
			trailers = append(trailers, trailerReceipt+string(receiptVersion(base.commit)))
		case !has && (!base.exists() || neverWritten(base.commit)):
			// Carried from the branch's creation through Sponson's own
			// commits only: a tip without it and without receipt.json had
			// its receipt removed (receiptOf).
			trailers = append(trailers, trailerReceipt+noReceipt)
		}
	}
	if ln.depth > 0 {
		trailers = append(trailers, trailerDepth+strconv.Itoa(ln.depth))
	}
	nonce, err := newNonce(ed.run, now)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	trailers = append(trailers, nonce)
	sig := author
	sig.When = now
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: treeHash}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	c.Message = s.sign.signed(ps, base.ref, c.ParentHashes, treeHash, entries, message(ed.subject, trailers...))
	return gitwire.PutObject(ps, c)
}

// newNonce is a commit's Sponson-Nonce trailer: the run, the time, 16 random
// hex digits.
func newNonce(run string, now time.Time) (string, error) {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", errs.Wrap(err, errs.INTERNAL, "draw a commit nonce")
	}
	return fmt.Sprintf("%s%s.%d.%s", trailerNonce, receipt.EncodeSegment(run), now.UnixNano(), hex.EncodeToString(b[:])), nil
}

// update runs one mutation of refs as a compare-and-swap, until it lands,
// decide refuses it, or the budget runs out:
//
//  1. take the refs' tips (the store's memory of its last write, else a
//     fresh read);
//  2. decide checks the lease against those tips' trees and returns the
//     edits (nil: nothing to do; an error: LOCK_HELD, LOCK_LOST, ...). A
//     refusal or a no-op decided on remembered tips is decided again on a
//     fresh read; on a fresh read it is final, never contention;
//  3. build the new commits in memory and push them in one request that
//     requires every ref to still be at its tip;
//  4. after ANY push error, re-read: a ref at one of our commits (or whose
//     tip's parent is one) means the write landed and only the answer was
//     lost. Otherwise, if the compare-and-swap lost, loop from step 2 on
//     what was re-read, sleeping a full-jitter backoff first when the lost
//     attempt had started from a fresh read (a stale memory is not
//     contention); past the budget, STORE_CONTENDED with the attempts and
//     the time spent. Any other push error is returned, coded.
//
// It returns the landed edits (one per ref, nil where decide left a ref
// alone), or nil for a no-op.
func (x *writer) update(ctx context.Context, what string, refs []plumbing.ReferenceName, decide func([]*tipState) ([]*edit, error)) ([]*edit, error) {
	s := x.s
	w := &swap{s: s, ctx: ctx, what: what, refs: refs, mine: map[plumbing.Hash]*edit{}}
	w.start = s.clock.Now() // the budget runs on the injected clock
	states := s.cas.cachedStates(refs)
	if states == nil {
		var err error
		if states, err = s.cas.readStates(ctx, refs); err != nil {
			return nil, err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, errs.Wrap(err, errs.INTERRUPTED, "%s", what)
		}
		edits, err := decide(states)
		if err != nil || edits == nil {
			if !allFresh(states) {
				if states, err = s.cas.readStates(ctx, refs); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		next, landed, err := w.attempt(states, edits)
		if err != nil || landed != nil {
			return landed, err
		}
		if next == nil {
			return nil, nil // nothing to push
		}
		states = next
	}
}

// swap is one update's compare-and-swap loop: what it has pushed so far
// (mine), how often it lost, and the compaction the remote refused.
type swap struct {
	s     *Store
	ctx   context.Context
	what  string
	refs  []plumbing.ReferenceName
	start time.Time
	mine  map[plumbing.Hash]*edit // every commit this update pushed
	// attempts counts pushes, losses the ones lost to another writer on a
	// fresh read (each backs off).
	attempts, losses int
	refused          error // the compaction push the remote refused
	refusedServer    string
}

// attempt builds edits on states and pushes them. It returns the landed
// edits when the write landed (or only its answer was lost), the states to
// decide on again when the compare-and-swap lost (after the backoff), nil
// and nil when there was nothing to push, or the error that ends the update.
func (w *swap) attempt(states []*tipState, edits []*edit) (next []*tipState, landed []*edit, err error) {
	ps, updates, compacting, err := w.build(states, edits)
	if err != nil || len(updates) == 0 {
		return nil, nil, err
	}
	w.attempts++
	server, perr := w.s.wire.Push(w.ctx, ps, updates, len(updates) > 1)
	if perr == nil {
		w.landed(ps, updates)
		return nil, edits, nil
	}
	f, sent := classify(perr)
	if f == failLost && !sent {
		// go-git refused to send: the remote tip is not the one we
		// built on, and nothing reached the server. When another
		// operation of this store has since pushed or read a newer tip
		// (and its objects are here), go on from it: it is what a
		// re-read would return, one round trip cheaper — without it, a
		// writer in this process that pushes back to back starves an
		// acquirer that must read before each attempt.
		if cs := w.s.cas.cachedStates(w.refs); cs != nil && !sameTips(cs, states) {
			return cs, nil, nil
		}
	}
	fresh, rerr := w.s.cas.readStates(w.ctx, w.refs)
	if rerr == nil {
		if landed := landedEdits(fresh, edits, w.mine); landed != nil {
			return nil, landed, nil
		}
	}
	if compacting && rerr == nil && (f == failRewrite || f == failRejected || f == failLost && sent && sameTips(fresh, states)) {
		// The remote refuses to rewrite the branch (or some rule
		// refused the compaction, or the server refused the update
		// though nobody moved the branch: a server that words the
		// refusal otherwise): write it the ordinary way, now and
		// for the rest of the store's life. Deterministic, never
		// contention: no backoff, no attempt counted against the
		// budget. The warning waits for the ordinary write to land: if
		// that is refused too, the rule was not about rewriting.
		w.s.noRewrite.Store(true)
		w.refused, w.refusedServer = perr, server
		return fresh, nil, nil
	}
	if err := w.lost(f, sent, perr, rerr, server, fresh, states); err != nil {
		return nil, nil, err
	}
	return fresh, nil, nil
}

// build makes the commits of edits on states in a new push storage and
// returns the ref updates that push them; compacting: one of them is
// made on a squash.
func (w *swap) build(states []*tipState, edits []*edit) (*opStorage, []refUpdate, bool, error) {
	ps := newOpStorage(nil)
	now := w.s.clock.Now()
	var updates []refUpdate
	compacting := false
	for i, ed := range edits {
		if ed == nil {
			continue
		}
		ln := w.s.cas.lineageOf(w.ctx, states[i])
		compacting = compacting || ln.summary != nil
		h, err := w.s.cas.build(ps, states[i], ed, now, ln)
		if err != nil {
			return nil, nil, false, err
		}
		w.mine[h] = ed
		updates = append(updates, refUpdate{Ref: w.refs[i], Old: states[i].hash, New: h})
	}
	return ps, updates, compacting, nil
}

// landed records a push that landed: the new objects join the cache, so
// this store's next mutation of these refs starts from them without a
// read; a compaction refused on the way is warned about now.
func (w *swap) landed(ps *opStorage, updates []refUpdate) {
	for _, o := range ps.Local() {
		w.s.objects.Put(o)
	}
	for _, u := range updates {
		w.s.tips.remember(u.Ref, u.New)
	}
	if w.refused != nil {
		w.s.cas.rewriteRefused(w.refs[0], w.refusedServer, w.refused)
	}
}

// lost decides on a push that failed and did not land: nil to try again
// on fresh (after a backoff when the lost attempt started from a fresh
// read: a stale memory is not contention), or the error that ends the
// update.
func (w *swap) lost(f failure, sent bool, perr, rerr error, server string, fresh, states []*tipState) error {
	switch {
	case f == failLost && rerr != nil:
		return rerr
	case f != failLost:
		return w.s.msg.transportError(perr, server, "%s", w.what)
	case sent && sameTips(fresh, states):
		// The server refused the update ("failed to update ref"), yet
		// nobody moved the ref: not a lost race but a deterministic
		// refusal (a ref name the server cannot store, a full disk).
		// Retrying would only burn the budget.
		return errs.Wrap(w.s.msg.scrub(perr), errs.STORE_REJECTED,
			"%s: the remote refused the update though the branch did not move: %s", w.what, w.s.msg.scrubText(firstLine(server, perr))).
			With("ref", w.refs[0].String()).
			WithHint("Nothing else is writing the branch: the server refuses this ref (too long a name, a full disk, a server rule). Shorten the branch name or fix the remote.")
	}
	if !allFresh(states) {
		return nil
	}
	return w.backoff(perr)
}

// backoff sleeps a full-jitter backoff before the next attempt, or returns
// STORE_CONTENDED, with the attempts and the time spent, when it would end
// past the budget.
func (w *swap) backoff(perr error) error {
	s := w.s
	w.losses++
	d := s.retry.Delay(w.losses)
	if elapsed := s.clock.Now().Sub(w.start); elapsed+d > s.budget {
		return errs.Wrap(s.msg.scrub(perr), errs.STORE_CONTENDED,
			"%s: other writers kept moving the branch; gave up after %d attempts in %s (budget %s)",
			w.what, w.attempts, elapsed.Round(time.Millisecond), s.budget).
			With("attempts", w.attempts).With("elapsed", elapsed.Round(time.Millisecond).String())
	}
	if progress.Enabled(w.ctx) {
		now := s.clock.Now()
		progress.Report(w.ctx, progress.Event{Kind: progress.Store, Target: w.what, Started: now.Add(-time.Since(w.start)), Now: now,
			Deadline: now.Add(s.budget - time.Since(w.start)), Attempt: w.losses})
	}
	if err := s.sleep(w.ctx, d); err != nil {
		return errs.Wrap(err, errs.INTERRUPTED, "%s", w.what)
	}
	return nil
}

// firstLine is the server's message, else the push error's, first line.
func firstLine(server string, err error) string {
	msg := server
	if msg == "" && err != nil {
		msg = err.Error()
	}
	line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return line
}

func sameTips(a, b []*tipState) bool {
	for i := range a {
		if a[i].hash != b[i].hash {
			return false
		}
	}
	return true
}

func allFresh(states []*tipState) bool {
	for _, t := range states {
		if !t.fresh {
			return false
		}
	}
	return true
}

// landedEdits reports whether every ref the last attempt edited is at one of
// our commits, or one commit past it, and returns the edits that landed.
func landedEdits(fresh []*tipState, last []*edit, mine map[plumbing.Hash]*edit) []*edit {
	out := make([]*edit, len(fresh))
	for i, t := range fresh {
		if last[i] == nil {
			continue
		}
		if !t.exists() {
			return nil
		}
		if ed, ok := mine[t.hash]; ok {
			out[i] = ed
			continue
		}
		found := false
		for _, p := range t.commit.ParentHashes {
			if ed, ok := mine[p]; ok {
				out[i], found = ed, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return out
}

// writer is the store's compare-and-swap of refs: it reads tips (or takes
// them from memory), builds commits on them and pushes them (update).
type writer struct{ s *Store }
