package adapter

import (
	"fmt"
	"regexp"
)

// When an output becomes known.
const (
	Immediate = "immediate" // returned by Read or Apply
	External  = "external"  // arrives with an outside event (a deployment)
)

// Parameter and setting types, as the plan file writes them.
const (
	TypeString = "string"
	TypeBool   = "bool"
	TypeInt    = "integer"
	TypeNumber = "number"
	TypeMap    = "map"    // a map of names to values (values: NAME → value)
	TypeObject = "object" // a map with the keys Fields names
	TypeList   = "list"
	TypeAny    = "any"
)

// OutputSpec declares one output of an op.
type OutputSpec struct {
	Name      string `json:"name"`
	When      string `json:"when"`            // Immediate or External
	Event     string `json:"event,omitempty"` // for External: the event's name, e.g. "deploy"
	Sensitive bool   `json:"sensitive,omitempty"`
	// Once: the provider answers it only to the create (a new password),
	// so Read cannot return it. A later run's line that uses it keeps what
	// it wrote then (the reference resolves to a Keep marker) instead of
	// waiting for a value that will not come; apply --recreate makes a new
	// one.
	Once bool   `json:"once,omitempty"`
	Doc  string `json:"doc,omitempty"`
}

// ParamSpec declares one parameter of an op, or one setting of its provider
// block. The op's parser reads exactly the parameters its Spec declares (it
// refuses any other with PARAM_INVALID), so the documentation and the JSON
// schema, both generated from Specs, say what the op accepts.
type ParamSpec struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // one of the Type* constants
	Required bool   `json:"required,omitempty"`
	// Default is the default in words, as the documentation shows it
	// ("callbacks", "sponson/${ctx.env}/${ctx.scope}").
	Default string   `json:"default,omitempty"`
	Enum    []string `json:"enum,omitempty"`
	// CreateOnly: a change replaces the resource (or is refused).
	CreateOnly bool `json:"create_only,omitempty"`
	// Identity: the value names the object (a path or a key): it must be
	// known before the run, so {from} and {secret} are refused.
	Identity bool   `json:"identity,omitempty"`
	Doc      string `json:"doc"`
	// Fields are the keys of a TypeObject parameter.
	Fields []ParamSpec `json:"fields,omitempty"`
}

// Spec declares one op: everything a user, the documentation, the JSON
// schema and the engine need to know about it without calling a provider.
// Each op owns its Spec (op.Spec()); the catalogue, docs/adapters.md and the
// schema's op parameters are derived from the registry.
type Spec struct {
	Adapter string       `json:"adapter"`
	Op      string       `json:"op"`
	Summary string       `json:"summary"`
	Params  []ParamSpec  `json:"params,omitempty"`
	Outputs []OutputSpec `json:"outputs"`
	// Key is the ledger key's form (env:<target>:<branch>:<NAME>).
	Key string `json:"key,omitempty"`
	// ListItem: the op writes an entry in a list on a shared provider
	// object (LockOn); Lock is the parent identity's form.
	ListItem bool   `json:"list_item,omitempty"`
	Lock     string `json:"lock,omitempty"`
	// Manual: a step a person does; never written to a provider, never
	// rolled back, confirmed with apply --confirm.
	Manual bool `json:"manual,omitempty"`
	// Provider lists the settings of the providers.<adapter> block.
	Provider []ParamSpec `json:"provider,omitempty"`
	// Credentials are the environment variables holding the credential,
	// checked present before any I/O; empty when the op needs none or names
	// them in its provider block (http: auth.bearer_env).
	Credentials []string `json:"credentials,omitempty"`
	// BaseURLVar overrides the provider's base URL (tests and the demo
	// point it at the fake cloud); BaseURL is the default.
	BaseURLVar string `json:"base_url_var,omitempty"`
	BaseURL    string `json:"base_url,omitempty"`
	// API names the provider's API and the version of it the op speaks
	// ("Vercel REST API: /v10/projects/{id}/env, ..."); empty only for ops
	// that call no provider.
	API string `json:"api,omitempty"`
	// Unmanaged says what plan reports as unmanaged drift for a line of the
	// op (ScopeLister): what it lists, and so what it never reports. ""
	// when the op does not list.
	Unmanaged string `json:"unmanaged,omitempty"`
	// Mark says what, at the provider, marks a resource as its scope's,
	// which destroy checks before it deletes one (Marked), and what the
	// mark cannot tell. "" when the op's resources carry none.
	Mark string `json:"mark,omitempty"`
	// Sources are the provider documentation pages the op follows.
	Sources []string `json:"sources,omitempty"`
	// Recipes are the named expansions an Expander offers (http.recipe).
	Recipes []Recipe `json:"recipes,omitempty"`
}

