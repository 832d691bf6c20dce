package gitwire

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Cache is the store's memory of git objects, shared by all its
// operations. Objects are immutable and named by their hash, so sharing them
// is always safe; a read whose tips are all cached needs no packfile (one
// round trip instead of two), and a holder's next write starts from the
// commit it just pushed. When the cache passes its byte budget it is
// emptied: objects can always be fetched again, and every operation keeps
// its own objects in its Storage for as long as it runs.
type Cache struct {
	mu    sync.RWMutex
	objs  map[plumbing.Hash]plumbing.EncodedObject
	size  int64
	limit int64
}

func NewCache(limit int64) *Cache {
	return &Cache{objs: map[plumbing.Hash]plumbing.EncodedObject{}, limit: limit}
}

func (c *Cache) Get(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.objs[h]
	return o, ok
}

func (c *Cache) Put(o plumbing.EncodedObject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := o.Hash()
	if _, ok := c.objs[h]; ok {
		return
	}
	if c.size+o.Size() > c.limit {
		c.objs = map[plumbing.Hash]plumbing.EncodedObject{}
		c.size = 0
	}
	c.objs[h] = o
	c.size += o.Size()
}

// Storage is the go-git storage of one operation: its own references,
// shallow list and configuration (so concurrent operations never see each
// other's), and objects in two layers — the operation's own, then the
// store's shared cache (nil for pushes, so go-git's walk of the remote's
// tips finds only the objects this push is about).
type Storage struct {
	mu     sync.RWMutex
	local  map[plumbing.Hash]plumbing.EncodedObject
	shared *Cache

	memory.ConfigStorage
	memory.ShallowStorage
	memory.IndexStorage
	memory.ReferenceStorage
	memory.ModuleStorage
}

var _ storage.Storer = (*Storage)(nil)

func NewStorage(shared *Cache) *Storage {
	return &Storage{
		local:            map[plumbing.Hash]plumbing.EncodedObject{},
		shared:           shared,
		ReferenceStorage: memory.ReferenceStorage{},
		ModuleStorage:    memory.ModuleStorage{},
	}
}

// NewEncodedObject implements storer.EncodedObjectStorer.
func (s *Storage) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject implements storer.EncodedObjectStorer: the object goes
// to the operation and to the shared cache.
func (s *Storage) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	switch o.Type() {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	default:
		return o.Hash(), memory.ErrUnsupportedObjectType
	}
	h := o.Hash()
	s.mu.Lock()
	s.local[h] = o
	s.mu.Unlock()
	if s.shared != nil {
		s.shared.Put(o)
	}
	return h, nil
}

func (s *Storage) lookup(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	s.mu.RLock()
	o, ok := s.local[h]
	s.mu.RUnlock()
	if ok {
		return o, true
	}
	if s.shared != nil {
		if o, ok := s.shared.Get(h); ok {
			s.mu.Lock()
			s.local[h] = o // keep it for the rest of the operation
			s.mu.Unlock()
			return o, true
		}
	}
	return nil, false
}

// EncodedObject implements storer.EncodedObjectStorer.
func (s *Storage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, ok := s.lookup(h)
	if !ok || (t != plumbing.AnyObject && o.Type() != t) {
		return nil, plumbing.ErrObjectNotFound
	}
	return o, nil
}

// IterEncodedObjects implements storer.EncodedObjectStorer over the
// operation's own objects.
func (s *Storage) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var series []plumbing.EncodedObject
	for _, o := range s.local {
		if t == plumbing.AnyObject || o.Type() == t {
			series = append(series, o)
		}
	}
	return storer.NewEncodedObjectSliceIter(series), nil
}

// HasEncodedObject implements storer.EncodedObjectStorer.
func (s *Storage) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := s.lookup(h); !ok {
		return plumbing.ErrObjectNotFound
	}
	return nil
}

// EncodedObjectSize implements storer.EncodedObjectStorer.
func (s *Storage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	o, ok := s.lookup(h)
	if !ok {
		return 0, plumbing.ErrObjectNotFound
	}
	return o.Size(), nil
}

// AddAlternate implements storer.EncodedObjectStorer; alternates are not
// supported.
func (s *Storage) AddAlternate(string) error { return nil }

// Has reports whether h is available without a fetch.
func (s *Storage) Has(h plumbing.Hash) bool {
	_, ok := s.lookup(h)
	return ok
}

// Local is the objects the operation itself added or used, for a caller
// that keeps them (a push that landed: its commits join the cache).
func (s *Storage) Local() []plumbing.EncodedObject {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]plumbing.EncodedObject, 0, len(s.local))
	for _, o := range s.local {
		out = append(out, o)
	}
	return out
}

// Count is the number of objects of type t in the cache, for tests and
// benchmarks.
func (c *Cache) Count(t plumbing.ObjectType) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, o := range c.objs {
		if o.Type() == t {
			n++
		}
	}
	return n
}
