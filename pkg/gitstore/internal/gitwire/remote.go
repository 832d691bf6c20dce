package gitwire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/sponson/apply/pkg/errs"
)

// Config is what a Remote needs to know.
type Config struct {
	// URL of the remote, without credentials (file://, http://, https://).
	URL string
	// Auth for the remote (nil: none).
	Auth transport.AuthMethod
	// HTTPTimeout bounds each HTTP exchange, its body included.
	HTTPTimeout time.Duration
	// Objects is the object cache the operations share.
	Objects *Cache
	// Files are the top-level files of a tip's tree that a depth-1 fetch
	// must hold for the tip to count as complete (Complete).
	Files []string
	// BlobLimit: where the remote serves partial clones, blobs over it are
	// left out of every fetch.
	BlobLimit int64
	// Name is what messages call the remote ("receipts remote"); Noun what
	// they call what is fetched ("receipts").
	Name, Noun string
	// Code turns an error of go-git into the caller's coded error: what is
	// what was being done, server the server's side-band output.
	Code func(err error, server, what string) error
	// Scrub removes credentials from an error's text.
	Scrub func(error) error
}

// Remote is one git remote spoken to with go-git: ref listings, fetches
// into an operation's Storage, and compare-and-swap pushes. Safe for
// concurrent use.
type Remote struct {
	url        string
	auth       transport.AuthMethod
	http       transport.Transport // for http(s) remotes
	objects    *Cache
	files      []string
	blobLimit  int64
	name, noun string
	code       func(err error, server, what string) error
	scrub      func(error) error

	// web is the HTTP client of http(s) remotes (nil for file://).
	web *http.Client
	// v2: upload-pack speaks protocol v2 (v2.go), and what its fetch
	// command supports; nil: protocol v0, go-git's sessions.
	v2 *v2Caps

	// What the remote's receive-pack advertises, read once, when first
	// asked (pushCaps): "atomic" and "delete-refs".
	pushOnce   sync.Once
	pushAsked  atomic.Bool // pushCaps has run
	atomicPush bool
	deleteRefs bool

	// first is the ref listing of Open's exchange with the remote, kept for
	// the first operation (see TakeFirst); nil once taken.
	firstMu sync.Mutex
	first   *Listing

	pushTimeout time.Duration // bounds pushCaps's exchange

	roundTrips atomic.Int64
	fetched    atomic.Int64 // packfile bytes received
	// filter: whether the remote's upload-pack serves partial clones
	// ("filter"), so fetches leave out blobs over BlobLimit (filterUnknown,
	// filterYes, filterNo).
	filter atomic.Int32
}

// Open returns the remote of c after one exchange with it: upload-pack's
// advertisement asked for in protocol v2. A remote that speaks v2 answers
// with its capabilities alone (every later read lists only the refs it is
// about, ls-refs); one that does not answers with every ref (protocol v0),
// kept for the first fetch over HTTP. What receive-pack supports is asked
// when first needed (Atomic, DeleteRefs).
func Open(ctx context.Context, c Config) (*Remote, error) {
	r := &Remote{url: c.URL, auth: c.Auth, objects: c.Objects, files: c.Files, blobLimit: c.BlobLimit,
		name: c.Name, noun: c.Noun, code: c.Code, scrub: c.Scrub, pushTimeout: c.HTTPTimeout}
	if strings.HasPrefix(c.URL, "http:") || strings.HasPrefix(c.URL, "https:") {
		r.web = &http.Client{Transport: &stallGuard{base: http.DefaultTransport, limit: c.HTTPTimeout}}
		r.http = githttp.NewClient(r.web)
	}
	if _, _, err := r.client(); err != nil {
		return nil, err
	}
	caps, first, err := r.advertiseV2(ctx)
	if err != nil {
		return nil, err
	}
	r.v2 = caps
	if r.web != nil {
		// Over file:// a go-git session always starts with its own
		// advertisement: nothing to keep.
		r.first = first
	}
	return r, nil
}

// V2 reports whether the remote's upload-pack speaks protocol v2.
func (r *Remote) V2() bool { return r.v2 != nil }

// fail codes err with Config.Code, what made of format and args.
func (r *Remote) fail(err error, format string, args ...any) error {
	return r.code(err, "", fmt.Sprintf(format, args...))
}

// Atomic reports whether the remote's receive-pack advertises atomic
// pushes (pushCaps). Over HTTP a remote whose upload-pack speaks protocol
// v2 is taken to (every git since 2.4 advertises them unless
// receive.advertiseAtomic is off, and so do the hosting services) until
// ConfirmAtomic finds otherwise: asking would download every ref, which
// is what v2 spares a read. docs/adr/0014.
func (r *Remote) Atomic() bool {
	if r.v2 != nil && r.web != nil && !r.pushAsked.Load() {
		return true
	}
	r.pushCaps()
	return r.atomicPush
}

