package gitstore

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Defaults.
const (
	// DefaultBudget is how long a compare-and-swap keeps retrying against
	// other writers before STORE_CONTENDED (stores.md; the CLI reads
	// SPONSON_STORE_BUDGET and passes it as Options.Budget).
	DefaultBudget = 60 * time.Second
	// DefaultCacheBytes bounds the shared object cache.
	DefaultCacheBytes = 64 << 20
	// DefaultHTTPTimeout bounds one HTTP exchange with the remote (a ref
	// listing, a packfile, a push), body included: a remote that stops
	// answering ends the operation STORE_UNAVAILABLE instead of holding
	// the run, and its leases, for ever. A fetch of 5,000 receipts takes
	// about a second.
	DefaultHTTPTimeout = 5 * time.Minute
	// TokenUser is the user name a GitHub token is sent with.
	TokenUser = "x-access-token"

	backoffBase = 10 * time.Millisecond
	backoffMax  = 2 * time.Second
)

// Options configure a Store.
type Options struct {
	// URL of the remote: file:///abs/path/repo.git, http:// or https://.
	// Never a plain path (go-git then walks the remote's whole object graph
	// on every push). Credentials in the URL are moved to Auth and never
	// appear in a message.
	URL string
	// Auth for the remote; or Token, sent as HTTP basic auth with the user
	// "x-access-token" (a GitHub token). At most one of them.
	Auth  transport.AuthMethod
	Token string
	// Clock stamps and expires leases and commits (nil: the system clock).
	Clock clock.Clock
	// Budget is how long a contended compare-and-swap retries
	// (0: DefaultBudget).
	Budget time.Duration
	// Rand draws the backoff jitter (nil: seeded from crypto/rand). Nonces
	// always come from crypto/rand.
	Rand *rand.Rand
	// Sleep waits between retries (nil: a timer that ctx interrupts).
	// Tests pass one that returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// CacheBytes bounds the in-memory object cache (0: DefaultCacheBytes).
	CacheBytes int64
	// HTTPTimeout bounds each HTTP exchange with the remote, its body
	// included (0: DefaultHTTPTimeout). Every exchange also honours ctx.
	HTTPTimeout time.Duration
	// MaxDepth bounds the commits a branch's tip reaches (0:
	// DefaultMaxDepth): a write that would pass it is made on a squash of
	// the branch's history instead (compact.go, docs/adr/0009).
	MaxDepth int
	// Keys sign every commit the store makes and are the only ones whose
	// commits Recorded counts (sign.go, docs/adr/0012); nil: no signing,
	// and the history checks alone decide, as before signing.
	Keys *receipt.Keys
}

// Store is the git-branch receipt.Store. It keeps nothing on disk: every
// operation has its own in-memory go-git storage, over an object cache
// shared by all of them.
type Store struct {
	url     string // what go-git is given: no credentials
	safeURL string // what messages show
	auth    transport.AuthMethod
	secrets []string // scrubbed from every message

	clock  clock.Clock
	budget time.Duration
	sleep  func(ctx context.Context, d time.Duration) error
	randMu sync.Mutex
	rand   *rand.Rand

	objects *objectCache
	http    transport.Transport // for http(s) remotes
	tipsMu  sync.Mutex
	tips    map[plumbing.ReferenceName]plumbing.Hash // last tip seen or written, a hint only

	atomicPush bool // the remote's receive-pack advertises "atomic"
	deleteRefs bool // ... and "delete-refs"

	// first is the ref listing of New's exchange with the remote, kept for
	// the store's first operation (see takeFirst); nil once taken.
	firstMu sync.Mutex
	first   *listing

	roundTrips atomic.Int64
	fetched    atomic.Int64 // packfile bytes received
	// filter: whether the remote's upload-pack serves partial clones
	// ("filter"), so fetches leave out blobs over receipt.MaxBytes
	// (filterUnknown, filterYes, filterNo).
	filter atomic.Int32

	maxDepth int
	keys     *receipt.Keys // nil: commits are neither signed nor verified
	// noRewrite: the remote refused a compaction's non-fast-forward push;
	// for the rest of the store's life it writes the ordinary way.
	noRewrite atomic.Bool
	warnMu    sync.Mutex
	warnings  []*errs.Error
	warned    bool
}

var _ receipt.Store = (*Store)(nil)

