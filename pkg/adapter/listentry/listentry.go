// Package listentry is the one read-modify-write of an entry in a list on a
// shared provider object (the callbacks of an Auth0 application, Supabase's
// redirect allow-list, a generic API's collection). Every list op
// (Spec.ListItem) implements Parent for its provider and lets this package
// run Read, Diff, Apply, Lookup and Destroy, so the rules below hold for all
// of them the same way.
//
// Invariants:
//   - One Load per call: Read, Apply, Lookup and Destroy each read the
//     parent once (Apply reads again itself, under the engine's parent
//     lease, rather than trust a Live read before the lease was taken).
//   - An entry the list holds, with the value the line wants, is never
//     written: an unchanged Apply and a Destroy of an absent entry send
//     nothing.
//   - Apply calls intend with the entry's key before the Put that adds it;
//     when intend fails nothing is sent. Changing the value of an entry
//     that exists (a map entry) is an update, not a create: no intent.
//   - The lists' other entries are the Parent's to keep: Put and Remove
//     write the list as Load found it, changed in the one entry.
//   - There is no precondition at the provider, so correctness under
//     concurrency comes from the engine's parent lease (LockOn) held
//     around every Apply and Destroy; this package takes no lock.
//
// Requests: Read goes through the run's adapter.ReadCache when the engine
// hands one (lines that share a parent read it once per run); Apply,
// Lookup and Destroy always Load themselves.
package listentry

import (
	"context"
	"fmt"
	"maps"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

// List is the list of one parent object as one Load found it.
type List interface {
	// Has reports whether the list holds item and, for lists whose entries
	// carry a value (a map of item → value), its value.
	Has(item string) (present bool, value any)
}

// Writable is a List that can tell, before anything is sent, that it
// cannot be written (the parent object does not exist): Apply returns that
// error before it calls intend.
type Writable interface {
	Writable() error
}

// Valued is a List that knows whether its entries carry values (a list
// whose shape is read from the provider, not declared by a line): Lookup
// then takes the list's word over Entry.Valued.
type Valued interface {
	Valued() bool
}

// Parent is the shared provider object that holds a list, reached for one
// line or one ledger entry.
type Parent interface {
	// Load reads the list whole. A parent with no list yet is an empty
	// List; errors are coded PROVIDER_*. Never writes.
	Load(ctx context.Context) (List, error)
	// Put writes l back with item set to value (added when absent, at the
	// end). value is nil for lists of plain entries.
	Put(ctx context.Context, l List, item string, value any) error
	// Remove writes l back without item (every occurrence). Called only
	// when l holds item.
	Remove(ctx context.Context, l List, item string) error
}

// Entry is the entry one line declares.
type Entry struct {
	// Op names the op, for messages (http.list_item).
	Op string
	// Key is the ledger key.
	Key string
	// Item is the entry as the list holds it.
	Item string
	// Valued says the list's entries carry a value (a map): the canonical
	// value is then {item: value} and a different value is an update.
	// Value is the value the line wants: concrete, or a Keep marker.
	Valued bool
	Value  any
	// Field is the path a create's FieldDiff names (the list's name).
	Field string
	// Outputs are the entry's outputs (url: ...), known from the line.
	Outputs map[string]any
}

func (e Entry) canonical(v any) any {
	if e.Valued {
		return map[string]any{e.Item: v}
	}
	return e.Item
}

func (e Entry) outputs() map[string]any {
	if e.Outputs == nil {
		return map[string]any{}
	}
	return maps.Clone(e.Outputs)
}

// Resource is the resource of an entry the list holds with value v.
func (e Entry) Resource(v any) adapter.Resource {
	return adapter.Resource{Key: e.Key, Value: e.canonical(v), Outputs: e.outputs()}
}

// Read returns the entry when the list holds it, with the entry's outputs.
// When ctx carries the run's adapter.ReadCache, lines whose Parent is the
// same (the same object, list and shape) share one Load per run.
func Read(ctx context.Context, p Parent, e Entry) (*adapter.Live, error) {
	l, err := sharedLoad(ctx, p, e)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if ok, v := l.Has(e.Item); ok {
		live.Resources = append(live.Resources, e.Resource(v))
		live.Outputs = e.outputs()
	}
	return live, nil
}

// ReadKeyer is a Parent that says what its Load reads, for a Parent value
// that also holds what only its writes need (ReadKey leaves that out).
// Without it, a Parent's whole value is what it reads.
type ReadKeyer interface {
	ReadKey() string
}

// sharedLoad is p.Load through the run's read cache, if ctx carries one.
// Two lines share a Load only when their Parents read the same thing: the
// same object, list, shape and credentials (the Parent's whole value, or
// its ReadKey).
func sharedLoad(ctx context.Context, p Parent, e Entry) (List, error) {
	c, identity := adapter.ReadCacheFrom(ctx)
	if c == nil {
		return p.Load(ctx)
	}
	what := fmt.Sprintf("%T %#v", p, p)
	if k, ok := p.(ReadKeyer); ok {
		what = fmt.Sprintf("%T %s", p, k.ReadKey())
	}
	v, err := c.Load(identity, what+" "+e.Field, func() (any, error) { return p.Load(ctx) })
	if err != nil {
		return nil, err
	}
	l, _ := v.(List)
	return l, nil
}

// Diff is create when live lacks the entry; for a valued entry, update when
// its value differs (a Keep value is the live one); unchanged otherwise.
// Pure.
func Diff(live *adapter.Live, e Entry) adapter.ResourceDiff {
	d := adapter.ResourceDiff{Key: e.Key}
	lr := live.Resource(e.Key)
	want := e.Value
	if m, ok := adapter.MarkerOf(want); ok && m.Kind == adapter.Keep && lr != nil && e.Valued {
		if cur, ok := lr.Value.(map[string]any); ok {
			want = cur[e.Item]
		}
	}
	if !e.Valued || !adapter.HasMarker(want) {
		d.Desired = e.canonical(want)
	}
	switch {
	case lr == nil:
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: e.Field, After: e.Item}}
	case e.Valued && (d.Desired == nil || !adapter.Equal(d.Desired, lr.Value)):
		d.Action = adapter.Update
		d.Fields = []adapter.FieldDiff{{Path: e.Field + "/" + e.Item}}
	default:
		d.Action = adapter.Unchanged
		d.Desired = lr.Value
	}
	return d
}

