package adapter

import (
	"slices"
	"sort"
	"strings"
)

// Catalog is a set of op specs. It satisfies plan.Catalog.
type Catalog struct {
	specs map[string]map[string]Spec
}

// NewCatalog builds a catalogue from specs; a later spec of the same name
// replaces an earlier one.
func NewCatalog(specs ...Spec) *Catalog {
	c := &Catalog{specs: map[string]map[string]Spec{}}
	for _, s := range specs {
		if c.specs[s.Adapter] == nil {
			c.specs[s.Adapter] = map[string]Spec{}
		}
		c.specs[s.Adapter][s.Op] = s
	}
	return c
}

// Adapters lists the adapters, sorted.
func (c *Catalog) Adapters() []string {
	out := make([]string, 0, len(c.specs))
	for a := range c.specs {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Ops lists an adapter's ops, sorted; nil when the adapter is unknown.
func (c *Catalog) Ops(adapter string) []string {
	ops, ok := c.specs[adapter]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(ops))
	for o := range ops {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// Outputs lists the output names of an op, in declaration order; nil when
// the op is unknown.
func (c *Catalog) Outputs(adapter, op string) []string {
	s, ok := c.Lookup(adapter, op)
	if !ok {
		return nil
	}
	out := make([]string, len(s.Outputs))
	for i, o := range s.Outputs {
		out[i] = o.Name
	}
	return out
}

// ProviderSettings lists the settings of adapter's providers: block, the
// union of its ops' Provider specs in declaration order (plan.Check
// refuses any other key); ok is false for an unknown adapter and for one
// whose block is keyed by the plan's own names (a "<name>" spec, as
// http's APIs).
func (c *Catalog) ProviderSettings(adapter string) (names []string, ok bool) {
	ops, found := c.specs[adapter]
	if !found {
		return nil, false
	}
	names = []string{}
	for _, o := range c.Ops(adapter) {
		for _, p := range ops[o].Provider {
			if strings.HasPrefix(p.Name, "<") {
				return nil, false
			}
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	return names, true
}

// Lookup returns the spec of adapter.op.
func (c *Catalog) Lookup(adapter, op string) (Spec, bool) {
	s, ok := c.specs[adapter][op]
	return s, ok
}

// Specs lists every spec, sorted by name.
func (c *Catalog) Specs() []Spec {
	var out []Spec
	for _, a := range c.Adapters() {
		for _, o := range c.Ops(a) {
			out = append(out, c.specs[a][o])
		}
	}
	return out
}
