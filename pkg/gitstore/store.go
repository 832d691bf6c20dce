package gitstore

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sponson/apply/pkg/gitstore/internal/gitwire"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
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
	msg     messages // codes and scrubs every error

	clock  clock.Clock
	budget time.Duration
	// sleep waits between compare-and-swap attempts: Options.Sleep, else
	// a real timer that ctx interrupts (clock.System's Sleep).
	sleep func(ctx context.Context, d time.Duration) error
	retry clock.Backoff // the full-jitter backoff between attempts

	objects *gitwire.Cache
	wire    *gitwire.Remote // fetches, pushes, the ref listings

	// The parts of the store, each over the wire and the fields above.
	cas      *writer
	leases   *leaseKeeper
	receipts *receiptReader
	sessions *sessionReader
	pruner   *pruner
	tips     tipMemory // last tip seen or written, a hint only
	sign     signer

	maxDepth int
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
	u, err := parseRemote(opts.URL)
	if err != nil {
		return nil, err
	}
	s := defaults(opts)
	// Credentials: Token, else Auth, else the URL's userinfo; the URL go-git
	// sees never carries them.
	auth, secrets, err := credentials(u, opts.Token, opts.Auth)
	if err != nil {
		return nil, err
	}
	s.auth, s.msg.secrets = auth, append(s.msg.secrets, secrets...)
	s.url = u.String()
	s.safeURL = s.url
	if u.Scheme == "file" && u.Host != "" {
		return nil, errs.New(errs.USAGE, "the receipts remote %q names a host; a file:// URL is file:///absolute/path", s.safeURL)
	}
	s.wire, err = gitwire.Open(ctx, gitwire.Config{URL: s.url, Auth: s.auth,
		HTTPTimeout: cmp.Or(max(opts.HTTPTimeout, 0), DefaultHTTPTimeout),
		Objects:     s.objects, Files: storeFiles, BlobLimit: receipt.MaxBytes,
		Name: "receipts remote", Noun: "receipts", Code: s.msg.code, Scrub: s.msg.scrub})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// parseRemote is the remote's URL: file://, http:// or https://, else
// USAGE (a plain path above all: go-git walks the whole repository on every
// push to one).
func parseRemote(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return nil, errs.New(errs.USAGE, "the receipts remote %q is not a URL", stripUserinfo(raw)).
			WithHint("Give a file://, http:// or https:// URL.")
	}
	switch u.Scheme {
	case "file", "http", "https":
		return u, nil
	}
	return nil, errs.New(errs.USAGE, "the receipts remote %q is not a file://, http:// or https:// URL", stripUserinfo(raw)).
		WithHint("For a local repository use file:///absolute/path/repo.git, never a plain path: go-git walks the whole repository on every push to a plain path.")
}

// defaults is the store of opts before it knows its remote: the defaults
// for what opts leaves out.
func defaults(opts Options) *Store {
	s := &Store{
		clock:   clock.Or(opts.Clock),
		budget:  cmp.Or(max(opts.Budget, 0), DefaultBudget),
		sleep:   opts.Sleep,
		tips:    tipMemory{m: map[plumbing.ReferenceName]plumbing.Hash{}},
		objects: gitwire.NewCache(cmp.Or(max(opts.CacheBytes, 0), DefaultCacheBytes)),
		sign:    signer{keys: opts.Keys},
		msg:     messages{secrets: opts.Keys.Secrets()}, // never in a message, whatever happens
	}
	s.maxDepth = max(cmp.Or(max(opts.MaxDepth, 0), DefaultMaxDepth), minDepth)
	s.cas, s.leases, s.receipts, s.sessions, s.pruner = &writer{s}, &leaseKeeper{s}, &receiptReader{s}, &sessionReader{s}, &pruner{s}
	if s.sleep == nil {
		s.sleep = clock.System{}.Sleep
	}
	s.retry = clock.Backoff{Base: 2 * backoffBase, Max: backoffMax, Rand: lockedRand(opts.Rand)}
	return s
}

// credentials are the auth go-git is given and the secrets scrubbed from
// every message: token, else auth, else the userinfo of u (which is
// removed from u). USAGE for both a token and an auth method.
func credentials(u *url.URL, token string, auth transport.AuthMethod) (transport.AuthMethod, []string, error) {
	if token != "" && auth != nil {
		return nil, nil, errs.New(errs.USAGE, "give the git store a token or an auth method, not both")
	}
	var secrets []string
	if u.User != nil {
		user := u.User.Username()
		pass, _ := u.User.Password()
		secrets = append(secrets, pass)
		if pass == "" {
			secrets = append(secrets, user) // a bare token as user name
		}
		if token == "" && auth == nil {
			if pass == "" {
				token = user
			} else {
				auth = &githttp.BasicAuth{Username: user, Password: pass}
			}
		}
		u.User = nil
	}
	switch {
	case token != "":
		return &githttp.BasicAuth{Username: TokenUser, Password: token}, append(secrets, token), nil
	case auth != nil:
		switch a := auth.(type) {
		case *githttp.BasicAuth:
			secrets = append(secrets, a.Password)
		case *githttp.TokenAuth:
			secrets = append(secrets, a.Token)
		}
	}
	return auth, secrets, nil
}

// Capabilities implements receipt.Store: leases and fenced writes by
// compare-and-swap pushes; atomic multi-ref writes when the remote
// advertises atomic pushes; history from the branches' commits.
func (s *Store) Capabilities() receipt.Capabilities {
	return receipt.Capabilities{Locking: true, FencedWrites: true, AtomicMulti: s.wire.Atomic(), History: true}
}

// URL is the remote's URL without credentials.
func (s *Store) URL() string { return s.safeURL }

// tipMemory is the tip of each ref as the store last saw or wrote it.
type tipMemory struct {
	mu sync.Mutex
	m  map[plumbing.ReferenceName]plumbing.Hash
}

func (t *tipMemory) tip(ref plumbing.ReferenceName) (plumbing.Hash, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.m[ref]
	return h, ok
}

// remember records ref's tip as this store last saw it; the zero hash
// records that ref did not exist (read, or deleted by this store), so a
// write that creates it starts without a read too.
func (t *tipMemory) remember(ref plumbing.ReferenceName, h plumbing.Hash) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[ref] = h
}

// lockedRand draws the backoff's jitter from r (nil: a generator seeded
// from crypto/rand), one draw at a time.
func lockedRand(r *rand.Rand) func(n int64) int64 {
	if r == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		r = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	var mu sync.Mutex
	return func(n int64) int64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Int64N(n)
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
