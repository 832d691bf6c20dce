package adapter_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
)

func TestCatalog(t *testing.T) {
	c := adapter.NewCatalog(
		adapter.Spec{Adapter: "b", Op: "x", Summary: "s", Outputs: []adapter.OutputSpec{{Name: "o2", When: adapter.Immediate}, {Name: "o1", When: adapter.External, Event: "deploy"}}},
		adapter.Spec{Adapter: "a", Op: "z", Summary: "s"},
		adapter.Spec{Adapter: "a", Op: "y", Summary: "s"},
	)
	if got, want := c.Adapters(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Adapters() = %v, want %v", got, want)
	}
	if got, want := c.Ops("a"), []string{"y", "z"}; !slices.Equal(got, want) {
		t.Errorf("Ops(a) = %v, want %v", got, want)
	}
	if c.Ops("aws") != nil {
		t.Error("Ops of an unknown adapter is not nil")
	}
	if got, want := c.Outputs("b", "x"), []string{"o2", "o1"}; !slices.Equal(got, want) {
		t.Errorf("Outputs(b.x) = %v, want %v (declaration order)", got, want)
	}
	var names []string
	for _, s := range c.Specs() {
		names = append(names, s.Name())
	}
	if want := []string{"a.y", "a.z", "b.x"}; !slices.Equal(names, want) {
		t.Errorf("Specs() = %v, want %v", names, want)
	}
}

func TestSpecCheck(t *testing.T) {
	good := adapter.Spec{Adapter: "p", Op: "o", Summary: "s",
		Params:      []adapter.ParamSpec{{Name: "a", Type: adapter.TypeObject, Doc: "d", Fields: []adapter.ParamSpec{{Name: "b", Type: adapter.TypeString, Doc: "d"}}}},
		Outputs:     []adapter.OutputSpec{{Name: "url", When: adapter.Immediate}},
		Credentials: []string{"P_TOKEN"}, BaseURLVar: "P_API_URL"}
	if err := good.Check(); err != nil {
		t.Fatalf("good spec: %v", err)
	}
	cases := map[string]func(s *adapter.Spec){
		"bad name":          func(s *adapter.Spec) { s.Op = "Op" },
		"no summary":        func(s *adapter.Spec) { s.Summary = "" },
		"list without lock": func(s *adapter.Spec) { s.ListItem = true },
		"lock without list": func(s *adapter.Spec) { s.Lock = "p:<x>" },
		"list and manual":   func(s *adapter.Spec) { s.ListItem, s.Lock, s.Manual = true, "p", true },
		"reserved param": func(s *adapter.Spec) {
			s.Params = append(s.Params, adapter.ParamSpec{Name: "depends_on", Type: adapter.TypeList, Doc: "d"})
		},
		"param twice":       func(s *adapter.Spec) { s.Params = append(s.Params, s.Params[0]) },
		"param without doc": func(s *adapter.Spec) { s.Params = []adapter.ParamSpec{{Name: "x", Type: adapter.TypeString}} },
		"unknown type":      func(s *adapter.Spec) { s.Params = []adapter.ParamSpec{{Name: "x", Type: "str", Doc: "d"}} },
		"bad nested field": func(s *adapter.Spec) {
			s.Params = []adapter.ParamSpec{{Name: "x", Type: adapter.TypeObject, Doc: "d", Fields: []adapter.ParamSpec{{Name: "y", Doc: "d"}}}}
		},
		"fields on string": func(s *adapter.Spec) {
			s.Params = []adapter.ParamSpec{{Name: "x", Type: adapter.TypeString, Doc: "d", Fields: s.Params}}
		},
		"external no event": func(s *adapter.Spec) { s.Outputs = []adapter.OutputSpec{{Name: "u", When: adapter.External}} },
		"output twice":      func(s *adapter.Spec) { s.Outputs = append(s.Outputs, s.Outputs[0]) },
		"bad credential":    func(s *adapter.Spec) { s.Credentials = []string{"p-token"} },
		"bad base url var":  func(s *adapter.Spec) { s.BaseURLVar = "url" },
	}
	for name, mutate := range cases {
		s := good
		s.Params = slices.Clone(good.Params)
		s.Outputs = slices.Clone(good.Outputs)
		mutate(&s)
		if err := s.Check(); err == nil {
			t.Errorf("%s: Check accepted %+v", name, s)
		} else if !strings.Contains(err.Error(), "p.o") && !strings.Contains(err.Error(), "Op") {
			t.Errorf("%s: error %q does not name the op", name, err)
		}
	}
}
