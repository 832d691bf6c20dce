package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/gitstore"
)

// The CLI on a real git remote: receipts and leases on branches of it.
func TestGitRemoteStore(t *testing.T) {
	t.Parallel()
	// Each remote on a bare repository of its own, side by side.
	for _, kind := range []string{"file", "http"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir, remote := gittest.NewBareRepo(t)
			if kind == "http" {
				remote = gittest.ServeHTTP(t, dir)
			}
			gitRemoteStore(t, dir, remote)
		})
	}
}

// gitRemoteStore applies, applies again, reads the history and the locks
// and destroys with receipts on remote, the bare repository dir.
func gitRemoteStore(t *testing.T, dir, remote string) {
	env, cloud, _ := fakeWorld(t)
	vars := map[string]string{"APP_KEY": appKey, "SPONSON_RECEIPTS_REMOTE": remote}
	env.LookupEnv = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }

	r := runCLI(t, env, "apply", "--pr", "9", "--json")
	if r.code != 0 {
		t.Fatalf("%s: apply exit %d\n%s%s", remote, r.code, r.out, r.err)
	}
	if strings.Contains(r.out, "LOCAL_RECEIPTS") {
		t.Errorf("%s: fell back to the local store", remote)
	}
	refs := gittest.Refs(t, dir, "refs/heads/sponson-receipts/")
	if _, ok := refs["refs/heads/sponson-receipts/preview/pr-9"]; !ok {
		t.Fatalf("no receipt branch: %v", refs)
	}
	if r := runCLI(t, env, "apply", "--pr", "9"); r.code != 0 {
		t.Fatalf("second apply: %s%s", r.out, r.err)
	}
	r = runCLI(t, env, "receipt", "--history", "--pr", "9")
	if r.code != 0 || strings.Count(r.out, "apply      complete  run r-") < 2 {
		t.Errorf("history:\n%s%s", r.out, r.err)
	}
	r = runCLI(t, env, "locks", "--json")
	if r.code != 0 || !strings.Contains(r.out, `"kind": "git-branch"`) || !strings.Contains(r.out, `"atomic_multi"`) {
		t.Errorf("locks:\n%s%s", r.out, r.err)
	}
	if r := runCLI(t, env, "destroy", "--pr", "9"); r.code != 0 {
		t.Fatalf("destroy: %s%s", r.out, r.err)
	}
	if len(cloud.Keys()) != 0 {
		t.Errorf("destroy left %v", cloud.Keys())
	}
	gittest.Fsck(t, dir)
}

// An explicit git-branch store with no remote is a usage error, not a
// silent fall back.
func TestGitStoreNeedsARemote(t *testing.T) {
	env := testEnv(t, map[string]string{}, nil)
	r := runCLI(t, env, "locks", "--receipts", "git-branch")
	if r.code != 2 || !strings.Contains(r.err, "needs a remote") {
		t.Errorf("exit %d\n%s", r.code, r.err)
	}
}

// receipts push takes a side ref of the git store as well as a file.
func TestReceiptsPushFromAGitSideRef(t *testing.T) {
	t.Parallel()
	dir, url := gittest.NewBareRepo(t)
	env, _, _ := fakeWorld(t)
	vars := map[string]string{"APP_KEY": appKey, "SPONSON_RECEIPTS_REMOTE": url}
	env.LookupEnv = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	if r := runCLI(t, env, "apply", "--pr", "4"); r.code != 0 {
		t.Fatalf("apply: %s%s", r.out, r.err)
	}
	ctx := context.Background()
	st, err := gitstore.New(ctx, gitstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	stored, _, err := st.Read(ctx, "preview", "pr-4")
	if err != nil {
		t.Fatal(err)
	}
	unsaved, _ := stored.Clone()
	extra := unsaved.Ledger[0]
	extra.Key = optest.ObjectKey("default", "kept-on-a-side-ref")
	unsaved.Ledger = append(unsaved.Ledger, extra)
	unsaved.RunID = "r-side"
	ref, err := st.SaveUnsaved(ctx, unsaved)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gittest.Refs(t, dir, "refs/heads/sponson-receipts/_unsaved/")["refs/heads/"+strings.TrimPrefix(ref, "refs/heads/")]; !ok {
		t.Fatalf("no side ref %s", ref)
	}
	r := runCLI(t, env, "receipts", "push", ref)
	if r.code != 0 || !strings.Contains(r.out, "kept-on-a-side-ref") {
		t.Fatalf("push (show) from %s: exit %d\n%s%s", ref, r.code, r.out, r.err)
	}
	if r := runCLI(t, env, "receipts", "push", ref, "--adopt-missing"); r.code != 0 {
		t.Fatalf("push --adopt-missing: %s%s", r.out, r.err)
	}
	after, _, _ := st.Read(ctx, "preview", "pr-4")
	if len(after.Ledger) != len(stored.Ledger)+1 {
		t.Errorf("the entry was not adopted: %d entries", len(after.Ledger))
	}
}
