package gitstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// hostilePush makes a commit on branch (created from nothing when it does
// not exist) with the git CLI, as anyone with push access could: files set
// (a nil value removes the file), then a push of that branch.
func hostilePush(t *testing.T, bare, branch string, files map[string][]byte) {
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
		p := filepath.Join(work, name)
		if data == nil {
			gittest.Run(t, work, "rm", "-q", "--ignore-unmatch", name)
			continue
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Run(t, work, "add", name)
	}
	gittest.Run(t, work, "commit", "-q", "--allow-empty", "-m", "hand edit")
	gittest.Run(t, work, "push", "-q", "-f", "origin", "HEAD:refs/heads/"+branch)
}

// A scope branch whose receipt.json someone removed is RECEIPT_CORRUPT for
// Read and for its own entry of List, never an empty ledger; a branch that
// only ever held a lease still reads as "no receipt"; other scopes list.
func TestRemovedReceiptIsCorrupt(t *testing.T) {
	t.Parallel()
	r := newRemote(t, "file")
	s := newStore(t, r.url, clock.System{})
	ctx := context.Background()
	for _, scope := range []string{"pr-1", "pr-2"} {
		target := receipt.ScopeTarget("preview", scope)
		l := mustLease(t, s, target, "run-"+scope, time.Minute)
		if err := s.Write(ctx, newReceipt("preview", scope, "run-"+scope, "k-"+scope), l); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	// A lease taken and given back, nothing written: no receipt.
	l := mustLease(t, s, receipt.ScopeTarget("preview", "pr-3"), "run-3", time.Minute)
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Read(ctx, "preview", "pr-3"); err != nil || got != nil {
		t.Fatalf("Read of a lease-only branch = %+v, %v; want no receipt", got, err)
	}

	hostilePush(t, r.dir, "sponson-receipts/preview/pr-1", map[string][]byte{receipt.ReceiptFile: nil})
	_, _, err := s.Read(ctx, "preview", "pr-1")
	wantCode(t, err, errs.RECEIPT_CORRUPT, "Read after receipt.json was removed")

	// Sponson's own commits on top (a lease taken and released) do not
	// make the missing receipt acceptable.
	l = mustLease(t, s, receipt.ScopeTarget("preview", "pr-1"), "run-again", time.Minute)
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Read(ctx, "preview", "pr-1")
	wantCode(t, err, errs.RECEIPT_CORRUPT, "Read after a lease commit on the removed receipt")

	list, err := s.List(ctx, "preview")
	if err != nil {
		t.Fatalf("List with one damaged scope: %v", err)
	}
	got := map[string]error{}
	for _, st := range list {
		got[st.Scope] = st.Err
	}
	if !errors.Is(got["pr-1"], errs.RECEIPT_CORRUPT) || got["pr-2"] != nil {
		t.Fatalf("List = %+v; want pr-1 RECEIPT_CORRUPT and pr-2 readable", list)
	}
}

// A receipt copied onto another scope's branch is RECEIPT_CORRUPT there.
func TestReceiptOfAnotherScopeIsCorrupt(t *testing.T) {
	t.Parallel()
	r := newRemote(t, "file")
	s := newStore(t, r.url, clock.System{})
	data, err := receipt.Encode(newReceipt("preview", "pr-504", "run-x", "k"))
	if err != nil {
		t.Fatal(err)
	}
	hostilePush(t, r.dir, "sponson-receipts/preview/pr-505", map[string][]byte{receipt.ReceiptFile: data})
	_, _, err = s.Read(context.Background(), "preview", "pr-505")
	wantCode(t, err, errs.RECEIPT_CORRUPT, "Read of pr-504's receipt on pr-505's branch")
}

// An unparsable lock.json hides nothing else: Locks returns every readable
// lease and names the bad branches; Scopes lists the scope with a problem.
func TestUnreadableLeasesAreReported(t *testing.T) {
	t.Parallel()
	r := newRemote(t, "file")
	s := newStore(t, r.url, clock.System{})
	ctx := context.Background()
	mustLease(t, s, receipt.ScopeTarget("preview", "pr-1"), "run-1", time.Minute)
	mustLease(t, s, receipt.ParentTarget("auth0:x:client:y"), "run-p", time.Minute)
	hostilePush(t, r.dir, "sponson-receipts/preview/-rf", map[string][]byte{receipt.LockFile: []byte("{not json")})
	hostilePush(t, r.dir, "sponson-receipts/_locks/0123456789abcdef0123456789abcdef", map[string][]byte{receipt.LockFile: []byte(`{"target": {"kind": "scope"}}`)})

	locks, err := s.Locks(ctx)
	var ue *receipt.UnreadableError
	if !errors.As(err, &ue) || !errors.Is(err, errs.RECEIPT_CORRUPT) || len(ue.Items) != 2 {
		t.Fatalf("Locks error = %v; want RECEIPT_CORRUPT naming the two bad branches", err)
	}
	if len(locks) != 2 {
		t.Fatalf("Locks = %+v; want the two readable leases beside the error", locks)
	}
	scopes, err := s.Scopes(ctx)
	if err != nil {
		t.Fatalf("Scopes: %v", err)
	}
	var problem bool
	for _, sc := range scopes {
		if sc.Scope == "-rf" {
			problem = sc.Problem != ""
		}
	}
	if !problem || len(scopes) != 2 {
		t.Fatalf("Scopes = %+v; want pr-1 and -rf (with its problem)", scopes)
	}
}

// Recorded knows what Sponson's own writes introduced as intents, not what
// a hand-made commit added, even after Sponson carried it forward.
// recordCreate records, as Sponson does under a lease of run-1, the
// intent and then the create of the ledger entry key in target's receipt.
func recordCreate(t *testing.T, s *Store, target receipt.Target, key string) *receipt.Receipt {
	t.Helper()
	ctx := context.Background()
	l := mustLease(t, s, target, "run-1", time.Minute)
	rc := newReceipt(target.Env, target.Scope, "run-1", key)
	rc.Ledger[0].CreatedBy = receipt.CreatedByIntent
	if err := s.Write(ctx, rc, l); err != nil {
		t.Fatal(err)
	}
	rc.Ledger[0].CreatedBy = receipt.CreatedBySponson
	if err := s.Write(ctx, rc, l); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestRecordedIgnoresHandEdits(t *testing.T) {
	t.Parallel()
	r := newRemote(t, "file")
	s := newStore(t, r.url, clock.System{})
	ctx := context.Background()
	target := receipt.ScopeTarget("preview", "pr-504")
	rc := recordCreate(t, s, target, "mine")
	forged := newReceipt("preview", "pr-504", "run-1", "mine", "theirs")
	forged.Ledger[1].CreatedBy = receipt.CreatedByIntent
	data, err := receipt.Encode(forged)
	if err != nil {
		t.Fatal(err)
	}
	hostilePush(t, r.dir, "sponson-receipts/preview/pr-504", map[string][]byte{receipt.ReceiptFile: data})
	// A Sponson run carries the forged entry forward.
	l := mustLease(t, s, target, "run-2", time.Minute)
	got, _, err := s.Read(ctx, "preview", "pr-504")
	if err != nil {
		t.Fatal(err)
	}
	got.RunID = "run-2"
	if err := s.Write(ctx, got, l); err != nil {
		t.Fatal(err)
	}
	ids, known, err := s.Recorded(ctx, target)
	if err != nil || !known {
		t.Fatalf("Recorded = %v, %v, %v", ids, known, err)
	}
	mine, theirs := rc.Ledger[0].Ref().Identity(), forged.Ledger[1].Ref().Identity()
	if !ids[mine] || ids[theirs] {
		t.Fatalf("Recorded = %v; want %q and not %q", ids, mine, theirs)
	}
}

// A generation at the largest int64 (only a hand edit gets there) is
// refused on takeover, never wrapped to a negative one; a lease's
// generation reads back exactly.
func TestGenerationNeverWraps(t *testing.T) {
	t.Parallel()
	r := newRemote(t, "file")
	clock := clock.NewFake(start)
	s := newStore(t, r.url, clock)
	ctx := context.Background()
	target := receipt.ScopeTarget("preview", "pr-1")
	mustLease(t, s, target, "run-1", time.Minute)
	hostilePush(t, r.dir, "sponson-receipts/preview/pr-1", map[string][]byte{GenerationFile: []byte("9223372036854775806\n")})
	clock.Advance(2 * time.Minute)
	l := mustLease(t, s, target, "run-2", time.Minute)
	if l.Generation != 9223372036854775807 {
		t.Fatalf("generation = %d, want 2^63-1", l.Generation)
	}
	got, err := s.Lease(ctx, target)
	if err != nil || got.Generation != l.Generation {
		t.Fatalf("Lease = %+v, %v: the generation does not read back exactly", got, err)
	}
	clock.Advance(2 * time.Minute)
	_, _, err = s.Acquire(ctx, target, owner("run-3"), time.Minute)
	wantCode(t, err, errs.RECEIPT_CORRUPT, "takeover past the largest generation")
}
