package sim

// Checked against the providers' own descriptions. Every request a
// provider route receives is validated with kin-openapi's openapi3filter
// against the OpenAPI description the provider publishes (the copies in
// testdata/providers, embedded, with their sources in its README), and
// every answer the sim gives against the operation's response schema:
//
//   - vercel, auth0, netlify, cloudflare, clerk and launchdarkly against
//     their own description, beneath the server's base path (/api/v2 of
//     Auth0, /v1 of Clerk);
//   - the generic API under /http against the description whose
//     operation its path and method match, when one does: GitHub's
//     repository webhooks, Resend, Svix, Turso, Unleash and Cloudflare's
//     DNS records, which the recipes stand in for with it. Other paths of
//     the generic API are the sim's own design and are not validated.
//
// Neon, Supabase and PlanetScale publish no description that can be kept
// here; they are built to their documented APIs (their files' numbered
// assumptions) and not validated.
//
// A violation is recorded (Violations), passed to Options.OnViolation and,
// for a request, answered 400 in the provider's own format without being
// applied (a path or method outside the description: 404), so the adapter
// that sent it sees a failure and the test that drove it fails twice over.
// Beyond what openapi3filter checks, a body field or query parameter the
// description does not name is a violation: the provider would ignore it
// (Svix ignores "filterTypes", so the endpoint would get every event),
// and a request that means something the API does not is as wrong as one
// it refuses. An answer of the sim that breaks the description is recorded
// and sent as it is (the adapter is not at fault) and fails the test that
// caused it all the same (CheckDescriptions). Under /http the
// answers are checked where the collection has a recipe target's shape
// (HTTPTargets, Checked), which answers as the provider does; a shape made
// for a test's envelope only (SetHTTPShape) is the sim's own, and only the
// requests to it are checked (ADR 0017).
//
// Where a description is itself wrong, the exception is a row of
// Exceptions citing the provider's documentation, applied to the loaded
// description; validation is never switched off.

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

//go:embed testdata/providers/*.json
var descriptionFiles embed.FS

// Violation is one request the provider's description does not allow, or
// one answer of the sim that breaks it.
type Violation struct {
	Provider    string `json:"provider"`    // the sim's prefix: "vercel", "http", ...
	Description string `json:"description"` // the description's file: "vercel", "resend", ...
	Method      string `json:"method"`
	Path        string `json:"path"`                // beneath the provider prefix
	Operation   string `json:"operation,omitempty"` // operationId, when the route matched one
	// Kind is "route" (no such operation), "request" or "response".
	Kind    string `json:"kind"`
	Status  int    `json:"status,omitempty"` // of the answer, for a response
	Message string `json:"message"`
}

func (v Violation) String() string {
	op := v.Operation
	if op != "" {
		op = " (" + op + ")"
	}
	switch v.Kind {
	case "route":
		return fmt.Sprintf("%s %s %s: no such operation in %s's description", v.Provider, v.Method, v.Path, v.Description)
	case "response":
		return fmt.Sprintf("%s %s %s%s: the sim's answer %d breaks %s's description: %s", v.Provider, v.Method, v.Path, op, v.Status, v.Description, v.Message)
	}
	return fmt.Sprintf("%s %s %s%s: %s's description does not allow this request: %s", v.Provider, v.Method, v.Path, op, v.Description, v.Message)
}

