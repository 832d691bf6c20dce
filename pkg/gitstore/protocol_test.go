package gitstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Every read of the store answers the same whether the remote speaks
// protocol v2 (over HTTP, `git http-backend` given the Git-Protocol
// header; over file://, upload-pack given GIT_PROTOCOL) or only v0 (the
// header dropped), and a write through either lands where the other
// reads it.
func TestProtocolV2AndV0ReadAlike(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, fileURL := gittest.NewBareRepo(t)
	v2 := gittest.Serve(t, dir)
	v0 := gittest.Serve(t, dir, gittest.WithProtocolV0())
	fk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))

	stores := map[string]*Store{
		"file": newStore(t, fileURL, fk),
		"v2":   newStore(t, v2.URL, fk),
		"v0":   newStore(t, v0.URL, fk),
	}
	for name, want := range map[string]bool{"file": true, "v2": true, "v0": false} {
		if got := stores[name].wire.V2(); got != want {
			t.Fatalf("%s: speaks v2 = %v, want %v", name, got, want)
		}
	}
	// Each store writes scopes of its own; pr-1 and pr-10 (a ref prefix
	// of the other) and a tombstone among them; v0 keeps a lease.
	for i, name := range []string{"file", "v2", "v0"} {
		w := stores[name]
		for j, sc := range []string{fmt.Sprintf("pr-%d", i+1), fmt.Sprintf("pr-%d0", i+1)} {
			target := receipt.ScopeTarget([]string{"preview", "staging"}[j], sc)
			l := mustLease(t, w, target, "run-"+sc, time.Hour)
			r := newReceipt(target.Env, sc, "run-"+sc, "k-"+sc)
			if name == "v2" && j == 1 {
				r.Ledger, r.Closed = nil, &receipt.Tombstone{By: "test", At: fk.Now()}
			}
			if name == "v0" && j == 0 {
				if err := w.Write(ctx, r, l); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := w.WriteRelease(ctx, r, l); err != nil {
				t.Fatalf("%s: write %s: %v", name, sc, err)
			}
		}
	}
	mustLease(t, stores["v2"], receipt.ParentTarget("auth0:app:shared"), "run-lock", time.Hour)

	var answers [][]byte
	for _, name := range []string{"file", "v2", "v0"} {
		answers = append(answers, readEverything(t, stores[name]))
	}
	if !bytes.Equal(answers[0], answers[1]) || !bytes.Equal(answers[0], answers[2]) {
		t.Errorf("the stores read differently:\nfile: %s\nv2:   %s\nv0:   %s", answers[0], answers[1], answers[2])
	}
	if !bytes.Contains(answers[0], []byte(`"pr-10"`)) || !bytes.Contains(answers[0], []byte("auth0:app:shared")) {
		t.Errorf("the reads miss what was written: %s", answers[0])
	}
	// A fresh store of each reads the same too (no tip in memory).
	for _, name := range []string{"v2", "v0"} {
		url := map[string]string{"v2": v2.URL, "v0": v0.URL}[name]
		if got := readEverything(t, newStore(t, url, fk)); !bytes.Equal(got, answers[0]) {
			t.Errorf("a fresh %s store reads %s, want %s", name, got, answers[0])
		}
	}
	gittest.Fsck(t, dir)
}

