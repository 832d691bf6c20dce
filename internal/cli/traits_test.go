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

// The local store does not sign (docs/adr/0012): with SPONSON_RECEIPT_KEY
// set and no remote, every command that opens it says so with
// RECEIPTS_UNSIGNED, in text and under --json, and never prints the key;
// without the key it says nothing of signing.
func TestLocalStoreSaysItDoesNotSign(t *testing.T) {
	key := strings.Repeat("5e", 20)
	env := testEnv(t, map[string]string{"SPONSON_RECEIPT_KEY": key}, nil)
	for _, args := range [][]string{{"unlock", "preview", "pr-1", "--reason", "test"}, {"locks"}, {"locks", "--json"}} {
		r := runCLI(t, env, args...)
		if r.code != 0 || !strings.Contains(r.out+r.err, "RECEIPTS_UNSIGNED") {
			t.Errorf("%v: exit %d, no RECEIPTS_UNSIGNED:\n%s%s", args, r.code, r.out, r.err)
		}
		if strings.Contains(r.out+r.err, key) {
			t.Errorf("%v printed the key", args)
		}
	}
	if r := runCLI(t, testEnv(t, nil, nil), "locks", "--json"); strings.Contains(r.out+r.err, "RECEIPTS_UNSIGNED") {
		t.Errorf("RECEIPTS_UNSIGNED without a key:\n%s", r.out)
	}
}
