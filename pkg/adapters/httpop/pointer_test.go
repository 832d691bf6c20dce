package httpop

import (
	"testing"

	"github.com/sponson/apply/pkg/adapter"
)

func TestPointer(t *testing.T) {
	doc := map[string]any{"a": map[string]any{"b/c": []any{"x", "y"}, "t~": 1}}
	for in, want := range map[string]any{"/a/b~1c/1": "y", "/a/t~0": 1, "": doc} {
		p, ok := parsePointer(in)
		got, found := p.get(any(doc))
		if !ok || !found || !adapter.Equal(got, want) {
			t.Errorf("get(%q) = %v %v %v", in, got, ok, found)
		}
	}
	for _, in := range []string{"/a/zz", "/a/b~1c/9", "/a/b~1c/x"} {
		p, _ := parsePointer(in)
		if _, found := p.get(any(doc)); found {
			t.Errorf("get(%q) found something", in)
		}
	}
	if _, ok := parsePointer("a/b"); ok {
		t.Error("a pointer without a leading / parsed")
	}
	p, _ := parsePointer("/a/new/deep")
	out := p.set(doc, []any{"z"})
	if v, _ := p.get(any(out)); !adapter.Equal(v, []any{"z"}) {
		t.Errorf("set: %v", out)
	}
	if _, ok := doc["a"].(map[string]any)["new"]; ok {
		t.Error("set changed its input")
	}
	if got := p.nest(1); !adapter.Equal(got, map[string]any{"a": map[string]any{"new": map[string]any{"deep": 1}}}) {
		t.Errorf("nest = %v", got)
	}
}
