package adapter

import (
	"sort"
)

// When an output becomes known.
const (
	Immediate = "immediate" // returned by Read or Apply
	External  = "external"  // arrives with an outside event (a deployment)
)

// OutputSpec declares one output of an op.
type OutputSpec struct {
	Name      string `json:"name"`
	When      string `json:"when"`            // Immediate or External
	Event     string `json:"event,omitempty"` // for External: the event's name, e.g. "deploy"
	Sensitive bool   `json:"sensitive,omitempty"`
}

// Spec declares one op: its name, its outputs and, for ops that write an
// entry in a list on a shared provider object, that it needs a parent lock.
type Spec struct {
	Adapter  string       `json:"adapter"`
	Op       string       `json:"op"`
	Summary  string       `json:"summary"`
	Outputs  []OutputSpec `json:"outputs"`
	ListItem bool         `json:"list_item,omitempty"` // an entry on a shared parent object (LockOn)
}

// Name is "adapter.op".
func (s Spec) Name() string { return s.Adapter + "." + s.Op }

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

// Builtin is the catalogue of the built-in ops (design: adapters-and-sim.md,
// "Built-in adapters").
func Builtin() *Catalog {
	return NewCatalog(
		Spec{Adapter: "vercel", Op: "env", Summary: "environment variables of a Vercel project, per target and git branch",
			Outputs: []OutputSpec{
				{Name: "preview_url", When: External, Event: "deploy"},
				{Name: "deployment_id", When: External, Event: "deploy"},
			}},
		Spec{Adapter: "neon", Op: "branch", Summary: "a Neon database branch",
			Outputs: []OutputSpec{
				{Name: "branch_id", When: Immediate},
				{Name: "host", When: Immediate},
				{Name: "connection_string", When: Immediate, Sensitive: true},
			}},
		Spec{Adapter: "supabase", Op: "auth_redirect", Summary: "an entry in a Supabase project's auth redirect allow-list", ListItem: true,
			Outputs: []OutputSpec{{Name: "url", When: Immediate}}},
		Spec{Adapter: "auth0", Op: "callback", Summary: "a URL in a list of an Auth0 application (callbacks, logout URLs, web origins)", ListItem: true,
			Outputs: []OutputSpec{{Name: "url", When: Immediate}}},
		Spec{Adapter: "http", Op: "resource", Summary: "a generic REST object",
			Outputs: []OutputSpec{{Name: "id", When: Immediate}}},
		Spec{Adapter: "http", Op: "list_item", Summary: "a generic entry in a collection on a parent object", ListItem: true},
	)
}
