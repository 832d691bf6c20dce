package httpop

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapter/listentry"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const listOp = "http.list_item"

// How a PATCH writes the list.
const (
	PatchMerge = "merge" // a merge patch of the list alone (the default)
	PatchField = "field" // the list's top-level field whole: APIs that replace a PATCHed field entirely (PostHog's filters)
)

// Shapes of a list on a parent object.
const (
	ShapeArray     = "array"     // a JSON array of entries
	ShapeDelimited = "delimited" // one string of entries joined by a delimiter
	ShapeMap       = "map"       // a JSON object: the entry is a key (with a value)
)

// ListItemOp is http.list_item: one entry in a collection on a parent object
// of a generic REST API.
type ListItemOp struct {
	base.Op
}

var (
	_ adapter.Op           = (*ListItemOp)(nil)
	_ adapter.Defaulter    = (*ListItemOp)(nil)
	_ adapter.ParentLocker = (*ListItemOp)(nil)
	_ adapter.ScopeLister  = (*ListItemOp)(nil)
)

// NewListItem returns http.list_item reading credentials and base URLs from
// env at each call.
func NewListItem(env httpclient.Env, client *httpclient.Client) *ListItemOp {
	return &ListItemOp{Op: base.New(listItemSpec, env, client, base.Endpoint{})}
}

type listReq struct {
	api          api
	parentPath   string
	updateMethod string
	patch        string // PatchMerge or PatchField
	listPath     string
	ptr          pointer
	shape        string
	delimiter    string
	item         string
	value        any // map shape: the entry's value
	known        bool
	keep         bool // destroy: keep (recorded as adopted)
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
	if err = op.Known(params); err != nil {
		return r, err
	}
	name, _, err := param.Required(listOp, params, "api", false)
	if err != nil {
		return r, err
	}
	if r.api, err = resolveAPI(p, name, op.Env, resolveBase); err != nil {
		return r, err
	}
	if err = r.parseParent(params); err != nil {
		return r, err
	}
	if err = r.parseShape(params); err != nil {
		return r, err
	}
	if r.keep, err = readDestroy(listOp, params); err != nil {
		return r, err
	}
	return r, r.parseItem(params, allowPending)
}

// parseParent reads parent: the object the list is on, and how it is
// written.
func (r *listReq) parseParent(params map[string]any) error {
	parent, err := param.Map(listOp, params, "parent")
	if err != nil {
		return err
	}
	if parent == nil {
		return param.Invalid(listOp, "parent", "is required: {path: /the/parent/object}")
	}
	r.updateMethod = http.MethodPatch
	if r.api.listMethod != "" {
		r.updateMethod = r.api.listMethod
	}
	r.patch = r.api.listPatch
	for k, v := range parent {
		s, isS := v.(string)
		if !isS {
			return param.Invalid(listOp, "parent."+k, "must be a string, got %s", param.Describe(v))
		}
		switch k {
		case "path":
			if err := checkPath(listOp, "parent.path", s); err != nil {
				return err
			}
			r.parentPath = s
		case "patch":
			if s != PatchMerge && s != PatchField {
				return param.Invalid(listOp, "parent.patch", "must be merge (a merge patch of the list alone, default) or field (the list's top-level field whole)")
			}
			r.patch = s
		case "update_method":
			s = strings.ToUpper(s)
			if s != http.MethodPatch && s != http.MethodPut && s != http.MethodPost {
				return param.Invalid(listOp, "parent.update_method", "must be PATCH (a JSON merge patch of the list), PUT (the whole object) or POST (as PATCH, for APIs that update with POST)")
			}
			r.updateMethod = s
		default:
			return param.Invalid(listOp, "parent."+k, "is not a parent setting (path, update_method, patch)")
		}
	}
	if r.parentPath == "" {
		return param.Invalid(listOp, "parent.path", "is required")
	}
	return nil
}