// Descriptions lists the descriptions the sim validates against, by file
// name (testdata/providers/<name>.json).
func Descriptions() []string {
	ents, _ := descriptionFiles.ReadDir("testdata/providers")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// description is one loaded description with its routes.
type description struct {
	name   string
	doc    *openapi3.T
	routes []descRoute // most literal segments first
}

type descRoute struct {
	segs []string
	rt   *routers.Route
}

var (
	descMu    sync.Mutex
	descCache = map[string]*description{}
)

// loadDescription loads an embedded description with every exception row
// of Exceptions applied, once per process.
func loadDescription(name string) (*description, error) {
	descMu.Lock()
	defer descMu.Unlock()
	if d, ok := descCache[name]; ok {
		return d, nil
	}
	d, err := parseDescription(name, Exceptions)
	if err != nil {
		return nil, err
	}
	descCache[name] = d
	return d, nil
}

// parseDescription loads a description and applies the rows of table that
// concern it.
func parseDescription(name string, table []Exception) (*description, error) {
	raw, err := descriptionFiles.ReadFile("testdata/providers/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("sim: no description %s: %w", name, err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("sim: load description %s: %w", name, err)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("sim: description %s: %w", name, err)
	}
	d := &description{name: name, doc: doc}
	for tmpl, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			d.routes = append(d.routes, descRoute{
				segs: strings.Split(strings.Trim(tmpl, "/"), "/"),
				rt:   &routers.Route{Spec: doc, Path: tmpl, PathItem: item, Method: method, Operation: op},
			})
		}
	}
	sort.SliceStable(d.routes, func(i, j int) bool {
		li, lj := literals(d.routes[i].segs), literals(d.routes[j].segs)
		if li != lj {
			return li > lj
		}
		return d.routes[i].rt.Path < d.routes[j].rt.Path
	})
	for _, x := range table {
		if x.Description != name {
			continue
		}
		op := d.operation(x.Operation)
		if op == nil {
			return nil, fmt.Errorf("sim: exception %s/%s: no such operation", x.Description, x.Operation)
		}
		if err := x.apply(op); err != nil {
			return nil, fmt.Errorf("sim: exception %s/%s: %w", x.Description, x.Operation, err)
		}
	}
	return d, nil
}

func literals(segs []string) int {
	n := 0
	for _, s := range segs {
		if !strings.HasPrefix(s, "{") {
			n++
		}
	}
	return n
}

func (d *description) operation(id string) *openapi3.Operation {
	for _, r := range d.routes {
		if r.rt.Operation.OperationID == id {
			return r.rt.Operation
		}
	}
	return nil
}

// match finds the operation of method and path; pathMatched says whether
// the path matched some operation with another method.
func (d *description) match(method, path string) (rt *routers.Route, params map[string]string, pathMatched bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, r := range d.routes {
		p, ok := matchTemplate(r.segs, segs)
		if !ok {
			continue
		}
		pathMatched = true
		if r.rt.Method == method {
			return r.rt, p, true
		}
	}
	return nil, nil, pathMatched
}

func matchTemplate(tmpl, segs []string) (map[string]string, bool) {
	if len(tmpl) != len(segs) {
		return nil, false
	}
	params := map[string]string{}
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return nil, false
			}
			v, err := url.PathUnescape(segs[i])
			if err != nil {
				v = segs[i]
			}
			params[t[1:len(t)-1]] = v
			continue
		}
		if segs[i] != t {
			return nil, false
		}
	}
	return params, true
}

// checked is a request matched to its operation, to validate its answer
// against.
type checked struct {
	desc   *description
	rt     *routers.Route
	params map[string]string
	req    *http.Request
}

