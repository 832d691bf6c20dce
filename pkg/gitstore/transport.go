package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// snapshot is what one fetch saw: the matching refs as the remote
// advertised them, and a storage holding every object of their tips' trees.
type snapshot struct {
	refs map[plumbing.ReferenceName]plumbing.Hash
	st   *opStorage
	// listing is the ref listing the fetch matched against (every ref the
	// remote advertised), for a later fetch that reuses it (fetchListed).
	listing *listing
}

// fetchMode is what fetch asks for beyond the ref advertisement.
type fetchMode int

const (
	fetchTips    fetchMode = iota // each matching tip's commit and tree (depth 1)
	fetchHistory                  // each matching tip's whole history
	fetchNone                     // nothing: the listing only
	fetchShapes                   // each matching tip's commit and tree, no blob (depth 1, blob:none)
)

// fetch is one upload-pack session: the ref advertisement (one round trip),
// then, only if a matching tip is not complete in the object cache, ONE
// request for all the missing tips at depth 1 (one packfile, a second round
// trip). fetchHistory asks for the whole history of every matching tip
// instead; fetchNone stops after the listing.
func (s *Store) fetch(ctx context.Context, match func(name string) bool, mode fetchMode) (*snapshot, error) {
	return s.fetchDepth(ctx, match, mode, 0)
}

// fetchDepth is fetch with fetchHistory bounded to depth commits of each
// tip's history (0: all of it).
func (s *Store) fetchDepth(ctx context.Context, match func(name string) bool, mode fetchMode, depth int) (*snapshot, error) {
	return s.fetchAt(ctx, nil, match, mode, depth)
}

// fetchListed is fetch on the refs of an earlier fetch's listing (over
// HTTP, where each request stands alone): no ref advertisement, only the
// packfile request, one round trip. A tip of that listing that the remote
// can no longer serve (its branch was deleted since) fails the request;
// the fetch is then made again with a listing of its own.
func (s *Store) fetchListed(ctx context.Context, l *listing, match func(name string) bool, mode fetchMode) (*snapshot, error) {
	if l == nil {
		return s.fetch(ctx, match, mode)
	}
	snap, err := s.fetchAt(ctx, l, match, mode, 0)
	if err != nil && ctx.Err() == nil {
		return s.fetch(ctx, match, mode)
	}
	return snap, err
}

// fetchAt is fetchDepth on listing from, when it is not nil, instead of a
// listing of its own (or of New's exchange).
func (s *Store) fetchAt(ctx context.Context, from *listing, match func(name string) bool, mode fetchMode, depth int) (*snapshot, error) {
	snap := &snapshot{refs: map[plumbing.ReferenceName]plumbing.Hash{}, st: newOpStorage(s.objects)}
	c, ep, err := s.client()
	if err != nil {
		return nil, err
	}
	sess, err := c.NewUploadPackSession(ep, s.auth)
	if err != nil {
		return nil, s.transportError(err, "", "connect to %s", s.safeURL)
	}
	defer sess.Close()
	var (
		refs map[string]plumbing.Hash
		req  *packp.UploadPackRequest
	)
	if from == nil {
		from = s.takeFirst()
	}
	if first := from; first != nil {
		// New's exchange (or an earlier fetch) listed the refs: go
		// straight to the packfile request, asking only for what it
		// advertised and every git server's upload-pack supports.
		refs = first.refs
		req = packp.NewUploadPackRequest()
		if first.sideband64k {
			_ = req.Capabilities.Set(capability.Sideband64k)
		}
		if first.ofsDelta {
			_ = req.Capabilities.Set(capability.OFSDelta)
		}
		_ = req.Capabilities.Set(capability.NoProgress)
	} else {
		s.roundTrips.Add(1)
		ar, err := sess.AdvertisedReferencesContext(ctx)
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return snap, nil
		}
		if err != nil {
			return nil, s.transportError(err, "", "list the refs of %s", s.safeURL)
		}
		refs = ar.References
		req = packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		if ar.Capabilities.Supports(capability.Filter) {
			s.filter.Store(filterYes)
		} else {
			s.filter.Store(filterNo)
		}
		from = &listing{refs: refs, sideband64k: ar.Capabilities.Supports(capability.Sideband64k),
			ofsDelta: ar.Capabilities.Supports(capability.OFSDelta)}
		if ar.Capabilities.Supports(capability.NoProgress) {
			_ = req.Capabilities.Set(capability.NoProgress)
		}
	}
	snap.listing = from
	var wants []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for name, h := range refs {
		if !match(name) {
			continue
		}
		snap.refs[plumbing.ReferenceName(name)] = h
		if seen[h] {
			continue
		}
		seen[h] = true
		switch {
		case mode == fetchHistory, mode == fetchTips && !complete(snap.st, h):
			wants = append(wants, h)
		case mode == fetchShapes:
			if _, ok := treeOf(snap.st, h); !ok {
				wants = append(wants, h)
			}
		}
	}
	if len(wants) == 0 {
		return snap, nil
	}
	req.Wants = wants
	if mode == fetchTips || mode == fetchShapes || depth > 0 {
		req.Depth = packp.DepthCommits(max(depth, 1))
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return nil, errs.Wrap(err, errs.INTERNAL, "request a shallow fetch")
		}
	}
	guess := s.filter.Load() == filterUnknown
	if s.filter.Load() != filterNo {
		// Partial clone: the remote leaves out every blob over what a
		// store file may be, so a stray file on any branch is never
		// downloaded (file then says the store file it stood for is
		// too large). docs/adr/0010.
		req.Filter = packp.FilterBlobLimit(receipt.MaxBytes+1, packp.BlobLimitPrefixNone)
		if mode == fetchShapes {
			// The shapes of the tips only: which store files each
			// tree holds, and the commits (their times, trailers).
			req.Filter = packp.FilterBlobNone()
		}
		if err := req.Capabilities.Set(capability.Filter); err != nil {
			return nil, errs.Wrap(err, errs.INTERNAL, "request a filtered fetch")
		}
	}
	s.roundTrips.Add(1)
	resp, err := sess.UploadPack(ctx, req)
	if err != nil && guess && ctx.Err() == nil {
		// On a listing that did not say (New's, from receive-pack), the
		// filter was a guess, and the remote refused it: never again.
		s.filter.Store(filterNo)
		return s.fetchAt(ctx, from, match, mode, depth)
	}
	if err != nil {
		return nil, s.transportError(err, "", "fetch receipts from %s", s.safeURL)
	}
	defer resp.Close()
	var r io.Reader = &countingReader{r: resp, n: &s.fetched}
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, r)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, r)
	}
	if err := packfile.UpdateObjectStorage(snap.st, r); err != nil {
		if guess && ctx.Err() == nil {
			s.filter.Store(filterNo)
			return s.fetchAt(ctx, from, match, mode, depth)
		}
		return nil, s.transportError(err, "", "read the packfile from %s", s.safeURL)
	}
	if guess {
		s.filter.Store(filterYes)
	}
	for _, h := range wants {
		if _, ok := treeOf(snap.st, h); !ok {
			return nil, errs.New(errs.STORE_UNAVAILABLE, "%s did not send commit %s and its tree", s.safeURL, h)
		}
	}
	return snap, nil
}