// parseShape reads list_path, shape and delimiter.
func (r *listReq) parseShape(params map[string]any) error {
	lp, _, err := param.Required(listOp, params, "list_path", false)
	if err != nil {
		return err
	}
	var ok bool
	if r.ptr, ok = parsePointer(lp); !ok || len(r.ptr) == 0 || strings.Contains(lp, "=") {
		return param.Invalid(listOp, "list_path", "must be a JSON pointer to the list in the parent, such as /redirect_uris (without '=')")
	}
	r.listPath = lp
	shape, present, _, err := param.Str(listOp, params, "shape", false)
	if err != nil {
		return err
	}
	if !present {
		shape = ShapeArray
	}
	switch shape {
	case ShapeArray, ShapeDelimited, ShapeMap:
	default:
		return param.Invalid(listOp, "shape", "must be array, delimited or map, got %q", shape)
	}
	r.shape = shape
	delim, present, _, err := param.Str(listOp, params, "delimiter", false)
	if err != nil {
		return err
	}
	switch {
	case present && shape != ShapeDelimited:
		return param.Invalid(listOp, "delimiter", "is only for shape delimited")
	case present && delim == "":
		return param.Invalid(listOp, "delimiter", "must not be empty")
	case !present:
		delim = ","
	}
	r.delimiter = delim
	return nil
}

// parseItem reads item (a string, or an object entry identified by its
// canonical JSON) and value (shape map).
func (r *listReq) parseItem(params map[string]any, allowPending bool) error {
	var err error
	var item string
	var known bool
	if obj, isObj := params["item"].(map[string]any); isObj && r.shape == ShapeArray {
		// An object entry (a condition group, a rule): identified by its
		// canonical JSON, so it must be known whole.
		if adapter.HasMarker(obj) {
			if !allowPending {
				return param.Invalid(listOp, "item", "must be known: an object entry is identified by all of its fields")
			}
		} else {
			b, cerr := adapter.Canonical(obj)
			if cerr != nil {
				return param.Invalid(listOp, "item", "cannot be written as JSON: %v", cerr)
			}
			item, known = string(b), true
		}
	} else {
		if item, known, err = param.Required(listOp, params, "item", allowPending); err != nil {
			return err
		}
		if known && r.shape == ShapeArray && strings.HasPrefix(item, "{") {
			return param.Invalid(listOp, "item", "must not start with '{' (that is the key form of an object entry); give an object instead")
		}
	}
	if known && r.shape == ShapeDelimited && strings.Contains(item, r.delimiter) {
		return param.Invalid(listOp, "item", "must not contain the delimiter %q: it would become two entries", r.delimiter)
	}
	r.item, r.known = item, known
	v, present := params["value"]
	switch {
	case present && r.shape != ShapeMap:
		return param.Invalid(listOp, "value", "is only for shape map")
	case !present:
		v = true
	}
	r.value = v
	return nil
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
	path    string         // the parent's path, for messages
	doc     map[string]any // the parent object; nil when it does not exist
	shape   string
	array   []any
	raw     string // delimited: the string as it is
	entries []string
	delim   string
	m       map[string]any
	subset  bool // list_entries: subset
}

