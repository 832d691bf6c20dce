package adapters_test

import "testing"

// TestEveryOpNamesItsAPI: every op that calls a provider, and every
// recipe, says in its documentation which API and version it speaks.
func TestEveryOpNamesItsAPI(t *testing.T) {
	for _, s := range registry().Specs() {
		if s.Manual {
			continue
		}
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