// storeFiles are the files of a tip's tree the store reads. Nothing else
// of a tree is ever read: a file someone else added is carried over by
// hash, never fetched for its own sake.
var storeFiles = []string{receipt.ReceiptFile, receipt.LockFile, GenerationFile, CompactedFile}

// complete reports whether commit h, its tree and the blobs of the tree's
// store files that are plain files are all in st: the depth-1 view a read
// needs. Other entries need not be there (a blob fetch left out, a
// submodule's commit, a directory's contents): nothing reads them.
func complete(st *opStorage, h plumbing.Hash) bool {
	t, ok := treeOf(st, h)
	if !ok {
		return false
	}
	for _, name := range storeFiles {
		e, err := t.FindEntry(name)
		if err != nil || e.Mode != filemode.Regular && e.Mode != filemode.Executable {
			continue
		}
		if !st.has(e.Hash) {
			return false
		}
	}
	return true
}

// treeOf is commit h's tree, if st holds the commit and the tree.
func treeOf(st *opStorage, h plumbing.Hash) (*object.Tree, bool) {
	c, err := object.GetCommit(st, h)
	if err != nil {
		return nil, false
	}
	t, err := object.GetTree(st, c.TreeHash)
	if err != nil {
		return nil, false
	}
	return t, true
}

// refUpdate is one ref of a push: create (old zero), update, or delete (new
// zero).
type refUpdate struct {
	ref      plumbing.ReferenceName
	old, new plumbing.Hash
}