// New returns the store of the repository at opts.URL. It talks to the
// remote once (the receive-pack advertisement, one round trip) to learn
// what it supports — Capabilities().AtomicMulti is true only when the
// remote advertises atomic pushes — and keeps the refs that exchange
// listed for the store's first read, which then needs no listing of its
// own (over HTTP: one request instead of two). A remote that refuses pushes to these
// credentials still makes a store (reads work; writes fail with
// STORE_PERMISSION). USAGE for a URL that is not file://, http:// or
// https://; STORE_UNAVAILABLE / STORE_PERMISSION when the remote cannot be
// read at all.
func New(ctx context.Context, opts Options) (*Store, error) {
	if err := receipt.Interrupted(ctx, "open the git store"); err != nil {
		return nil, err
	}
	u, err := url.Parse(opts.URL)
	if err != nil || opts.URL == "" {
		return nil, errs.New(errs.USAGE, "the receipts remote %q is not a URL", stripUserinfo(opts.URL)).
			WithHint("Give a file://, http:// or https:// URL.")
	}
	switch u.Scheme {
	case "file", "http", "https":
	default:
		return nil, errs.New(errs.USAGE, "the receipts remote %q is not a file://, http:// or https:// URL", stripUserinfo(opts.URL)).
			WithHint("For a local repository use file:///absolute/path/repo.git, never a plain path: go-git walks the whole repository on every push to a plain path.")
	}
	s := &Store{
		clock:   opts.Clock,
		budget:  opts.Budget,
		sleep:   opts.Sleep,
		rand:    opts.Rand,
		tips:    map[plumbing.ReferenceName]plumbing.Hash{},
		objects: newObjectCache(opts.CacheBytes),
		keys:    opts.Keys,
		secrets: opts.Keys.Secrets(), // never in a message, whatever happens
	}
	if opts.CacheBytes <= 0 {
		s.objects = newObjectCache(DefaultCacheBytes)
	}
	if s.clock == nil {
		s.clock = clock.System{}
	}
	if s.budget <= 0 {
		s.budget = DefaultBudget
	}
	if s.maxDepth = opts.MaxDepth; s.maxDepth <= 0 {
		s.maxDepth = DefaultMaxDepth
	}
	s.maxDepth = max(s.maxDepth, minDepth)
	if s.sleep == nil {
		s.sleep = sleepCtx
	}
	if s.rand == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		s.rand = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}

	// Credentials: Token, else Auth, else the URL's userinfo; the URL go-git
	// sees never carries them.
	if opts.Token != "" && opts.Auth != nil {
		return nil, errs.New(errs.USAGE, "give the git store a token or an auth method, not both")
	}
	if u.User != nil {
		user := u.User.Username()
		pass, _ := u.User.Password()
		s.secrets = append(s.secrets, pass)
		if pass == "" {
			s.secrets = append(s.secrets, user) // a bare token as user name
		}
		if opts.Token == "" && opts.Auth == nil {
			if pass == "" {
				opts.Token = user
			} else {
				opts.Auth = &githttp.BasicAuth{Username: user, Password: pass}
			}
		}
		u.User = nil
	}
	switch {
	case opts.Token != "":
		s.auth = &githttp.BasicAuth{Username: TokenUser, Password: opts.Token}
		s.secrets = append(s.secrets, opts.Token)
	case opts.Auth != nil:
		s.auth = opts.Auth
		switch a := opts.Auth.(type) {
		case *githttp.BasicAuth:
			s.secrets = append(s.secrets, a.Password)
		case *githttp.TokenAuth:
			s.secrets = append(s.secrets, a.Token)
		}
	}
	s.url = u.String()
	s.safeURL = s.url
	if u.Scheme == "http" || u.Scheme == "https" {
		d := opts.HTTPTimeout
		if d <= 0 {
			d = DefaultHTTPTimeout
		}
		s.http = githttp.NewClient(&http.Client{Transport: &stallGuard{base: http.DefaultTransport, limit: d}})
	}
	if u.Scheme == "file" && u.Host != "" {
		return nil, errs.New(errs.USAGE, "the receipts remote %q names a host; a file:// URL is file:///absolute/path", s.safeURL)
	}

	if err := s.probe(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// probe reads the receive-pack advertisement for the capabilities, falling
// back to the upload-pack one when pushes are refused (a read-only token).
func (s *Store) probe(ctx context.Context) error {
	c, ep, err := s.client()
	if err != nil {
		return err
	}
	sess, err := c.NewReceivePackSession(ep, s.auth)
	if err != nil {
		return s.transportError(err, "", "connect to %s", s.safeURL)
	}
	s.roundTrips.Add(1)
	ar, err := sess.AdvertisedReferencesContext(ctx)
	_ = sess.Close()
	if err == nil {
		s.atomicPush = ar.Capabilities.Supports(capability.Atomic)
		s.deleteRefs = ar.Capabilities.Supports(capability.DeleteRefs)
		if strings.HasPrefix(s.url, "http") {
			// Over file:// an upload-pack session always starts with its
			// own advertisement: nothing to save.
			s.first = &listing{refs: ar.References, sideband64k: ar.Capabilities.Supports(capability.Sideband64k),
				ofsDelta: ar.Capabilities.Supports(capability.OFSDelta)}
		}
		return nil
	}
	if f, _ := classify(err); f != failPermission {
		return s.transportError(err, "", "read the receipts remote %s", s.safeURL)
	}
	// Pushes refused: check that reading works, so plan still can.
	_, err = s.fetch(ctx, func(string) bool { return false }, fetchNone)
	return err
}

// listing is the refs of a ref advertisement and what the request that
// follows it may ask for.
type listing struct {
	refs                  map[string]plumbing.Hash
	sideband64k, ofsDelta bool
}

// takeFirst returns the listing of New's exchange to the store's first
// operation, and nil ever after: it is as fresh as a listing of the first
// operation's own (nothing of this store ran in between), and only the
// first. A mutation discards it.
func (s *Store) takeFirst() *listing {
	s.firstMu.Lock()
	defer s.firstMu.Unlock()
	l := s.first
	s.first = nil
	return l
}

func (s *Store) client() (transport.Transport, *transport.Endpoint, error) {
	ep, err := transport.NewEndpoint(s.url)
	if err != nil {
		return nil, nil, errs.Wrap(s.scrub(err), errs.USAGE, "the receipts remote %s is not a valid git URL", s.safeURL)
	}
	if s.http != nil && (ep.Protocol == "http" || ep.Protocol == "https") {
		return s.http, ep, nil
	}
	c, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, errs.Wrap(s.scrub(err), errs.USAGE, "the receipts remote %s uses an unsupported scheme", s.safeURL)
	}
	return c, ep, nil
}

