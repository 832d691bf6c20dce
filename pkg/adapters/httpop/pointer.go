package httpop

import (
	"strconv"
	"strings"
)

// pointer is a parsed JSON pointer (RFC 6901).
type pointer []string

// parsePointer reads "" (the whole document) or "/a/b~1c".
func parsePointer(s string) (pointer, bool) {
	if s == "" {
		return pointer{}, true
	}
	if !strings.HasPrefix(s, "/") {
		return nil, false
	}
	parts := strings.Split(s[1:], "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return pointer(parts), true
}

// get returns the value at p in doc; ok is false when a step is missing.
func (p pointer) get(doc any) (any, bool) {
	cur := doc
	for _, tok := range p {
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			cur = t[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// set returns a copy of doc (an object) with v at p, creating objects on
// the way. Only object steps are supported.
func (p pointer) set(doc map[string]any, v any) map[string]any {
	if len(p) == 0 {
		if m, ok := v.(map[string]any); ok {
			return m
		}
		return doc
	}
	out := make(map[string]any, len(doc)+1)
	for k, x := range doc {
		out[k] = x
	}
	if len(p) == 1 {
		out[p[0]] = v
		return out
	}
	child, _ := out[p[0]].(map[string]any)
	out[p[0]] = p[1:].set(child, v)
	return out
}

// nest builds {"a": {"b": v}} for /a/b: a JSON merge patch (RFC 7386) that
// sets only that place.
func (p pointer) nest(v any) map[string]any {
	return p.set(map[string]any{}, v)
}
