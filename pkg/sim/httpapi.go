package sim

// The generic REST API under /http, for the http.resource and
// http.list_item adapters. It is the sim's own design, not a provider's,
// so it has no assumptions to check; its contract is this:
//
//   Auth: "Authorization: Bearer $SIM_HTTP_TOKEN", or basic auth with the
//   token as the password (or as the user name with no password), or the
//   token in one of the credential headers of HTTPCredentialHeaders (the
//   recipes' targets that use a header of their own); otherwise 401 with
//   "WWW-Authenticate: Bearer" and an error body.
//   Bodies: JSON, or application/x-www-form-urlencoded with nested
//   values in bracket notation (a[b]=v, a[0]=v), read as the same object.
//   Errors: {"error":{"code":"not_found"|"conflict"|"bad_request"|
//   "unauthorized"|"precondition_failed"|...,"message":"..."}}.
//
//   Any collection path works, nested too (/http/repos/o/r/hooks); slashes
//   at the ends are ignored. Objects are JSON objects with a string "id".
//   GET of a one-segment path, of a collection that exists or of a path a
//   shape rule names lists it; GET of <collection>/<id> where the
//   collection exists reads the object (404 when absent); anything else is
//   404.
//   SetHTTPShape makes matching collections follow a provider's
//   conventions: another field addresses objects (Sentry's release
//   version, Svix's uid, Turso's database name), an envelope around
//   objects ({"result": {...}}, {"database": {...}}) and lists
//   ({"result": [...]}, {"data": [...]}), a bare array for lists
//   (GitHub), and fields the server fills on create (a slug made from the
//   name, a creation time).
//
//   POST   /http/{collection}        body: a JSON object (an "id" string may
//                                    be given; 409 if taken) → 201, the object
//                                    with its "id", Location and ETag headers;
//                                    with an Idempotency-Key seen before, the
//                                    object that key created, and nothing new
//   GET    /http/{collection}/{id}   → 200 the object, ETag; 404
//   PUT    /http/{collection}/{id}   body: the whole object → 200; replaces
//                                    every field ("id" may be repeated, not
//                                    changed: 400); 404 (no upsert)
//   PATCH  /http/{collection}/{id}   body: a JSON merge patch (RFC 7386:
//                                    null deletes, objects merge, arrays and
//                                    scalars replace) → 200 the object
//   DELETE /http/{collection}/{id}   → 204; 404
//   GET    /http/{collection}        → 200 {"items":[...],"next_cursor":
//                                    "..."|null}; query: limit (default 100,
//                                    max 1000), cursor (from next_cursor), and
//                                    any other parameter filters top-level
//                                    fields by equality of their string form
//
//   PUT, PATCH and DELETE honour If-Match (412 on a stale ETag); without it
//   they apply unconditionally. ETags are "\"v<version>\"".
//
// A parent object with a list is just an object: the list is an array
// field ({"redirects":["https://a"]}), a delimited string field
// ({"origins":"https://a,https://b"}) or a map field ({"headers":{"k":"v"}}),
// read with GET and written whole with PUT or PATCH.

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// HTTPObject is one object of the generic API.
type HTTPObject struct {
	Collection string         `json:"collection"`
	ID         string         `json:"id"`
	Fields     map[string]any `json:"fields"` // includes "id"
	Version    int            `json:"version"`
	Origin     Origin         `json:"origin"`
}

// generic is the generic REST API served under /http.
type generic struct {
	*core
	routes      *api
	collections map[string]*httpCollection
	order       []string
	shapes      []httpShapeRule
	// idem are the objects created with an Idempotency-Key, by key: a
	// repeat of the create answers the object again, as Stripe does.
	idem map[string]*HTTPObject
}