// ConfirmAtomic is Atomic as receive-pack's own advertisement says (one
// round trip the first time): what a push that must be atomic checks
// first.
func (r *Remote) ConfirmAtomic() bool {
	r.pushCaps()
	return r.atomicPush
}

// DeleteRefs reports whether it advertises "delete-refs".
func (r *Remote) DeleteRefs() bool {
	r.pushCaps()
	return r.deleteRefs
}

// RoundTrips is the number of network round trips made: each ref
// advertisement, each packfile request and each push request counts one.
func (r *Remote) RoundTrips() int64 { return r.roundTrips.Load() }

// BytesFetched is the number of packfile bytes received (side-band
// framing included).
func (r *Remote) BytesFetched() int64 { return r.fetched.Load() }

// Snapshot is what one fetch saw: the matching refs as the remote
// advertised them, and a storage holding every object of their tips' trees.
type Snapshot struct {
	Refs map[plumbing.ReferenceName]plumbing.Hash
	St   *Storage
	// Listing is the ref listing the fetch matched against (every ref the
	// remote advertised), for a later fetch that reuses it (FetchListed).
	Listing *Listing
}

// Mode is what fetch asks for beyond the ref advertisement.
type Mode int

const (
	Tips    Mode = iota // each matching tip's commit and tree (depth 1)
	History             // each matching tip's whole history
	None                // nothing: the Listing only
	Shapes              // each matching tip's commit and tree, no blob (depth 1, blob:none)
)

// Refs is which refs a fetch is about: those Match accepts, all of them
// under one of Prefixes (nil: anywhere). In protocol v2 only the refs under
// Prefixes are listed (ls-refs); in v0 the remote lists every ref anyway.
type Refs struct {
	Prefixes []string
	Match    func(name string) bool
}

// Fetch is one upload-pack session: the ref listing (one round trip),
// then, only if a matching tip is not complete in the object cache, ONE
// request for all the missing tips at depth 1 (one packfile, a second round
// trip). History asks for the whole history of every matching tip
// instead; None stops after the listing. In protocol v2 the listing is
// ls-refs of q.Prefixes.
func (r *Remote) Fetch(ctx context.Context, q Refs, mode Mode) (*Snapshot, error) {
	return r.FetchDepth(ctx, q, mode, 0)
}

// FetchDepth is Fetch with History bounded to depth commits of each
// tip's history (0: all of it).
func (r *Remote) FetchDepth(ctx context.Context, q Refs, mode Mode, depth int) (*Snapshot, error) {
	return r.fetchAt(ctx, nil, q, mode, depth)
}

// FetchListed is Fetch on the refs of an earlier fetch's listing (over
// HTTP, where each request stands alone): no ref listing, only the
// packfile request, one round trip. A tip of that listing that the remote
// can no longer serve (its branch was deleted since) fails the request;
// the fetch is then made again with a listing of its own. So is a fetch
// whose Prefixes a v2 listing does not cover.
func (r *Remote) FetchListed(ctx context.Context, l *Listing, q Refs, mode Mode) (*Snapshot, error) {
	if l == nil || !l.covers(q.Prefixes) {
		return r.Fetch(ctx, q, mode)
	}
	snap, err := r.fetchAt(ctx, l, q, mode, 0)
	if err != nil && ctx.Err() == nil {
		return r.Fetch(ctx, q, mode)
	}
	return snap, err
}