// checkRequest matches a request beneath the provider prefix (sub, with
// the raw path in r.URL.EscapedPath) to its description and validates it.
// It returns the match (nil when the request is not described) and the
// violation, if any.
func (c *Cloud) checkRequest(provider string, r *http.Request, sub string, body []byte) (*checked, *Violation) {
	a, ok := c.providers[provider]
	if !ok || len(a.described.files) == 0 {
		return nil, nil
	}
	cfg := a.described
	path := sub
	if cfg.base != "" {
		if !strings.HasPrefix(path, cfg.base+"/") {
			return nil, &Violation{Provider: provider, Description: cfg.files[0], Method: r.Method, Path: sub, Kind: "route"}
		}
		path = strings.TrimPrefix(path, cfg.base)
	}
	rawPath := strings.TrimPrefix(r.URL.EscapedPath(), "/"+provider+cfg.base)
	var (
		desc   *description
		rt     *routers.Route
		params map[string]string
	)
	for _, f := range cfg.files {
		d, err := loadDescription(f)
		if err != nil {
			return nil, &Violation{Provider: provider, Description: f, Method: r.Method, Path: sub, Kind: "request", Message: err.Error()}
		}
		if x, p, _ := d.match(r.Method, rawPath); x != nil {
			desc, rt, params = d, x, p
			break
		}
	}
	if rt == nil {
		if cfg.partial {
			return nil, nil
		}
		return nil, &Violation{Provider: provider, Description: cfg.files[0], Method: r.Method, Path: sub, Kind: "route"}
	}
	_ = path
	v := &Violation{Provider: provider, Description: desc.name, Method: r.Method, Path: sub, Operation: rt.Operation.OperationID, Kind: "request"}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	if len(body) == 0 {
		r2.Header.Del("Content-Type")
	}
	in := &openapi3filter.RequestValidationInput{Request: r2, PathParams: params, Route: rt, Options: requestOpts}
	var msgs []string
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		msgs = append(msgs, trimMsg(err.Error()))
	}
	msgs = append(msgs, undeclaredQuery(rt, r.URL.Query())...)
	if len(body) > 0 {
		msgs = append(msgs, undeclaredBody(rt, r.Header.Get("Content-Type"), body)...)
	}
	ck := &checked{desc: desc, rt: rt, params: params, req: r2}
	if len(msgs) > 0 {
		v.Message = strings.Join(msgs, "; ")
		return ck, v
	}
	return ck, nil
}

var requestOpts = &openapi3filter.Options{
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	MultiError:         true,
	// Defaults are not the request's: do not write them into it.
	SkipSettingDefaults: true,
}

// checkResponse validates an answer of the sim against the operation's
// responses. A status the operation does not document is a violation when
// it is a success; an undocumented error status is the provider's general
// error answer (401, 429, 5xx happen on every endpoint) and is not checked.
func (ck *checked) checkResponse(provider string, status int, h http.Header, body []byte) *Violation {
	op := ck.rt.Operation
	v := &Violation{Provider: provider, Description: ck.desc.name, Method: ck.req.Method, Path: ck.req.URL.Path, Operation: op.OperationID, Kind: "response", Status: status}
	if op.Responses.Status(status) == nil && statusRange(op, status) == nil {
		if status < 300 {
			v.Message = fmt.Sprintf("status %d is not documented", status)
			return v
		}
		return nil
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: ck.req, PathParams: ck.params, Route: ck.rt, Options: requestOpts},
		Status:                 status,
		Header:                 h,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		v.Message = trimMsg(err.Error())
		return v
	}
	return nil
}

func statusRange(op *openapi3.Operation, status int) *openapi3.ResponseRef {
	if op.Responses == nil {
		return nil
	}
	if r := op.Responses.Value(fmt.Sprintf("%dXX", status/100)); r != nil {
		return r
	}
	return op.Responses.Default()
}

func trimMsg(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 1500 {
		s = s[:1500] + "..."
	}
	return s
}

// undeclaredQuery names the query parameters the operation does not
// declare.
func undeclaredQuery(rt *routers.Route, q url.Values) []string {
	declared := map[string]bool{}
	for _, list := range []openapi3.Parameters{rt.PathItem.Parameters, rt.Operation.Parameters} {
		for _, p := range list {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				declared[p.Value.Name] = true
			}
		}
	}
	var out []string
	for k := range q {
		if !declared[k] {
			out = append(out, fmt.Sprintf("query parameter %q is not one the operation declares", k))
		}
	}
	sort.Strings(out)
	return out
}

// undeclaredBody names the fields of a JSON body that the request body's
// schema does not declare, where the schema lists its properties and does
// not allow others.
func undeclaredBody(rt *routers.Route, contentType string, body []byte) []string {
	rb := rt.Operation.RequestBody
	if rb == nil || rb.Value == nil {
		return nil
	}
	mt := rb.Value.Content.Get(contentType)
	if mt == nil || mt.Schema == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil
	}
	var out []string
	walkUndeclared(mt.Schema.Value, v, "", &out, 0)
	sort.Strings(out)
	return out
}

