package githubtest

import (
	"net/http"
	"net/http/httptest"
)

// ValidateResponse checks a response to method path (after /api/v3)
// against the description, as every answer of the fake is checked.
func (f *Fake) ValidateResponse(method, path string, status int, h http.Header, body []byte) error {
	rt, params, _ := f.rest.match(method, path)
	r := httptest.NewRequest(method, "/api/v3"+path, nil)
	return f.spec.validateResponse(r, rt, params, status, h, body)
}

// Served lists "METHOD /template" of every operation the fake serves.
func (f *Fake) Served() map[string]bool {
	m := map[string]bool{}
	for _, h := range f.rest.handlers() {
		m[h.method+" "+h.tmpl] = true
	}
	return m
}

// Spec is the fake's description.
func (f *Fake) Spec() *Spec { return f.spec }

// SubsetOperations is the operationId list the description's root
// x-subset-of object records.
func (s *Spec) SubsetOperations() []string {
	xs, _ := s.doc.Extensions["x-subset-of"].(map[string]any)
	ops, _ := xs["operations"].([]any)
	var out []string
	for _, o := range ops {
		if id, ok := o.(string); ok {
			out = append(out, id)
		}
	}
	return out
}