// HTTPShape is how the generic API answers for the collections a pattern
// names, so a provider's REST conventions can be stood in for without a
// provider model: which field addresses an object, and the envelopes
// around objects and lists.
type HTTPShape struct {
	// IDField is the field whose value addresses an object in its
	// collection ({collection}/{value}); default "id". When it is not "id",
	// an "id" is still generated when the body has none.
	IDField string `json:"id_field,omitempty"`
	// Object wraps every single-object answer: {"<Object>": {...}}.
	Object string `json:"object,omitempty"`
	// List names the array of a list answer (default "items", beside
	// next_cursor); BareList answers the array alone.
	List     string `json:"list,omitempty"`
	BareList bool   `json:"bare_list,omitempty"`
	// NumericID makes generated ids decimal numbers, as GitHub's hook ids
	// are (its description types hook_id as an integer).
	NumericID bool `json:"numeric_id,omitempty"`
	// AfterPaging pages lists as Resend does: {"object": "list",
	// "has_more": bool, <List>: [...]}, the next page asked for with
	// after=<the last id>, instead of next_cursor and cursor.
	AfterPaging bool `json:"after_paging,omitempty"`
	// Generated are fields the server sets on create, as most APIs set a
	// slug and a creation time the client never sends: field → "now" (the
	// clock's time, RFC 3339), "slug:<field>" (that string field lower
	// cased, every run of characters outside [a-z0-9] one "-"), "token" (a
	// random secret string) or "tokens" (an array of one). A field the
	// body gives is kept.
	Generated map[string]string `json:"generated,omitempty"`
	// Once are fields answered to the create only (a new API key's
	// token): reads and lists leave them out.
	Once []string `json:"once,omitempty"`
	// LinkPaging pages lists with a Link header (RFC 8288) rel="next"
	// whose URL carries cursor=, and a bare array, as GitHub and Sentry
	// do; Sentry's results="true"/"false" attributes are set too.
	LinkPaging bool `json:"link_paging,omitempty"`
	// OffsetParam and SizeParam page lists by offset and page size, as
	// Postmark's count and offset (a list answer then carries
	// "TotalCount"); both are required when set.
	OffsetParam string `json:"offset_param,omitempty"`
	SizeParam   string `json:"size_param,omitempty"`
	// ListSuffix is a last path segment that lists the collection
	// (SendGrid's .../settings/all) instead of naming an object.
	ListSuffix string `json:"list_suffix,omitempty"`
	// PostUpdates: POST to an object's path is a merge-patch update, as
	// GrowthBook updates a feature with POST /features/{id}.
	PostUpdates bool `json:"post_updates,omitempty"`
	// CreateStatus is the status of a create (default 201; Honeycomb,
	// Postmark and SendGrid answer 200).
	CreateStatus int `json:"create_status,omitempty"`
	// DeleteStatus and DeleteBody are a delete's answer (default 204 and
	// no body); "{id}" in the body is the object's id as JSON.
	DeleteStatus int    `json:"delete_status,omitempty"`
	DeleteBody   string `json:"delete_body,omitempty"`
	// Envelope are fields beside the object or list in every answer
	// (Cloudflare's success, errors, messages).
	Envelope map[string]any `json:"envelope,omitempty"`
	// Errors is the error format: "" the sim's own, "github", "svix",
	// "turso" or "cloudflare" (each as its description defines it).
	Errors string `json:"errors,omitempty"`
	// EntryIDs are JSON pointers to arrays of objects whose entries the
	// server gives an "id" when written without one, as Statsig,
	// GrowthBook and Split give a rule theirs.
	EntryIDs []string `json:"entry_ids,omitempty"`
	// IDPrefix and IDLength make generated "id"s the provider's form
	// (Svix's ep_ and 27 characters) when IDField is another field.
	IDPrefix string `json:"id_prefix,omitempty"`
	IDLength int    `json:"id_length,omitempty"`
	// Checked: the answers are the provider's own and are validated
	// against its description (the shapes of HTTPTargets); a shape made
	// for a test's envelope only leaves answers unchecked.
	Checked bool `json:"checked,omitempty"`
}

// HTTPCredentialHeaders are the headers of the recipes' targets that carry
// a credential of their own instead of Authorization; the generic API
// accepts its token in any of them.
var HTTPCredentialHeaders = []string{"X-Postmark-Server-Token", "X-Postmark-Account-Token", "X-Honeycomb-Team", "Statsig-Api-Key"}

// authorized accepts the token as a bearer token, as basic auth's password
// (or its user name with an empty password), or in a credential header.
func (g *generic) authorized(r *http.Request) bool {
	tok := g.tokens.HTTP
	h := r.Header.Get("Authorization")
	if h == "Bearer "+tok {
		return true
	}
	if u, pw, ok := r.BasicAuth(); ok && (pw == tok || (u == tok && pw == "")) {
		return true
	}
	for _, name := range HTTPCredentialHeaders {
		if v := r.Header.Get(name); v != "" && v == tok {
			return true
		}
	}
	return false
}

