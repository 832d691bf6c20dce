package cli_test

import (
	"slices"
	"testing"
)

// branchesPlan has the two branch ops that list besides Neon's: a
// Supabase preview branch and a PlanetScale branch, each with its default
// name (sponson-<env>-<scope>).
const branchesPlan = `version: 1
providers:
  supabase:    { project: abcdefghijklmnopqrst }
  planetscale: { organization: acme, database: drift }
changes:
  - id: sb
    adapter: supabase
    op: branch
  - id: ps
    adapter: planetscale
    op: branch
    parent: { keep: true }
`

// A Supabase or PlanetScale branch that another scope's line would own,
// made by hand, is unmanaged drift of the line in every scope; the
// project's and database's other branches (main, a colleague's) are not.
// Plan touches nothing; the scope whose name it bears adopts it, and
// destroying that scope leaves it.
func TestUnmanagedDriftOfSupabaseAndPlanetScaleBranches(t *testing.T) {
	cloud, vars := exampleCloud(t)
	delete(vars, "SPONSON_CTX_SHA")
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": branchesPlan})
	checkout(t, env.Dir)
	run := func(args ...string) run { return runCLI(t, env, args...) }

	cloud.Console.SeedPlanetScaleDatabase("acme", "drift", "sponson-preview-pr-99", "dev-alice")
	cloud.Console.SeedSupabaseBranch("abcdefghijklmnopqrst", "sponson-preview-pr-99")
	cloud.Console.SeedSupabaseBranch("abcdefghijklmnopqrst", "dev-alice")

	cloud.ResetWrites()
	got := unmanagedKeys(t, run, "1")
	want := map[string][]string{"sb": {"branch:sponson-preview-pr-99"}, "ps": {"branch:sponson-preview-pr-99"}}
	for line, keys := range want {
		if !slices.Equal(got[line], keys) {
			t.Errorf("line %s: unmanaged %q, want %q", line, got[line], keys)
		}
	}
	if len(got) != len(want) {
		t.Errorf("unmanaged %v, want %v", got, want)
	}
	if n := len(cloud.Writes()); n != 0 {
		t.Errorf("plan wrote %d times", n)
	}

	r := run("apply", "--json", "--pr", "99", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply pr-99: exit %d\n%s%s", r.code, r.out, r.err)
	}
	for _, l := range oneDocument(t, r)["receipt"].(map[string]any)["ledger"].([]any) {
		if l := l.(map[string]any); l["created_by"] != "adopted" {
			t.Errorf("pr-99 ledger: %v %v, want adopted", l["key"], l["created_by"])
		}
	}
	if got := unmanagedKeys(t, run, "1"); len(got) != 0 {
		t.Errorf("after pr-99 adopted its own: unmanaged %v", got)
	}
	if r := run("destroy", "--json", "--pr", "99", "--receipts", "local"); r.code != 0 {
		t.Fatalf("destroy pr-99: exit %d\n%s%s", r.code, r.out, r.err)
	}
	st := cloud.State()
	sbLeft, psLeft := false, false
	for _, b := range st.SupabaseBranches {
		sbLeft = sbLeft || b.Name == "sponson-preview-pr-99"
	}
	for _, d := range st.PlanetScale {
		for _, b := range d.Branches {
			psLeft = psLeft || (d.Name == "drift" && b.Name == "sponson-preview-pr-99")
		}
	}
	if !sbLeft || !psLeft {
		t.Errorf("destroying pr-99 removed a branch it adopted: supabase %v, planetscale %v", sbLeft, psLeft)
	}
}
