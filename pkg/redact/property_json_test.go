package redact

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// envelopeDoc is a JSON envelope as `sponson apply --json` prints it.
const envelopeDoc = `{"ok": true, "command": "apply", "env": "preview", "scope": "pr-7",
 "receipt": {"version": 1, "run_id": "r-1", "status": "partial", "stale": false, "destroyed": false, "closed": null,
  "lines": {"db": {"status": "unchanged", "error_code": "", "resources": ["branch:sponson/preview/pr-7"],
   "outputs": {"connection_string": {"state": "secret", "value": null}, "preview_url": {"state": "pending", "value": null, "waiting_for": "deployment"}}}},
  "ledger": [{"adapter": "neon", "op": "branch", "key": "branch:sponson/preview/pr-7", "created_by": "sponson", "orphan": false}],
  "history": [{"sha": "5b1d6e0", "at": "2026-12-01T00:00:00Z"}]},
 "warnings": [], "lock": {"held": true, "generation": 9223372036854775807}}`

// jsonKeys lists every key of a JSON document.
func jsonKeys(v any, out map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			out[k] = true
			jsonKeys(x, out)
		}
	case []any:
		for _, x := range t {
			jsonKeys(x, out)
		}
	}
}

func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, b)
	}
	return v
}

// Whatever the secret's value — a JSON literal, a field name of the
// document, a word Sponson's output is made of — redaction leaves the
// document as it was: same structure, same fields, same values (a value
// that cannot be masked without rewriting the output is refused with a
// warning instead). SPONSON_PROPERTY_RUNS is not needed: the pool is small.
func TestPropertyRedactionKeepsDocuments(t *testing.T) {
	doc := decodeNumbers(t, []byte(envelopeDoc))
	keys := map[string]bool{}
	jsonKeys(doc, keys)
	var pool []string
	for k := range keys {
		pool = append(pool, k)
	}
	pool = append(pool, "true", "false", "null", "True", "NULL")
	for w := range vocabulary {
		pool = append(pool, w, strings.ToUpper(w[:1])+w[1:])
	}
	rapid.Check(t, func(rt *rapid.T) {
		secrets := rapid.SliceOfN(rapid.SampledFrom(pool), 1, 4).Draw(rt, "secrets")
		r := New()
		for _, s := range secrets {
			r.Register(s, "test")
		}
		out, err := r.Value(doc)
		if err != nil {
			rt.Fatalf("Value: %v", err)
		}
		b, _ := json.Marshal(out)
		got := decodeNumbers(t, b)
		if !reflect.DeepEqual(got, doc) {
			rt.Fatalf("secrets %q changed the document:\n got %s\nwant %s", secrets, b, envelopeDoc)
		}
		// A real secret beside them is still masked, and the document
		// still parses with its structure.
		r.Register("sk_test_simclerksecretkey", "test")
		withSecret := strings.Replace(envelopeDoc, `"r-1"`, `"sk_test_simclerksecretkey"`, 1)
		out, err = r.Value(decodeNumbers(t, []byte(withSecret)))
		if err != nil {
			rt.Fatalf("Value: %v", err)
		}
		b, _ = json.Marshal(out)
		if bytes.Contains(b, []byte("sk_test_simclerksecretkey")) {
			rt.Fatalf("the secret survived: %s", b)
		}
		gotKeys := map[string]bool{}
		jsonKeys(decodeNumbers(t, b), gotKeys)
		if !reflect.DeepEqual(gotKeys, keys) {
			rt.Fatalf("keys changed: %v, want %v", gotKeys, keys)
		}
	})
}
