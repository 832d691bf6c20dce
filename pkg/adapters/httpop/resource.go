package httpop

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const resourceOp = "http.resource"

// ResourceOp is http.resource: one object of a generic REST API.
type ResourceOp struct {
	base.Op
}

var (
	_ adapter.Op        = (*ResourceOp)(nil)
	_ adapter.Defaulter = (*ResourceOp)(nil)
)

// NewResource returns http.resource reading credentials and base URLs from
// env at each call.
func NewResource(env httpclient.Env, client *httpclient.Client) *ResourceOp {
	return &ResourceOp{Op: base.New(resourceSpec, env, client, base.Endpoint{})}
}

// resourceReq is a parsed http.resource line.
type resourceReq struct {
	api                       api
	create, read, update, del request
	listPath                  string
	listItems                 pointer
	hasItems                  bool
	// listUnfiltered: the listing takes no filter parameters, so the
	// match is not sent as the query (list.filter: none).
	listUnfiltered bool
	paging         paging
	// fromList: the object is read from its collection's listing (APIs
	// without a read of one object: Honeycomb's markers, Sentry's deploys).
	fromList bool
	// keep: destroy: keep. The object outlives the scope; it is recorded
	// as adopted, so destroy lets go of it and rollback leaves it.
	keep     bool
	encoding string // the line's encoding, else the block's
	idPath   pointer
	fields   map[string]any
	match    map[string]string // field → string form; nil when the read path is fixed
	outputs  map[string]outputSpec
	key      string
	known    bool // key is known (no pending match value)
}

func (op *ResourceOp) parse(params map[string]any, p adapter.Provider, allowPending, resolveBase bool) (resourceReq, error) {
	var r resourceReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	name, _, err := param.Required(resourceOp, params, "api", false)
	if err != nil {
		return r, err
	}
	if r.api, err = resolveAPI(p, name, op.Env, resolveBase); err != nil {
		return r, err
	}
	if err = r.parseRequests(params); err != nil {
		return r, err
	}
	if err = op.parseList(params, &r); err != nil {
		return r, err
	}
	idPath, present, _, err := param.Str(resourceOp, params, "id_path", false)
	if err != nil {
		return r, err
	}
	if !present {
		idPath = "/id"
		if len(r.api.idPath) > 0 {
			idPath = "/" + strings.Join(r.api.idPath, "/")
		}
	}
	var ok bool
	if r.idPath, ok = parsePointer(idPath); !ok || len(r.idPath) == 0 {
		return r, param.Invalid(resourceOp, "id_path", "must be a JSON pointer such as /id, got %q", clip(idPath))
	}
	if r.fields, err = param.Map(resourceOp, params, "fields"); err != nil {
		return r, err
	}
	if r.fields == nil {
		r.fields = map[string]any{}
	}
	if err = op.parseOutputs(params, &r); err != nil {
		return r, err
	}
	if err = r.parseLifecycle(params); err != nil {
		return r, err
	}
	return r, r.parseIdentity(params, allowPending)
}

// parseLifecycle reads destroy (delete or keep) and encoding.
func (r *resourceReq) parseLifecycle(params map[string]any) error {
	var err error
	if r.keep, err = readDestroy(resourceOp, params); err != nil {
		return err
	}
	r.encoding, err = readEncoding(resourceOp, params, r.api.encoding)
	return err
}

// readDestroy reads destroy: delete (the default) or keep.
func readDestroy(op string, params map[string]any) (bool, error) {
	s, present, _, err := param.Str(op, params, "destroy", false)
	if err != nil || !present {
		return false, err
	}
	switch s {
	case "delete":
		return false, nil
	case "keep":
		return true, nil
	}
	return false, param.Invalid(op, "destroy", "must be delete (the default: destroy deletes it) or keep (it outlives the scope), got %q", clip(s))
}