// Recipe declares one expansion of an Expander: a provider's object or
// list entry written through the generic op, with typed parameters.
type Recipe struct {
	Name        string       `json:"name"` // <provider>.<op>
	Summary     string       `json:"summary"`
	Expands     string       `json:"expands"` // the op it becomes: resource, list_item
	Params      []ParamSpec  `json:"params"`
	Outputs     []OutputSpec `json:"outputs"`
	Key         string       `json:"key"`
	Lock        string       `json:"lock,omitempty"`
	Credentials []string     `json:"credentials,omitempty"`
	BaseURLVar  string       `json:"base_url_var,omitempty"`
	BaseURL     string       `json:"base_url,omitempty"`
	API         string       `json:"api,omitempty"` // as Spec.API
	Sources     []string     `json:"sources"`
}

// Name is "adapter.op".
func (s Spec) Name() string { return s.Adapter + "." + s.Op }

// Model is "list" (an entry on a shared parent object), "manual" (a step a
// person does) or "object" (one provider object per resource).
func (s Spec) Model() string {
	switch {
	case s.ListItem:
		return "list"
	case s.Manual:
		return "manual"
	}
	return "object"
}

// ParamNames lists the names of the declared parameters, in order.
func (s Spec) ParamNames() []string {
	out := make([]string, len(s.Params))
	for i, p := range s.Params {
		out[i] = p.Name
	}
	return out
}

// Param returns the declared parameter name.
func (s Spec) Param(name string) (ParamSpec, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return ParamSpec{}, false
}

var (
	specName   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	envVarName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	reserved   = map[string]bool{"id": true, "adapter": true, "op": true, "environments": true, "depends_on": true}
)

// Check reports what is wrong with a Spec: every op's Spec is checked when
// it is registered, so a malformed one fails the first test that builds a
// registry.
func (s Spec) Check() error {
	if !specName.MatchString(s.Adapter) || !specName.MatchString(s.Op) {
		return fmt.Errorf("spec %q: adapter and op must match %s", s.Name(), specName)
	}
	if s.Summary == "" {
		return fmt.Errorf("spec %s: no summary", s.Name())
	}
	if s.ListItem && s.Manual {
		return fmt.Errorf("spec %s: both a list entry and a manual step", s.Name())
	}
	if s.ListItem != (s.Lock != "") {
		return fmt.Errorf("spec %s: a list op names its lock, and only a list op does", s.Name())
	}
	if err := checkParams(s.Name(), "parameter", s.Params, true); err != nil {
		return err
	}
	if err := checkParams(s.Name(), "provider setting", s.Provider, false); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, o := range s.Outputs {
		if !specName.MatchString(o.Name) || seen[o.Name] {
			return fmt.Errorf("spec %s: output %q is malformed or declared twice", s.Name(), o.Name)
		}
		seen[o.Name] = true
		switch {
		case o.When == Immediate && o.Event == "":
		case o.When == External && o.Event != "":
		default:
			return fmt.Errorf("spec %s: output %s: when %q with event %q", s.Name(), o.Name, o.When, o.Event)
		}
	}
	for _, v := range append(append([]string{}, s.Credentials...), s.BaseURLVar) {
		if v != "" && !envVarName.MatchString(v) {
			return fmt.Errorf("spec %s: %q is not an environment variable name", s.Name(), v)
		}
	}
	return nil
}

func checkParams(op, what string, ps []ParamSpec, top bool) error {
	seen := map[string]bool{}
	for _, p := range ps {
		if p.Name == "" || seen[p.Name] || (top && reserved[p.Name]) {
			return fmt.Errorf("spec %s: %s %q is empty, reserved or declared twice", op, what, p.Name)
		}
		seen[p.Name] = true
		switch p.Type {
		case TypeString, TypeBool, TypeInt, TypeNumber, TypeMap, TypeList, TypeAny:
			if len(p.Fields) > 0 {
				return fmt.Errorf("spec %s: %s %s: fields on a %s", op, what, p.Name, p.Type)
			}
		case TypeObject:
			if err := checkParams(op, what+" "+p.Name, p.Fields, false); err != nil {
				return err
			}
		default:
			return fmt.Errorf("spec %s: %s %s: type %q", op, what, p.Name, p.Type)
		}
		if p.Doc == "" {
			return fmt.Errorf("spec %s: %s %s: no doc", op, what, p.Name)
		}
	}
	return nil
}
