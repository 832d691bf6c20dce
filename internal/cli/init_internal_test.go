package cli

import (
	"slices"
	"testing"
)

// init's flags make its options: --adopt repeats, the scope, plan and
// store flags are its own (not the hidden ones every command accepts).
func TestInitFlagsMakeItsOptions(t *testing.T) {
	var got *InitOptions
	cmd := newCmdInit(&Factory{answer: newAnswer()}, func(o *InitOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--pr", "12", "--adopt", "branch:sponson/preview/pr-9", "--adopt", "callbacks:https://pr-9.acme.dev/cb", "--plan", "p.yaml", "--receipts", "local"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("the run function was not called")
	}
	if !slices.Equal(got.Adopt, []string{"branch:sponson/preview/pr-9", "callbacks:https://pr-9.acme.dev/cb"}) {
		t.Errorf("Adopt = %q", got.Adopt)
	}
	if got.Scope.PR != "12" || !got.Scope.given("pr") || got.Plan.Path != "p.yaml" || got.Store.Kind != "local" {
		t.Errorf("options = %+v", got)
	}
	for _, name := range []string{"adopt", "pr", "branch", "plan", "receipts"} {
		if fl := cmd.Flags().Lookup(name); fl == nil || fl.Hidden {
			t.Errorf("--%s is not in init's help", name)
		}
	}
}