// readList reads the parent and the list at ptr. shape "" infers the shape
// from the JSON type (Lookup and Destroy have no parameters); delim "" picks
// the delimiter that splits item out (",", ";", space, newline, "|").
func readList(ctx context.Context, a httpclient.API, parentPath string, objPath, ptr pointer, shape, delim, item string) (*list, error) {
	var doc map[string]any
	err := a.Get(ctx, parentPath, nil, &doc)
	if httpclient.IsNotFound(err) {
		return &list{shape: shape, delim: delim}, nil
	}
	if err != nil {
		return nil, err
	}
	// The parent inside its envelope ({"feature": {...}}): the list is
	// read and written in it.
	if doc = unwrap(doc, objPath); doc == nil {
		return nil, errs.New(errs.PROVIDER_RESPONSE, "%s: GET %s did not answer a JSON object (at the API's object_path)", listOp, parentPath)
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
// entryOf is an array entry as JSON: an object entry's key form is its
// canonical JSON (it starts with "{"), any other entry is the string.
func entryOf(item string) any {
	if strings.HasPrefix(item, "{") {
		var v map[string]any
		if err := json.Unmarshal([]byte(item), &v); err == nil {
			return v
		}
	}
	return item
}

// is reports whether the array entry x is the item e: equal, or with
// list_entries subset an object holding e's fields, at every depth (the
// API adds an id to a rule, a negate: false to its matchers).
func (l *list) is(x, e any) bool {
	if adapter.Equal(x, e) {
		return true
	}
	_, isMap := e.(map[string]any)
	return l.subset && isMap && subsetOf(e, x)
}

// subsetOf reports whether want is in got: objects hold want's fields (each
// a subset), arrays have want's length with each entry a subset, other
// values are equal.
func subsetOf(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			gv, has := g[k]
			if !has || !subsetOf(v, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subsetOf(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return adapter.Equal(want, got)
}

func (l *list) has(item string) (bool, any) {
	switch l.shape {
	case ShapeArray:
		e := entryOf(item)
		for _, x := range l.array {
			if l.is(x, e) {
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

// with returns the list's new JSON value with item added (or, map, set).
func (l *list) with(item string, v any) any {
	switch l.shape {
	case ShapeArray:
		return append(append([]any{}, l.array...), entryOf(item))
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
		e := entryOf(item)
		for _, x := range l.array {
			if !l.is(x, e) {
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
func write(ctx context.Context, ap api, a httpclient.API, l *list, parentPath string, ptr pointer, method, patch string, newList any, mapPatch map[string]any) error {
	var body map[string]any
	switch {
	case method == http.MethodPut:
		body = ptr.set(l.doc, newList)
	case patch == PatchField:
		whole := ptr.set(l.doc, newList)
		body = map[string]any{ptr[0]: whole[ptr[0]]}
	case l.shape == ShapeMap && mapPatch != nil:
		body = ptr.nest(mapPatch)
	default:
		body = ptr.nest(newList)
	}
	return ap.send(ctx, a, method, parentPath, body, true, false, nil)
}

// Has reports whether the list holds item, and its value (map shape).
func (l *list) Has(item string) (bool, any) { return l.has(item) }

// Valued: the entries of a map carry values.
func (l *list) Valued() bool { return l.shape == ShapeMap }

// Items names the list's entries as keys name them: an array's string
// entries (an object entry is skipped: no scope can be read in it), a
// delimited string's parts, a map's keys (sorted).
func (l *list) Items() []string {
	var out []string
	switch l.shape {
	case ShapeArray:
		for _, x := range l.array {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	case ShapeDelimited:
		out = append(out, l.entries...)
	case ShapeMap:
		for k := range l.m {
			out = append(out, k)
		}
		sort.Strings(out)
	}
	return out
}

// Writable refuses to add to a parent that does not exist.
func (l *list) Writable() error {
	if l.doc == nil {
		return errs.New(errs.PROVIDER_NOT_FOUND, "%s: the parent %s does not exist", listOp, l.path).With("param", "parent.path")
	}
	return nil
}

// parent is the parent object of a line or a key. shape and delim "" are
// read from the JSON type (a key carries no parameters).
type parent struct {
	a            httpclient.API
	path         string
	ptr          pointer
	shape, delim string
	item         string // picks the delimiter when delim is ""
	method       string // the update method of Put
	patch        string // how a PATCH writes the list
	api          api    // the block: object_path, encoding, list_method, list_entries
}

// ReadKey implements listentry.ReadKeyer: the item only picks the
// delimiter of a delimited list that declares none, so lines adding other
// items to the same list share its read.
func (p parent) ReadKey() string {
	if p.shape != ShapeDelimited || p.delim != "" {
		p.item = ""
	}
	return fmt.Sprintf("%#v", p)
}

func (p parent) Load(ctx context.Context) (listentry.List, error) {
	l, err := readList(ctx, p.a, p.path, p.api.objectPath, p.ptr, p.shape, p.delim, p.item)
	if err != nil {
		return nil, err
	}
	l.path, l.subset = p.path, p.api.subset
	return l, nil
}

func (p parent) Put(ctx context.Context, ll listentry.List, item string, v any) error {
	l := ll.(*list)
	return write(ctx, p.api, p.a, l, p.path, p.ptr, p.method, p.patch, l.with(item, v), map[string]any{item: v})
}

// Remove writes with the API block's list_method, else a merge-patch
// PATCH (a key carries no line parameters); a parent gone meanwhile is
// success.
func (p parent) Remove(ctx context.Context, ll listentry.List, item string) error {
	l := ll.(*list)
	method := cmp.Or(p.api.listMethod, http.MethodPatch)
	err := write(ctx, p.api, p.a, l, p.path, p.ptr, method, p.patch, l.without(item), map[string]any{item: nil})
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

func (r listReq) entry() listentry.Entry {
	return listentry.Entry{Op: listOp, Key: r.key(), Item: r.item, Valued: r.shape == ShapeMap, Value: r.value, Field: r.listPath}
}

func (op *ListItemOp) connect(req adapter.Request) (listReq, parent, error) {
	r, err := op.parse(req.Params, req.Provider, false, true)
	if err != nil {
		return r, parent{}, err
	}
	a, err := r.api.client(op.Env, op.Client)
	return r, parent{a: a, path: r.parentPath, ptr: r.ptr, shape: r.shape, delim: r.delimiter, item: r.item, method: r.updateMethod, patch: r.patch, api: r.api}, err
}

// Read returns the entry when the parent's list holds it.
func (op *ListItemOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, par, err := op.connect(req)
	if err != nil {
		return nil, err
	}
	return listentry.Read(ctx, par, r.entry())
}

// ListScope is the line's entry when the list holds it, and the list's
// entries that are the line's item in another scope (adapter.OtherScope:
// the scope in the item replaced by another scope's name), for unmanaged
// drift. The rest of the list is not listed. One GET of the parent,
// shared with Read through the run's read cache.
func (op *ListItemOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	r, par, err := op.connect(req)
	if err != nil {
		return nil, err
	}
	return listentry.ListScope(ctx, par, r.entry(), req.Run.Scope, func(item string) listentry.Entry {
		o := r
		o.item = item
		return o.entry()
	})
}

// Diff: create when the entry is missing; for a map, update when its value
// differs; unchanged otherwise.
func (op *ListItemOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, false, false)
	if err != nil {
		return nil, err
	}
	return []adapter.ResourceDiff{listentry.Diff(live, r.entry())}, nil
}

// Apply adds the entry (intend first) by read-modify-write of the parent,
// or sets a map entry's value; nothing when it is as planned.
func (op *ListItemOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, par, err := op.connect(req)
	if err != nil {
		return nil, err
	}
	if err := param.Concrete(listOp, "value", r.value); err != nil {
		return nil, err
	}
	if !r.keep {
		return listentry.Apply(ctx, par, r.entry(), intend)
	}
	// Kept: not Sponson's to remove, so it is not intended and not
	// reported created (the ledger records it adopted).
	res, err := listentry.Apply(ctx, par, r.entry(), func(...string) error { return nil })
	if res != nil {
		res.Created = nil
	}
	return res, err
}

// fromKey is the parent of a key, with the shape its JSON type says.
func (op *ListItemOp) fromKey(p adapter.Provider, key string) (parent, listentry.Entry, error) {
	apiName, parentPath, listPath, item, ok := ParseListKey(key)
	ptr, pok := parsePointer(listPath)
	if !ok || !pok {
		return parent{}, listentry.Entry{}, errs.New(errs.PARAM_INVALID, "%s: %q is not an http.list_item key (<api>:<parent path>#<list_path>=<item>)", listOp, key)
	}
	ap, err := resolveAPI(p, apiName, op.Env, true)
	if err != nil {
		return parent{}, listentry.Entry{}, err
	}
	a, err := ap.client(op.Env, op.Client)
	return parent{a: a, path: parentPath, ptr: ptr, item: item, method: cmp.Or(ap.listMethod, http.MethodPatch), patch: ap.listPatch, api: ap},
		listentry.Entry{Op: listOp, Key: key, Item: item, Field: listPath}, err
}

// Lookup reports whether the parent's list holds the key's entry.
func (op *ListItemOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	par, e, err := op.fromKey(p, key)
	if err != nil {
		return nil, err
	}
	return listentry.Lookup(ctx, par, e)
}

// Destroy removes the key's entry (every occurrence) with a merge-patch
// PATCH of the parent; absent, or the parent gone, is success and writes
// nothing.
func (op *ListItemOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	par, e, err := op.fromKey(p, r.Key)
	if err != nil {
		return err
	}
	return listentry.Destroy(ctx, par, e.Item)
}
