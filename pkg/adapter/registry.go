package adapter

import (
	"fmt"
	"sort"
)

// Registry holds the ops that can run. It is the one list of ops: the
// catalogue plans are checked against, docs/adapters.md and the JSON
// schema's op parameters are all derived from it, so adding an op is adding
// it to a registry.
type Registry struct {
	ops map[string]map[string]Op
}

// NewRegistry returns a registry of ops; a later op of the same name
// replaces an earlier one. It panics on an op whose Spec fails Check: a
// malformed Spec is a programming error that the first test building the
// registry must catch.
func NewRegistry(ops ...Op) *Registry {
	r := &Registry{ops: map[string]map[string]Op{}}
	for _, op := range ops {
		r.Register(op)
	}
	return r
}

// Register adds an op (see NewRegistry).
func (r *Registry) Register(op Op) {
	s := op.Spec()
	if err := s.Check(); err != nil {
		panic(fmt.Sprintf("adapter: registering %T: %v", op, err))
	}
	if r.ops[s.Adapter] == nil {
		r.ops[s.Adapter] = map[string]Op{}
	}
	r.ops[s.Adapter][s.Op] = op
}

// Lookup returns the op adapter.op.
func (r *Registry) Lookup(adapter, op string) (Op, bool) {
	o, ok := r.ops[adapter][op]
	return o, ok
}

// Ops lists the registered ops, sorted by name.
func (r *Registry) Ops() []Op {
	var out []Op
	for _, ops := range r.ops {
		for _, o := range ops {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name() < out[j].Spec().Name() })
	return out
}

// Specs lists the Specs of the registered ops, sorted by name.
func (r *Registry) Specs() []Spec {
	ops := r.Ops()
	out := make([]Spec, len(ops))
	for i, o := range ops {
		out[i] = o.Spec()
	}
	return out
}

// Catalog is the catalogue of the registered ops.
func (r *Registry) Catalog() *Catalog { return NewCatalog(r.Specs()...) }
