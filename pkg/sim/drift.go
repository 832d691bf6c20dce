package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Drift actions.
const (
	DriftChange   = "change"   // change a field of a record, or replace a list
	DriftDelete   = "delete"   // delete a record
	DriftRecreate = "recreate" // delete a record and make an equal one with a new id
	DriftAdd      = "add"      // add a record, or an entry to a list
	DriftRemove   = "remove"   // remove an entry from a list
)

// Drift is an edit made behind Sponson's back, as a person in a provider's
// console would make it. It is not a request: it is not in the write log,
// and what it makes is marked OriginConsole.
//
// What each provider understands:
//
//	vercel:   Project (id or name); the variable by ID, or by Key (and
//	          Target and GitBranch when several share the key).
//	          change: Field "value" (default), "type" or "comment" := Value.
//	          delete, recreate (Value, when set, is the new value).
//	          add: a new variable Key=Value (Target default all three).
//	neon:     Project; the branch by ID (an id or a name).
//	          change: rename to Value. delete, recreate (same name, new id).
//	          add: a new branch named Value.
//	supabase: Project (ref). add/remove: entry Value of uri_allow_list.
//	          change: Field "uri_allow_list" (default) or "site_url" := Value.
//	auth0:    Project (client id); List (default "callbacks").
//	          add/remove: entry Value. change: the list := Value split on ",".
//	http:     Project (collection); ID. change: Field := Value (as JSON when
//	          it parses, else a string). delete, recreate (new id).
//	          add/remove: entry Value of the list in Field: an array, a
//	          comma-delimited string, or a map (Value "key=value"; remove
//	          by key).
//	clerk:        ID (a ru_ id) or Value (the URL). delete, recreate (same
//	              URL, new id); add: a new URL Value.
//	planetscale:  Project "org/database"; ID the branch name. delete,
//	              recreate (same name and parent, new id).
//	netlify:      Project (site id or name); Key the variable; Target the
//	              context (Value of context branch: GitBranch). change:
//	              the context's value := Value; delete: the variable.
//	cloudflare:   Project "account/project"; Target preview|production;
//	              Key the variable. change: a plain value := Value;
//	              delete.
//	launchdarkly: Project "project/flag"; Target the environment; Key the
//	              context key (kind user). remove: untarget it; add: target
//	              it on the variation whose index is Value ("0" default).
//	supabase_branch: Project (the parent ref); ID the branch name. delete,
//	              recreate (new id and ref).
type Drift struct {
	Provider  string `json:"provider"`
	Action    string `json:"action"`
	Project   string `json:"project,omitempty"`
	ID        string `json:"id,omitempty"`
	Key       string `json:"key,omitempty"`
	Target    string `json:"target,omitempty"`
	GitBranch string `json:"gitBranch,omitempty"`
	List      string `json:"list,omitempty"`
	Field     string `json:"field,omitempty"`
	Value     string `json:"value,omitempty"`
}

// Drift applies a console-style edit and returns the id of the record it
// touched or made (for list edits, the parent's id).
func (c *Cloud) Drift(d Drift) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.plugins {
		if a := p.api(); a.name == d.Provider || slices.Contains(a.drifts, d.Provider) {
			return p.drift(d)
		}
	}
	return "", fmt.Errorf("sim: drift: unknown provider %q", d.Provider)
}

func badAction(d Drift) error {
	return fmt.Errorf("sim: drift: %s does not support action %q", d.Provider, d.Action)
}

// editList adds or removes one entry of a list, keeping origins.
func editList(list []string, origins map[string]Origin, action, value string) ([]string, map[string]Origin, error) {
	switch action {
	case DriftAdd:
		if !slices.Contains(list, value) {
			list = append(list, value)
		}
		if origins == nil {
			origins = map[string]Origin{}
		}
		if _, ok := origins[value]; !ok {
			origins[value] = OriginConsole
		}
	case DriftRemove:
		list = slices.DeleteFunc(list, func(x string) bool { return x == value })
		delete(origins, value)
	default:
		return nil, nil, fmt.Errorf("not a list action")
	}
	return list, origins, nil
}

func editHTTPList(o *HTTPObject, d Drift) error {
	switch v := o.Fields[d.Field].(type) {
	case []any:
		var out []any
		found := false
		for _, x := range v {
			if scalarString(x) == d.Value {
				found = true
				if d.Action == DriftRemove {
					continue
				}
			}
			out = append(out, x)
		}
		if d.Action == DriftAdd && !found {
			out = append(out, d.Value)
		}
		if out == nil {
			out = []any{}
		}
		o.Fields[d.Field] = out
	case string:
		list, _, _ := editList(splitList(v), nil, d.Action, d.Value)
		o.Fields[d.Field] = strings.Join(list, ",")
	case map[string]any:
		k, val, _ := strings.Cut(d.Value, "=")
		if d.Action == DriftAdd {
			v[k] = val
		} else {
			delete(v, k)
		}
	case nil:
		if d.Action == DriftAdd {
			o.Fields[d.Field] = []any{d.Value}
		}
	default:
		return fmt.Errorf("sim: drift: http field %q is not a list (%s)", d.Field, mustJSON(v))
	}
	return nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
