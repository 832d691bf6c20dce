package optest

import (
	"context"
	"slices"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

// ItemOp is fake.item: one entry in a list on a shared parent object,
// written by read-modify-write of the whole list with no precondition (GET
// the list, latency, PUT the list back), as Auth0's callbacks are.
//
// Parameters:
//   - list (required string without ':'): the parent object's name;
//   - item (required string, may hold ':'): the entry;
//   - prefix (string): what ListScope lists.
//
// Key item:<project>:<list>:<item>; LockOn fake:<project>:list:<list>.
// Resource.Value is the item string, ID is "". Output: item.
//
// Two concurrent creates on one list without the engine's parent lock both
// read the same list and the later PUT drops the other's entry: that loss
// is the point (I9's control case).
type ItemOp struct{ c *Cloud }

var (
	_ adapter.Op           = (*ItemOp)(nil)
	_ adapter.Defaulter    = (*ItemOp)(nil)
	_ adapter.ParentLocker = (*ItemOp)(nil)
	_ adapter.ScopeLister  = (*ItemOp)(nil)
)

// Spec declares fake.item.
func (op *ItemOp) Spec() adapter.Spec { return itemSpec }

var itemSpec = adapter.Spec{
	Adapter: "fake", Op: "item", ListItem: true,
	Summary:  "an entry in a list of the in-memory fake cloud, read-modify-write (engine tests only)",
	Provider: providerSpec,
	Params: []adapter.ParamSpec{
		{Name: "list", Type: adapter.TypeString, Required: true, Doc: "the parent object's name (no ':')"},
		{Name: "item", Type: adapter.TypeString, Required: true, Doc: "the entry"},
		{Name: "prefix", Type: adapter.TypeString, Doc: "what ListScope lists"},
	},
	Outputs: []adapter.OutputSpec{{Name: "item", When: adapter.Immediate}},
	Key:     "item:<project>:<list>:<item>",
	Lock:    "fake:<project>:list:<list>",
}

type itemReq struct {
	project, list, item, key string
	known                    bool // list and item are concrete
	prefix                   string
}

func parseItem(params map[string]any, provider adapter.Provider, allowPending bool) (itemReq, error) {
	var r itemReq
	var err error
	if err = checkKnown(OpItem, params, itemSpec.ParamNames()...); err != nil {
		return r, err
	}
	if r.project, err = project(provider); err != nil {
		return r, err
	}
	var knownList, knownItem bool
	if r.list, knownList, err = identity(OpItem, params, "list", allowPending, false); err != nil {
		return r, err
	}
	if r.item, knownItem, err = identity(OpItem, params, "item", allowPending, true); err != nil {
		return r, err
	}
	if r.known = knownList && knownItem; r.known {
		r.key = ItemKey(r.project, r.list, r.item)
	}
	if r.prefix, err = optString(OpItem, params, "prefix"); err != nil {
		return r, err
	}
	return r, nil
}

func itemResource(project, list, item string) adapter.Resource {
	return adapter.Resource{Key: ItemKey(project, list, item), Value: item, Outputs: map[string]any{"item": item}}
}

// Defaults validates the parameters (PARAM_INVALID naming the parameter)
// and returns a copy of them.
func (op *ItemOp) Defaults(params map[string]any, provider adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	if _, err := parseItem(params, provider, true); err != nil {
		return nil, err
	}
	return copyMap(params), nil
}

// LockOn is fake:<project>:list:<list>; "" while the list is not known.
func (op *ItemOp) LockOn(params map[string]any, provider adapter.Provider) string {
	p, err := project(provider)
	if err != nil {
		return ""
	}
	l, _ := params["list"].(string)
	if l == "" {
		return ""
	}
	return ListLock(p, l)
}

// Read returns the item if the list holds it. One "read" call.
func (op *ItemOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := parseItem(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	if _, err := op.c.inject.begin(ctx, OpItem, MethodRead, r.key); err != nil {
		return nil, err
	}
	op.c.mu.Lock()
	defer op.c.mu.Unlock()
	live := &adapter.Live{Resources: []adapter.Resource{}}
	if slices.Contains(op.c.lists[listID(r.project, r.list)], r.item) {
		res := itemResource(r.project, r.list, r.item)
		live.Resources = append(live.Resources, res)
		live.Outputs = copyMap(res.Outputs)
	}
	return live, nil
}

func (op *ItemOp) diff(live *adapter.Live, r itemReq) adapter.ResourceDiff {
	d := adapter.ResourceDiff{Key: r.key, Action: adapter.Unchanged, Desired: r.item}
	if live.Resource(r.key) == nil {
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: "item", After: r.item}}
	}
	return d
}

