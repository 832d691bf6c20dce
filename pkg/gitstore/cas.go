package gitstore

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

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
	if !t.st.has(e.Hash) {
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
func (s *Store) readStates(ctx context.Context, refs []plumbing.ReferenceName) ([]*tipState, error) {
	want := map[string]bool{}
	for _, r := range refs {
		want[r.String()] = true
	}
	snap, err := s.fetch(ctx, func(name string) bool { return want[name] }, fetchTips)
	if err != nil {
		return nil, err
	}
	out := make([]*tipState, len(refs))
	for i, r := range refs {
		h := snap.refs[r]
		if out[i], err = stateAt(snap.st, r, h, true); err != nil {
			return nil, err
		}
		s.remember(r, h)
	}
	return out, nil
}

// cachedStates is the refs at the tips this store last saw (absent ones
// included), when it has all their objects; nil otherwise. A mutation may start from them without a
// read: the push requires the remote tip to be exactly this commit, so a
// stale one costs only a failed check and a re-read.
func (s *Store) cachedStates(refs []plumbing.ReferenceName) []*tipState {
	out := make([]*tipState, len(refs))
	st := newOpStorage(s.objects)
	for i, r := range refs {
		h, ok := s.tip(r)
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
func (s *Store) build(ps *opStorage, base *tipState, ed *edit, now time.Time, ln lineage) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if base.exists() {
		if err := copyCommit(ps, base.st, base.commit); err != nil {
			return plumbing.ZeroHash, err
		}
		for name, e := range base.tree {
			entries[name] = e
		}
	}
	parent := base.hash
	var squashed int64
	if ln.summary != nil && base.exists() {
		h, err := putBlob(ps, ln.summary)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[CompactedFile] = object.TreeEntry{Name: CompactedFile, Mode: filemode.Regular, Hash: h}
		treeHash, err := putTree(ps, entries)
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
		nonce, err := s.nonce(ed.run, now)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		sig := author
		sig.When = now
		msg := message(squashSubject(base, ed.run, squashed), append(trailers, nonce)...)
		sq := &object.Commit{Author: sig, Committer: sig, TreeHash: treeHash,
			Message: s.signed(ps, base.ref, nil, treeHash, entries, msg)}
		if parent, err = putObject(ps, sq); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	for _, name := range ed.remove {
		delete(entries, name)
	}
	for name, data := range ed.set {
		h, err := putBlob(ps, data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h}
	}
	treeHash, err := putTree(ps, entries)
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
	nonce, err := s.nonce(ed.run, now)
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
	c.Message = s.signed(ps, base.ref, c.ParentHashes, treeHash, entries, message(ed.subject, trailers...))
	return putObject(ps, c)
}

// nonce is a commit's Sponson-Nonce trailer: the run, the time, 16 random
// hex digits.
func (s *Store) nonce(run string, now time.Time) (string, error) {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", errs.Wrap(err, errs.INTERNAL, "draw a commit nonce")
	}
	return fmt.Sprintf("%s%s.%d.%s", trailerNonce, receipt.EncodeSegment(run), now.UnixNano(), hex.EncodeToString(b[:])), nil
}

// putTree stores the tree of entries, sorted the way git sorts them.
func putTree(ps *opStorage, entries map[string]object.TreeEntry) (plumbing.Hash, error) {
	tree := &object.Tree{}
	for _, e := range entries {
		tree.Entries = append(tree.Entries, e)
	}
	sort.Slice(tree.Entries, func(i, j int) bool { return gitSortKey(tree.Entries[i]) < gitSortKey(tree.Entries[j]) })
	return putObject(ps, tree)
}

// gitSortKey orders tree entries as git does: by name, a subtree's name
// compared as if it ended in '/'.
func gitSortKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

type encoder interface {
	Encode(plumbing.EncodedObject) error
}

func putObject(st *opStorage, o encoder) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, errs.Wrap(err, errs.INTERNAL, "encode a git object")
	}
	return st.SetEncodedObject(obj)
}

func putBlob(st *opStorage, data []byte) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, errs.Wrap(err, errs.INTERNAL, "encode a blob")
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, errs.Wrap(err, errs.INTERNAL, "encode a blob")
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, errs.Wrap(err, errs.INTERNAL, "encode a blob")
	}
	return st.SetEncodedObject(obj)
}

// copyCommit copies commit c, its tree and everything in the tree from src
// to dst (not its parents: the remote has them).
func copyCommit(dst, src *opStorage, c *object.Commit) error {
	o, err := src.EncodedObject(plumbing.CommitObject, c.Hash)
	if err != nil {
		return errs.Wrap(err, errs.STORE_UNAVAILABLE, "commit %s is not in memory", c.Hash)
	}
	if _, err := dst.SetEncodedObject(o); err != nil {
		return errs.Wrap(err, errs.INTERNAL, "copy commit %s", c.Hash)
	}
	return copyTree(dst, src, c.TreeHash)
}

