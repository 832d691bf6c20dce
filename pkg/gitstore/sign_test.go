package gitstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
)

const (
	keyA = "5f0c1e9a7b3d2f4e6a8c0b1d3e5f7a9c2b4d6e8f0a1c3e5b7d9f1a3c5e7b9d1f"
	keyB = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
)

func keys(t testing.TB, current, previous string) func(*Options) {
	t.Helper()
	k, err := receipt.NewKeys(current, previous)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) { o.Keys = k }
}

// forgePush commits receipt on branch with the git CLI under msg — a
// message that imitates Sponson's own, trailers and all — as anyone with
// push access could.
func forgePush(t *testing.T, bare, branch, msg string, data []byte) {
	t.Helper()
	work := t.TempDir()
	gittest.Run(t, work, "init", "-q")
	gittest.Run(t, work, "remote", "add", "origin", gittest.FileURL(bare))
	gittest.Run(t, work, "fetch", "-q", "origin", "refs/heads/"+branch+":refs/remotes/origin/x")
	gittest.Run(t, work, "checkout", "-q", "-b", "w", "refs/remotes/origin/x")
	if err := os.WriteFile(filepath.Join(work, receipt.ReceiptFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, work, "add", receipt.ReceiptFile)
	if err := os.WriteFile(filepath.Join(work, ".msg"), []byte(msg), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, work, "commit", "-q", "--cleanup=verbatim", "-F", ".msg")
	gittest.Run(t, work, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
}

// With receipt keys, Recorded counts only commits under a valid MAC: a
// forged commit that copies a Sponson commit's message (its event and its
// MAC) or drops the MAC records nothing, while a store without keys is
// fooled by both; a store with another key proves nothing at all; the
// previous key of a rotation still verifies.
func TestRecordedTrustsOnlySignedCommits(t *testing.T) {
	t.Parallel()
	r := newRemote(t, "file")
	s := newStore(t, r.url, clock.System{}, keys(t, keyA, ""))
	ctx := context.Background()
	target := receipt.ScopeTarget("preview", "pr-77")
	branch := "sponson-receipts/preview/pr-77"
	recordCreate(t, s, target, "mine")
	// Every commit Sponson made carries the MAC, last.
	for _, body := range strings.Split(gittest.Run(t, r.dir, "log", "--format=%B%x00", "refs/heads/"+branch), "\x00") {
		if body = strings.TrimSpace(body); body != "" && !strings.Contains(body, "\n"+trailerMAC+"hmac-sha256 ") {
			t.Fatalf("a commit without its MAC: %q", body)
		}
	}
	writeMsg := strings.TrimRight(gittest.Run(t, r.dir, "log", "-1", "--format=%B", "refs/heads/"+branch+"^"), "\n") + "\n"
	if !strings.Contains(writeMsg, trailerEvent) {
		t.Fatalf("not a receipt write: %q", writeMsg)
	}
	encode := func(keys ...string) []byte {
		f := newReceipt("preview", "pr-77", "run-1", keys...)
		for i := range f.Ledger {
			f.Ledger[i].CreatedBy = receipt.CreatedByIntent
		}
		data, err := receipt.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// The whole message of a Sponson write, its MAC included.
	forgePush(t, r.dir, branch, writeMsg, encode("mine", "theirs"))
	// The same without the MAC line.
	unsigned, _, ok := splitMAC(writeMsg)
	if !ok {
		t.Fatalf("no MAC to cut from %q", writeMsg)
	}
	forgePush(t, r.dir, branch, unsigned, encode("mine", "theirs", "other"))

	id := func(k string) string { return newReceipt("preview", "pr-77", "", k).Ledger[0].Ref().Identity() }
	check := func(name string, s *Store, known bool, want ...string) {
		t.Helper()
		ids, ok, err := s.Recorded(ctx, target)
		if err != nil || ok != known {
			t.Fatalf("%s: Recorded = %v, %v, %v; want known %v", name, ids, ok, err, known)
		}
		if len(ids) != len(want) {
			t.Fatalf("%s: Recorded = %v, want %v", name, ids, want)
		}
		for _, k := range want {
			if !ids[id(k)] {
				t.Fatalf("%s: Recorded = %v, want %v", name, ids, want)
			}
		}
	}
	check("the signing store", s, true, "mine")
	check("a fresh store with the key", newStore(t, r.url, clock.System{}, keys(t, keyA, "")), true, "mine")
	check("a store without keys", newStore(t, r.url, clock.System{}), true, "mine", "theirs", "other")
	check("a store with another key", newStore(t, r.url, clock.System{}, keys(t, keyB, "")), false)
	check("a rotation: the new key, the old one previous", newStore(t, r.url, clock.System{}, keys(t, keyB, keyA)), true, "mine")
}

// A branch made by hand from nothing proves nothing with keys; a squash
// carries the signed record forward, and a store with another key does
// not trust the squash's record.
func TestSignedCompactionKeepsTheRecord(t *testing.T) {
	t.Parallel()
	r := newRemote(t, "file")
	s := newStore(t, r.url, clock.System{}, keys(t, keyA, ""), func(o *Options) { o.MaxDepth = 3 })
	ctx := context.Background()
	target := receipt.ScopeTarget("preview", "pr-78")
	rc := newReceipt("preview", "pr-78", "run-1", "mine")
	for i := 0; i < 5; i++ {
		l := mustLease(t, s, target, "run-1", time.Minute)
		if err := s.Write(ctx, rc, l); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	root := strings.TrimSpace(gittest.Run(t, r.dir, "rev-list", "--max-parents=0", "refs/heads/sponson-receipts/preview/pr-78"))
	if body := gittest.Run(t, r.dir, "log", "-1", "--format=%B", root); !strings.Contains(body, trailerSquash) || !strings.Contains(body, trailerMAC) {
		t.Fatalf("the root is not a signed squash: %q", body)
	}
	mine := rc.Ledger[0].Ref().Identity()
	if ids, ok, err := s.Recorded(ctx, target); err != nil || !ok || !ids[mine] {
		t.Fatalf("after compaction: Recorded = %v, %v, %v", ids, ok, err)
	}
	if ids, ok, err := newStore(t, r.url, clock.System{}, keys(t, keyB, "")).Recorded(ctx, target); err != nil || ok || len(ids) != 0 {
		t.Fatalf("another key: Recorded = %v, %v, %v", ids, ok, err)
	}

	data, err := receipt.Encode(newReceipt("preview", "branch-ghost", "hand", "mine"))
	if err != nil {
		t.Fatal(err)
	}
	hostilePush(t, r.dir, "sponson-receipts/preview/branch-ghost", map[string][]byte{receipt.ReceiptFile: data})
	if ids, ok, err := s.Recorded(ctx, receipt.ScopeTarget("preview", "branch-ghost")); err != nil || ok || len(ids) != 0 {
		t.Fatalf("a hand-made branch: Recorded = %v, %v, %v", ids, ok, err)
	}
}

// A key too short, a previous key alone, or the same key twice is refused;
// no key at all is no signing.
func TestReceiptKeysAreChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cur, prev string }{{"short", ""}, {"", keyA}, {keyA, keyA}, {keyA, "short"}} {
		if _, err := receipt.NewKeys(c.cur, c.prev); err == nil {
			t.Errorf("NewKeys(%q, %q) accepted", c.cur, c.prev)
		}
	}
	if k, err := receipt.NewKeys("", ""); k != nil || err != nil {
		t.Fatalf("no keys: %v, %v", k, err)
	}
}
