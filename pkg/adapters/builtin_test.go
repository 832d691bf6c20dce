package adapters_test

import (
	"slices"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters"
)

func TestRegistryMatchesTheCatalogue(t *testing.T) {
	r := adapters.Registry(func(string) (string, bool) { return "", false }, nil)
	want := adapter.Builtin().Specs()
	got := r.Catalog().Specs()
	if len(got) != len(want) {
		t.Fatalf("registry has %d ops, catalogue %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name() != want[i].Name() || got[i].ListItem != want[i].ListItem || !slices.Equal(names(got[i]), names(want[i])) {
			t.Errorf("op %s: registry %+v, catalogue %+v", want[i].Name(), got[i], want[i])
		}
		op, _ := r.Lookup(want[i].Adapter, want[i].Op)
		_, locks := op.(adapter.ParentLocker)
		if locks != want[i].ListItem {
			t.Errorf("%s: ParentLocker %v, ListItem %v", want[i].Name(), locks, want[i].ListItem)
		}
	}
}

func names(s adapter.Spec) []string {
	var out []string
	for _, o := range s.Outputs {
		out = append(out, o.Name+":"+o.When)
	}
	return out
}
