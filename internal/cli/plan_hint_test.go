package cli_test

import (
	"strings"
	"testing"
)

// A missing plan's hint fits how it was named: the default file is to be
// written (or another named with --plan); a path given to --plan is to be
// checked.
func TestMissingPlanHintFitsTheFlag(t *testing.T) {
	env := testEnv(t, map[string]string{}, nil)
	r := runCLI(t, env, "plan", "--pr", "1", "--receipts", "local")
	if r.code == 0 || !strings.Contains(r.err, "or pass --plan FILE") {
		t.Errorf("without --plan: exit %d\n%s", r.code, r.err)
	}
	r = runCLI(t, env, "plan", "--pr", "1", "--receipts", "local", "--plan", "deploy/missing.yaml")
	if r.code == 0 || strings.Contains(r.err, "pass --plan") || !strings.Contains(r.err, "Check the path given to --plan") || !strings.Contains(r.err, env.Dir) {
		t.Errorf("with --plan: exit %d\n%s", r.code, r.err)
	}
}