// readEncoding reads encoding: json or form; def when absent.
func readEncoding(op string, params map[string]any, def string) (string, error) {
	s, present, _, err := param.Str(op, params, "encoding", false)
	if err != nil || !present {
		return def, err
	}
	if s != EncodingJSON && s != EncodingForm {
		return "", param.Invalid(op, "encoding", "must be json or form (application/x-www-form-urlencoded), got %q", clip(s))
	}
	return s, nil
}

// parseRequests reads create, read, update and delete: each defaults from
// the one before. read: {from: list} reads the object from its
// collection's listing.
func (r *resourceReq) parseRequests(params map[string]any) error {
	var err error
	if rd, ok := params["read"].(map[string]any); ok {
		if from, has := rd["from"]; has {
			if from != "list" {
				return param.Invalid(resourceOp, "read.from", "must be list (the object is read from its collection's listing, for APIs without a read of one object)")
			}
			rd = maps.Clone(rd)
			delete(rd, "from")
			params = maps.Clone(params)
			params["read"] = rd
			r.fromList = true
		}
	}
	if r.create, err = readRequest(resourceOp, params, "create", http.MethodPost, "", http.MethodPost, http.MethodPut); err != nil {
		return err
	}
	if strings.Contains(r.create.path, "{id}") {
		return param.Invalid(resourceOp, "create.path", "must not hold {id}: the id is not known before the create")
	}
	if r.read, err = readRequest(resourceOp, params, "read", http.MethodGet, strings.TrimRight(r.create.path, "/")+"/{id}", http.MethodGet); err != nil {
		return err
	}
	if r.update, err = readRequest(resourceOp, params, "update", http.MethodPatch, r.read.path, http.MethodPatch, http.MethodPut, http.MethodPost); err != nil {
		return err
	}
	if r.del, err = readRequest(resourceOp, params, "delete", http.MethodDelete, r.read.path, http.MethodDelete); err != nil {
		return err
	}
	return nil
}

// parseIdentity makes the key: the read path when it names the object,
// else the collection and the match that finds the object in it (not
// known while a match value is pending).
func (r *resourceReq) parseIdentity(params map[string]any, allowPending bool) error {
	r.known = true
	if !strings.Contains(r.read.path, "{id}") {
		r.key = r.api.name + ":" + r.read.path
		return nil
	}
	match, err := param.Map(resourceOp, params, "match")
	if err != nil {
		return err
	}
	if match == nil {
		if n, ok := r.fields["name"]; ok {
			match = map[string]any{"name": n}
		} else {
			return param.Invalid(resourceOp, "match", "is required: the read path holds {id}, so the object is found in the collection %s by the fields that identify it (match: {name: ...}), or give a read path without {id}", r.listPath)
		}
	}
	if len(match) == 0 {
		return param.Invalid(resourceOp, "match", "must name at least one field")
	}
	r.match = map[string]string{}
	for k, v := range match {
		if m, isM := adapter.MarkerOf(v); isM {
			if m.Kind == adapter.Pending && allowPending {
				r.known = false
				continue
			}
			return param.Invalid(resourceOp, "match."+k, "must be a known value (it identifies the object), it is %s", param.Describe(v))
		}
		s, ok := scalar(v)
		if !ok {
			return param.Invalid(resourceOp, "match."+k, "must be a string, number or bool, got %s", param.Describe(v))
		}
		r.match[k] = s
	}
	if r.known {
		r.key = r.api.name + ":" + r.listPath + "?" + keyQuery(r.match).Encode()
	}
	return nil
}

