package plan

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// Kind is the kind of a parameter value.
type Kind uint8

// The kinds of a Value. Literals are KindString, KindInt, KindFloat and
// KindBool; containers are KindMap and KindList; the value forms are
// KindFrom, KindSecret and KindKeep.
const (
	KindString Kind = iota + 1
	KindInt
	KindFloat
	KindBool
	KindMap
	KindList
	KindFrom   // {from: "<line>.<output>"}: another line's output
	KindSecret // {secret: "<scheme>://<ref>"}: a secret reference
	KindKeep   // {keep: true}: whatever is live
)

var kindNames = [...]string{"", "string", "int", "float", "bool", "map", "list", "from", "secret", "keep"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one node of a line's parameters (or of a provider block): a
// literal, a map with ordered keys, a list, or a value form. Values are
// immutable once parsed; Interpolate returns new ones.
type Value struct {
	Kind Kind
	// Pos is where the value is written. For a value form it is the position
	// of its operand (the text after from:, secret: or keep:), the part an
	// error about the form is about.
	Pos errs.Pos

	Str    string   // KindString: the text as written (see Interpolate)
	Int    int64    // KindInt
	Float  float64  // KindFloat, always finite
	Bool   bool     // KindBool
	Fields []Field  // KindMap, in file order, keys unique
	Items  []*Value // KindList
	From   Ref      // KindFrom
	Secret string   // KindSecret: the reference, "env://NAME"

	// tmpl is set on a KindString that holds ${ctx.*} placeholders or $${
	// escapes; Interpolate replaces the value by one without it.
	tmpl []segment
}

// Field is one key of a map Value.
type Field struct {
	Key    string
	KeyPos errs.Pos
	Value  *Value
}

// Ref is the operand of {from: "<line>.<output>"}.
type Ref struct {
	Line   string // the id of the line referred to
	Output string // the name of one of its outputs
}

func (r Ref) String() string { return r.Line + "." + r.Output }

// IsLiteral reports whether v is a string, number or bool.
func (v *Value) IsLiteral() bool {
	switch v.Kind {
	case KindString, KindInt, KindFloat, KindBool:
		return true
	}
	return false
}

// IsForm reports whether v is a value form: from, secret or keep.
func (v *Value) IsForm() bool {
	return v.Kind == KindFrom || v.Kind == KindSecret || v.Kind == KindKeep
}

// Get returns the value of a map's key, or nil when v is not a map or has no
// such key.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != KindMap {
		return nil
	}
	for i := range v.Fields {
		if v.Fields[i].Key == key {
			return v.Fields[i].Value
		}
	}
	return nil
}

// Walk calls fn for v and every value below it, parents before children, in
// file order. path is relative to v ("" for v itself, then "values",
// "values.DATABASE_URL", "fields.tags[1]"). Walk stops at the first error fn
// returns and returns it.
func (v *Value) Walk(fn func(path string, v *Value) error) error {
	return v.walk("", fn)
}