// postUpdates reports whether a POST names an existing object of a
// collection whose shape updates with POST.
func (g *generic) postUpdates(r *http.Request) bool {
	coll, id := objectPath(r)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shapeOf(coll).PostUpdates && g.find(coll, id) != nil
}

// decodeBody decodes a request body: JSON, or a form with nested values
// in bracket notation.
func decodeBody(r *http.Request, body []byte) (map[string]any, bool) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return decodeFields(body)
	}
	q, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, false
	}
	m := map[string]any{}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name, rest, _ := strings.Cut(k, "[")
		path := []string{name}
		for rest != "" {
			part, after, ok := strings.Cut(rest, "]")
			if !ok {
				return nil, false
			}
			path = append(path, part)
			rest = strings.TrimPrefix(after, "[")
		}
		setForm(m, path, q.Get(k))
	}
	return fixArrays(m).(map[string]any), true
}

// setForm sets a form value at its bracket path (maps first; fixArrays
// turns maps keyed 0..n-1 into arrays).
func setForm(m map[string]any, path []string, v string) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

func fixArrays(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, x := range m {
		m[k] = fixArrays(x)
	}
	if len(m) == 0 {
		return m
	}
	arr := make([]any, len(m))
	for i := range arr {
		x, ok := m[strconv.Itoa(i)]
		if !ok {
			return m
		}
		arr[i] = x
	}
	return arr
}

type httpShapeRule struct {
	pattern string
	shape   HTTPShape
}

// SetHTTPShape makes the collections matching pattern (path.Match syntax
// over the collection path without slashes at the ends, such as
// "zones/*/dns_records") answer in shape. Later rules win. Reset clears
// them.
func (k Console) SetHTTPShape(pattern string, shape HTTPShape) {
	c := k.c
	lookup[*generic](c).setHTTPShape(pattern, shape)
}

func (g *generic) setHTTPShape(pattern string, shape HTTPShape) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shapes = append(g.shapes, httpShapeRule{pattern: strings.Trim(pattern, "/"), shape: shape})
}

// shapeOf returns the shape of a collection. Callers hold g.mu.
func (g *generic) shapeOf(coll string) HTTPShape {
	var s HTTPShape
	for _, r := range g.shapes {
		if ok, _ := path.Match(r.pattern, coll); ok {
			s = r.shape
		}
	}
	if s.IDField == "" {
		s.IDField = "id"
	}
	return s
}

// collectionPath is the request's path without slashes at the ends: the
// collection of a create or a list.
func collectionPath(r *http.Request) string { return strings.Trim(r.PathValue("path"), "/") }

// objectPath splits the request's path into collection and id.
func objectPath(r *http.Request) (coll, id string) {
	p := collectionPath(r)
	i := strings.LastIndex(p, "/")
	if i < 0 {
		return p, ""
	}
	return p[:i], p[i+1:]
}

type httpCollection struct {
	objs []*HTTPObject
}

func newGeneric(c *core) provider {
	g := &generic{core: c, collections: map[string]*httpCollection{}, idem: map[string]*HTTPObject{}}
	g.routes = g.newAPI()
	return g
}

func (g *generic) api() *api { return g.routes }

func (g *generic) reset() {
	g.collections, g.order, g.shapes, g.idem = map[string]*httpCollection{}, nil, nil, map[string]*HTTPObject{}
}

func (g *generic) newAPI() *api {
	p := &api{name: ProviderHTTP, mux: http.NewServeMux(), token: func() string { return g.tokens.HTTP }}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) {
		if code == "sim_injected_failure" {
			code = strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_")
		}
		httpErr(w, status, code, msg)
	}
	p.authorizedRequest = g.authorized
	p.deny = func(w http.ResponseWriter, missing bool) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sim"`)
		httpErr(w, http.StatusUnauthorized, "unauthorized", "missing or invalid bearer token")
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		httpErr(w, http.StatusTooManyRequests, "rate_limited", "too many requests")
	}
	p.handle("POST /{path...}", g.targeted(g.create))
	p.handle("GET /{path...}", g.targeted(g.getOrList))
	p.handle("PUT /{path...}", g.targeted(g.replace))
	p.handle("PATCH /{path...}", g.targeted(g.patch))
	p.handle("DELETE /{path...}", g.targeted(g.delete))
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
		httpErr(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
	})
	p.env = func(url string) []string { return []string{HTTPURLVar + "=" + url, HTTPTokenVar + "=" + g.tokens.HTTP} }
	// Requests to the targets' paths are checked always; answers where
	// the collection has a target's shape (HTTPTargets, Checked), which
	// answers as the provider does, not only in its envelope.
	p.described = describedAs{files: []string{"github-hooks", "resend", "svix", "turso", "unleash", "cloudflare"}, partial: true, requestsOnly: true,
		answersChecked: g.answersChecked}
	return p
}

func httpErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

func etag(o *HTTPObject) string { return `"v` + strconv.Itoa(o.Version) + `"` }

func (g *generic) find(coll, id string) *HTTPObject {
	if col := g.collections[coll]; col != nil {
		for _, o := range col.objs {
			if o.ID == id {
				return o
			}
		}
	}
	return nil
}

func (g *generic) collection(name string) *httpCollection {
	col := g.collections[name]
	if col == nil {
		col = &httpCollection{}
		g.collections[name] = col
		g.order = append(g.order, name)
	}
	return col
}

// decodeFields decodes a JSON object body keeping numbers exact.
func decodeFields(body []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// httpObjectResponse answers one object in its collection's shape.
// Callers hold g.mu.
func (g *generic) objectResponse(w http.ResponseWriter, status int, o *HTTPObject) {
	g.objectResponseAll(w, status, o, false)
}

// objectResponseAll answers one object; the fields the shape answers to
// the create only (Once) are left out unless created.
func (g *generic) objectResponseAll(w http.ResponseWriter, status int, o *HTTPObject, created bool) {
	w.Header().Set("ETag", etag(o))
	sh := g.shapeOf(o.Collection)
	fields := visible(sh, o.Fields, created)
	if env := sh.Object; env != "" {
		writeJSON(w, status, withEnvelope(sh, map[string]any{env: fields}))
		return
	}
	writeJSON(w, status, fields)
}

// visible is what the API answers of an object: without the create-only
// fields, unless created.
func visible(sh HTTPShape, f map[string]any, created bool) map[string]any {
	if created || len(sh.Once) == 0 {
		return f
	}
	out := make(map[string]any, len(f))
	for k, v := range f {
		if !slices.Contains(sh.Once, k) {
			out[k] = v
		}
	}
	return out
}

func (g *generic) create(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	m, ok := decodeBody(r, body)
	if !ok {
		httpErr(w, http.StatusBadRequest, "bad_request", "body must be a JSON object")
		return
	}
	if g.postUpdates(r) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		g.patch(w, r)
		return
	}
	coll := collectionPath(r)
	if coll == "" {
		httpErr(w, http.StatusNotFound, "not_found", "no collection")
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	sh := g.shapeOf(coll)
	key := r.Header.Get("Idempotency-Key")
	if o, ok := g.idem[key]; ok && key != "" {
		g.objectResponseAll(w, cmp.Or(sh.CreateStatus, http.StatusCreated), o, true)
		return
	}
	id, given := m[sh.IDField].(string)
	if _, present := m[sh.IDField]; present && (!given || id == "" || strings.Contains(id, "/")) {
		httpErr(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("%q must be a non-empty string without /", sh.IDField))
		return
	}
	if given {
		if g.find(coll, id) != nil {
			httpErr(w, http.StatusConflict, "conflict", fmt.Sprintf("%s/%s already exists", coll, id))
			return
		}
	} else if sh.NumericID {
		id = strconv.Itoa(1 + g.rng.IntN(1<<30))
	} else {
		id = "obj_" + g.randString(12, lowerDigits)
	}
	m[sh.IDField] = id
	if sh.NumericID {
		m[sh.IDField] = json.Number(id)
	}
	if _, ok := m["id"]; !ok {
		m["id"] = "obj_" + g.randString(12, lowerDigits)
		if sh.IDPrefix != "" {
			m["id"] = sh.IDPrefix + g.randString(sh.IDLength-len(sh.IDPrefix), alnum)
		}
	}
	for f, kind := range sh.Generated {
		if _, given := m[f]; !given {
			m[f] = g.generated(kind, m, coll, id)
		}
	}
	o := &HTTPObject{Collection: coll, ID: id, Fields: m, Version: 1, Origin: OriginAPI}
	col := g.collection(coll)
	col.objs = append(col.objs, o)
	if key != "" {
		g.idem[key] = o
	}
	w.Header().Set("Location", "/"+ProviderHTTP+"/"+coll+"/"+id)
	g.objectResponseAll(w, cmp.Or(sh.CreateStatus, http.StatusCreated), o, true)
}

// httpGetOrList answers GET: a one-segment path, a collection that exists
// and a path a shape rule names are lists; <collection>/<id> of a
// collection that exists is an object (404 when absent); anything else is
// 404.
func (g *generic) getOrList(w http.ResponseWriter, r *http.Request) {
	p := collectionPath(r)
	coll, _ := objectPath(r)
	g.mu.Lock()
	_, isColl := g.collections[p]
	listed := false
	if sfx := g.shapeOf(coll).ListSuffix; sfx != "" && path.Base(p) == sfx {
		listed = true
	}
	_, inColl := g.collections[coll]
	shaped := false
	for _, rule := range g.shapes {
		if ok, _ := path.Match(rule.pattern, p); ok {
			shaped = true
		}
	}
	g.mu.Unlock()
	if listed {
		r.SetPathValue("path", coll)
	}
	switch {
	case listed || isColl || shaped || !strings.Contains(p, "/"):
		g.list(w, r)
	case inColl:
		g.get(w, r)
	default:
		httpErr(w, http.StatusNotFound, "not_found", p+" not found")
	}
}

func (g *generic) get(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	coll, id := objectPath(r)
	o := g.find(coll, id)
	if o == nil {
		httpErr(w, http.StatusNotFound, "not_found", coll+"/"+id+" not found")
		return
	}
	g.objectResponse(w, http.StatusOK, o)
}

// httpTarget finds the object of a write and checks If-Match. Callers hold g.mu.
func (g *generic) target(w http.ResponseWriter, r *http.Request) *HTTPObject {
	coll, id := objectPath(r)
	o := g.find(coll, id)
	if o == nil {
		httpErr(w, http.StatusNotFound, "not_found", coll+"/"+id+" not found")
		return nil
	}
	if im := r.Header.Get("If-Match"); im != "" && im != "*" && im != etag(o) {
		httpErr(w, http.StatusPreconditionFailed, "precondition_failed", "If-Match "+im+" does not match "+etag(o))
		return nil
	}
	return o
}

func (g *generic) replace(w http.ResponseWriter, r *http.Request) {
	m, ok := decodeBody(r, readBody(r))
	if !ok {
		httpErr(w, http.StatusBadRequest, "bad_request", "body must be a JSON object")
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.target(w, r)
	if o == nil {
		return
	}
	sh := g.shapeOf(o.Collection)
	if id, present := m[sh.IDField]; present && id != o.ID {
		httpErr(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("%q cannot be changed", sh.IDField))
		return
	}
	if sh.IDField != "id" {
		if _, present := m["id"]; !present {
			m["id"] = o.Fields["id"]
		}
	}
	m[sh.IDField] = o.ID
	o.Fields = m
	g.giveEntryIDs(sh, o.Fields)
	o.Version++
	g.objectResponse(w, http.StatusOK, o)
}

func (g *generic) patch(w http.ResponseWriter, r *http.Request) {
	m, ok := decodeBody(r, readBody(r))
	if !ok {
		httpErr(w, http.StatusBadRequest, "bad_request", "body must be a JSON merge patch object")
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.target(w, r)
	if o == nil {
		return
	}
	sh := g.shapeOf(o.Collection)
	if id, present := m[sh.IDField]; present && id != o.ID {
		httpErr(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("%q cannot be changed", sh.IDField))
		return
	}
	idv := o.Fields["id"]
	o.Fields = mergePatch(o.Fields, m)
	if _, present := o.Fields["id"]; !present || sh.IDField != "id" {
		o.Fields["id"] = idv
	}
	o.Fields[sh.IDField] = o.ID
	g.giveEntryIDs(sh, o.Fields)
	o.Version++
	g.objectResponse(w, http.StatusOK, o)
}

// mergePatch applies an RFC 7386 JSON merge patch to a copy of target.
func mergePatch(target, patch map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range target {
		out[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			tm, _ := out[k].(map[string]any)
			out[k] = mergePatch(tm, pm)
			continue
		}
		out[k] = v
	}
	return out
}

func (g *generic) delete(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.target(w, r)
	if o == nil {
		return
	}
	col := g.collections[o.Collection]
	col.objs = slices.DeleteFunc(col.objs, func(x *HTTPObject) bool { return x == o })
	w.WriteHeader(http.StatusNoContent)
}

func (g *generic) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, offset, msg := cursorPage(r)
	if msg != "" {
		httpErr(w, http.StatusBadRequest, "bad_request", msg)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	coll := collectionPath(r)
	sh := g.shapeOf(coll)
	if sh.OffsetParam != "" {
		var ok bool
		if offset, limit, ok = offsetPage(q, sh); !ok {
			httpErr(w, http.StatusUnprocessableEntity, "bad_request", sh.SizeParam+" and "+sh.OffsetParam+" must be whole numbers ("+sh.SizeParam+" 1 to 500)")
			return
		}
		if ps := pageSizeOf(r); ps > 0 {
			limit = min(limit, ps)
		}
	}
	matched := matching(g.collections[coll], q, sh)
	offset = min(offset, len(matched))
	page := matched[offset:]
	var next any
	if len(page) > limit {
		page = page[:limit]
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(offset + limit)))
	}
	items := []any{}
	for _, o := range page {
		items = append(items, visible(sh, o.Fields, false))
	}
	writePage(w, r, sh, items, next, len(matched))
}

// cursorPage reads the page size (limit, and the test's page-size header)
// and the cursor of a cursor-paged list; msg says what is wrong with them.
func cursorPage(r *http.Request) (limit, offset int, msg string) {
	q := r.URL.Query()
	limit = 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return 0, 0, "limit must be an integer from 1 to 1000"
		}
		limit = n
	}
	if ps := pageSizeOf(r); ps > 0 {
		limit = min(limit, ps)
	}
	if s := q.Get("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 {
			return 0, 0, "invalid cursor"
		}
		offset = n
	}
	return limit, offset, ""
}

