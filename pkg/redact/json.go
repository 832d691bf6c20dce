package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// JSON serializes v as json.Marshal does, with every string redacted — keys
// and values — before it is written, so the result is always valid JSON with
// the structure of v, its keys in v's order. A string whose escaped form
// would still show a registered form becomes "***"; a number that contains a
// registered form becomes the string "***"; two keys of one object that
// redact to the same text are told apart with " (2)", " (3)", ... so no
// member is lost. Errors: INTERNAL when v cannot be serialized (the cause's
// text is redacted).
func (r *Redactor) JSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, errs.Wrap(r.Error(err), errs.INTERNAL, "a value could not be serialized for redaction")
	}
	return r.redactJSON(raw, nil)
}

// Value returns v redacted as JSON (see JSON), decoded into generic values:
// map[string]any, []any, string, json.Number, bool and nil.
func (r *Redactor) Value(v any) (any, error) {
	b, err := r.JSON(v)
	if err != nil {
		return nil, err
	}
	return decodeGeneric(b)
}

// decodeGeneric decodes JSON into generic values, numbers as json.Number.
func decodeGeneric(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "redacted JSON does not parse")
	}
	return out, nil
}

// RawJSON redacts a JSON document (a provider's response body) as JSON does.
// Errors: INTERNAL when raw is not valid JSON; redact it with String then.
func (r *Redactor) RawJSON(raw []byte) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errs.New(errs.INTERNAL, "not a JSON document")
	}
	return r.redactJSON(raw, nil)
}

// Document is Value for a document whose structure is its own (the CLI's
// --json answer): its values are redacted, its structure never. No object
// key is masked, and nothing under a member whose name structural accepts
// (a code, an id, a key, a scope, an env: names that a secret is refused
// for before any run, see pkg/engine's SECRET_IN_STRUCTURE) is masked,
// whatever the redactor holds; every other string and number is, as by
// JSON. A nil structural keeps only the keys.
func (r *Redactor) Document(v any, structural func(member string) bool) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, errs.Wrap(r.Error(err), errs.INTERNAL, "a value could not be serialized for redaction")
	}
	if structural == nil {
		structural = func(string) bool { return false }
	}
	b, err := r.redactJSON(raw, structural)
	if err != nil {
		return nil, err
	}
	return decodeGeneric(b)
}

type frame struct {
	object bool
	n      int            // tokens seen: in an object, even n is a key
	keys   map[string]int // redacted keys of an object, for duplicates
	member string         // the key last read, in an object
	kept   bool           // under a structural member: written as it is
}

// redactJSON re-encodes valid JSON token by token, redacting strings.
// With structural (Document), keys and what structural members hold are
// written as they are.
func (r *Redactor) redactJSON(raw []byte, structural func(string) bool) ([]byte, error) {
	rw := &rewriter{m: r.matcher(), structural: structural}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errs.Wrap(err, errs.INTERNAL, "JSON could not be read for redaction")
		}
		rw.token(tok)
	}
	return rw.out.Bytes(), nil
}

// rewriter writes the tokens of one JSON document again, redacted.
type rewriter struct {
	m          *matcher
	structural func(string) bool
	out        bytes.Buffer
	stack      []*frame
}

func (w *rewriter) token(tok json.Token) {
	top, isKey, kept := w.separate(tok)
	switch t := tok.(type) {
	case json.Delim:
		w.out.WriteByte(byte(t))
		if t == '{' || t == '[' {
			w.stack = append(w.stack, &frame{object: t == '{', kept: kept})
		} else {
			w.stack = w.stack[:len(w.stack)-1]
		}
	case string:
		writeString(&w.out, w.text(top, t, isKey, kept))
	case json.Number:
		if !kept && w.m.found(string(t)) {
			writeString(&w.out, Mask)
		} else {
			w.out.WriteString(string(t))
		}
	case bool:
		w.out.WriteString(strconv.FormatBool(t))
	case nil:
		w.out.WriteString("null")
	}
}

