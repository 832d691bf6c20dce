package httpop

import (
	"context"
	"net/http"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const listOp = "http.list_item"

// Shapes of a list on a parent object.
const (
	ShapeArray     = "array"     // a JSON array of entries
	ShapeDelimited = "delimited" // one string of entries joined by a delimiter
	ShapeMap       = "map"       // a JSON object: the entry is a key (with a value)
)

// ListItemOp is http.list_item: one entry in a collection on a parent object
// of a generic REST API.
type ListItemOp struct {
	env    httpclient.Env
	client *httpclient.Client
}

var (
	_ adapter.Op           = (*ListItemOp)(nil)
	_ adapter.Defaulter    = (*ListItemOp)(nil)
	_ adapter.ParentLocker = (*ListItemOp)(nil)
)

// NewListItem returns http.list_item reading credentials and base URLs from
// env at each call.
func NewListItem(env httpclient.Env, client *httpclient.Client) *ListItemOp {
	return &ListItemOp{env: env, client: client}
}

// Spec declares http.list_item as the built-in catalogue does.
func (op *ListItemOp) Spec() adapter.Spec {
	s, _ := adapter.Builtin().Lookup("http", "list_item")
	return s
}

var listParams = []string{"api", "parent", "list_path", "shape", "delimiter", "item", "value"}

type listReq struct {
	api          api
	parentPath   string
	updateMethod string
	listPath     string
	ptr          pointer
	shape        string
	delimiter    string
	item         string
	value        any // map shape: the entry's value
	known        bool
}

// ListKey is the ledger key of an entry.
func ListKey(apiName, parentPath, listPath, item string) string {
	return apiName + ":" + parentPath + "#" + listPath + "=" + item
}

// ParseListKey splits a key made by ListKey.
func ParseListKey(key string) (apiName, parentPath, listPath, item string, ok bool) {
	apiName, rest, ok := splitAPIKey(key)
	if !ok {
		return "", "", "", "", false
	}
	parentPath, rest, ok = strings.Cut(rest, "#")
	if !ok {
		return "", "", "", "", false
	}
	listPath, item, ok = strings.Cut(rest, "=")
	if !ok || item == "" || !strings.HasPrefix(listPath, "/") {
		return "", "", "", "", false
	}
	return apiName, parentPath, listPath, item, true
}

func (op *ListItemOp) parse(params map[string]any, p adapter.Provider, allowPending, resolveBase bool) (listReq, error) {
	var r listReq
	var err error
	if err = param.Known(listOp, params, listParams...); err != nil {
		return r, err
	}
	name, _, err := param.Required(listOp, params, "api", false)
	if err != nil {
		return r, err
	}
	if r.api, err = resolveAPI(p, name, op.env, resolveBase); err != nil {
		return r, err
	}
	parent, err := param.Map(listOp, params, "parent")
	if err != nil {
		return r, err
	}
	if parent == nil {
		return r, param.Invalid(listOp, "parent", "is required: {path: /the/parent/object}")
	}
	r.updateMethod = http.MethodPatch
	for k, v := range parent {
		s, isS := v.(string)
		if !isS {
			return r, param.Invalid(listOp, "parent."+k, "must be a string, got %s", param.Describe(v))
		}
		switch k {
		case "path":
			if err := checkPath(listOp, "parent.path", s); err != nil {
				return r, err
			}
			r.parentPath = s
		case "update_method":
			s = strings.ToUpper(s)
			if s != http.MethodPatch && s != http.MethodPut {
				return r, param.Invalid(listOp, "parent.update_method", "must be PATCH (a JSON merge patch of the list) or PUT (the whole object)")
			}
			r.updateMethod = s
		default:
			return r, param.Invalid(listOp, "parent."+k, "is not a parent setting (path, update_method)")
		}
	}
	if r.parentPath == "" {
		return r, param.Invalid(listOp, "parent.path", "is required")
	}
	lp, _, err := param.Required(listOp, params, "list_path", false)
	if err != nil {
		return r, err
	}
	var ok bool
	if r.ptr, ok = parsePointer(lp); !ok || len(r.ptr) == 0 || strings.Contains(lp, "=") {
		return r, param.Invalid(listOp, "list_path", "must be a JSON pointer to the list in the parent, such as /redirect_uris (without '=')")
	}
	r.listPath = lp
	shape, present, _, err := param.Str(listOp, params, "shape", false)
	if err != nil {
		return r, err
	}
	if !present {
		shape = ShapeArray
	}
	switch shape {
	case ShapeArray, ShapeDelimited, ShapeMap:
	default:
		return r, param.Invalid(listOp, "shape", "must be array, delimited or map, got %q", shape)
	}
	r.shape = shape
	delim, present, _, err := param.Str(listOp, params, "delimiter", false)
	if err != nil {
		return r, err
	}
	switch {
	case present && shape != ShapeDelimited:
		return r, param.Invalid(listOp, "delimiter", "is only for shape delimited")
	case present && delim == "":
		return r, param.Invalid(listOp, "delimiter", "must not be empty")
	case !present:
		delim = ","
	}
	r.delimiter = delim
	item, known, err := param.Required(listOp, params, "item", allowPending)
	if err != nil {
		return r, err
	}
	if known && shape == ShapeDelimited && strings.Contains(item, delim) {
		return r, param.Invalid(listOp, "item", "must not contain the delimiter %q: it would become two entries", delim)
	}
	r.item, r.known = item, known
	v, present := params["value"]
	switch {
	case present && shape != ShapeMap:
		return r, param.Invalid(listOp, "value", "is only for shape map")
	case !present:
		v = true
	}
	r.value = v
	return r, nil
}

func (r listReq) key() string { return ListKey(r.api.name, r.parentPath, r.listPath, r.item) }

// Defaults validates the parameters.
func (op *ListItemOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	if _, err := op.parse(params, p, true, false); err != nil {
		return nil, err
	}
	return param.Copy(params), nil
}

// LockOn names the parent object: http:<base url><parent path>.
func (op *ListItemOp) LockOn(params map[string]any, p adapter.Provider) string {
	r, err := op.parse(params, p, true, false)
	if err != nil {
		return ""
	}
	return "http:" + r.api.lockBase() + r.parentPath
}

// list is the list as found in the parent.
type list struct {
	doc     map[string]any // the parent object; nil when it does not exist
	shape   string
	array   []any
	raw     string // delimited: the string as it is
	entries []string
	delim   string
	m       map[string]any
}

// readList reads the parent and the list at ptr. shape "" infers the shape
// from the JSON type (Lookup and Destroy have no parameters); delim "" picks
// the delimiter that splits item out (",", ";", space, newline, "|").
func readList(ctx context.Context, a httpclient.API, parentPath string, ptr pointer, shape, delim, item string) (*list, error) {
	var doc map[string]any
	err := a.Get(ctx, parentPath, nil, &doc)
	if httpclient.IsNotFound(err) {
		return &list{shape: shape, delim: delim}, nil
	}
	if err != nil {
		return nil, err
	}
	l := &list{doc: doc, shape: shape, delim: delim}
	v, _ := ptr.get(any(doc))
	if shape == "" {
		switch v.(type) {
		case []any, nil:
			l.shape = ShapeArray
		case string:
			l.shape = ShapeDelimited
		case map[string]any:
			l.shape = ShapeMap
		}
	}
	bad := func(kind string) error {
		return errs.New(errs.PARAM_INVALID, "%s: %s of %s is %s, not what shape %s reads", listOp, "/"+strings.Join(ptr, "/"), parentPath, kind, l.shape).With("param", "shape")
	}
	switch l.shape {
	case ShapeArray:
		switch t := v.(type) {
		case nil:
		case []any:
			l.array = t
		default:
			return nil, bad(param.Describe(v))
		}
	case ShapeDelimited:
		switch t := v.(type) {
		case nil:
		case string:
			l.raw = t
		default:
			return nil, bad(param.Describe(v))
		}
		if l.delim == "" {
			l.delim = ","
			for _, d := range []string{",", ";", " ", "\n", "|"} {
				if containsStr(split(l.raw, d), item) {
					l.delim = d
					break
				}
			}
		}
		l.entries = split(l.raw, l.delim)
	case ShapeMap:
		switch t := v.(type) {
		case nil:
			l.m = map[string]any{}
		case map[string]any:
			l.m = t
		default:
			return nil, bad(param.Describe(v))
		}
	default:
		return nil, errs.New(errs.PROVIDER_RESPONSE, "%s: %s of %s is %s, which is no list", listOp, "/"+strings.Join(ptr, "/"), parentPath, param.Describe(v))
	}
	return l, nil
}

func split(s, d string) []string {
	var out []string
	for _, x := range strings.Split(s, d) {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// has reports whether the list holds item, and its value (map shape).
func (l *list) has(item string) (bool, any) {
	switch l.shape {
	case ShapeArray:
		for _, x := range l.array {
			if adapter.Equal(x, item) {
				return true, nil
			}
		}
	case ShapeDelimited:
		return containsStr(l.entries, item), nil
	case ShapeMap:
		v, ok := l.m[item]
		return ok, v
	}
	return false, nil
}

// entryValue is the canonical value of an entry.
func entryValue(shape, item string, v any) any {
	if shape == ShapeMap {
		return map[string]any{item: v}
	}
	return item
}

// with returns the list's new JSON value with item added (or, map, set).
func (l *list) with(item string, v any) any {
	switch l.shape {
	case ShapeArray:
		return append(append([]any{}, l.array...), item)
	case ShapeDelimited:
		if strings.TrimSpace(l.raw) == "" {
			return item
		}
		return l.raw + l.delim + item
	}
	m := make(map[string]any, len(l.m)+1)
	for k, x := range l.m {
		m[k] = x
	}
	m[item] = v
	return m
}

// without returns the list's new JSON value with every occurrence of item
// removed.
func (l *list) without(item string) any {
	switch l.shape {
	case ShapeArray:
		out := []any{}
		for _, x := range l.array {
			if !adapter.Equal(x, item) {
				out = append(out, x)
			}
		}
		return out
	case ShapeDelimited:
		var out []string
		for _, x := range l.entries {
			if x != item {
				out = append(out, x)
			}
		}
		return strings.Join(out, l.delim)
	}
	m := make(map[string]any, len(l.m))
	for k, x := range l.m {
		if k != item {
			m[k] = x
		}
	}
	return m
}

// write sends the list back: PATCH with a merge patch of only the list (a
// map entry as a key set to its value, or null to delete it), or PUT of the
// whole parent.
func write(ctx context.Context, a httpclient.API, l *list, parentPath string, ptr pointer, method string, newList any, mapPatch map[string]any) error {
	var body map[string]any
	switch {
	case method == http.MethodPut:
		body = ptr.set(l.doc, newList)
	case l.shape == ShapeMap && mapPatch != nil:
		body = ptr.nest(mapPatch)
	default:
		body = ptr.nest(newList)
	}
	return a.Send(ctx, method, parentPath, nil, body, true, nil)
}

func (op *ListItemOp) connect(req adapter.Request) (listReq, httpclient.API, error) {
	r, err := op.parse(req.Params, req.Provider, false, true)
	if err != nil {
		return r, httpclient.API{}, err
	}
	a, err := r.api.client(op.env, op.client)
	return r, a, err
}

func (r listReq) resource(v any) adapter.Resource {
	return adapter.Resource{Key: r.key(), Value: entryValue(r.shape, r.item, v), Outputs: map[string]any{}}
}

// Read returns the entry when the parent's list holds it.
func (op *ListItemOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, a, err := op.connect(req)
	if err != nil {
		return nil, err
	}
	l, err := readList(ctx, a, r.parentPath, r.ptr, r.shape, r.delimiter, r.item)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if ok, v := l.has(r.item); ok {
		live.Resources = append(live.Resources, r.resource(v))
	}
	return live, nil
}

// Diff: create when the entry is missing; for a map, update when its value
// differs; unchanged otherwise.
func (op *ListItemOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, false, false)
	if err != nil {
		return nil, err
	}
	d := adapter.ResourceDiff{Key: r.key()}
	lr := live.Resource(d.Key)
	want := r.value
	if m, ok := adapter.MarkerOf(want); ok && m.Kind == adapter.Keep && lr != nil {
		want = lr.Value.(map[string]any)[r.item]
	}
	if !adapter.HasMarker(want) {
		d.Desired = entryValue(r.shape, r.item, want)
	}
	switch {
	case lr == nil:
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: r.listPath, After: r.item}}
	case r.shape == ShapeMap && (d.Desired == nil || !adapter.Equal(d.Desired, lr.Value)):
		d.Action = adapter.Update
		d.Fields = []adapter.FieldDiff{{Path: r.listPath + "/" + r.item}}
	default:
		d.Action = adapter.Unchanged
		d.Desired = lr.Value
	}
	return []adapter.ResourceDiff{d}, nil
}