// readEverything is every read of s, as JSON.
func readEverything(t *testing.T, s *Store) []byte {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	must := func(what string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out[what] = v
	}
	r, _, err := s.Read(ctx, "preview", "pr-1")
	must("read pr-1", r, err)
	r, _, err = s.Read(ctx, "staging", "pr-10")
	must("read pr-10", r, err)
	r, _, err = s.Read(ctx, "preview", "pr-9")
	must("read pr-9 (none)", r, err)
	list, err := s.List(ctx, "preview")
	must("list preview", list, err)
	scopes, err := s.Scopes(ctx)
	must("scopes", scopes, err)
	locks, err := s.Locks(ctx)
	must("locks", locks, err)
	hist, err := s.History(ctx, receipt.ScopeTarget("staging", "pr-20"))
	must("history", len(hist), err)
	v, err := s.ViewScope(ctx, "preview", "pr-2", []string{"pr-3"})
	must("view", v.Others, err)
	out["view receipt"] = v.Receipt
	rest, err := v.Rest(ctx)
	must("view rest", rest, err)
	named, err := v.Named(ctx, []string{"pr-1"})
	must("view named", named, err)
	sv, err := s.Survey(ctx)
	must("survey", sv.Scopes, err)
	var targets []receipt.Target
	for _, sc := range sv.Scopes {
		targets = append(targets, receipt.ScopeTarget(sc.Env, sc.Scope))
	}
	states, err := s.ReadSurveyed(ctx, sv, targets)
	must("surveyed", states, err)
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// In protocol v2 a read of one scope lists that scope's branch alone: a
// new store and its read cost the git server the same requests and bytes
// at 301 scope branches as at one (within 100 bytes: the packfile's
// compression), where in v0 every exchange carries every ref.
func TestReadOfOneScopeListsOneRef(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, fileURL := gittest.NewBareRepo(t)
	v2 := gittest.Serve(t, dir)
	v0 := gittest.Serve(t, dir, gittest.WithProtocolV0())
	w := newStore(t, fileURL, nil)
	l := mustLease(t, w, receipt.ScopeTarget("preview", "pr-1"), "run-1", time.Hour)
	if err := w.WriteRelease(ctx, newReceipt("preview", "pr-1", "run-1", "k-1"), l); err != nil {
		t.Fatal(err)
	}
	read := func(srv *gittest.Server) (int64, int64) {
		t.Helper()
		r0, b0 := srv.Requests(), srv.BytesSent()
		s := newStore(t, srv.URL, nil)
		if r, _, err := s.Read(ctx, "preview", "pr-1"); err != nil || r == nil {
			t.Fatalf("read pr-1: %v, %v", r, err)
		}
		return srv.Requests() - r0, srv.BytesSent() - b0
	}
	v2Req, v2Alone := read(v2)
	_, v0Alone := read(v0)
	seedBranches(t, dir, 300)
	v2ReqMany, v2Many := read(v2)
	_, v0Many := read(v0)
	t.Logf("new store + read of one scope: v2 %d requests, %d bytes at 1 branch, %d at 301; v0 %d bytes, %d", v2Req, v2Alone, v2Many, v0Alone, v0Many)
	if v2Many > v2Alone+100 || v2ReqMany != v2Req || v2Req > 3 {
		t.Errorf("v2: %d requests and %d bytes at 301 branches, %d and %d at 1, want the same and at most 3 requests", v2ReqMany, v2Many, v2Req, v2Alone)
	}
	if v0Many < v0Alone+300*60 {
		t.Errorf("v0: %d bytes at 301 branches, %d at 1: the listing should carry every ref", v0Many, v0Alone)
	}
}

// seedBranches adds n scope branches (preview/s-0000, ...) to the bare
// repository dir in one `git fast-import`.
func seedBranches(t *testing.T, dir string, n int) {
	t.Helper()
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		ref := refOf(receipt.ScopeTarget("preview", fmt.Sprintf("s-%04d", i))).String()
		data := fmt.Sprintf(`{"version":1,"env":"preview","scope":"s-%04d"}`, i)
		fmt.Fprintf(&in, "commit %s\ncommitter seed <seed@example.invalid> 1764579600 +0000\ndata 4\nseed\nM 100644 inline %s\ndata %d\n%s\n\n",
			ref, receipt.ReceiptFile, len(data), data)
	}
	gittest.RunInput(t, dir, in.Bytes(), "fast-import", "--quiet")
}

// A v2 remote over HTTP is taken to push atomically (asking would list
// every ref); one whose receive-pack does not advertise it fails the first
// multi-scope write with nothing written, and the store says so from
// then on.
func TestV2RemoteWithoutAtomicPushes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, _ := gittest.NewBareRepo(t)
	gittest.Run(t, dir, "config", "receive.advertiseAtomic", "false")
	srv := gittest.Serve(t, dir)
	s := newStore(t, srv.URL, nil)
	if !s.Capabilities().AtomicMulti {
		t.Fatal("a v2 remote is not taken to push atomically")
	}
	a := mustLease(t, s, receipt.ScopeTarget("preview", "a"), "run-1", time.Hour)
	b := mustLease(t, s, receipt.ScopeTarget("preview", "b"), "run-1", time.Hour)
	err := s.WriteMany(ctx, []receipt.Write{{Receipt: newReceipt("preview", "a", "run-1"), Lease: a}, {Receipt: newReceipt("preview", "b", "run-1"), Lease: b}})
	wantCode(t, err, errs.STORE_REJECTED, "WriteMany on a remote without atomic pushes")
	for _, sc := range []string{"a", "b"} {
		if r, _, err := s.Read(ctx, "preview", sc); err != nil || r != nil {
			t.Errorf("%s after the refused write: %v, %v; want no receipt", sc, r, err)
		}
	}
	if s.Capabilities().AtomicMulti {
		t.Error("after the refusal the store still says AtomicMulti")
	}
	if err := s.WriteMany(ctx, []receipt.Write{{Receipt: newReceipt("preview", "a", "run-1"), Lease: a}, {Receipt: newReceipt("preview", "b", "run-1"), Lease: b}}); err != nil {
		t.Fatalf("WriteMany in order: %v", err)
	}
}