// separate writes the ':' or ',' before tok and says where tok stands: the
// frame it is in (nil at the top), whether it is an object's key, and
// whether it is written as it is (under a structural member).
func (w *rewriter) separate(tok json.Token) (top *frame, isKey, kept bool) {
	if len(w.stack) == 0 {
		return nil, false, false
	}
	top = w.stack[len(w.stack)-1]
	if tok == json.Delim('}') || tok == json.Delim(']') {
		return top, false, false
	}
	switch {
	case top.object && top.n%2 == 1:
		w.out.WriteByte(':')
	case top.n > 0:
		w.out.WriteByte(',')
	}
	isKey = top.object && top.n%2 == 0
	top.n++
	kept = w.structural != nil && (top.kept || (top.object && !isKey && w.structural(top.member)))
	return top, isKey, kept
}

// text is string t as written: a key of a document as it is (and
// remembered as the member), a structural value as it is, another key
// masked without colliding with its siblings, a value masked.
func (w *rewriter) text(top *frame, t string, isKey, kept bool) string {
	switch {
	case isKey && w.structural != nil:
		top.member = t
		return t
	case kept:
		return t
	case isKey:
		if top.keys == nil {
			top.keys = map[string]int{}
		}
		return objectKey(w.m, top.keys, t)
	}
	return jsonSafe(w.m, t)
}

// Since tells whether JSON output made under an earlier generation is
// still what JSON would make now (see Redactor.Since).
type Since struct {
	m *matcher // the forms registered since
}

// Since returns the test for output JSON made under generation g, or nil
// when it cannot tell and everything made under g must be redacted again.
// It can tell when every form registered since g is plain: printable
// ASCII other than '"', '\', '<', '>', '&' and '*'. Such a form occurs in
// a string exactly where it occurs, verbatim, in that string's JSON
// encoding, and never across a mask, so a value's redaction can only have
// changed if one occurs in the value's JSON.
//
// Since(0) tells whether a value's JSON needs redacting at all: when it
// says unchanged, JSON(v) decodes to what raw decodes to.
func (r *Redactor) Since(g uint64) *Since {
	r.mu.RLock()
	if g > uint64(len(r.order)) {
		r.mu.RUnlock()
		return nil
	}
	fs := map[string]struct{}{}
	for _, f := range r.order[g:] {
		for i := 0; i < len(f); i++ {
			if c := f[i]; c < 0x20 || c > 0x7e || strings.IndexByte(`"\<>&*`, c) >= 0 {
				r.mu.RUnlock()
				return nil
			}
		}
		if g > 0 {
			fs[f] = struct{}{}
		}
	}
	r.mu.RUnlock()
	if g == 0 {
		// Every form: the redactor's own matcher (built now, it may hold
		// forms registered meanwhile, which only makes it stricter).
		return &Since{m: r.matcher()}
	}
	return &Since{m: newMatcher(fs)}
}

// Unchanged reports whether JSON(v), made under the generation s was
// made for, is what JSON(v) gives now; raw is v as json.Marshal encodes it
// (HTML-escaped). A nil s never says unchanged.
func (s *Since) Unchanged(raw []byte) bool {
	return s != nil && !s.m.found(string(raw))
}

// Keys returns the keys of one JSON object, given in the order JSON
// would write them, as JSON writes them: each redacted, and keys that
// redact to the same text told apart with " (2)", " (3)", ... A caller
// that assembles an object from members redacted one by one (RawJSON)
// names them with Keys and gets what JSON gives for the whole object.
func (r *Redactor) Keys(keys []string) []string {
	m := r.matcher()
	seen := make(map[string]int, len(keys))
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = objectKey(m, seen, k)
	}
	return out
}

// objectKey is key redacted as a member name of an object whose names so
// far are counted in seen.
func objectKey(m *matcher, seen map[string]int, key string) string {
	s := jsonSafe(m, key)
	seen[s]++
	if k := seen[s]; k > 1 {
		s += " (" + strconv.Itoa(k) + ")"
	}
	return s
}

// jsonSafe redacts s, and masks it whole when its JSON escaping would still
// show a form (a form that contains escape text, such as u003c).
func jsonSafe(m *matcher, s string) string {
	red := m.mask(s)
	for _, html := range []bool{true, false} {
		if esc := jsonEscape(red, html); esc != red && m.found(esc) {
			return Mask
		}
	}
	return red
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string always marshals
	b.Write(q)
}
