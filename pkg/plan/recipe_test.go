package plan_test

import (
	"testing"

	"github.com/sponson/apply/pkg/plan"
)

// A line of adapter http with a recipe may leave op out: it is recipe.
// Any other line without op is still refused.
func TestRecipeLineImpliesOp(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte("version: 1\nchanges:\n  - {id: a, adapter: http, recipe: github.repo_webhook, owner: o}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l := p.Lines[0]; l.Op != "recipe" || l.Params.Get("recipe") == nil {
		t.Errorf("op = %q, params %v", l.Op, l.Params)
	}
	for _, src := range []string{
		"version: 1\nchanges:\n  - {id: a, adapter: http, api: x}\n",
		"version: 1\nchanges:\n  - {id: a, adapter: neon, recipe: x}\n",
	} {
		if _, err := plan.Parse("p.yaml", []byte(src)); err == nil {
			t.Errorf("accepted a line without op: %s", src)
		}
	}
}
