package adapter_test

import (
	"slices"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
)

func TestBuiltinCatalog(t *testing.T) {
	c := adapter.Builtin()
	if got, want := c.Adapters(), []string{"auth0", "http", "neon", "supabase", "vercel"}; !slices.Equal(got, want) {
		t.Errorf("Adapters() = %v, want %v", got, want)
	}
	if got, want := c.Ops("http"), []string{"list_item", "resource"}; !slices.Equal(got, want) {
		t.Errorf("Ops(http) = %v, want %v", got, want)
	}
	if c.Ops("aws") != nil {
		t.Error("Ops of an unknown adapter is not nil")
	}
	if got, want := c.Outputs("neon", "branch"), []string{"branch_id", "host", "connection_string"}; !slices.Equal(got, want) {
		t.Errorf("Outputs(neon.branch) = %v, want %v", got, want)
	}
	s, ok := c.Lookup("vercel", "env")
	if !ok || s.Outputs[0].When != adapter.External || s.Outputs[0].Event != "deploy" {
		t.Errorf("vercel.env preview_url is not external on deploy: %+v", s)
	}
	n, _ := c.Lookup("neon", "branch")
	if !n.Outputs[2].Sensitive {
		t.Error("neon.branch connection_string is not sensitive")
	}
	for _, s := range c.Specs() {
		if s.ListItem != (s.Name() == "auth0.callback" || s.Name() == "supabase.auth_redirect" || s.Name() == "http.list_item") {
			t.Errorf("%s: ListItem = %v", s.Name(), s.ListItem)
		}
	}
}