func walkUndeclared(sc *openapi3.Schema, v any, at string, out *[]string, depth int) {
	if sc == nil || depth > 16 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		props, open := declaredProps(sc, x, 0)
		if open {
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := props[k]
			if !ok {
				*out = append(*out, fmt.Sprintf("field %s/%s is not in the schema", at, k))
				continue
			}
			walkUndeclared(p, x[k], at+"/"+k, out, depth+1)
		}
	case []any:
		items := itemsOf(sc, 0)
		if items == nil {
			return
		}
		for i, e := range x {
			walkUndeclared(items, e, fmt.Sprintf("%s/%d", at, i), out, depth+1)
		}
	}
}

// declaredProps gathers the properties a schema declares for an object,
// through allOf, anyOf and oneOf (every alternative the value could be);
// open is true when some part allows properties it does not name, or names
// none at all.
func declaredProps(sc *openapi3.Schema, v map[string]any, depth int) (map[string]*openapi3.Schema, bool) {
	props := map[string]*openapi3.Schema{}
	if depth > 8 {
		return props, true
	}
	open := false
	composite := len(sc.AllOf)+len(sc.AnyOf)+len(sc.OneOf) > 0
	if len(sc.Properties) == 0 && !composite {
		return props, true
	}
	ap := sc.AdditionalProperties
	if (ap.Has != nil && *ap.Has) || ap.Schema != nil {
		open = true
	}
	for k, p := range sc.Properties {
		if p != nil {
			props[k] = p.Value
		}
	}
	for _, group := range [][]*openapi3.SchemaRef{sc.AllOf, sc.AnyOf, sc.OneOf} {
		for _, part := range group {
			if part == nil || part.Value == nil {
				continue
			}
			if t := part.Value.Type; t != nil && !t.Is("object") && !t.Includes("object") {
				continue
			}
			pp, o := declaredProps(part.Value, v, depth+1)
			open = open || o
			for k, p := range pp {
				if _, ok := props[k]; !ok {
					props[k] = p
				}
			}
		}
	}
	return props, open
}

func itemsOf(sc *openapi3.Schema, depth int) *openapi3.Schema {
	if depth > 8 {
		return nil
	}
	if sc.Items != nil {
		return sc.Items.Value
	}
	for _, group := range [][]*openapi3.SchemaRef{sc.AllOf, sc.AnyOf, sc.OneOf} {
		for _, part := range group {
			if part != nil && part.Value != nil {
				if it := itemsOf(part.Value, depth+1); it != nil {
					return it
				}
			}
		}
	}
	return nil
}

// recordViolation keeps a violation and hands it to Options.OnViolation.
func (c *Cloud) recordViolation(v Violation) {
	c.mu.Lock()
	c.violations = append(c.violations, v)
	c.mu.Unlock()
	if c.opts.OnViolation != nil {
		c.opts.OnViolation(v)
	}
}

// Violations returns the requests the providers' descriptions do not
// allow and the answers that break them, in the order they happened.
func (c *Cloud) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Violation(nil), c.violations...)
}

// TakeViolations returns the violations and forgets them: a test that
// sends a forbidden request on purpose takes what it expects, and the
// check of CheckDescriptions sees the rest.
func (c *Cloud) TakeViolations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.violations
	c.violations = nil
	return v
}

// TB is the part of testing.TB that CheckDescriptions uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}

// CheckDescriptions makes tb fail, when it ends, for every request the
// cloud received that a provider's description does not allow and every
// answer of the sim's models that breaks one (once per operation). Every
// test helper that makes a cloud calls it.
func (c *Cloud) CheckDescriptions(tb TB) {
	tb.Helper()
	tb.Cleanup(func() {
		seen := map[string]bool{}
		for _, v := range c.TakeViolations() {
			if k := v.Kind + " " + v.Description + " " + v.Operation; v.Kind != "response" || !seen[k] {
				seen[k] = true
				tb.Errorf("sim: %s", v)
			}
		}
	})
}