// fetchAt is FetchDepth on listing from, when it is not nil, instead of a
// listing of its own (or of Open's exchange).
func (r *Remote) fetchAt(ctx context.Context, from *Listing, q Refs, mode Mode, depth int) (*Snapshot, error) {
	if r.v2 != nil {
		return r.fetchAtV2(ctx, from, q, mode, depth)
	}
	snap := &Snapshot{Refs: map[plumbing.ReferenceName]plumbing.Hash{}, St: NewStorage(r.objects)}
	c, ep, err := r.client()
	if err != nil {
		return nil, err
	}
	sess, err := c.NewUploadPackSession(ep, r.auth)
	if err != nil {
		return nil, r.fail(err, "connect to %s", r.url)
	}
	defer sess.Close()
	if from == nil {
		from = r.TakeFirst()
	}
	var req *packp.UploadPackRequest
	if from != nil {
		req = from.request()
	} else if from, req, err = r.advertised(ctx, sess); from == nil {
		return snap, err // an empty remote (nil error), or the error
	}
	snap.Listing = from
	wants := snap.match(from.Refs, q, mode, r.files)
	if len(wants) == 0 {
		return snap, nil
	}
	guess, err := r.shape(req, wants, mode, depth)
	if err != nil {
		return nil, err
	}
	r.roundTrips.Add(1)
	resp, err := sess.UploadPack(ctx, req)
	if err != nil && guess && ctx.Err() == nil {
		// On a listing that did not say (New's, from receive-pack), the
		// filter was a guess, and the remote refused it: never again.
		r.filter.Store(filterNo)
		return r.fetchAt(ctx, from, q, mode, depth)
	}
	if err != nil {
		return nil, r.fail(err, "fetch %s from %s", r.noun, r.url)
	}
	defer resp.Close()
	if err := r.unpack(snap.St, req, resp); err != nil {
		if guess && ctx.Err() == nil {
			r.filter.Store(filterNo)
			return r.fetchAt(ctx, from, q, mode, depth)
		}
		return nil, err
	}
	if guess {
		r.filter.Store(filterYes)
	}
	return snap, r.check(snap, wants)
}

// fetchAtV2 is fetchAt in protocol v2: ls-refs of q.Prefixes unless from
// covers them, then, for what is missing, one fetch command.
func (r *Remote) fetchAtV2(ctx context.Context, from *Listing, q Refs, mode Mode, depth int) (*Snapshot, error) {
	snap := &Snapshot{Refs: map[plumbing.ReferenceName]plumbing.Hash{}, St: NewStorage(r.objects)}
	if from == nil || !from.covers(q.Prefixes) {
		l, err := r.lsRefs(ctx, q.Prefixes)
		if err != nil {
			return nil, err
		}
		from = l
	}
	snap.Listing = from
	wants := snap.match(from.Refs, q, mode, r.files)
	if len(wants) == 0 {
		return snap, nil
	}
	if err := r.fetchV2(ctx, snap.St, wants, mode, depth); err != nil {
		return nil, err
	}
	return snap, r.check(snap, wants)
}

// check is nil when snap holds every want's commit and tree.
func (r *Remote) check(snap *Snapshot, wants []plumbing.Hash) error {
	for _, h := range wants {
		if _, ok := TreeOf(snap.St, h); !ok {
			return errs.New(errs.STORE_UNAVAILABLE, "%s did not send commit %s and its tree", r.url, h)
		}
	}
	return nil
}

// under reports whether name is under one of q's prefixes (any name for
// none).
func (q Refs) under(name string) bool {
	return q.Prefixes == nil || slices.ContainsFunc(q.Prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// request is the packfile request that follows a listing taken earlier
// (Open's exchange, or an earlier fetch): it asks only for what that
// listing advertised and every git server's upload-pack supports.
func (l *Listing) request() *packp.UploadPackRequest {
	req := packp.NewUploadPackRequest()
	if l.Sideband64k {
		_ = req.Capabilities.Set(capability.Sideband64k)
	}
	if l.OFSDelta {
		_ = req.Capabilities.Set(capability.OFSDelta)
	}
	_ = req.Capabilities.Set(capability.NoProgress)
	return req
}

// advertised reads sess's ref advertisement (one round trip) and returns
// its listing and the packfile request it allows; a nil listing and nil
// error for an empty remote.
func (r *Remote) advertised(ctx context.Context, sess transport.UploadPackSession) (*Listing, *packp.UploadPackRequest, error) {
	r.roundTrips.Add(1)
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, r.fail(err, "list the refs of %s", r.url)
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.Filter) {
		r.filter.Store(filterYes)
	} else {
		r.filter.Store(filterNo)
	}
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	return &Listing{Refs: ar.References, Sideband64k: ar.Capabilities.Supports(capability.Sideband64k),
		OFSDelta: ar.Capabilities.Supports(capability.OFSDelta)}, req, nil
}

// match adds the refs that match to the snapshot and returns the tips the
// fetch must ask for in mode: those whose objects are not in memory yet
// (every matching tip for History, none for None).
func (snap *Snapshot) match(refs map[string]plumbing.Hash, q Refs, mode Mode, files []string) []plumbing.Hash {
	var wants []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for name, h := range refs {
		if !q.under(name) || !q.Match(name) {
			continue
		}
		snap.Refs[plumbing.ReferenceName(name)] = h
		if seen[h] {
			continue
		}
		seen[h] = true
		switch {
		case mode == History, mode == Tips && !Complete(snap.St, h, files):
			wants = append(wants, h)
		case mode == Shapes:
			if _, ok := TreeOf(snap.St, h); !ok {
				wants = append(wants, h)
			}
		}
	}
	return wants
}

// shape sets req's wants, depth and filter for mode; guess: the filter is
// asked for on a listing that did not say whether the remote serves it.
func (r *Remote) shape(req *packp.UploadPackRequest, wants []plumbing.Hash, mode Mode, depth int) (guess bool, err error) {
	req.Wants = wants
	if mode == Tips || mode == Shapes || depth > 0 {
		req.Depth = packp.DepthCommits(max(depth, 1))
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return false, errs.Wrap(err, errs.INTERNAL, "request a shallow fetch")
		}
	}
	guess = r.filter.Load() == filterUnknown
	if r.filter.Load() == filterNo {
		return guess, nil
	}
	// Partial clone: the remote leaves out every blob over what a store
	// file may be, so a stray file on any branch is never downloaded
	// (file then says the store file it stood for is too large).
	// docs/adr/0010.
	req.Filter = packp.FilterBlobLimit(uint64(r.blobLimit)+1, packp.BlobLimitPrefixNone)
	if mode == Shapes {
		// The shapes of the tips only: which store files each tree
		// holds, and the commits (their times, trailers).
		req.Filter = packp.FilterBlobNone()
	}
	if err := req.Capabilities.Set(capability.Filter); err != nil {
		return guess, errs.Wrap(err, errs.INTERNAL, "request a filtered fetch")
	}
	return guess, nil
}