func (op *ResourceOp) parseList(params map[string]any, r *resourceReq) error {
	r.listPath = r.create.path
	r.paging = r.api.paging
	m, err := param.Map(resourceOp, params, "list")
	if err != nil || m == nil {
		return err
	}
	if v, ok := m["paging"]; ok {
		if r.paging, err = readPaging(v, "list.paging"); err != nil {
			return err
		}
	}
	for k, v := range m {
		if k == "paging" {
			continue
		}
		s, isS := v.(string)
		if !isS {
			return param.Invalid(resourceOp, "list."+k, "must be a string, got %s", param.Describe(v))
		}
		switch k {
		case "path":
			if err := checkPath(resourceOp, "list.path", s); err != nil {
				return err
			}
			r.listPath = s
		case "items":
			p, ok := parsePointer(s)
			if !ok {
				return param.Invalid(resourceOp, "list.items", "must be a JSON pointer such as /items, got %q", clip(s))
			}
			r.listItems, r.hasItems = p, true
		case "paging":
			continue
		case "filter":
			switch s {
			case "query":
			case "none":
				r.listUnfiltered = true
			default:
				return param.Invalid(resourceOp, "list.filter", "must be query (the match's top-level fields are sent as the query) or none (the listing takes no filter; the match is found in the pages), got %q", clip(s))
			}
		default:
			return param.Invalid(resourceOp, "list."+k, "is not a list setting (path, items, filter, paging)")
		}
	}
	return nil
}

// outputSpec is one output a line declares: where it is in the object,
// and whether it is sensitive (masked everywhere, never in a receipt) or
// answered once (to the create only).
type outputSpec struct {
	ptr             pointer
	sensitive, once bool
}

func (op *ResourceOp) parseOutputs(params map[string]any, r *resourceReq) error {
	var err error
	r.outputs, err = readOutputs(params)
	return err
}

// readOutputs reads outputs: name → a JSON pointer, or {path, sensitive,
// once}.
func readOutputs(params map[string]any) (map[string]outputSpec, error) {
	m, err := param.Map(resourceOp, params, "outputs")
	if err != nil {
		return nil, err
	}
	out := map[string]outputSpec{}
	for name, v := range m {
		if name == "id" {
			return nil, param.Invalid(resourceOp, "outputs.id", "is always the object's id (id_path); choose another name")
		}
		var os outputSpec
		s, isS := v.(string)
		if d, isM := v.(map[string]any); isM {
			for k, x := range d {
				switch k {
				case "path":
					s, isS = x.(string)
				case "sensitive", "once":
					b, isB := x.(bool)
					if !isB {
						return nil, param.Invalid(resourceOp, "outputs."+name+"."+k, "must be true or false, got %s", param.Describe(x))
					}
					if k == "sensitive" {
						os.sensitive = b
					} else {
						os.once = b
					}
				default:
					return nil, param.Invalid(resourceOp, "outputs."+name+"."+k, "is not an output setting (path, sensitive, once)")
				}
			}
		}
		p, ok := parsePointer(s)
		if !isS || !ok {
			return nil, param.Invalid(resourceOp, "outputs."+name, "must be a JSON pointer into the object, such as /slug, or {path: /token, sensitive: true}")
		}
		os.ptr = p
		out[name] = os
	}
	return out, nil
}

// scalar is the string form a filter and a match compare: strings as they
// are, numbers and bools as JSON writes them.
func scalar(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case int:
		return strconv.Itoa(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case json.Number:
		return t.String(), true
	case nil:
		return "null", true
	}
	return "", false
}

// matchQuery is the query a collection is listed with: the match's
// top-level fields. A match on a nested field (a JSON pointer such as
// /config/url) is checked here only: APIs filter on top-level fields, if at
// all.
func matchQuery(m map[string]string) url.Values {
	q := url.Values{}
	for k, v := range m {
		if !strings.HasPrefix(k, "/") {
			q.Set(k, v)
		}
	}
	return q
}

// keyQuery is the match in a key: every field, nested ones included.
func keyQuery(m map[string]string) url.Values {
	q := url.Values{}
	for k, v := range m {
		q.Set(k, v)
	}
	return q
}

// Defaults validates the parameters (base_url_env may be unset yet).
func (op *ResourceOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	if _, err := op.parse(params, p, true, false); err != nil {
		return nil, err
	}
	return param.Copy(params), nil
}

