package gitstore

import (
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
)

// objectCache is the store's memory of git objects, shared by all its
// operations. Objects are immutable and named by their hash, so sharing them
// is always safe; a read whose tips are all cached needs no packfile (one
// round trip instead of two), and a holder's next write starts from the
// commit it just pushed. When the cache passes its byte budget it is
// emptied: objects can always be fetched again, and every operation keeps
// its own objects in its opStorage for as long as it runs.
type objectCache struct {
	mu    sync.RWMutex
	objs  map[plumbing.Hash]plumbing.EncodedObject
	size  int64
	limit int64
}

func newObjectCache(limit int64) *objectCache {
	return &objectCache{objs: map[plumbing.Hash]plumbing.EncodedObject{}, limit: limit}
}

func (c *objectCache) get(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.objs[h]
	return o, ok
}

func (c *objectCache) put(o plumbing.EncodedObject) {
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

// opStorage is the go-git storage of one operation: its own references,
// shallow list and configuration (so concurrent operations never see each
// other's), and objects in two layers — the operation's own, then the
// store's shared cache (nil for pushes, so go-git's walk of the remote's
// tips finds only the objects this push is about).
type opStorage struct {
	mu     sync.RWMutex
	local  map[plumbing.Hash]plumbing.EncodedObject
	shared *objectCache

	memory.ConfigStorage
	memory.ShallowStorage
	memory.IndexStorage
	memory.ReferenceStorage
	memory.ModuleStorage
}

var _ storage.Storer = (*opStorage)(nil)

func newOpStorage(shared *objectCache) *opStorage {
	return &opStorage{
		local:            map[plumbing.Hash]plumbing.EncodedObject{},
		shared:           shared,
		ReferenceStorage: memory.ReferenceStorage{},
		ModuleStorage:    memory.ModuleStorage{},
	}
}

// NewEncodedObject implements storer.EncodedObjectStorer.
func (s *opStorage) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// SetEncodedObject implements storer.EncodedObjectStorer: the object goes
// to the operation and to the shared cache.
func (s *opStorage) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
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
		s.shared.put(o)
	}
	return h, nil
}

func (s *opStorage) lookup(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	s.mu.RLock()
	o, ok := s.local[h]
	s.mu.RUnlock()
	if ok {
		return o, true
	}
	if s.shared != nil {
		if o, ok := s.shared.get(h); ok {
			s.mu.Lock()
			s.local[h] = o // keep it for the rest of the operation
			s.mu.Unlock()
			return o, true
		}
	}
	return nil, false
}

// EncodedObject implements storer.EncodedObjectStorer.
func (s *opStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, ok := s.lookup(h)
	if !ok || (t != plumbing.AnyObject && o.Type() != t) {
		return nil, plumbing.ErrObjectNotFound
	}
	return o, nil
}

// IterEncodedObjects implements storer.EncodedObjectStorer over the
// operation's own objects.
func (s *opStorage) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
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
func (s *opStorage) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := s.lookup(h); !ok {
		return plumbing.ErrObjectNotFound
	}
	return nil
}

// EncodedObjectSize implements storer.EncodedObjectStorer.
func (s *opStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	o, ok := s.lookup(h)
	if !ok {
		return 0, plumbing.ErrObjectNotFound
	}
	return o.Size(), nil
}

// AddAlternate implements storer.EncodedObjectStorer; alternates are not
// supported.
func (s *opStorage) AddAlternate(string) error { return nil }

// has reports whether h is available without a fetch.
func (s *opStorage) has(h plumbing.Hash) bool {
	_, ok := s.lookup(h)
	return ok
}