// push sends updates in one receive-pack request, atomically if asked. Updates and deletes carry RequireRemoteRefs "<old>:<ref>": go-git
// refuses to send unless the advertised tip is old, and the command it sends
// carries old as the expected value, which git's receive-pack checks under
// the ref's lock — the compare-and-swap. A create is a non-forced push of a
// parentless commit: go-git refuses it if the ref exists, and the command's
// zero old value makes receive-pack refuse it if the ref appeared since.
//
// Not ForceWithLease (stores.md): in go-git v5.19.3 it silently overwrites
// when the refspec's source is a hash or its RefName differs from the
// destination, and it ignores the lease on deletes.
//
// st must hold the new commits' objects and the old tips' (go-git walks them
// to leave out what the remote has). It returns the server's progress
// output (hook messages) for errors.
func (s *Store) push(ctx context.Context, st *opStorage, updates []refUpdate, atomic bool) (string, error) {
	opts := &git.PushOptions{RemoteName: "origin", Auth: s.auth, Atomic: atomic}
	for _, u := range updates {
		switch {
		case u.new.IsZero():
			opts.RefSpecs = append(opts.RefSpecs, config.RefSpec(":"+u.ref.String()))
			opts.RequireRemoteRefs = append(opts.RequireRemoteRefs, config.RefSpec(u.old.String()+":"+u.ref.String()))
		case u.old.IsZero():
			opts.RefSpecs = append(opts.RefSpecs, config.RefSpec(u.new.String()+":"+u.ref.String()))
		default:
			opts.RefSpecs = append(opts.RefSpecs, config.RefSpec("+"+u.new.String()+":"+u.ref.String()))
			opts.RequireRemoteRefs = append(opts.RequireRemoteRefs, config.RefSpec(u.old.String()+":"+u.ref.String()))
		}
	}
	var progress bytes.Buffer
	opts.Progress = &progress // turns on side-band: hook output comes back
	s.takeFirst()             // a listing from before a push must not serve a read after it
	remote := git.NewRemote(st, &config.RemoteConfig{Name: "origin", URLs: []string{s.url}})
	err := remote.PushContext(ctx, opts)
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		// NoErrAlreadyUpToDate cannot mean success here (every commit has a
		// nonce); the caller's re-read decides.
		if err == nil {
			s.roundTrips.Add(2)
		} else {
			s.roundTrips.Add(1)
		}
		return progress.String(), err
	}
	if _, sent := classify(err); sent {
		s.roundTrips.Add(2)
	} else {
		s.roundTrips.Add(1)
	}
	return progress.String(), err
}

// transportError codes an error from go-git for the caller (classify
// decides the code), with credentials scrubbed from every text.
func (s *Store) transportError(err error, server, format string, args ...any) error {
	var coded *errs.Error
	if errors.As(err, &coded) {
		return err
	}
	what := fmt.Sprintf(format, args...)
	f, _ := classify(err)
	cause := s.scrub(err)
	switch f {
	case failInterrupted:
		return errs.Wrap(cause, errs.INTERRUPTED, "%s", what)
	case failPermission:
		return errs.Wrap(cause, errs.STORE_PERMISSION, "%s: the remote refused these credentials", what).
			WithHint("Grant the token `contents: write` on the repository (in a workflow: `permissions: { contents: write }`); reading needs `contents: read`.")
	case failRejected:
		e := s.withServerMessage(errs.Wrap(cause, errs.STORE_REJECTED, "%s: a server-side rule refused the push", what), server)
		return e.WithHint("Allow pushes to `sponson-receipts/*` branches in the repository's rules (branch protection, rulesets, hooks); the server's message says which rule.")
	case failRewrite:
		e := s.withServerMessage(errs.Wrap(cause, errs.STORE_REJECTED, "%s: the remote refuses to rewrite the branch (a non-fast-forward update)", what), server)
		return e.WithHint("Let the Action and the bot force-push `sponson-receipts/**` (the README's receipts ruleset; on a plain git server `receive.denyNonFastForwards false`).")
	case failLost:
		return errs.Wrap(cause, errs.STORE_CONTENDED, "%s: another writer moved the branch", what)
	}
	return errs.Wrap(cause, errs.STORE_UNAVAILABLE, "%s", what)
}

// withServerMessage adds what the server said (serverMessage), if
// anything, to e's message and details.
func (s *Store) withServerMessage(e *errs.Error, server string) *errs.Error {
	if m := s.serverMessage(server); m != "" {
		e.Message += "; the server said: " + m
		e.With("server_message", m)
	}
	return e
}

// serverMessage is the server's side-band output made fit for a message:
// "remote: " prefixes and blank lines dropped, scrubbed, at most 1000 bytes.
func (s *Store) serverMessage(out string) string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(out, "\r", "\n"), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "remote:"))
		if l != "" {
			lines = append(lines, l)
		}
	}
	m := s.scrubText(strings.Join(lines, " | "))
	if len(m) > 1000 {
		m = m[:1000] + "…"
	}
	return m
}

// scrubbed is an error whose text had credentials removed; errors.Is and
// errors.As still see the original.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// userinfo matches the credentials part of a URL in free text.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s"']+@`)

func (s *Store) scrub(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbed{msg: s.scrubText(err.Error()), err: err}
}

// scrubText removes every credential the store knows and any URL userinfo.
func (s *Store) scrubText(text string) string {
	for _, secret := range s.secrets {
		if secret != "" {
			text = strings.ReplaceAll(text, secret, "***")
		}
	}
	return userinfo.ReplaceAllString(text, "$1")
}

// countingReader adds what it reads to n: the bytes a store has fetched.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// What the store knows of the remote's partial-clone support.
const (
	filterUnknown int32 = iota // no upload-pack advertisement seen yet: try it
	filterYes
	filterNo
)
