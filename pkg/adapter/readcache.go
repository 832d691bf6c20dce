package adapter

import (
	"context"
	"sync"
)

// ReadCache remembers, for one run, what the lines that share a parent
// object read of it (listentry.Read: the callback list of one Auth0
// application read once, not once per callback line). The engine makes
// one per run, hands it to each inspection together with the line's
// parent identity (WithReadCache), and drops an identity's reads before it
// re-inspects a line under that parent's lease and after every write of
// it: what is decided under a lease, and what follows a write, is always
// read fresh. Loads of one key run once, concurrent callers wait for it;
// a failed load is not remembered. Safe for concurrent use.
type ReadCache struct {
	mu sync.Mutex
	m  map[string]map[string]*cached // identity → what was read → its load
}

type cached struct {
	once sync.Once
	v    any
	err  error
}

// NewReadCache returns an empty cache.
func NewReadCache() *ReadCache { return &ReadCache{m: map[string]map[string]*cached{}} }

// Load returns what load returned for (identity, what) earlier in the run,
// or calls it. what tells apart different reads of one object (another
// list on it, another shape).
func (c *ReadCache) Load(identity, what string, load func() (any, error)) (any, error) {
	c.mu.Lock()
	byWhat := c.m[identity]
	if byWhat == nil {
		byWhat = map[string]*cached{}
		c.m[identity] = byWhat
	}
	e := byWhat[what]
	if e == nil {
		e = &cached{}
		byWhat[what] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.v, e.err = load() })
	if e.err != nil {
		c.mu.Lock()
		if c.m[identity][what] == e {
			delete(c.m[identity], what)
		}
		c.mu.Unlock()
	}
	return e.v, e.err
}

// Drop forgets every read of identity.
func (c *ReadCache) Drop(identity string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, identity)
}

type readCacheKey struct{}

type readCacheVal struct {
	c        *ReadCache
	identity string
}

// WithReadCache returns ctx carrying c for reads of the parent object
// identity (a LockOn identity).
func WithReadCache(ctx context.Context, c *ReadCache, identity string) context.Context {
	if c == nil || identity == "" {
		return ctx
	}
	return context.WithValue(ctx, readCacheKey{}, readCacheVal{c: c, identity: identity})
}

// ReadCacheFrom returns the cache and parent identity ctx carries, or nil.
func ReadCacheFrom(ctx context.Context) (*ReadCache, string) {
	v, _ := ctx.Value(readCacheKey{}).(readCacheVal)
	return v.c, v.identity
}
