package base

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

var spec = adapter.Spec{
	Adapter: "acme", Op: "thing",
	Params:      []adapter.ParamSpec{{Name: "name", Type: adapter.TypeString}},
	Credentials: []string{"ACME_ID", "ACME_TOKEN"},
	BaseURLVar:  "ACME_API_URL", BaseURL: "https://api.acme.test",
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestAPIReadsTheSpecsVariablesAtEachCall(t *testing.T) {
	vars := map[string]string{"ACME_ID": "id"}
	o := New(spec, env(vars), nil, Endpoint{Root: Version("/v1"), RawToken: true})
	if _, err := o.API(); errs.CodeOf(err) != errs.PROVIDER_AUTH || !strings.Contains(err.Error(), "ACME_TOKEN") {
		t.Fatalf("missing second credential: %v", err)
	}
	vars["ACME_TOKEN"] = "tok"
	a, err := o.API()
	if err != nil {
		t.Fatal(err)
	}
	if a.BaseURL != "https://api.acme.test/v1" || a.Token != "id:tok" || !a.RawToken || a.TokenVar != "ACME_ID and ACME_TOKEN" || a.Provider != "acme" {
		t.Errorf("API = %+v", a)
	}
	vars["ACME_API_URL"] = "http://127.0.0.1:9/base/"
	if a, _ = o.API(); a.BaseURL != "http://127.0.0.1:9/base" {
		t.Errorf("a base URL with a path is taken as it is: %s", a.BaseURL)
	}
}

func TestAPIAtAndSuffix(t *testing.T) {
	o := New(spec, env(map[string]string{"ACME_ID": "i", "ACME_TOKEN": "t"}), nil, Endpoint{Root: Suffix("/api/v2")})
	a, err := o.APIAt("https://tenant.acme.test")
	if err != nil || a.BaseURL != "https://tenant.acme.test/api/v2" {
		t.Fatalf("APIAt = %+v, %v", a, err)
	}
	if got := Suffix("/api/v2")("https://x.test/api/v2"); got != "https://x.test/api/v2" {
		t.Errorf("Suffix appended twice: %s", got)
	}
}

func TestKnownAndSpec(t *testing.T) {
	o := New(spec, nil, nil, Endpoint{})
	if o.Spec().Name() != "acme.thing" {
		t.Errorf("Spec = %s", o.Spec().Name())
	}
	if err := o.Known(map[string]any{"name": "x"}); err != nil {
		t.Error(err)
	}
	if err := o.Known(map[string]any{"nme": "x"}); errs.CodeOf(err) != errs.PARAM_INVALID || !strings.Contains(err.Error(), "acme.thing has no parameter nme") {
		t.Errorf("unknown parameter: %v", err)
	}
}
