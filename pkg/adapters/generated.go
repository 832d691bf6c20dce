package adapters

//go:generate go run ../../cmd/adapterdocs -docs ../../docs/adapters.md -schema ../../schema/release.plan.schema.json

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/sponson/apply/pkg/adapter"
)

// noEnv is the environment of a registry built for documentation: plan
// checks and docs need no credentials.
func noEnv(string) (string, bool) { return "", false }

// Docs is docs/adapters.md: every registered op's Spec.
func Docs() []byte { return adapter.Markdown(Registry(noEnv, nil).Specs()) }

// Schema returns the plan schema base with its op rules replaced by the
// registry's: $defs.ops (one if/then rule per op), referenced from
// $defs.line, and the adapter and op names offered as examples. Every
// other part of base is kept as it is, in its order.
func Schema(base []byte) ([]byte, error) {
	doc, err := decodeOrdered(base)
	if err != nil {
		return nil, err
	}
	root, ok := doc.(*ordered)
	if !ok {
		return nil, fmt.Errorf("schema: not an object")
	}
	defs, ok := root.get("$defs").(*ordered)
	if !ok {
		return nil, fmt.Errorf("schema: no $defs")
	}
	line, ok := defs.get("line").(*ordered)
	if !ok {
		return nil, fmt.Errorf("schema: no $defs.line")
	}
	ops, adapterNames, opNames := adapter.JSONSchemaOps(Registry(noEnv, nil).Specs())
	defs.set("ops", ops)
	line.set("allOf", []any{map[string]any{"$ref": "#/$defs/ops"}})
	if props, ok := line.get("properties").(*ordered); ok {
		for name, examples := range map[string][]string{"adapter": adapterNames, "op": opNames} {
			if p, ok := props.get(name).(*ordered); ok {
				sort.Strings(examples)
				p.set("examples", examples)
			}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ordered is a JSON object that keeps its keys' order.
type ordered struct {
	keys []string
	vals map[string]any
}

func (o *ordered) get(k string) any { return o.vals[k] }

func (o *ordered) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshalNoEscape(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("schema: trailing data")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := t.(type) {
	case json.Delim:
		switch d {
		case '{':
			o := &ordered{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(kt.(string), v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			var a []any
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			if a == nil {
				a = []any{}
			}
			return a, err
		}
	}
	return t, nil
}