// object is one object as the API answers it.
type object struct {
	id  string
	doc map[string]any
}

func idOf(doc any, p pointer) string {
	v, ok := p.get(doc)
	if !ok {
		return ""
	}
	s, _ := scalar(v)
	if s == "null" {
		return ""
	}
	return s
}

// unwrap is the object inside a single-object answer (the API block's
// object_path, such as /result); the answer itself without one.
func unwrap(doc map[string]any, objPath pointer) map[string]any {
	if len(objPath) == 0 || doc == nil {
		return doc
	}
	v, _ := objPath.get(any(doc))
	m, _ := v.(map[string]any)
	return m
}

// get reads path into an object; nil when it answers 404.
func get(ctx context.Context, a httpclient.API, path string, objPath, idPath pointer) (*object, error) {
	var doc map[string]any
	err := a.Get(ctx, path, nil, &doc)
	if httpclient.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if doc = unwrap(doc, objPath); doc == nil {
		return nil, errs.New(errs.PROVIDER_RESPONSE, "%s: GET %s did not answer a JSON object (at the API's object_path)", a.Provider, path)
	}
	return &object{id: idOf(doc, idPath), doc: doc}, nil
}

// findIn lists the collection and returns the first item whose match
// fields equal the match (compared in string form), following the pages
// as pg says (by default next_cursor, sent back as cursor, or, as Resend
// and Stripe page, has_more with the last item's id sent back as after).
// unfiltered sends no query but the page's.
func findIn(ctx context.Context, a httpclient.API, listPath string, items pointer, hasItems bool, match map[string]string, idPath pointer, unfiltered bool, pg paging) (*object, error) {
	var found *object
	q := url.Values{}
	if !unfiltered {
		q = matchQuery(match)
	}
	err := walkPages(ctx, a, listPath, q, pg, items, hasItems, idPath, func(list []any) bool {
		for _, it := range list {
			m, ok := it.(map[string]any)
			if ok && matches(m, match) {
				found = &object{id: idOf(m, idPath), doc: m}
				return true
			}
		}
		return false
	})
	return found, err
}

// afterCursor marks a cursor that is sent as after=<id>.
const afterCursor = "after:"

func itemsOf(doc any, items pointer, hasItems bool) ([]any, error) {
	if hasItems {
		v, ok := items.get(doc)
		l, isL := v.([]any)
		if !ok || !isL {
			return nil, errs.New(errs.PROVIDER_RESPONSE, "the answer has no list at the items pointer")
		}
		return l, nil
	}
	if l, ok := doc.([]any); ok {
		return l, nil
	}
	if m, ok := doc.(map[string]any); ok {
		for _, k := range []string{"items", "data", "results", "result"} {
			if l, ok := m[k].([]any); ok {
				return l, nil
			}
		}
	}
	return nil, errs.New(errs.PROVIDER_RESPONSE, "the answer is not a list, nor an object with items, data or results (set list.items)")
}

func matches(m map[string]any, match map[string]string) bool {
	for k, want := range match {
		v, ok := m[k]
		if strings.HasPrefix(k, "/") {
			ptr, pok := parsePointer(k)
			if !pok {
				return false
			}
			v, ok = ptr.get(any(m))
		}
		if !ok {
			return false
		}
		if s, ok := scalar(v); !ok || s != want {
			return false
		}
	}
	return true
}

// find returns the line's object, or nil.
func (op *ResourceOp) find(ctx context.Context, a httpclient.API, r resourceReq) (*object, error) {
	if r.match == nil {
		return get(ctx, a, r.read.path, r.api.objectPath, r.idPath)
	}
	it, err := findIn(ctx, a, r.listPath, r.listItems, r.hasItems, r.match, r.idPath, r.listUnfiltered, r.paging)
	if err != nil || it == nil {
		return nil, err
	}
	if it.id == "" {
		return nil, errs.New(errs.PROVIDER_RESPONSE, "%s: the object found in %s has no id at id_path", a.Provider, r.listPath)
	}
	if r.fromList {
		return it, nil // the API has no read of one object: the listing's item is it
	}
	return get(ctx, a, fill(r.read.path, it.id), r.api.objectPath, r.idPath)
}