func copyTree(dst, src *opStorage, h plumbing.Hash) error {
	o, err := src.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return errs.Wrap(err, errs.STORE_UNAVAILABLE, "tree %s is not in memory", h)
	}
	if _, err := dst.SetEncodedObject(o); err != nil {
		return errs.Wrap(err, errs.INTERNAL, "copy tree %s", h)
	}
	t, err := object.DecodeTree(src, o)
	if err != nil {
		return errs.Wrap(err, errs.STORE_UNAVAILABLE, "decode tree %s", h)
	}
	for _, e := range t.Entries {
		switch e.Mode {
		case filemode.Dir:
			if err := copyTree(dst, src, e.Hash); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			b, err := src.EncodedObject(plumbing.AnyObject, e.Hash)
			if errors.Is(err, plumbing.ErrObjectNotFound) {
				// A blob fetch left out (over the store's bound): the
				// remote has it, as part of the base's tree, and go-git's
				// push walks trees, not blobs, to leave it out.
				continue
			}
			if err != nil {
				return errs.Wrap(err, errs.STORE_UNAVAILABLE, "object %s is not in memory", e.Hash)
			}
			if _, err := dst.SetEncodedObject(b); err != nil {
				return errs.Wrap(err, errs.INTERNAL, "copy object %s", e.Hash)
			}
		}
	}
	return nil
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
func (s *Store) update(ctx context.Context, what string, refs []plumbing.ReferenceName, decide func([]*tipState) ([]*edit, error)) ([]*edit, error) {
	start := s.clock.Now() // the budget runs on the injected clock
	states := s.cachedStates(refs)
	if states == nil {
		var err error
		if states, err = s.readStates(ctx, refs); err != nil {
			return nil, err
		}
	}
	mine := map[plumbing.Hash]*edit{}
	attempts, losses := 0, 0
	var refused error // the compaction push the remote refused
	var refusedServer string
	for {
		if err := ctx.Err(); err != nil {
			return nil, errs.Wrap(err, errs.INTERRUPTED, "%s", what)
		}
		edits, err := decide(states)
		if err != nil || edits == nil {
			if !allFresh(states) {
				if states, err = s.readStates(ctx, refs); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		ps := newOpStorage(nil)
		now := s.clock.Now()
		var updates []refUpdate
		compacting := false
		for i, ed := range edits {
			if ed == nil {
				continue
			}
			ln := s.lineageOf(ctx, states[i])
			compacting = compacting || ln.summary != nil
			h, err := s.build(ps, states[i], ed, now, ln)
			if err != nil {
				return nil, err
			}
			mine[h] = ed
			updates = append(updates, refUpdate{ref: refs[i], old: states[i].hash, new: h})
		}
		if len(updates) == 0 {
			return nil, nil
		}
		attempts++
		server, perr := s.push(ctx, ps, updates, len(updates) > 1)
		if perr == nil {
			// The new objects join the cache, so this store's next
			// mutation of these refs starts from them without a read.
			for _, o := range ps.local {
				s.objects.put(o)
			}
			for _, u := range updates {
				s.remember(u.ref, u.new)
			}
			if refused != nil {
				s.rewriteRefused(refs[0], refusedServer, refused)
			}
			return edits, nil
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
			if cs := s.cachedStates(refs); cs != nil && !sameTips(cs, states) {
				states = cs
				continue
			}
		}
		fresh, rerr := s.readStates(ctx, refs)
		if rerr == nil {
			if landed := landedEdits(fresh, edits, mine); landed != nil {
				return landed, nil
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
			s.noRewrite.Store(true)
			refused, refusedServer = perr, server
			states = fresh
			continue
		}
		switch {
		case f == failLost && rerr != nil:
			return nil, rerr
		case f != failLost:
			return nil, s.transportError(perr, server, "%s", what)
		case sent && sameTips(fresh, states):
			// The server refused the update ("failed to update ref"), yet
			// nobody moved the ref: not a lost race but a deterministic
			// refusal (a ref name the server cannot store, a full disk).
			// Retrying would only burn the budget.
			return nil, errs.Wrap(s.scrub(perr), errs.STORE_REJECTED,
				"%s: the remote refused the update though the branch did not move: %s", what, s.scrubText(firstLine(server, perr))).
				With("ref", refs[0].String()).
				WithHint("Nothing else is writing the branch: the server refuses this ref (too long a name, a full disk, a server rule). Shorten the branch name or fix the remote.")
		}
		if allFresh(states) {
			losses++
			d := s.jitter(losses)
			if elapsed := s.clock.Now().Sub(start); elapsed+d > s.budget {
				return nil, errs.Wrap(s.scrub(perr), errs.STORE_CONTENDED,
					"%s: other writers kept moving the branch; gave up after %d attempts in %s (budget %s)",
					what, attempts, elapsed.Round(time.Millisecond), s.budget).
					With("attempts", attempts).With("elapsed", elapsed.Round(time.Millisecond).String())
			}
			if progress.Enabled(ctx) {
				now := s.clock.Now()
				progress.Report(ctx, progress.Event{Kind: progress.Store, Target: what, Started: now.Add(-time.Since(start)), Now: now,
					Deadline: now.Add(s.budget - time.Since(start)), Attempt: losses})
			}
			if err := s.sleep(ctx, d); err != nil {
				return nil, errs.Wrap(err, errs.INTERRUPTED, "%s", what)
			}
		}
		states = fresh
	}
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
