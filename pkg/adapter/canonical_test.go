package adapter_test

import (
	"testing"

	"github.com/sponson/apply/pkg/adapter"
)

func TestCanonical(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{nil, `null`},
		{"a<b>&", `"a<b>&"`},
		{map[string]any{"b": 1, "a": []any{true, 2.5, "x"}}, `{"a":[true,2.5,"x"],"b":1}`},
		{float64(3), `3`},
		{int64(-7), `-7`},
		{map[string]string{"z": "1", "y": "2"}, `{"y":"2","z":"1"}`},
		{[]string{"b", "a"}, `["b","a"]`},
	}
	for _, c := range cases {
		got, err := adapter.Canonical(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("Canonical(%#v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := adapter.Canonical(map[string]any{"x": adapter.Marker{Kind: adapter.Pending}}); err == nil {
		t.Error("a marker has a canonical form")
	}
	if !adapter.Equal(map[string]any{"a": 1, "b": 2}, map[string]any{"b": 2.0, "a": 1}) {
		t.Error("equal maps in another order are not Equal")
	}
}

func TestMarkers(t *testing.T) {
	v := map[string]any{"a": []any{"x", adapter.Marker{Kind: adapter.Secret, Ref: "env://X"}}}
	if !adapter.HasMarker(v) || !adapter.HasMarker(v, adapter.Secret) || adapter.HasMarker(v, adapter.Pending) {
		t.Error("HasMarker does not find the nested secret marker exactly")
	}
	if _, ok := adapter.MarkerOf("(pending ← db.x)"); ok {
		t.Error("display text was classified as a marker")
	}
}