// findByID reads the object by an id the ledger recorded (one request
// instead of a listing and a read) when it still answers and still matches
// the line; otherwise it finds it the usual way (deleted and re-created
// objects have a new id: that must show as drift, never be missed).
func (op *ResourceOp) findByID(ctx context.Context, a httpclient.API, r resourceReq, id string) (*object, error) {
	if id == "" || r.match == nil || r.fromList || !strings.Contains(r.read.path, "{id}") {
		return op.find(ctx, a, r)
	}
	o, err := get(ctx, a, fill(r.read.path, id), r.api.objectPath, r.idPath)
	if err != nil {
		return nil, err
	}
	if o != nil && o.id == id && matches(o.doc, r.match) {
		return o, nil
	}
	return op.find(ctx, a, r)
}

// value is the part of the object the line controls: the fields' keys.
func value(doc map[string]any, fields map[string]any) map[string]any {
	out := make(map[string]any, len(fields))
	for k := range fields {
		out[k] = doc[k]
	}
	return out
}

func (op *ResourceOp) resource(r resourceReq, o *object) adapter.Resource {
	outs := map[string]any{"id": o.id}
	for name, os := range r.outputs {
		if v, ok := os.ptr.get(any(o.doc)); ok {
			outs[name] = v
		}
	}
	return adapter.Resource{Key: r.key, ID: o.id, Value: value(o.doc, r.fields), Outputs: outs}
}

func (op *ResourceOp) connect(req adapter.Request) (resourceReq, httpclient.API, error) {
	r, err := op.parse(req.Params, req.Provider, false, true)
	if err != nil {
		return r, httpclient.API{}, err
	}
	a, err := r.api.client(op.Env, op.Client)
	return r, a, err
}

// Read finds the object and returns it with its outputs.
func (op *ResourceOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, a, err := op.connect(req)
	if err != nil {
		return nil, err
	}
	o, err := op.findByID(ctx, a, r, req.IDs[r.key])
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if o != nil {
		res := op.resource(r, o)
		live.Resources = append(live.Resources, res)
		live.Outputs = res.Outputs
	}
	return live, nil
}

// desired resolves Keep markers against the live value: a kept field takes
// the live value, or is left out when nothing is live.
func desired(fields, live map[string]any, hasLive bool) map[string]any {
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		if m, ok := adapter.MarkerOf(v); ok && m.Kind == adapter.Keep {
			if lv, has := live[k]; hasLive && has {
				out[k] = lv
			}
			continue
		}
		out[k] = v
	}
	return out
}

// Diff: create when the object is missing, update when a field differs
// (each field compared whole, in canonical form), unchanged otherwise.
// Values are not shown (a field may hold a secret); a pending or secret
// field differs from anything and leaves Desired nil.
func (op *ResourceOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, false, false)
	if err != nil {
		return nil, err
	}
	d := adapter.ResourceDiff{Key: r.key}
	lr := live.Resource(r.key)
	var lv map[string]any
	if lr != nil {
		lv, _ = lr.Value.(map[string]any)
	}
	want := desired(r.fields, lv, lr != nil)
	if !adapter.HasMarker(want) {
		d.Desired = want
	}
	if lr == nil {
		d.Action = adapter.Create
		return []adapter.ResourceDiff{d}, nil
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if adapter.HasMarker(want[k]) || !adapter.Equal(want[k], lv[k]) {
			d.Fields = append(d.Fields, adapter.FieldDiff{Path: "fields." + k})
		}
	}
	d.Action = adapter.Unchanged
	if len(d.Fields) > 0 {
		d.Action = adapter.Update
	} else {
		d.Desired = lr.Value
	}
	return []adapter.ResourceDiff{d}, nil
}

