package adapter

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/sponson/apply/pkg/errs"
)

// Canonical encodes a value in the one canonical form that ops compare in
// and the engine hashes: JSON with sorted object keys, no insignificant
// white space, no HTML escaping, integers without exponent. Maps, lists,
// strings, bools, nil and numbers are accepted; a Marker is INTERNAL (a
// value with a marker has no canonical form yet).
func Canonical(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := canonical(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Equal reports whether two values have the same canonical form.
func Equal(a, b any) bool {
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func canonical(b *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case string:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(t); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	case int, int64, float64, json.Number:
		return canonicalNumber(b, t)
	case []any:
		return canonicalList(b, t)
	case []string:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = x
		}
		return canonicalList(b, l)
	case map[string]any:
		return canonicalMap(b, t)
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = x
		}
		return canonicalMap(b, m)
	case Marker, *Marker:
		return errs.New(errs.INTERNAL, "a %v marker has no canonical form", t)
	default:
		return errs.New(errs.INTERNAL, "canonical form of %T", v).WithHint("ops describe values with maps, lists, strings, numbers and bools; got %T", v)
	}
	return nil
}

// canonicalNumber writes an integer without exponent, any other number
// in its shortest form; a non-finite one is INTERNAL.
func canonicalNumber(b *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case int:
		b.WriteString(strconv.FormatInt(int64(t), 10))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return errs.New(errs.INTERNAL, "canonical form of a non-finite number")
		}
		if t == math.Trunc(t) && math.Abs(t) < 1e15 {
			b.WriteString(strconv.FormatInt(int64(t), 10))
		} else {
			b.WriteString(strconv.FormatFloat(t, 'g', -1, 64))
		}
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return errs.Wrap(err, errs.INTERNAL, "canonical form of a number")
		}
		return canonicalNumber(b, f)
	}
	return nil
}

func canonicalList(b *bytes.Buffer, l []any) error {
	b.WriteByte('[')
	for i, x := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := canonical(b, x); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// canonicalMap writes an object with its keys sorted.
func canonicalMap(b *bytes.Buffer, m map[string]any) error {
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := canonical(b, k); err != nil {
			return err
		}
		b.WriteByte(':')
		if err := canonical(b, m[k]); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}
