package githubtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// Spec is GitHub's OpenAPI description, loaded once and shared by every
// fake (loading and resolving 360 KB of JSON takes a while).
type Spec struct {
	doc *openapi3.T
	// ops maps "METHOD /template" to its operation.
	ops map[string]*routers.Route

	handlersOnce sync.Once
	handlerList  []*handler
}

var (
	specMu    sync.Mutex
	specCache = map[string]*Spec{}
)

// LoadSpec reads and checks the OpenAPI description at path. It is
// cached per path.
func LoadSpec(path string) (*Spec, error) {
	specMu.Lock()
	defer specMu.Unlock()
	if s, ok := specCache[path]; ok {
		return s, nil
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load OpenAPI description %s: %w", path, err)
	}
	// GitHub's own example for nullable-git-user.date is not a date-time
	// (see the fixtures' README); the schemas themselves are sound.
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("OpenAPI description %s: %w", path, err)
	}
	s := &Spec{doc: doc, ops: map[string]*routers.Route{}}
	for tmpl, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			s.ops[method+" "+tmpl] = &routers.Route{Spec: doc, Path: tmpl, PathItem: item, Method: method, Operation: op}
		}
	}
	specCache[path] = s
	return s, nil
}

// Operations lists "METHOD /template operationId" for every operation of
// the description, sorted.
func (s *Spec) Operations() []string {
	var out []string
	for k, r := range s.ops {
		out = append(out, k+" "+r.Operation.OperationID)
	}
	sort.Strings(out)
	return out
}

func (s *Spec) route(method, tmpl string) *routers.Route { return s.ops[method+" "+tmpl] }

var filterOpts = &openapi3filter.Options{
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	MultiError:         true,
}

// validateRequest checks r (whose body is buf) against its operation.
func (s *Spec) validateRequest(r *http.Request, rt *routers.Route, params map[string]string, body []byte) error {
	// GitHub takes a JSON null for an optional body as no body
	// (ghinstallation sends null when no token options are given).
	if rb := rt.Operation.RequestBody; rb != nil && rb.Value != nil && !rb.Value.Required && string(bytes.TrimSpace(body)) == "null" {
		body = nil
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) == 0 {
		r2.ContentLength = 0
		r2.Header.Del("Content-Type")
	}
	in := &openapi3filter.RequestValidationInput{Request: r2, PathParams: params, Route: rt, Options: filterOpts}
	return openapi3filter.ValidateRequest(r.Context(), in)
}

// validateResponse checks a response against its operation. A status the
// operation does not document is checked only for GitHub's error shape:
// GitHub answers 401, 403 (rate limits) and 5xx on every endpoint though
// few document them.
func (s *Spec) validateResponse(r *http.Request, rt *routers.Route, params map[string]string, status int, h http.Header, body []byte) error {
	documented := rt.Operation.Responses.Status(status) != nil
	if !documented && status < 300 {
		return fmt.Errorf("status %d is not documented for %s", status, rt.Operation.OperationID)
	}
	if !documented {
		if len(body) == 0 {
			return nil
		}
		return checkErrorShape(body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: rt, Options: filterOpts},
		Status:                 status,
		Header:                 h,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true},
	}
	return openapi3filter.ValidateResponse(r.Context(), in)
}

// schema returns a component schema by name.
func (s *Spec) schema(name string) *openapi3.Schema {
	ref := s.doc.Components.Schemas[name]
	if ref == nil {
		panic("githubtest: no schema " + name)
	}
	return ref.Value
}

// Synth returns the smallest value that satisfies schema name: every
// required property, recursively, with a value of its type (null where
// the property is nullable). The handlers start from it and overlay the
// fields they model, so every response carries all that GitHub's
// description requires even where the fake has no opinion.
func (s *Spec) Synth(name string) map[string]any {
	v, _ := synth(s.schema(name), 0).(map[string]any)
	return v
}

func synth(sc *openapi3.Schema, depth int) any {
	if sc == nil || depth > 12 {
		return nil
	}
	if v, ok := synthComposed(sc, depth); ok {
		return v
	}
	switch {
	case sc.Type.Is("object") || (sc.Type == nil && len(sc.Properties) > 0):
		return synthObject(sc, depth)
	case sc.Type.Is("array"):
		return []any{}
	case sc.Type.Is("integer"), sc.Type.Is("number"):
		if sc.Min != nil {
			return *sc.Min
		}
		return 1
	case sc.Type.Is("boolean"):
		return false
	case sc.Type.Is("string"):
		return synthString(sc.Format)
	}
	return nil
}

// synthComposed is synth of a schema made of others (allOf, oneOf, anyOf)
// or of an enum; false for any other schema.
func synthComposed(sc *openapi3.Schema, depth int) (any, bool) {
	switch {
	case len(sc.AllOf) > 0:
		out := map[string]any{}
		for _, part := range sc.AllOf {
			if m, ok := synth(part.Value, depth+1).(map[string]any); ok {
				maps.Copy(out, m)
			}
		}
		return out, true
	case len(sc.OneOf) > 0:
		return synth(sc.OneOf[0].Value, depth+1), true
	case len(sc.AnyOf) > 0:
		return synth(sc.AnyOf[0].Value, depth+1), true
	case len(sc.Enum) > 0:
		for _, e := range sc.Enum {
			if e != nil {
				return e, true
			}
		}
		return nil, true
	}
	return nil, false
}

// synthObject holds an object's required properties, each at its
// smallest (null where the property is nullable).
func synthObject(sc *openapi3.Schema, depth int) map[string]any {
	out := map[string]any{}
	for _, name := range sc.Required {
		p := sc.Properties[name]
		switch {
		case p == nil:
			out[name] = ""
		case p.Value.Nullable:
			out[name] = nil
		default:
			out[name] = synth(p.Value, depth+1)
		}
	}
	return out
}

// synthString is the smallest string of a format.
func synthString(format string) string {
	switch format {
	case "date-time":
		return "2026-12-01T00:00:00Z"
	case "uri", "url":
		return "https://example.invalid/"
	case "email":
		return "noreply@example.invalid"
	case "date":
		return "2026-12-01"
	}
	return "x"
}

// checkErrorShape checks an error body is GitHub's basic-error shape: an
// object with a string message.
func checkErrorShape(body []byte) error {
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) || !bytes.Contains(body, []byte(`"message"`)) {
		return fmt.Errorf("error body is not GitHub's {\"message\": ...} shape: %.200s", body)
	}
	return nil
}

// trimErr shortens a validation error for a test log.
func trimErr(err error) string {
	s := err.Error()
	if len(s) > 2000 {
		s = s[:2000] + "..."
	}
	return strings.TrimSpace(s)
}