// Apply makes the list hold the entry: it loads the list, and when the
// entry is missing declares its key (intend) and Puts it; when a valued
// entry's value differs it Puts the new value; otherwise it writes
// nothing. A Keep value keeps the live value (PARAM_INVALID naming the
// value parameter when the entry does not exist to keep).
func Apply(ctx context.Context, p Parent, e Entry, intend adapter.Intend) (*adapter.Result, error) {
	l, err := p.Load(ctx)
	if err != nil {
		return nil, err
	}
	if w, ok := l.(Writable); ok {
		if err := w.Writable(); err != nil {
			return nil, err
		}
	}
	present, cur := l.Has(e.Item)
	v := e.Value
	if m, ok := adapter.MarkerOf(v); ok && m.Kind == adapter.Keep {
		if !present {
			return nil, errs.New(errs.PARAM_INVALID, "%s parameter value is {keep: true}, but the entry %s does not exist to keep", e.Op, e.Item).With("param", "value")
		}
		v = cur
	}
	if !e.Valued {
		v = nil
	}
	var created []string
	switch {
	case !present:
		if err := intend(e.Key); err != nil {
			return nil, err
		}
		if err := p.Put(ctx, l, e.Item, v); err != nil {
			return nil, err
		}
		created = []string{e.Key}
	case e.Valued && !adapter.Equal(cur, v):
		if err := p.Put(ctx, l, e.Item, v); err != nil {
			return nil, err
		}
	default:
		v = cur
	}
	return &adapter.Result{Resources: []adapter.Resource{e.Resource(v)}, Created: created, Outputs: e.outputs()}, nil
}

// Lookup returns the entry's resource when the list holds it, else nil.
func Lookup(ctx context.Context, p Parent, e Entry) (*adapter.Resource, error) {
	l, err := p.Load(ctx)
	if err != nil {
		return nil, err
	}
	ok, v := l.Has(e.Item)
	if !ok {
		return nil, nil
	}
	if vl, isV := l.(Valued); isV {
		e.Valued = vl.Valued()
	}
	r := e.Resource(v)
	return &r, nil
}

// Destroy removes item from the list; absent is success and writes
// nothing.
func Destroy(ctx context.Context, p Parent, item string) error {
	l, err := p.Load(ctx)
	if err != nil {
		return err
	}
	if ok, _ := l.Has(item); !ok {
		return nil
	}
	return p.Remove(ctx, l, item)
}

// Strings is a List of plain string entries (an array of URLs, a
// comma-separated string once split).
type Strings []string

// Has reports whether the list holds item.
func (s Strings) Has(item string) (bool, any) {
	for _, x := range s {
		if x == item {
			return true, nil
		}
	}
	return false, nil
}

// With is the list with item appended.
func (s Strings) With(item string) []string { return append(append([]string{}, s...), item) }

// Without is the list without any occurrence of item.
func (s Strings) Without(item string) []string {
	out := make([]string, 0, len(s))
	for _, x := range s {
		if x != item {
			out = append(out, x)
		}
	}
	return out
}

// Items names the entries of a list, in its order.
func (s Strings) Items() []string { return append([]string(nil), s...) }

// Enumerable is a List that can name its entries: what ListScope needs.
type Enumerable interface {
	Items() []string
}

// ListScope is a list op's adapter.ScopeLister: the entries of the list
// that are e in another scope (adapter.OtherScope of e.Item in the run's
// scope), each as the resource the line would declare there (at(item)
// gives its Entry: key and outputs), and e itself when the list holds it.
// The engine reports those no scope's ledger holds as unmanaged drift; the
// rest of a shared list is not the line's business and is never listed.
// It reads the list once, through the run's read cache like Read. A List
// that cannot name its entries lists e alone.
func ListScope(ctx context.Context, p Parent, e Entry, scope string, at func(item string) Entry) ([]adapter.Resource, error) {
	l, err := sharedLoad(ctx, p, e)
	if err != nil {
		return nil, err
	}
	var out []adapter.Resource
	if ok, v := l.Has(e.Item); ok {
		out = append(out, e.Resource(v))
	}
	en, ok := l.(Enumerable)
	if !ok {
		return out, nil
	}
	seen := map[string]bool{e.Item: true}
	for _, item := range en.Items() {
		if seen[item] || adapter.OtherScope(e.Item, scope, item) == "" {
			continue
		}
		seen[item] = true
		_, v := l.Has(item)
		out = append(out, at(item).Resource(v))
	}
	return out, nil
}
