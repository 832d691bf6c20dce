package adapters_test

import "testing"

// TestEveryOpNamesItsAPI: every op, and every recipe, says in its
// documentation which API and version it speaks (the manual step, that it
// speaks none of a provider's).
func TestEveryOpNamesItsAPI(t *testing.T) {
	for _, s := range registry().Specs() {
		if s.API == "" {
			t.Errorf("%s names no API version (Spec.API)", s.Name())
		}
		for _, r := range s.Recipes {
			if r.API == "" {
				t.Errorf("recipe %s names no API version (Recipe.API)", r.Name)
			}
		}
	}
}