// Apply creates the object (intend first; a lost answer is resolved by
// finding it again, never by a second create) or updates the fields that
// differ; nothing when it is as planned. It starts from live, the read the
// engine made just before, when there is one: a create is then the create
// request alone when its answer is the object (two requests with the
// read), an update is one read by id, the update and its answer.
func (op *ResourceOp) Apply(ctx context.Context, req adapter.Request, live *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, a, err := op.connect(req)
	if err != nil {
		return nil, err
	}
	if err := param.Concrete(resourceOp, "fields", r.fields); err != nil {
		return nil, err
	}
	for _, rq := range []struct {
		name string
		body map[string]any
	}{{"create.body", r.create.body}, {"update.body", r.update.body}} {
		if err := param.Concrete(resourceOp, rq.name, rq.body); err != nil {
			return nil, err
		}
	}
	var o *object
	switch lr := live.Resource(r.key); {
	case live == nil:
		o, err = op.find(ctx, a, r)
	case lr != nil:
		o, err = op.findByID(ctx, a, r, lr.ID)
	}
	if err != nil {
		return nil, err
	}
	var created []string
	switch {
	case o == nil && r.keep:
		// Kept: not Sponson's to delete, so it is not intended and not
		// reported created (the ledger records it adopted).
		if o, err = op.create(ctx, a, r); err != nil {
			return nil, err
		}
	case o == nil:
		if err := intend(r.key); err != nil {
			return nil, err
		}
		if o, err = op.create(ctx, a, r); err != nil {
			return nil, err
		}
		created = []string{r.key}
	default:
		if o, err = op.update(ctx, a, r, o); err != nil {
			return nil, err
		}
	}
	res := op.resource(r, o)
	return &adapter.Result{Resources: []adapter.Resource{res}, Created: created, Outputs: res.Outputs}, nil
}

// create sends the create and answers the object: from the answer when it
// holds the id and everything the line controls and matches by, else read
// back (the answer may be lost, the intent says what to look for, or
// partial).
func (op *ResourceOp) create(ctx context.Context, a httpclient.API, r resourceReq) (*object, error) {
	body := r.create.body
	if body == nil {
		body = desired(r.fields, nil, false)
	}
	var resp map[string]any
	ap := r.api
	ap.encoding = r.encoding
	err := ap.send(ctx, a, r.create.method, r.create.path, body, r.create.method == http.MethodPut, true, &resp)
	if err != nil && !httpclient.IsAmbiguous(err) && errs.CodeOf(err) != errs.PROVIDER_RESPONSE {
		return nil, err
	}
	// The answer is the object when it has an id and everything the
	// line controls and matches by; else read back: the answer may be
	// lost (the intent says what to look for) or partial.
	if err == nil {
		if doc := unwrap(resp, r.api.objectPath); doc != nil && complete(doc, r) {
			return &object{id: idOf(doc, r.idPath), doc: doc}, nil
		}
	}
	found, ferr := op.find(ctx, a, r)
	if ferr != nil {
		return nil, ferr
	}
	if found == nil && err == nil && r.match == nil {
		return nil, errs.New(errs.PROVIDER_RESPONSE, "%s: %s answers 404 right after the create", a.Provider, r.read.path)
	}
	if found == nil && err == nil {
		if id := idOf(unwrap(resp, r.api.objectPath), r.idPath); id != "" {
			found, ferr = get(ctx, a, fill(r.read.path, id), r.api.objectPath, r.idPath)
			if ferr != nil {
				return nil, ferr
			}
		}
	}
	if found == nil {
		if err != nil {
			return nil, err
		}
		return nil, errs.New(errs.PROVIDER_RESPONSE, "%s: the object created in %s cannot be found by match %v", a.Provider, r.create.path, r.match).
			WithHint("Check that match names fields the API returns exactly as sent, or set read.path and id_path.")
	}
	// What only the create answers (a new key's token, a once output)
	// joins the object as read.
	if created := unwrap(resp, r.api.objectPath); err == nil && created != nil && idOf(created, r.idPath) == found.id {
		doc := maps.Clone(found.doc)
		for k, v := range created {
			if _, ok := doc[k]; !ok {
				doc[k] = v
			}
		}
		found = &object{id: found.id, doc: doc}
	}
	return found, nil
}

