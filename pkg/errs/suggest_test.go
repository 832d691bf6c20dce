package errs

import "testing"

func TestSuggest(t *testing.T) {
	adapters := []string{"auth0", "clerk", "http", "neon", "netlify", "supabase", "vercel"}
	cases := []struct {
		name  string
		known []string
		want  string
	}{
		{"neno", adapters, "neon"},     // swapped neighbours
		{"nein", adapters, "neon"},     // one substitution
		{"Vercel", adapters, "vercel"}, // case
		{"verceel", adapters, "vercel"},
		{"supabse", adapters, "supabase"},
		{"brnch", []string{"branch", "role"}, "branch"},
		{"callbak", []string{"callback", "logout"}, "callback"},
		{"chnges", []string{"version", "environments", "providers", "receipts", "changes"}, "changes"},
		{"parnet", []string{"name", "parent", "region"}, "parent"},
		{"aws", adapters, ""},           // nothing close
		{"neon", adapters, ""},          // not a typo
		{"x", []string{"y", "xy"}, "y"}, // ties: first in order
		{"", adapters, ""},
	}
	for _, tc := range cases {
		if got := Suggest(tc.name, tc.known); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := DidYouMean("neno", adapters); got != `Did you mean "neon"? ` {
		t.Errorf("DidYouMean = %q", got)
	}
}
