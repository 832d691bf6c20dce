package gitstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
)

// Every kind of commit the store makes, then `git fsck --strict` on the
// remote, and the layout stores.md promises, read with git itself.
func TestLayoutAndFsck(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rem := newRemote(t, tr)
			clock := clock.NewFake(start)
			s := newStore(t, rem.url, clock)
			target := receipt.ScopeTarget("preview", "feat/ü x")
			l := mustLease(t, s, target, "run-1", time.Minute)
			if _, err := s.Renew(ctx, l); err != nil {
				t.Fatal(err)
			}
			r := newReceipt(target.Env, target.Scope, "run-1", "a")
			if err := s.Write(ctx, r, l); err != nil {
				t.Fatal(err)
			}
			ref := refOf(target).String()
			if want := "refs/heads/sponson-receipts/preview/feat%2F%C3%BC%20x"; ref != want {
				t.Fatalf("ref = %s, want %s", ref, want)
			}
			// While held: README.md, generation, lock.json, receipt.json,
			// in git's order.
			if got := lsTree(t, rem.dir, ref); got != "README.md generation lock.json receipt.json" {
				t.Errorf("tree while held = %q", got)
			}
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			if got := lsTree(t, rem.dir, ref); got != "README.md generation receipt.json" {
				t.Errorf("tree after release = %q", got)
			}
			if gen := strings.TrimSpace(gittest.Run(t, rem.dir, "show", ref+":generation")); gen != "1" {
				t.Errorf("generation after release = %q, want 1", gen)
			}
			stored := gittest.Run(t, rem.dir, "show", ref+":receipt.json")
			want, _ := receipt.Encode(r)
			if stored != string(want) || !strings.HasSuffix(stored, "}\n") || !strings.Contains(stored, "\n  \"env\": \"preview\",\n") {
				t.Errorf("receipt.json is not the pretty encoding with a trailing newline:\n%s", stored)
			}
			readme := gittest.Run(t, rem.dir, "show", ref+":README.md")
			for _, s := range []string{"Never merge this branch", "Deleting it is safe", `"feat/ü x"`, `"preview"`} {
				if !strings.Contains(readme, s) {
					t.Errorf("README.md does not say %q:\n%s", s, readme)
				}
			}

			l2 := mustLease(t, s, target, "run-2", time.Minute)
			if _, err := s.ForceRelease(ctx, target, "runner died", "alice"); err != nil {
				t.Fatal(err)
			}
			subjects := strings.Split(strings.TrimSpace(gittest.Run(t, rem.dir, "log", "--reverse", "--format=%s", ref)), "\n")
			key := "preview/feat%2F%C3%BC%20x"
			wantSubjects := []string{
				"acquire " + key + " run-1 generation-1",
				"renew " + key + " run-1 generation-1",
				"apply " + key + " run-1 complete",
				"release " + key + " run-1 generation-1",
				"acquire " + key + " run-2 generation-2",
				"unlock " + key + " run-2 forced-by-alice",
			}
			if strings.Join(subjects, "\n") != strings.Join(wantSubjects, "\n") {
				t.Errorf("commit subjects:\n%s\nwant:\n%s", strings.Join(subjects, "\n"), strings.Join(wantSubjects, "\n"))
			}
			// Every commit is unique: a nonce in each.
			if n := strings.Count(gittest.Run(t, rem.dir, "log", "--format=%B", ref), trailerNonce); n != len(wantSubjects) {
				t.Errorf("%d nonces in %d commits", n, len(wantSubjects))
			}
			hist, err := s.History(ctx, target)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 2 || hist[0].RunID != "run-1" || hist[1].Operation != receipt.OpUnlock || hist[1].Lease == nil || !hist[1].Lease.Same(l2) {
				t.Errorf("History = %+v", hist)
			}

			// A parent lock: README.md, generation, lock.json naming the
			// identity in clear.
			identity := "auth0:example.eu.auth0.com:client:AbCd123"
			p := mustLease(t, s, receipt.ParentTarget(identity), "run-3", time.Minute)
			pref := RefPrefix + "_locks/" + receipt.ParentLockID(identity)
			if got := lsTree(t, rem.dir, pref); got != "README.md generation lock.json" {
				t.Errorf("lock branch tree = %q", got)
			}
			var stored2 receipt.Lease
			if err := json.Unmarshal([]byte(gittest.Run(t, rem.dir, "show", pref+":lock.json")), &stored2); err != nil || stored2.Target.Identity != identity || !stored2.Same(p) {
				t.Errorf("lock.json = %+v, %v", stored2, err)
			}
			if !strings.Contains(gittest.Run(t, rem.dir, "show", pref+":README.md"), identity) {
				t.Error("the lock branch's README does not name the object")
			}
			if _, err := s.SaveUnsaved(ctx, newReceipt("preview", "pr-1", "run-4")); err != nil {
				t.Fatal(err)
			}
			gittest.Fsck(t, rem.dir)
		})
	}
}

func lsTree(t *testing.T, dir, ref string) string {
	t.Helper()
	out := gittest.Run(t, dir, "ls-tree", "--name-only", ref)
	return strings.Join(strings.Fields(out), " ")
}

func TestParseRef(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		kind refKind
		want receipt.Target
	}{
		{RefPrefix + "preview/pr-1", refScope, receipt.ScopeTarget("preview", "pr-1")},
		{RefPrefix + "%5Flocks/x", refScope, receipt.ScopeTarget("_locks", "x")},
		{RefPrefix + "_locks/" + receipt.ParentLockID("x"), refLock, receipt.Target{}},
		{RefPrefix + "_locks/nothex", refOther, receipt.Target{}},
		{RefPrefix + "_unsaved/preview/pr-1/run", refOther, receipt.Target{}},
		{RefPrefix + "preview/pr-1/extra", refOther, receipt.Target{}},
		{RefPrefix + "preview/pr%2f1", refOther, receipt.Target{}}, // not canonical
		{RefPrefix + "preview", refOther, receipt.Target{}},
		{"refs/heads/main", refOther, receipt.Target{}},
	}
	for _, c := range cases {
		kind, target, _ := parseRef(c.name)
		if kind != c.kind || target != c.want {
			t.Errorf("parseRef(%q) = %v %+v, want %v %+v", c.name, kind, target, c.kind, c.want)
		}
	}
}
