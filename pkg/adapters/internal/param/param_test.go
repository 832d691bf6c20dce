package param_test

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

func TestStr(t *testing.T) {
	pending := adapter.Marker{Kind: adapter.Pending, Ref: "a.b"}
	secret := adapter.Marker{Kind: adapter.Secret, Ref: "env://X"}
	cases := []struct {
		v                     any
		allowPending          bool
		s                     string
		present, known, fails bool
	}{
		{"x", false, "x", true, true, false},
		{nil, false, "", false, true, false},
		{pending, true, "", true, false, false},
		{pending, false, "", true, false, true},
		{secret, true, "", true, false, true},
		{int64(3), false, "", true, false, true},
	}
	for _, c := range cases {
		params := map[string]any{}
		if c.v != nil {
			params["p"] = c.v
		}
		s, present, known, err := param.Str("op", params, "p", c.allowPending)
		if s != c.s || present != c.present || known != c.known || (err != nil) != c.fails {
			t.Errorf("Str(%v) = %q %v %v %v", c.v, s, present, known, err)
		}
		if err != nil && (errs.CodeOf(err) != errs.PARAM_INVALID || strings.Contains(err.Error(), "env://X")) {
			t.Errorf("Str(%v) error %v: want PARAM_INVALID without the value", c.v, err)
		}
	}
	if _, _, err := param.Required("op", map[string]any{}, "p", false); err == nil || !strings.Contains(err.Error(), "op parameter p is required") {
		t.Errorf("Required of nothing: %v", err)
	}
	if _, _, err := param.Required("op", map[string]any{"p": " "}, "p", false); err == nil {
		t.Error("Required accepts a blank string")
	}
}

func TestKnownSettingConcrete(t *testing.T) {
	err := param.Known("op", map[string]any{"a": 1, "zz": 2, "b": 3}, "a", "b")
	if errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), "zz") || !strings.Contains(errs.As(err).HintText(), "a, b") {
		t.Errorf("Known: %v", err)
	}
	if s, err := param.Setting("x", adapter.Provider{"project": " p1 "}, "project"); s != "p1" || err != nil {
		t.Errorf("Setting = %q, %v", s, err)
	}
	if _, err := param.RequiredSetting("x", adapter.Provider{}, "project"); errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), "providers.x.project") {
		t.Errorf("RequiredSetting: %v", err)
	}
	if _, err := param.Setting("x", adapter.Provider{"project": 3}, "project"); err == nil {
		t.Error("a numeric setting is accepted")
	}
	v := map[string]any{"a": []any{adapter.Marker{Kind: adapter.Secret}}}
	if err := param.Concrete("op", "a", v); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("Concrete with a nested secret: %v", err)
	}
	if err := param.Concrete("op", "a", map[string]any{"k": adapter.Marker{Kind: adapter.Keep}}); err != nil {
		t.Errorf("Concrete refuses keep: %v", err)
	}
	orig := map[string]any{"m": map[string]any{"x": []any{1}}}
	c := param.Copy(orig)
	c["m"].(map[string]any)["x"].([]any)[0] = 2
	if orig["m"].(map[string]any)["x"].([]any)[0] != 1 {
		t.Error("Copy is shallow")
	}
	if param.Copy(nil) == nil {
		t.Error("Copy(nil) is nil")
	}
}

func TestEnvValues(t *testing.T) {
	secret := adapter.Marker{Kind: adapter.Secret, Ref: "env://X"}
	got, err := param.EnvValues("x.env", map[string]any{"values": map[string]any{
		"A": "s", "B": true, "C": 3, "D": 1.5, "E": secret,
	}}, "values")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"A": "s", "B": "true", "C": "3", "D": "1.5", "E": secret}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	for _, bad := range []map[string]any{{"1A": "x"}, {"A-B": "x"}, {"A": []any{"x"}}} {
		_, err := param.EnvValues("x.env", map[string]any{"values": bad}, "values")
		if errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), "values.") {
			t.Errorf("%v: err %v, want PARAM_INVALID naming values.<key>", bad, err)
		}
	}
}
