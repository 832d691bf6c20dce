package gitstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// shapeBranch makes a commit on branch with the git CLI, as anyone with
// push access could: shape runs in the work tree (checked out at the
// branch's tip, or empty) before everything in it is committed and pushed.
func shapeBranch(t gittest.TB, bare, branch string, shape func(work string)) {
	t.Helper()
	work := t.TempDir()
	gittest.Run(t, work, "init", "-q")
	gittest.Run(t, work, "remote", "add", "origin", gittest.FileURL(bare))
	if _, err := gittest.Try(work, nil, "fetch", "-q", "origin", "refs/heads/"+branch+":refs/remotes/origin/x"); err == nil {
		gittest.Run(t, work, "checkout", "-q", "-b", "w", "refs/remotes/origin/x")
	} else {
		gittest.Run(t, work, "checkout", "-q", "--orphan", "w")
	}
	shape(work)
	gittest.Run(t, work, "add", "-A")
	gittest.Run(t, work, "commit", "-q", "--allow-empty", "-m", "hand edit")
	gittest.Run(t, work, "push", "-q", "-f", "origin", "HEAD:refs/heads/"+branch)
}

// replaceWithDir makes name a directory holding one file.
func replaceWithDir(name string) func(string) {
	return func(work string) {
		p := filepath.Join(work, name)
		_ = os.Remove(p)
		if err := os.MkdirAll(p, 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(filepath.Join(p, "x"), []byte("x\n"), 0o644); err != nil {
			panic(err)
		}
	}
}

// replaceWithSymlink makes name a symbolic link to target.
func replaceWithSymlink(name, target string) func(string) {
	return func(work string) {
		p := filepath.Join(work, name)
		_ = os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			panic(err)
		}
	}
}

// replaceWithBytes writes data as name.
func replaceWithBytes(name string, data []byte) func(string) {
	return func(work string) {
		p := filepath.Join(work, name)
		_ = os.RemoveAll(p)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			panic(err)
		}
	}
}

// A branch of any shape blocks only its own scope: whatever someone pushed
// in place of receipt.json or lock.json (a directory, a symbolic link, a
// submodule, junk, nothing, too many bytes), every other scope still
// reads, lists, leases and writes, and the bad one is RECEIPT_CORRUPT
// (or its problem is named) wherever it is listed.
func TestOneBadBranchBlocksOnlyItsScope(t *testing.T) {
	t.Parallel()
	shapes := []struct {
		name  string
		shape func(t gittest.TB, work string)
		// receiptBad: Read and List of the bad scope are RECEIPT_CORRUPT
		// (otherwise only its lease is damaged).
		receiptBad bool
	}{
		{"receipt.json a directory", func(t gittest.TB, w string) { replaceWithDir(receipt.ReceiptFile)(w) }, true},
		{"receipt.json a symlink", func(t gittest.TB, w string) { replaceWithSymlink(receipt.ReceiptFile, "/etc/passwd")(w) }, true},
		{"receipt.json a symlink to a receipt", func(t gittest.TB, w string) {
			_ = os.Rename(filepath.Join(w, receipt.ReceiptFile), filepath.Join(w, "real.json"))
			replaceWithSymlink(receipt.ReceiptFile, "real.json")(w)
		}, true},
		{"receipt.json a submodule", func(t gittest.TB, w string) {
			_ = os.Remove(filepath.Join(w, receipt.ReceiptFile))
			gittest.Run(t, w, "rm", "-q", "--cached", receipt.ReceiptFile)
			gittest.Run(t, w, "update-index", "--add", "--cacheinfo", "160000,0123456789abcdef0123456789abcdef01234567,"+receipt.ReceiptFile)
		}, true},
		{"receipt.json junk", func(t gittest.TB, w string) { replaceWithBytes(receipt.ReceiptFile, []byte("\x00\xffnot json"))(w) }, true},
		{"receipt.json missing", func(t gittest.TB, w string) { _ = os.Remove(filepath.Join(w, receipt.ReceiptFile)) }, true},
		{"receipt.json too large", func(t gittest.TB, w string) {
			replaceWithBytes(receipt.ReceiptFile, bytes.Repeat([]byte(" "), receipt.MaxBytes+1))(w)
		}, true},
		{"lock.json a directory", func(t gittest.TB, w string) { replaceWithDir(receipt.LockFile)(w) }, false},
		{"lock.json a symlink", func(t gittest.TB, w string) { replaceWithSymlink(receipt.LockFile, "receipt.json")(w) }, false},
		{"lock.json a submodule", func(t gittest.TB, w string) {
			gittest.Run(t, w, "update-index", "--add", "--cacheinfo", "160000,0123456789abcdef0123456789abcdef01234567,"+receipt.LockFile)
		}, false},
		{"lock.json junk", func(t gittest.TB, w string) { replaceWithBytes(receipt.LockFile, []byte("{"))(w) }, false},
		{"generation a directory", func(t gittest.TB, w string) { replaceWithDir(GenerationFile)(w) }, false},
	}
	// Each shape's remote is made once and copied for both transports.
	shaped := map[string]*gittest.Fixture{}
	for _, sh := range shapes {
		shaped[sh.name] = twoScopes.Derive("two scopes, pr-2 "+sh.name, func(t gittest.TB, dir string) {
			shapeBranch(t, dir, "sponson-receipts/preview/pr-2", func(w string) { sh.shape(t, w) })
		})
	}
	for _, transport := range []string{"file", "http"} {
		for _, sh := range shapes {
			t.Run(transport+"/"+sh.name, func(t *testing.T) {
				t.Parallel()
				r := copyRemote(t, shaped[sh.name], transport)
				ctx := context.Background()

				// A fresh store (nothing in memory), as every run starts.
				s := newStore(t, r.url, clock.System{})
				if got, _, err := s.Read(ctx, "preview", "pr-1"); err != nil || got == nil {
					t.Fatalf("Read of the healthy scope: %v", err)
				}
				if _, _, err := s.Read(ctx, "preview", "pr-2"); sh.receiptBad {
					wantCode(t, err, errs.RECEIPT_CORRUPT, "Read of the bad scope")
				}
				list, err := s.List(ctx, "preview")
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				got := map[string]receipt.Stored{}
				for _, st := range list {
					got[st.Scope] = st
				}
				if got["pr-1"].Receipt == nil || got["pr-1"].Err != nil {
					t.Fatalf("List: the healthy scope = %+v", got["pr-1"])
				}
				if sh.receiptBad && !errors.Is(got["pr-2"].Err, errs.RECEIPT_CORRUPT) {
					t.Fatalf("List: the bad scope = %+v, want RECEIPT_CORRUPT", got["pr-2"])
				}
				v, err := s.ViewScope(ctx, "preview", "pr-1", []string{"pr-2"})
				if err != nil || v.Receipt == nil {
					t.Fatalf("ViewScope of the healthy scope naming the bad one: %v", err)
				}
				if _, err := v.Rest(ctx); err != nil {
					t.Fatalf("ViewScope's Rest: %v", err)
				}
				scopes, err := s.Scopes(ctx)
				if err != nil || len(scopes) != 2 {
					t.Fatalf("Scopes = %+v, %v; want both scopes", scopes, err)
				}
				if _, err := s.Locks(ctx); err != nil && !errors.Is(err, errs.RECEIPT_CORRUPT) {
					t.Fatalf("Locks: %v", err)
				}
				// The healthy scope and a new one take leases and write.
				for _, scope := range []string{"pr-1", "pr-3"} {
					l := mustLease(t, s, receipt.ScopeTarget("preview", scope), "run-again-"+scope, time.Minute)
					if err := s.WriteRelease(ctx, newReceipt("preview", scope, "run-again-"+scope, "k"), l); err != nil {
						t.Fatalf("write %s: %v", scope, err)
					}
				}
				// The bad scope itself is damaged, never the store unavailable.
				if _, _, err := s.Acquire(ctx, receipt.ScopeTarget("preview", "pr-2"), owner("run-bad"), time.Minute); errs.CodeOf(err) == errs.STORE_UNAVAILABLE {
					t.Fatalf("Acquire of the bad scope: %v; want it refused as damaged, not the store as unavailable", err)
				}
			})
		}
	}
}