// matching is the objects of a collection whose fields equal the query's
// filters, after the object the query's after names (has_more paging).
func matching(col *httpCollection, q url.Values, sh HTTPShape) []*HTTPObject {
	if col == nil {
		return nil
	}
	var matched []*HTTPObject
	after := q.Get("after")
objects:
	for _, o := range col.objs {
		if after != "" {
			if o.ID == after {
				after = ""
			}
			continue
		}
		for k, vs := range q {
			if k == "limit" || k == "cursor" || k == "after" || k == sh.OffsetParam || k == sh.SizeParam {
				continue
			}
			if v, ok := o.Fields[k]; !ok || scalarString(v) != vs[0] {
				continue objects
			}
		}
		matched = append(matched, o)
	}
	return matched
}

// writePage answers one page of a listing in the collection's shape.
func writePage(w http.ResponseWriter, r *http.Request, sh HTTPShape, items []any, next any, total int) {
	switch {
	case sh.LinkPaging:
		linkHeader(w, r, next)
		writeJSON(w, http.StatusOK, items)
	case sh.OffsetParam != "":
		writeJSON(w, http.StatusOK, map[string]any{cmp.Or(sh.List, "items"): items, "TotalCount": total})
	case sh.AfterPaging:
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "has_more": next != nil, cmp.Or(sh.List, "data"): items})
	case sh.BareList:
		writeJSON(w, http.StatusOK, items)
	case sh.List != "" && sh.Envelope != nil:
		writeJSON(w, http.StatusOK, withEnvelope(sh, map[string]any{sh.List: items}))
	case sh.List != "":
		writeJSON(w, http.StatusOK, map[string]any{sh.List: items, "next_cursor": next})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
	}
}