// update writes the object when what the line controls differs, and
// answers it as it now is.
func (op *ResourceOp) update(ctx context.Context, a httpclient.API, r resourceReq, o *object) (*object, error) {
	var err error
	want := desired(r.fields, o.doc, true)
	if !adapter.Equal(want, value(o.doc, r.fields)) {
		body := r.update.body
		if body == nil {
			body = want
		}
		ap := r.api
		ap.encoding = r.encoding
		if err := ap.send(ctx, a, r.update.method, fill(r.update.path, o.id), body, r.update.method != http.MethodPost, false, nil); err != nil {
			return nil, err
		}
		if o, err = op.findByID(ctx, a, r, o.id); err != nil {
			return nil, err
		}
		if o == nil {
			return nil, errs.New(errs.PROVIDER_NOT_FOUND, "%s: the object %s vanished during its update", a.Provider, r.key)
		}
	}
	return o, nil
}

// complete reports whether a create's answer is the whole object as a
// read would return it: an id, every field the line controls, and the
// match it is found by.
func complete(doc map[string]any, r resourceReq) bool {
	if idOf(doc, r.idPath) == "" || (r.match != nil && !matches(doc, r.match)) {
		return false
	}
	for k := range r.fields {
		if _, ok := doc[k]; !ok {
			return false
		}
	}
	return true
}

// keyParts splits a resource key: the api, and either the fixed read path
// or the collection with its match.
func keyParts(key string) (apiName, path string, match map[string]string, ok bool) {
	apiName, rest, ok := splitAPIKey(key)
	if !ok {
		return "", "", nil, false
	}
	path, query, templated := strings.Cut(rest, "?")
	if !templated {
		return apiName, path, nil, true
	}
	q, err := url.ParseQuery(query)
	if err != nil || len(q) == 0 {
		return "", "", nil, false
	}
	match = map[string]string{}
	for k, v := range q {
		match[k] = v[0]
	}
	return apiName, path, match, true
}

// locate finds the object of a key with the API's defaults (a ledger entry
// has no parameters): the collection's items at items/data/results, the
// object at <collection>/<id>, the id at /id.
func (op *ResourceOp) locate(ctx context.Context, p adapter.Provider, key string) (httpclient.API, string, *object, error) {
	apiName, path, match, ok := keyParts(key)
	if !ok {
		return httpclient.API{}, "", nil, errs.New(errs.PARAM_INVALID, "%s: %q is not an http.resource key (<api>:<path> or <api>:<collection>?<match>)", resourceOp, key)
	}
	ap, err := resolveAPI(p, apiName, op.Env, true)
	if err != nil {
		return httpclient.API{}, "", nil, err
	}
	a, err := ap.client(op.Env, op.Client)
	if err != nil {
		return a, "", nil, err
	}
	idPath := pointer{"id"}
	if len(ap.idPath) > 0 {
		idPath = ap.idPath
	}
	if match == nil {
		o, err := get(ctx, a, path, ap.objectPath, idPath)
		return a, path, o, err
	}
	// By key the listing's filter setting is not known: the match is
	// found in the pages, which any API answers.
	it, err := findIn(ctx, a, path, ap.listItems, ap.hasItems, match, idPath, true, ap.paging)
	if err != nil || it == nil || it.id == "" {
		return a, "", nil, err
	}
	objPath := objectPath(path, ap.listSuffix, it.id)
	o, err := get(ctx, a, objPath, ap.objectPath, idPath)
	return a, objPath, o, err
}