// stray is the size of strayBlob's file: over receipt.MaxBytes, the most
// a store file may have, so the filter leaves it out; sixteen times the
// 1 MiB the listing may fetch.
const stray = receipt.MaxBytes + 1<<20

// strayBlob is a remote where a store wrote preview/pr-1 and preview/pr-2
// (a lease, then the receipt and the release in one), and someone then
// added a stray random file of stray bytes to pr-2's branch.
var strayBlob = gittest.NewFixture("a stray blob", func(t gittest.TB, dir string) {
	writeScopes(t, dir, true, "pr-1", "pr-2")
	big := make([]byte, stray) // random: nothing for zlib to squeeze
	_, _ = rand.NewChaCha8([32]byte{19}).Read(big)
	shapeBranch(t, dir, "sponson-receipts/preview/pr-2", replaceWithBytes("stray.bin", big))
})

// A big stray file on one receipt branch is not downloaded by a listing
// when the remote serves partial clones (uploadpack.allowFilter, as GitHub
// does): the packfile of List stays far below the file's size, and the
// listing and the other scopes read as before.
func TestStrayBlobIsNotFetched(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"file", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			r := copyRemote(t, strayBlob, transport)
			gittest.Run(t, r.dir, "config", "uploadpack.allowFilter", "true")
			ctx := context.Background()

			// A new scope's first read, and the listing of its
			// environment, by a store that starts from nothing.
			s := newStore(t, r.url, clock.System{})
			v, err := s.ViewScope(ctx, "preview", "pr-3", nil)
			if err != nil {
				t.Fatal(err)
			}
			list, err := v.Rest(ctx)
			if err != nil || len(list) != 2 || list[0].Err != nil || list[1].Err != nil {
				t.Fatalf("List = %+v, %v", list, err)
			}
			t.Logf("the first read and the listing fetched %d bytes", s.wire.BytesFetched())
			if got := s.wire.BytesFetched(); got > 1<<20 {
				t.Fatalf("List fetched %d bytes with a %d-byte stray file on one branch; want under 1 MiB", got, stray)
			}
			// The scope with the stray file still takes its lease and writes
			// (the file is carried over by hash).
			l := mustLease(t, s, receipt.ScopeTarget("preview", "pr-2"), "run-again", time.Minute)
			if err := s.WriteRelease(ctx, newReceipt("preview", "pr-2", "run-again", "k"), l); err != nil {
				t.Fatalf("write on the branch with the stray file: %v", err)
			}
			gittest.Fsck(t, r.dir)
		})
	}
}