// Diff is create when the list lacks the item, else unchanged. Pure.
func (op *ItemOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := parseItem(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	return []adapter.ResourceDiff{op.diff(live, r)}, nil
}

// Apply adds the item when live (read first when nil) lacks it: intend,
// then one "create" call that reads the list, waits the latency and writes
// the whole list back. When the list already holds the item at that read,
// nothing is written and the key is not reported as created.
func (op *ItemOp) Apply(ctx context.Context, req adapter.Request, live *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := parseItem(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	if live == nil {
		if live, err = op.Read(ctx, req); err != nil {
			return nil, err
		}
	}
	res := itemResource(r.project, r.list, r.item)
	var created []string
	if op.diff(live, r).Action == adapter.Create {
		if intend != nil {
			if err := intend(r.key); err != nil {
				return nil, err
			}
		}
		added, err := op.c.prov.addItem(ctx, r.project, r.list, r.item)
		if err != nil {
			return nil, err
		}
		if added {
			created = []string{r.key}
		}
	}
	return &adapter.Result{Resources: []adapter.Resource{res}, Created: created, Outputs: copyMap(res.Outputs)}, nil
}

// Lookup finds an item by key; nil, nil when its list lacks it. One
// "lookup" call. PARAM_INVALID for a key that is not an item key.
func (op *ItemOp) Lookup(ctx context.Context, provider adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	p, l, it, ok := parseItemKey(key)
	if !ok {
		return nil, errs.New(errs.PARAM_INVALID, "%s: %q is not an item key", OpItem, key)
	}
	if _, err := op.c.inject.begin(ctx, OpItem, MethodLookup, key); err != nil {
		return nil, err
	}
	op.c.mu.Lock()
	defer op.c.mu.Unlock()
	if !slices.Contains(op.c.lists[listID(p, l)], it) {
		return nil, nil
	}
	res := itemResource(p, l, it)
	return &res, nil
}

// Destroy removes the item by read-modify-write of its list (one "delete"
// call, the latency between read and write). An item already gone is
// success and writes nothing.
func (op *ItemOp) Destroy(ctx context.Context, provider adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	p, l, it, ok := parseItemKey(r.Key)
	if !ok {
		return errs.New(errs.PARAM_INVALID, "%s: %q is not an item key", OpItem, r.Key)
	}
	return op.c.prov.removeItem(ctx, p, l, it)
}

// ListScope lists the items of the line's list that start with the prefix
// parameter, or all of them, in list order. One "list" call (Match.Key "").
func (op *ItemOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	r, err := parseItem(req.Params, req.Provider, true)
	if err != nil {
		return nil, err
	}
	if r.list == "" {
		return nil, errs.New(errs.PARAM_INVALID, "%s parameter list must be known to list its items", OpItem)
	}
	if _, err := op.c.inject.begin(ctx, OpItem, MethodList, ""); err != nil {
		return nil, err
	}
	op.c.mu.Lock()
	defer op.c.mu.Unlock()
	var out []adapter.Resource
	for _, it := range op.c.lists[listID(r.project, r.list)] {
		if strings.HasPrefix(it, r.prefix) {
			out = append(out, itemResource(r.project, r.list, it))
		}
	}
	return out, nil
}

// ---- provider side: read-modify-write with no precondition ----

// addItem GETs the list, sleeps, and PUTs it back with item appended.
// added is false when the list already held it (no PUT).
func (pv *provider) addItem(ctx context.Context, project, list, item string) (added bool, err error) {
	key := ItemKey(project, list, item)
	s, err := pv.c.inject.begin(ctx, OpItem, MethodCreate, key)
	if err != nil {
		return false, err
	}
	id := listID(project, list)
	pv.c.mu.Lock()
	cur := slices.Clone(pv.c.lists[id]) // GET
	pv.c.mu.Unlock()
	if slices.Contains(cur, item) {
		return false, s.finish()
	}
	if err := pv.c.inject.sleep(ctx, OpItem, MethodCreate, key); err != nil {
		return false, err
	}
	cur = append(cur, item)
	pv.c.mu.Lock()
	pv.c.lists[id] = cur // PUT, overwriting whatever was written since the GET
	delete(pv.c.seeded, key)
	pv.logWrite(OpItem, MethodCreate, key, false)
	pv.c.mu.Unlock()
	return true, s.finish()
}

// removeItem GETs the list, sleeps, and PUTs it back without item; nothing
// when the list lacks it.
func (pv *provider) removeItem(ctx context.Context, project, list, item string) error {
	key := ItemKey(project, list, item)
	s, err := pv.c.inject.begin(ctx, OpItem, MethodDelete, key)
	if err != nil {
		return err
	}
	id := listID(project, list)
	pv.c.mu.Lock()
	cur := slices.Clone(pv.c.lists[id]) // GET
	pv.c.mu.Unlock()
	i := slices.Index(cur, item)
	if i < 0 {
		return s.finish()
	}
	if err := pv.c.inject.sleep(ctx, OpItem, MethodDelete, key); err != nil {
		return err
	}
	cur = slices.Delete(cur, i, i+1)
	pv.c.mu.Lock()
	pv.c.lists[id] = cur // PUT
	delete(pv.c.seeded, key)
	pv.logWrite(OpItem, MethodDelete, key, false)
	pv.c.mu.Unlock()
	return s.finish()
}
