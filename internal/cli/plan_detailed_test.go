package cli_test

import (
	"testing"

	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
)

// TestPlanDetailedExitcode: with --detailed-exitcode, plan exits 2 when
// something would change (lines to create, a resource gone missing), 0
// when nothing would, and 1 on every error, whatever its exit code
// without the flag (a failed read 1, a refused plan 2).
func TestPlanDetailedExitcode(t *testing.T) {
	env, cloud, _ := fakeWorld(t)
	plan := func(args ...string) (run, map[string]any) {
		t.Helper()
		r := runCLI(t, env, append([]string{"plan", "--json", "--pr", "3", "--receipts", "local"}, args...)...)
		return r, oneDocument(t, r)
	}

	// Nothing applied yet: both lines would be created.
	r, doc := plan("--detailed-exitcode")
	if r.code != 2 || doc["ok"] != true || doc["changes"] != true {
		t.Fatalf("lines to create: exit %d, ok %v, changes %v\n%s", r.code, doc["ok"], doc["changes"], r.out)
	}
	if r, doc := plan(); r.code != 0 || doc["changes"] != nil {
		t.Errorf("without the flag: exit %d, changes %v", r.code, doc["changes"])
	}
	if r := runCLI(t, env, "plan", "--pr", "3", "--receipts", "local", "--detailed-exitcode"); r.code != 2 {
		t.Errorf("text output: exit %d\n%s%s", r.code, r.out, r.err)
	}

	if r := runCLI(t, env, "apply", "--pr", "3", "--receipts", "local"); r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r, doc = plan("--detailed-exitcode")
	if r.code != 0 || doc["changes"] != false {
		t.Fatalf("after apply: exit %d, changes %v\n%s", r.code, doc["changes"], r.out)
	}

	// A resource deleted outside Sponson: drift to put back.
	keys := cloud.Keys()
	if len(keys) == 0 {
		t.Fatal("apply created nothing")
	}
	if err := cloud.Delete(optest.ObjectKey("default", "app-pr-3")); err != nil {
		t.Fatal(err)
	}
	if r, doc := plan("--detailed-exitcode"); r.code != 2 || doc["changes"] != true {
		t.Errorf("missing resource: exit %d, changes %v\n%s", r.code, doc["changes"], r.out)
	}

	// A read that fails: 1 with or without the flag.
	cloud.FailNext(optest.Match{Method: optest.MethodRead}, errs.New(errs.PROVIDER_INVALID, "bad request"), 100)
	if r, _ := plan("--detailed-exitcode"); r.code != 1 {
		t.Errorf("failed read: exit %d\n%s", r.code, r.out)
	}

	// A refused plan: 2 without the flag, 1 with it.
	if r, doc := plan("--plan", "missing.yaml"); r.code != 2 || doc["ok"] != false {
		t.Errorf("refused without the flag: exit %d", r.code)
	}
	r, doc = plan("--plan", "missing.yaml", "--detailed-exitcode")
	if r.code != 1 || doc["ok"] != false || doc["error"].(map[string]any)["code"] != string(errs.PLAN_PARSE) {
		t.Errorf("refused with the flag: exit %d, %v", r.code, doc["error"])
	}
}