// unpack reads the packfile of resp (demultiplexed as req asked) into st.
func (r *Remote) unpack(st *Storage, req *packp.UploadPackRequest, resp io.Reader) error {
	var in io.Reader = &countingReader{r: resp, n: &r.fetched}
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		in = sideband.NewDemuxer(sideband.Sideband64k, in)
	case req.Capabilities.Supports(capability.Sideband):
		in = sideband.NewDemuxer(sideband.Sideband, in)
	}
	if err := packfile.UpdateObjectStorage(st, in); err != nil {
		return r.fail(err, "read the packfile from %s", r.url)
	}
	return nil
}

// Complete reports whether commit h, its tree and the blobs of the tree's
// files (those of files that are plain files) are all in st: the depth-1 view a read
// needs. Other entries need not be there (a blob fetch left out, a
// submodule's commit, a directory's contents): nothing reads them.
func Complete(st *Storage, h plumbing.Hash, files []string) bool {
	t, ok := TreeOf(st, h)
	if !ok {
		return false
	}
	for _, name := range files {
		e, err := t.FindEntry(name)
		if err != nil || e.Mode != filemode.Regular && e.Mode != filemode.Executable {
			continue
		}
		if !st.Has(e.Hash) {
			return false
		}
	}
	return true
}

// TreeOf is commit h's tree, if st holds the commit and the tree.
func TreeOf(st *Storage, h plumbing.Hash) (*object.Tree, bool) {
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

// Update is one ref of a push: create (old zero), update, or delete (new
// zero).
type Update struct {
	Ref      plumbing.ReferenceName
	Old, New plumbing.Hash
}

// Push sends updates in one receive-pack request, atomically if asked. Updates and deletes carry RequireRemoteRefs "<old>:<ref>": go-git
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
func (r *Remote) Push(ctx context.Context, st *Storage, updates []Update, atomic bool) (string, error) {
	opts := &git.PushOptions{RemoteName: "origin", Auth: r.auth, Atomic: atomic}
	for _, u := range updates {
		switch {
		case u.New.IsZero():
			opts.RefSpecs = append(opts.RefSpecs, config.RefSpec(":"+u.Ref.String()))
			opts.RequireRemoteRefs = append(opts.RequireRemoteRefs, config.RefSpec(u.Old.String()+":"+u.Ref.String()))
		case u.Old.IsZero():
			opts.RefSpecs = append(opts.RefSpecs, config.RefSpec(u.New.String()+":"+u.Ref.String()))
		default:
			opts.RefSpecs = append(opts.RefSpecs, config.RefSpec("+"+u.New.String()+":"+u.Ref.String()))
			opts.RequireRemoteRefs = append(opts.RequireRemoteRefs, config.RefSpec(u.Old.String()+":"+u.Ref.String()))
		}
	}
	var progress bytes.Buffer
	opts.Progress = &progress // turns on side-band: hook output comes back
	r.TakeFirst()             // a Listing from before a push must not serve a read after it
	remote := git.NewRemote(st, &config.RemoteConfig{Name: "origin", URLs: []string{r.url}})
	err := remote.PushContext(ctx, opts)
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		// NoErrAlreadyUpToDate cannot mean success here (every commit has a
		// nonce); the caller's re-read decides.
		if err == nil {
			r.roundTrips.Add(2)
		} else {
			r.roundTrips.Add(1)
		}
		return progress.String(), err
	}
	if _, sent := Classify(err); sent {
		r.roundTrips.Add(2)
	} else {
		r.roundTrips.Add(1)
	}
	return progress.String(), err
}

