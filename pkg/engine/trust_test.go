package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/scope"
)

// handPush commits files to branch of the bare repository with the git
// CLI, as anyone with push access could (no Sponson trailer), creating the
// branch from nothing when it does not exist.
func handPush(t *testing.T, bare, branch string, files map[string][]byte) {
	t.Helper()
	work := t.TempDir()
	gittest.Run(t, work, "init", "-q")
	gittest.Run(t, work, "remote", "add", "origin", gittest.FileURL(bare))
	if _, err := gittest.Try(work, nil, "fetch", "-q", "origin", "refs/heads/"+branch+":refs/remotes/origin/x"); err == nil {
		gittest.Run(t, work, "checkout", "-q", "-b", "w", "refs/remotes/origin/x")
	} else {
		gittest.Run(t, work, "checkout", "-q", "--orphan", "w")
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Run(t, work, "add", name)
	}
	gittest.Run(t, work, "commit", "-q", "-m", "hand edit")
	gittest.Run(t, work, "push", "-q", "-f", "origin", "HEAD:refs/heads/"+branch)
}

// forged is a receipt of env/sc whose ledger claims Sponson created every
// entry of entries.
func forged(t *testing.T, env, sc, branch string, entries ...receipt.LedgerEntry) []byte {
	t.Helper()
	r := &receipt.Receipt{Version: receipt.FormatVersion, Env: env, Scope: sc, Branch: branch, RunID: "hand", Operation: receipt.OpApply,
		Status: receipt.StatusComplete, StartedAt: t0, FinishedAt: t0, Ledger: receipt.Ledger{}}
	for _, en := range entries {
		en.CreatedBy = receipt.CreatedBySponson
		r.Ledger = append(r.Ledger, en)
	}
	data, err := receipt.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func fakeEntry(key string) receipt.LedgerEntry {
	op := "object"
	if strings.HasPrefix(key, "item:") {
		op = "item"
	}
	return receipt.LedgerEntry{Line: "x", Adapter: "fake", Op: op, Key: key, Provider: map[string]any{"project": "p1"}}
}

// A receipt branch Sponson never wrote (one hand-made commit) names
// resources nobody's ledger holds: destroying its scope deletes none of
// them (LEDGER_UNPROVEN, naming the branch and each entry); a scope
// Sponson did write is still destroyed whole beside it.
// destroyGhost seeds a callback and a database no scope made, applies
// basicPlan to pr-12, pushes a hand-made branch-ghost (no Sponson commit)
// whose ledger names the two seeded resources, and destroys scope
// branch-ghost. It returns the destroy's result and error, the cloud's
// keys before it, and the two seeded keys.
func destroyGhost(t *testing.T, w *world, dir string) (res *RunResult, made []string, cb, db string, err error) {
	t.Helper()
	cb = optest.ItemKey("p1", "callbacks", "https://seeded.example/cb")
	db = optest.ObjectKey("p1", "seeded-db")
	w.cloud.SeedItem("p1", "callbacks", "https://seeded.example/cb")
	w.cloud.SeedObject("p1", "seeded-db", map[string]any{"size": 1}, nil)
	w.mustApply(mustPlan(t, basicPlan), prCtx(12), Options{})
	made = w.cloud.Keys()

	handPush(t, dir, "sponson-receipts/preview/branch-ghost", map[string][]byte{
		receipt.ReceiptFile: forged(t, "preview", "branch-ghost", "ghost", fakeEntry(db), fakeEntry(cb)),
	})
	ghost := scope.Ctx{Env: "preview", Scope: "branch-ghost", Git: scope.Git{Branch: "ghost"}}
	res, err = w.eng.Destroy(context.Background(), ghost, Options{})
	return res, made, cb, db, err
}

func TestDestroyOfAHandMadeBranchDeletesNothing(t *testing.T) {
	t.Parallel()
	w, _, dir := gitWorld(t)
	res, made, cb, db, err := destroyGhost(t, w, dir)
	if errs.CodeOf(err) != errs.LEDGER_UNPROVEN {
		t.Fatalf("destroy of the hand-made branch: %v, want LEDGER_UNPROVEN", err)
	}
	if !slices.Equal(w.cloud.Keys(), made) {
		t.Fatalf("the hand-made ledger deleted %v (left %v)", made, w.cloud.Keys())
	}
	for _, want := range []string{"sponson-receipts/preview/branch-ghost", cb, db} {
		if !strings.Contains(errs.Coded(err).Message+dump(res.Receipt.Lines), want) {
			t.Errorf("the refusal does not name %s: %v", want, err)
		}
	}
	// The run went on: what Sponson made is destroyed whole.
	if _, err := w.eng.Destroy(context.Background(), prCtx(12), Options{}); err != nil {
		t.Fatal(err)
	}
	if got := w.cloud.Keys(); !slices.Equal(got, []string{cb, db}) && !slices.Equal(got, []string{db, cb}) {
		t.Fatalf("after destroying pr-12: %v, want only the seeded ones", got)
	}
}

// A forged claim in a scope Sponson did write does not hide the scope that
// really manages the resource: every claim is weighed, and a claim the
// other scope's own record proves stops the destroy.
func TestDestroyWeighsEveryClaimOfAResource(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	cb := fakeEntry(optest.ItemKey("p1", "callbacks", "https://live.example/cb"))
	w.cloud.SeedItem("p1", "callbacks", "https://live.example/cb")
	// Sponson's own writes: pr-1 manages the callback; pr-9 recorded it
	// once too (the record a stale history would keep); pr-0 holds
	// something else.
	write := func(sc string, entries ...receipt.LedgerEntry) {
		l, _, err := w.store.Acquire(ctx, receipt.ScopeTarget("preview", sc), receipt.Owner{RunID: "r-" + sc}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		r, err := receipt.Decode(forged(t, "preview", sc, "", entries...))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.store.Write(ctx, r, l); err != nil {
			t.Fatal(err)
		}
		if err := w.store.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	write("pr-0", fakeEntry(optest.ObjectKey("p1", "other")))
	write("pr-1", cb)
	write("pr-9", cb)
	// A hand edit adds the callback to pr-0's ledger: sorted first, it
	// must not stand for every claim.
	w.store.Plant("preview", "pr-0", forged(t, "preview", "pr-0", "", fakeEntry(optest.ObjectKey("p1", "other")), cb))

	_, err := w.eng.Destroy(ctx, prCtx(9), Options{})
	if errs.CodeOf(err) != errs.OWNED_BY_OTHER_SCOPE || !strings.Contains(err.Error(), "pr-1") {
		t.Fatalf("destroy of pr-9: %v, want OWNED_BY_OTHER_SCOPE naming pr-1", err)
	}
	if !w.cloud.Exists(cb.Key) {
		t.Fatal("pr-1's live callback was deleted")
	}
}