func (v *Value) walk(path string, fn func(string, *Value) error) error {
	if err := fn(path, v); err != nil {
		return err
	}
	switch v.Kind {
	case KindMap:
		for _, f := range v.Fields {
			if err := f.Value.walk(joinKey(path, f.Key), fn); err != nil {
				return err
			}
		}
	case KindList:
		for i, it := range v.Items {
			if err := it.walk(path+"["+strconv.Itoa(i)+"]", fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinKey extends a display path by a map key, quoting keys that would make
// the path ambiguous.
func joinKey(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key) && plain; i++ {
		c := key[i]
		plain = c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if !plain {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// Resolver turns a value form into a plain Go value: the output a from names,
// a secret's value, the live value of a kept field, or a marker of the
// caller's choosing. path is the display path of the form.
type Resolver func(path string, v *Value) (any, error)

// Plain converts v to plain Go values: string, int64, float64, bool,
// map[string]any and []any. Every value form is handed to resolve, and its
// result is used as is. A string that still holds ${ctx.*} placeholders
// (Interpolate was not called) is an INTERNAL error, so an uninterpolated
// template never reaches a provider; so is a form when resolve is nil.
func (v *Value) Plain(resolve Resolver) (any, error) {
	return v.plain("", resolve)
}

func (v *Value) plain(path string, resolve Resolver) (any, error) {
	switch v.Kind {
	case KindString:
		if v.tmpl != nil {
			return nil, errs.At(v.Pos, errs.INTERNAL, "parameter %s was not interpolated before use", displayPath(path))
		}
		return v.Str, nil
	case KindInt:
		return v.Int, nil
	case KindFloat:
		return v.Float, nil
	case KindBool:
		return v.Bool, nil
	case KindMap:
		m := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			x, err := f.Value.plain(joinKey(path, f.Key), resolve)
			if err != nil {
				return nil, err
			}
			m[f.Key] = x
		}
		return m, nil
	case KindList:
		l := make([]any, len(v.Items))
		for i, it := range v.Items {
			x, err := it.plain(path+"["+strconv.Itoa(i)+"]", resolve)
			if err != nil {
				return nil, err
			}
			l[i] = x
		}
		return l, nil
	case KindFrom, KindSecret, KindKeep:
		if resolve == nil {
			return nil, errs.At(v.Pos, errs.INTERNAL, "parameter %s is a %s value form and nothing resolves it", displayPath(path), v.Kind)
		}
		return resolve(path, v)
	}
	return nil, errs.At(v.Pos, errs.INTERNAL, "parameter %s has no kind", displayPath(path))
}

func displayPath(path string) string {
	if path == "" {
		return "(the whole value)"
	}
	return path
}

// Data returns v as written, as plain Go values: value forms become the maps
// they were written as ({"from": "db.host"}), strings keep their ${ctx.*}
// placeholders. It is what MarshalJSON encodes.
func (v *Value) Data() any {
	switch v.Kind {
	case KindString:
		return v.Str
	case KindInt:
		return v.Int
	case KindFloat:
		return v.Float
	case KindBool:
		return v.Bool
	case KindMap:
		m := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			m[f.Key] = f.Value.Data()
		}
		return m
	case KindList:
		l := make([]any, len(v.Items))
		for i, it := range v.Items {
			l[i] = it.Data()
		}
		return l
	case KindFrom:
		return map[string]any{"from": v.From.String()}
	case KindSecret:
		return map[string]any{"secret": v.Secret}
	case KindKeep:
		return map[string]any{"keep": true}
	}
	return nil
}

// MarshalJSON encodes Data. A plan holds no secret values (they are refused
// at parse time), so this is safe to print.
func (v *Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.Data()) }

// String renders v compactly for messages and tests, keys in file order.
func (v *Value) String() string {
	var b strings.Builder
	v.format(&b)
	return b.String()
}

func (v *Value) format(b *strings.Builder) {
	switch v.Kind {
	case KindString:
		b.WriteString(strconv.Quote(v.Str))
	case KindInt:
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case KindFloat:
		b.WriteString(strconv.FormatFloat(v.Float, 'g', -1, 64))
	case KindBool:
		b.WriteString(strconv.FormatBool(v.Bool))
	case KindMap:
		b.WriteByte('{')
		for i, f := range v.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Key)
			b.WriteString(": ")
			f.Value.format(b)
		}
		b.WriteByte('}')
	case KindList:
		b.WriteByte('[')
		for i, it := range v.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			it.format(b)
		}
		b.WriteByte(']')
	case KindFrom:
		fmt.Fprintf(b, "{from: %s}", v.From)
	case KindSecret:
		fmt.Fprintf(b, "{secret: %q}", v.Secret)
	case KindKeep:
		b.WriteString("{keep: true}")
	default:
		b.WriteString("<invalid>")
	}
}

// collect returns the values of a kind below v, in file order.
func (v *Value) collect(k Kind) []*Value {
	var out []*Value
	_ = v.Walk(func(_ string, x *Value) error {
		if x.Kind == k {
			out = append(out, x)
		}
		return nil
	})
	return out
}
