package cli_test

import (
	"strings"
	"testing"
)

// A receipt written where CI will not see it is said by the commands that
// write receipts (their trait), not by those that only read: with no
// remote, unlock warns LOCAL_RECEIPTS and locks does not, and under --json
// both report it.
func TestLocalReceiptsWarnedWhereReceiptsAreWritten(t *testing.T) {
	env := testEnv(t, nil, nil)
	if r := runCLI(t, env, "unlock", "preview", "pr-1", "--reason", "test"); r.code != 0 || !strings.Contains(r.err, "LOCAL_RECEIPTS") {
		t.Errorf("unlock: exit %d, stderr lacks LOCAL_RECEIPTS:\n%s", r.code, r.err)
	}
	if r := runCLI(t, env, "locks"); r.code != 0 || strings.Contains(r.err, "LOCAL_RECEIPTS") {
		t.Errorf("locks: exit %d, stderr:\n%s", r.code, r.err)
	}
	if r := runCLI(t, env, "locks", "--json"); r.code != 0 || !strings.Contains(r.out, "LOCAL_RECEIPTS") {
		t.Errorf("locks --json: exit %d, no LOCAL_RECEIPTS:\n%s", r.code, r.out)
	}
}