// Apply adds the entry (intend first) by read-modify-write of the parent,
// or sets a map entry's value; nothing when it is as planned.
func (op *ListItemOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, a, err := op.connect(req)
	if err != nil {
		return nil, err
	}
	if err := param.Concrete(listOp, "value", r.value); err != nil {
		return nil, err
	}
	l, err := readList(ctx, a, r.parentPath, r.ptr, r.shape, r.delimiter, r.item)
	if err != nil {
		return nil, err
	}
	if l.doc == nil {
		return nil, errs.New(errs.PROVIDER_NOT_FOUND, "%s: the parent %s does not exist", a.Provider, r.parentPath).With("param", "parent.path")
	}
	present, cur := l.has(r.item)
	v := r.value
	if m, ok := adapter.MarkerOf(v); ok && m.Kind == adapter.Keep {
		if !present {
			return nil, param.Invalid(listOp, "value", "is {keep: true}, but the entry %s does not exist to keep", r.item)
		}
		v = cur
	}
	var created []string
	switch {
	case !present:
		if err := intend(r.key()); err != nil {
			return nil, err
		}
		if err := write(ctx, a, l, r.parentPath, r.ptr, r.updateMethod, l.with(r.item, v), map[string]any{r.item: v}); err != nil {
			return nil, err
		}
		created = []string{r.key()}
	case r.shape == ShapeMap && !adapter.Equal(cur, v):
		if err := write(ctx, a, l, r.parentPath, r.ptr, r.updateMethod, l.with(r.item, v), map[string]any{r.item: v}); err != nil {
			return nil, err
		}
	default:
		v = cur
	}
	return &adapter.Result{Resources: []adapter.Resource{r.resource(v)}, Created: created, Outputs: map[string]any{}}, nil
}