// offsetPage reads the offset and page size of an offset-paged list.
func offsetPage(q url.Values, sh HTTPShape) (offset, size int, ok bool) {
	size, err := strconv.Atoi(q.Get(sh.SizeParam))
	if err != nil || size < 1 || size > 500 {
		return 0, 0, false
	}
	offset, err = strconv.Atoi(cmp.Or(q.Get(sh.OffsetParam), "0"))
	return offset, size, err == nil && offset >= 0
}

// linkHeader links the next page (the same URL with the next cursor), as
// Sentry does: rel="next", with results="true" when there is one and
// "false" on the last page.
func linkHeader(w http.ResponseWriter, r *http.Request, next any) {
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	if r.TLS != nil {
		u.Scheme = "https"
	}
	u.Path, u.RawPath = "/"+ProviderHTTP+r.URL.Path, ""
	q := u.Query()
	results := "false"
	if s, ok := next.(string); ok {
		q.Set("cursor", s)
		results = "true"
	}
	u.RawQuery = q.Encode()
	w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"; results="%s"`, u.String(), results))
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// SeedHTTPObject adds an object to a collection, marked seeded, and returns
// its id (fields["id"] when it is a string, else generated). Fields are
// copied through JSON, so they read back as the API would return them.
func (k Console) SeedHTTPObject(collection string, fields map[string]any) (string, error) {
	c := k.c
	return lookup[*generic](c).seedHTTPObject(collection, fields)
}

func (g *generic) seedHTTPObject(collection string, fields map[string]any) (string, error) {
	m, err := copyFields(fields)
	if err != nil {
		return "", fmt.Errorf("sim: http object fields: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	id, _ := m["id"].(string)
	if id == "" {
		id = "obj_" + g.randString(12, lowerDigits)
	}
	if g.find(collection, id) != nil {
		return "", fmt.Errorf("sim: http object %s/%s exists", collection, id)
	}
	m["id"] = id
	col := g.collection(collection)
	col.objs = append(col.objs, &HTTPObject{Collection: collection, ID: id, Fields: m, Version: 1, Origin: OriginSeed})
	return id, nil
}

// copyFields copies an object's fields through JSON: the one way the
// generic API copies, so a copy reads as the API would return it.
func copyFields(fields map[string]any) (map[string]any, error) {
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	m, ok := decodeFields(b)
	if !ok {
		m = map[string]any{}
	}
	return m, nil
}

// generated is the value of a field a shape's Generated names. Callers
// hold g.mu.
func (g *generic) generated(kind string, m map[string]any, coll, id string) any {
	if lit, ok := strings.CutPrefix(kind, "json:"); ok {
		v, _ := decodeFields([]byte(`{"v":` + lit + `}`))
		return v["v"]
	}
	if kind == "self" || strings.HasPrefix(kind, "self:") {
		return selfURL(coll, id) + strings.TrimPrefix(strings.TrimPrefix(kind, "self"), ":")
	}
	if from, ok := strings.CutPrefix(kind, "slug:"); ok {
		src, _ := m[from].(string)
		var b strings.Builder
		dash := false
		for _, r := range strings.ToLower(src) {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				b.WriteRune(r)
				dash = false
			} else if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
		return strings.TrimSuffix(b.String(), "-")
	}
	switch kind {
	case "token":
		return "tok_" + g.randString(32, alnum)
	case "tokens":
		return []any{"tok_" + g.randString(32, alnum)}
	}
	return g.now().UTC().Format(time.RFC3339)
}

func (g *generic) drift(d Drift) (string, error) {
	o := g.find(d.Project, d.ID)
	if o == nil {
		return "", fmt.Errorf("sim: drift: no http object %s/%s", d.Project, d.ID)
	}
	switch d.Action {
	case DriftChange:
		if d.Field == "" || d.Field == "id" {
			return "", fmt.Errorf("sim: drift: http change needs a field other than id")
		}
		var v any = d.Value
		if json.Valid([]byte(d.Value)) {
			if m, ok := decodeFields([]byte(`{"v":` + d.Value + `}`)); ok {
				v = m["v"]
			}
		}
		o.Fields[d.Field] = v
		o.Version++
		return o.ID, nil
	case DriftDelete, DriftRecreate:
		col := g.collections[o.Collection]
		col.objs = slices.DeleteFunc(col.objs, func(x *HTTPObject) bool { return x == o })
		if d.Action == DriftDelete {
			return o.ID, nil
		}
		n := &HTTPObject{Collection: o.Collection, ID: "obj_" + g.randString(12, lowerDigits), Version: 1, Origin: OriginConsole}
		n.Fields, _ = copyFields(o.Fields)
		n.Fields["id"] = n.ID
		col.objs = append(col.objs, n)
		return n.ID, nil
	case DriftAdd, DriftRemove:
		if d.Field == "" {
			return "", fmt.Errorf("sim: drift: http list edit needs the field of the list")
		}
		if err := editHTTPList(o, d); err != nil {
			return "", err
		}
		o.Version++
		return o.ID, nil
	}
	return "", badAction(d)
}

// snapshot adds the objects of every collection, in the order the collections were made.
func (g *generic) snapshot(s *Snapshot, now time.Time) {
	s.HTTP = []HTTPObject{}
	for _, name := range g.order {
		for _, o := range g.collections[name].objs {
			x := *o
			x.Fields, _ = copyFields(o.Fields)
			s.HTTP = append(s.HTTP, x)
		}
	}
}