// Capabilities implements receipt.Store: leases and fenced writes by
// compare-and-swap pushes; atomic multi-ref writes when the remote
// advertises atomic pushes; history from the branches' commits.
func (s *Store) Capabilities() receipt.Capabilities {
	return receipt.Capabilities{Locking: true, FencedWrites: true, AtomicMulti: s.atomicPush, History: true}
}

// RoundTrips is the number of network round trips the store has made: each
// ref advertisement, each packfile request and each push request counts
// one. For tests and benchmarks.
func (s *Store) RoundTrips() int64 { return s.roundTrips.Load() }

// BytesFetched is the number of packfile bytes the store has received
// (side-band framing included). For tests and benchmarks.
func (s *Store) BytesFetched() int64 { return s.fetched.Load() }

// URL is the remote's URL without credentials.
func (s *Store) URL() string { return s.safeURL }

func (s *Store) tip(ref plumbing.ReferenceName) (plumbing.Hash, bool) {
	s.tipsMu.Lock()
	defer s.tipsMu.Unlock()
	h, ok := s.tips[ref]
	return h, ok
}

// remember records ref's tip as this store last saw it; the zero hash
// records that ref did not exist (read, or deleted by this store), so a
// write that creates it starts without a read too.
func (s *Store) remember(ref plumbing.ReferenceName, h plumbing.Hash) {
	s.tipsMu.Lock()
	defer s.tipsMu.Unlock()
	s.tips[ref] = h
}

// jitter is a full-jitter exponential backoff: uniform in [0, min(max,
// base·2^attempt)).
func (s *Store) jitter(attempt int) time.Duration {
	ceiling := backoffMax
	if attempt < 20 {
		if d := backoffBase << attempt; d < ceiling {
			ceiling = d
		}
	}
	s.randMu.Lock()
	defer s.randMu.Unlock()
	return time.Duration(s.rand.Int64N(int64(ceiling)))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// stripUserinfo removes credentials from a URL string, for messages about a
// URL that did not parse well enough to be used.
func stripUserinfo(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			return raw[:i+3] + rest[at+1:]
		}
	}
	return raw
}
