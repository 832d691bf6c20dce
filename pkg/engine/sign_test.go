package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

const (
	receiptKey = "0d1f3b5a7c9e2d4f6b8a1c3e5d7f9b2a4c6e8d0f1b3a5c7e9d2f4b6a8c1e3d5f"
	otherKey   = "f9e8d7c6b5a4938271605f4e3d2c1b0af9e8d7c6b5a4938271605f4e3d2c1b0a"
)

// useKey points the world's engine at a new git store on the bare
// repository dir whose receipts are signed with key ("" for none).
func (w *world) useKey(t *testing.T, dir, key string) {
	t.Helper()
	k, err := receipt.NewKeys(key, "")
	if err != nil {
		t.Fatal(err)
	}
	gs, err := gitstore.New(context.Background(), gitstore.Options{URL: gittest.FileURL(dir), Clock: w.tm, Keys: k})
	if err != nil {
		t.Fatal(err)
	}
	w.eng = w.engine(gs)
}

// forgeCommit commits receipt.json on branch with the git CLI under a copy
// of the message of the branch's tip — Sponson's trailers, its event and
// its MAC included — as anyone with push access could.
func forgeCommit(t *testing.T, bare, branch string, data []byte) {
	t.Helper()
	msg := strings.TrimRight(gittest.Run(t, bare, "log", "-1", "--format=%B", "refs/heads/"+branch), "\n") + "\n"
	if !strings.Contains(msg, "Sponson-Event: ") || !strings.Contains(msg, "Sponson-MAC: ") {
		t.Fatalf("the tip of %s is not a signed receipt write: %q", branch, msg)
	}
	work := t.TempDir()
	gittest.Run(t, work, "init", "-q")
	gittest.Run(t, work, "remote", "add", "origin", gittest.FileURL(bare))
	gittest.Run(t, work, "fetch", "-q", "origin", "refs/heads/"+branch+":refs/remotes/origin/x")
	gittest.Run(t, work, "checkout", "-q", "-b", "w", "refs/remotes/origin/x")
	for name, b := range map[string][]byte{receipt.ReceiptFile: data, ".msg": []byte(msg)} {
		if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, work, "add", receipt.ReceiptFile)
	gittest.Run(t, work, "commit", "-q", "--cleanup=verbatim", "-F", ".msg")
	gittest.Run(t, work, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
}

// With SPONSON_RECEIPT_KEY, a normal apply then destroy deletes
// everything Sponson made; a hand-made branch deletes nothing
// (LEDGER_UNPROVEN with the signature detail, naming the branch and each
// entry), and the rest of the run goes on.
func TestSignedDestroyDeletesOnlyWhatSignedWritesRecorded(t *testing.T) {
	t.Parallel()
	w, _, dir := gitWorld(t)
	w.useKey(t, dir, receiptKey)
	res, made, cb, db, err := destroyGhost(t, w, dir)
	if len(made) <= 2 {
		t.Fatalf("the apply made nothing: %v", made)
	}
	if errs.CodeOf(err) != errs.LEDGER_UNPROVEN {
		t.Fatalf("destroy of the hand-made branch: %v, want LEDGER_UNPROVEN", err)
	}
	if !slices.Equal(w.cloud.Keys(), made) {
		t.Fatalf("the hand-made ledger deleted from %v (left %v)", made, w.cloud.Keys())
	}
	for _, want := range []string{"sponson-receipts/preview/branch-ghost", cb, db, "SPONSON_RECEIPT_KEY"} {
		if !strings.Contains(errs.Coded(err).Message+dump(res.Receipt.Lines), want) {
			t.Errorf("the refusal does not name %s: %v", want, err)
		}
	}
	if _, err := w.eng.Destroy(context.Background(), prCtx(12), Options{}); err != nil {
		t.Fatal(err)
	}
	if got := w.cloud.Keys(); len(got) != 2 {
		t.Fatalf("after destroying pr-12 with the key: %v, want only the seeded ones", got)
	}
}

// A commit that imitates Sponson's own — its message copied, event and
// MAC included — adding an entry to a signed scope's ledger proves
// nothing: destroy leaves the planted resource and deletes the rest. A
// store without the key is fooled by the same commit (the history checks
// alone cannot tell), which is what signing is for.
func TestSignedDestroyRefusesAForgedReceiptCommit(t *testing.T) {
	t.Parallel()
	for _, key := range []string{receiptKey, ""} {
		t.Run("key="+map[string]string{receiptKey: "set", "": "unset"}[key], func(t *testing.T) {
			w, _, dir := gitWorld(t)
			w.useKey(t, dir, receiptKey)
			db := optest.ObjectKey("p1", "seeded-db")
			w.cloud.SeedObject("p1", "seeded-db", map[string]any{"size": 1}, nil)
			w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{})
			made := w.cloud.Keys()

			stored, _, err := w.eng.Store.Read(context.Background(), "preview", "pr-12")
			if err != nil {
				t.Fatal(err)
			}
			planted := fakeEntry(db)
			planted.CreatedBy = receipt.CreatedByIntent
			stored.Ledger = append(stored.Ledger, planted)
			data, err := receipt.Encode(stored)
			if err != nil {
				t.Fatal(err)
			}
			forgeCommit(t, dir, "sponson-receipts/preview/pr-12", data)

			w.useKey(t, dir, key)
			_, err = w.eng.Destroy(context.Background(), prCtx(12), Options{})
			if key == "" {
				if err != nil || w.cloud.Exists(db) {
					t.Fatalf("without the key the forged commit counts (the history checks alone): %v, seeded left: %v", err, w.cloud.Exists(db))
				}
				return
			}
			if errs.CodeOf(err) != errs.LEDGER_UNPROVEN || !strings.Contains(err.Error(), db) {
				t.Fatalf("destroy: %v, want LEDGER_UNPROVEN naming %s", err, db)
			}
			if got := w.cloud.Keys(); !slices.Equal(got, []string{db}) {
				t.Fatalf("after the destroy: %v, want only %s (made %v)", got, db, made)
			}
		})
	}
}

// Receipts signed with one key and a destroy with another: nothing is
// proven, nothing deleted; the right key deletes everything; without
// any key, destroy is as it was before signing.
func TestSignedDestroyWithAnotherKeyDeletesNothing(t *testing.T) {
	t.Parallel()
	w, _, dir := gitWorld(t)
	w.useKey(t, dir, receiptKey)
	w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{})
	w.mustApply(mustPlan(t, basicPlan), prCtx(13), Options{})
	made := w.cloud.Keys()

	w.useKey(t, dir, otherKey)
	_, err := w.eng.Destroy(context.Background(), prCtx(12), Options{})
	if errs.CodeOf(err) != errs.LEDGER_UNPROVEN || !strings.Contains(err.Error(), "sponson-receipts/preview/pr-12") {
		t.Fatalf("destroy with another key: %v, want LEDGER_UNPROVEN naming the branch", err)
	}
	if !slices.Equal(w.cloud.Keys(), made) {
		t.Fatalf("another key deleted from %v (left %v)", made, w.cloud.Keys())
	}

	w.useKey(t, dir, receiptKey)
	if _, err := w.eng.Destroy(context.Background(), prCtx(12), Options{}); err != nil {
		t.Fatal(err)
	}
	w.useKey(t, dir, "")
	if _, err := w.eng.Destroy(context.Background(), prCtx(13), Options{}); err != nil {
		t.Fatal(err)
	}
	if got := w.cloud.Keys(); len(got) != 0 {
		t.Fatalf("left: %v", got)
	}
}