// pushCaps reads receive-pack's advertisement once, for what it supports
// (one round trip; in protocol v0 it lists every ref, as every push does).
// Pushes refused (a read-only token) or a remote that cannot be reached:
// neither "atomic" nor "delete-refs", the ordinary ways, which are always
// correct.
func (r *Remote) pushCaps() {
	r.pushOnce.Do(func() {
		defer r.pushAsked.Store(true)
		c, ep, err := r.client()
		if err != nil {
			return
		}
		sess, err := c.NewReceivePackSession(ep, r.auth)
		if err != nil {
			return
		}
		defer sess.Close()
		ctx, cancel := context.WithTimeout(context.Background(), r.pushTimeout)
		defer cancel()
		r.roundTrips.Add(1)
		ar, err := sess.AdvertisedReferencesContext(ctx)
		if err != nil {
			return
		}
		r.atomicPush = ar.Capabilities.Supports(capability.Atomic)
		r.deleteRefs = ar.Capabilities.Supports(capability.DeleteRefs)
	})
}

// Listing is the refs of a ref advertisement and what the request that
// follows it may ask for.
type Listing struct {
	Refs                  map[string]plumbing.Hash
	Sideband64k, OFSDelta bool
	// Prefixes are the ref prefixes a v2 listing (ls-refs) was asked
	// for; nil: every ref.
	Prefixes []string
	v2       bool
}

// covers reports whether l lists every ref under each of prefixes.
func (l *Listing) covers(prefixes []string) bool {
	if l.Prefixes == nil {
		return true
	}
	if prefixes == nil {
		return false
	}
	for _, p := range prefixes {
		if !slices.ContainsFunc(l.Prefixes, func(lp string) bool { return strings.HasPrefix(p, lp) }) {
			return false
		}
	}
	return true
}

// TakeFirst returns the listing of Open's exchange to the store's first
// operation, and nil ever after: it is as fresh as a listing of the first
// operation's own (nothing of this store ran in between), and only the
// first. A mutation discards it.
func (r *Remote) TakeFirst() *Listing {
	r.firstMu.Lock()
	defer r.firstMu.Unlock()
	l := r.first
	r.first = nil
	return l
}

func (r *Remote) client() (transport.Transport, *transport.Endpoint, error) {
	ep, err := transport.NewEndpoint(r.url)
	if err != nil {
		return nil, nil, errs.Wrap(r.scrub(err), errs.USAGE, "the %s %s is not a valid git URL", r.name, r.url)
	}
	if r.http != nil && (ep.Protocol == "http" || ep.Protocol == "https") {
		return r.http, ep, nil
	}
	c, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, errs.Wrap(r.scrub(err), errs.USAGE, "the %s %s uses an unsupported scheme", r.name, r.url)
	}
	return c, ep, nil
}

// PutTree stores the tree of entries, sorted the way git sorts them.
func PutTree(ps *Storage, entries map[string]object.TreeEntry) (plumbing.Hash, error) {
	tree := &object.Tree{}
	for _, e := range entries {
		tree.Entries = append(tree.Entries, e)
	}
	sort.Slice(tree.Entries, func(i, j int) bool { return gitSortKey(tree.Entries[i]) < gitSortKey(tree.Entries[j]) })
	return PutObject(ps, tree)
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

// PutObject stores o.
func PutObject(st *Storage, o encoder) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, errs.Wrap(err, errs.INTERNAL, "encode a git object")
	}
	return st.SetEncodedObject(obj)
}

// PutBlob stores data as a blob.
func PutBlob(st *Storage, data []byte) (plumbing.Hash, error) {
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

// CopyCommit copies commit c, its tree and everything in the tree from src
// to dst (not its parents: the remote has them).
func CopyCommit(dst, src *Storage, c *object.Commit) error {
	o, err := src.EncodedObject(plumbing.CommitObject, c.Hash)
	if err != nil {
		return errs.Wrap(err, errs.STORE_UNAVAILABLE, "commit %s is not in memory", c.Hash)
	}
	if _, err := dst.SetEncodedObject(o); err != nil {
		return errs.Wrap(err, errs.INTERNAL, "copy commit %s", c.Hash)
	}
	return copyTree(dst, src, c.TreeHash)
}

func copyTree(dst, src *Storage, h plumbing.Hash) error {
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
