package cli

import (
	"os"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The demo's last check can fail: a secret committed to any branch of the
// receipts repository is found.
func TestSecretInBlobsFindsACommittedSecret(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if err := writeFile(dir+"/receipt.json", `{"value": "sk_test_leaked_value_1234"}`); err != nil {
		t.Fatal(err)
	}
	wt.Add("receipt.json")
	if _, err := wt.Commit("leak", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@t", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	n, leaked, err := secretInBlobs(dir, "sk_test_leaked_value_1234")
	if err != nil || n == 0 || !leaked {
		t.Fatalf("n %d, leaked %v, err %v", n, leaked, err)
	}
	if _, leaked, _ := secretInBlobs(dir, "sk_test_other_value_5678"); leaked {
		t.Error("a secret that is not there was found")
	}
}

func writeFile(path, body string) error { return os.WriteFile(path, []byte(body), 0o644) }