// objectPath is where the object id of a key's listing path is read and
// deleted: <collection>/<id>, the collection being the listing's path
// without the API's list suffix (SendGrid's /all).
func objectPath(listPath, listSuffix, id string) string {
	p := strings.TrimRight(strings.TrimSuffix(listPath, listSuffix), "/") + "/" + url.PathEscape(id)
	if strings.HasSuffix(listPath, "/") {
		p += "/" // Sentry's paths end in a slash
	}
	return p
}

// locateRecorded is locate of an entry whose id the ledger records: an
// object of a collection is read at <collection>/<id>, one read and no
// listing, and is the entry's only while its match fields still say so
// (nil otherwise, as for one that is gone).
func (op *ResourceOp) locateRecorded(ctx context.Context, p adapter.Provider, r adapter.Resource) (httpclient.API, string, *object, error) {
	apiName, path, match, ok := keyParts(r.Key)
	if !ok || match == nil || r.ID == "" {
		return op.locate(ctx, p, r.Key)
	}
	ap, err := resolveAPI(p, apiName, op.Env, true)
	if err != nil {
		return httpclient.API{}, "", nil, err
	}
	a, err := ap.client(op.Env, op.Client)
	if err != nil {
		return a, "", nil, err
	}
	idPath := pointer{"id"}
	if len(ap.idPath) > 0 {
		idPath = ap.idPath
	}
	objPath := objectPath(path, ap.listSuffix, r.ID)
	o, err := get(ctx, a, objPath, ap.objectPath, idPath)
	if err != nil || o == nil || !matches(o.doc, match) {
		return a, "", nil, err
	}
	return a, objPath, o, nil
}

// Lookup finds the object of a key; nil, nil when it does not exist. The
// value is not known without the line's fields: Value is nil, the id and
// the id output are set.
func (op *ResourceOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	_, _, o, err := op.locate(ctx, p, key)
	if err != nil || o == nil {
		return nil, err
	}
	return &adapter.Resource{Key: key, ID: o.id, Outputs: map[string]any{"id": o.id}}, nil
}

// Destroy deletes the object of r.Key at its path (<collection>/<id>, or the
// fixed read path). Gone, or replaced by an object with another id, is
// success and touches nothing.
func (op *ResourceOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	a, path, o, err := op.locateRecorded(ctx, p, r)
	if err != nil || o == nil {
		return err
	}
	if r.ID != "" && o.id != r.ID {
		return nil
	}
	err = a.Send(ctx, http.MethodDelete, path, nil, nil, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

// LineOutputs is id plus the names the line declares under outputs:.
func (op *ResourceOp) LineOutputs(params map[string]any) []string {
	out := []string{"id"}
	m, _ := params["outputs"].(map[string]any)
	names := make([]string, 0, len(m))
	for name := range m {
		if name != "id" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return append(out, names...)
}

var _ adapter.LineOutputser = (*ResourceOp)(nil)

var _ adapter.Expander = (*ResourceOp)(nil)

// Expand declares the line's outputs with their sensitivity: the line
// stays what it is (an http.resource), and the engine masks and keeps out
// of receipts the outputs marked sensitive, as it does any op's.
func (op *ResourceOp) Expand(params map[string]any, p adapter.Provider, _ adapter.RunCtx) (*adapter.Expansion, error) {
	outs, err := readOutputs(params)
	if err != nil {
		return nil, err
	}
	specs := []adapter.OutputSpec{resourceSpec.Outputs[0]}
	names := make([]string, 0, len(outs))
	for name := range outs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		os := outs[name]
		specs = append(specs, adapter.OutputSpec{Name: name, When: adapter.Immediate, Sensitive: os.sensitive, Once: os.once})
	}
	return &adapter.Expansion{Op: "resource", Params: params, Provider: p, Outputs: specs}, nil
}