// fromKey reads the parent of a key with the shape its JSON type says.
func (op *ListItemOp) fromKey(ctx context.Context, p adapter.Provider, key string) (httpclient.API, *list, string, pointer, string, error) {
	apiName, parentPath, listPath, item, ok := ParseListKey(key)
	ptr, pok := parsePointer(listPath)
	if !ok || !pok {
		return httpclient.API{}, nil, "", nil, "", errs.New(errs.PARAM_INVALID, "%s: %q is not an http.list_item key (<api>:<parent path>#<list_path>=<item>)", listOp, key)
	}
	ap, err := resolveAPI(p, apiName, op.env, true)
	if err != nil {
		return httpclient.API{}, nil, "", nil, "", err
	}
	a, err := ap.client(op.env, op.client)
	if err != nil {
		return a, nil, "", nil, "", err
	}
	l, err := readList(ctx, a, parentPath, ptr, "", "", item)
	return a, l, parentPath, ptr, item, err
}

// Lookup reports whether the parent's list holds the key's entry.
func (op *ListItemOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	_, l, _, _, item, err := op.fromKey(ctx, p, key)
	if err != nil {
		return nil, err
	}
	ok, v := l.has(item)
	if !ok {
		return nil, nil
	}
	return &adapter.Resource{Key: key, Value: entryValue(l.shape, item, v), Outputs: map[string]any{}}, nil
}

// Destroy removes the key's entry (every occurrence) with a merge-patch
// PATCH of the parent; absent, or the parent gone, is success and writes
// nothing.
func (op *ListItemOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	a, l, parentPath, ptr, item, err := op.fromKey(ctx, p, r.Key)
	if err != nil {
		return err
	}
	if ok, _ := l.has(item); !ok {
		return nil
	}
	err = write(ctx, a, l, parentPath, ptr, http.MethodPatch, l.without(item), map[string]any{item: nil})
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}
