package adapter

import "sort"

// Registry holds the ops that can run. It also answers as a plan.Catalog
// for the ops it holds.
type Registry struct {
	ops map[string]map[string]Op
}

// NewRegistry returns a registry of ops; a later op of the same name
// replaces an earlier one.
func NewRegistry(ops ...Op) *Registry {
	r := &Registry{ops: map[string]map[string]Op{}}
	for _, op := range ops {
		r.Register(op)
	}
	return r
}

// Register adds an op.
func (r *Registry) Register(op Op) {
	s := op.Spec()
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

// Catalog is the catalogue of the registered ops.
func (r *Registry) Catalog() *Catalog {
	var specs []Spec
	for _, ops := range r.ops {
		for _, o := range ops {
			specs = append(specs, o.Spec())
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name() < specs[j].Name() })
	return NewCatalog(specs...)
}
