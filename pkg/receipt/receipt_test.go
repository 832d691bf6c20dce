package receipt_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/goldentest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

var t0 = time.Date(2026, 10, 11, 14, 2, 5, 123456789, time.UTC)

func sample() *receipt.Receipt {
	pre := receipt.NewLease(receipt.ScopeTarget("preview", "pr-42"),
		receipt.Owner{RunID: "run-old", Operation: receipt.OpApply, Kind: receipt.KindAction, Host: "gh-runner", PID: 7,
			GitHubRunID: 123456, GitHubRunAttempt: 1, Actor: "octocat"}, 3, t0.Add(-30*time.Minute), 15*time.Minute)
	return &receipt.Receipt{
		Version: 1, Env: "preview", Scope: "pr-42", RunID: "run-7f3a", Operation: receipt.OpApply,
		Status: receipt.StatusPartial, Branch: "feat/x", SHA: "0123456789abcdef0123456789abcdef01234567",
		HashKey:  strings.Repeat("ab", 32),
		PlanHash: "sha256:" + strings.Repeat("0f", 32),
		Lines: map[string]receipt.LineResult{
			"db":  {Status: "created", Resources: []string{"branch:sponson/preview/pr-42"}, Outputs: map[string]any{"host": "ep-1.neon.tech"}},
			"env": {Status: "waiting"},
			"cb":  {Status: "error", ErrorCode: errs.PROVIDER_TRANSIENT, Error: "auth0 answered 503"},
		},
		Ledger: receipt.Ledger{
			{Adapter: "neon", Op: "branch", Provider: map[string]any{"project": "proj_abc"}, Key: "branch:sponson/preview/pr-42",
				ID: "br-1", Hash: receipt.HashValue(strings.Repeat("ab", 32), []byte(`{"name":"x"}`)), CreatedBy: receipt.CreatedBySponson,
				Line: "db", Outputs: map[string]any{"host": "ep-1.neon.tech"}},
			{Adapter: "auth0", Op: "callback", Provider: map[string]any{"domain": "example.eu.auth0.com", "client": "AbCd123"},
				Key: "callbacks:https://pr-42.example.dev/cb?a=1&b=2", CreatedBy: receipt.CreatedByIntent, Line: "cb",
				Parent: "auth0:example.eu.auth0.com:client:AbCd123"},
			{Adapter: "vercel", Op: "env", Provider: map[string]any{"project": "prj_123", "team": "team_9"},
				Key: "env:preview:feat/x:OLD", ID: "env_9", CreatedBy: receipt.CreatedByAdopted, Orphan: true},
		},
		LockPreempted: &pre,
		History:       []receipt.HistoryEntry{{SHA: "fedcba9", At: t0.Add(-time.Hour), RunID: "run-old", Status: receipt.StatusComplete}},
		Warnings:      []receipt.Warning{{Code: errs.SHORT_SECRET, Message: "a secret is shorter than 4 characters"}},
		StartedAt:     t0,
		FinishedAt:    t0.Add(3 * time.Second),
	}
}

// TestEncodeGolden pins the stored shape of a receipt: field names, order,
// indentation, the trailing newline, no HTML escaping.
func TestEncodeGolden(t *testing.T) {
	got, err := receipt.Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	goldentest.Check(t, filepath.Join("testdata", "receipt.golden.json"), got)
	again, _ := receipt.Encode(sample())
	if !bytes.Equal(got, again) {
		t.Error("two encodings of one receipt differ")
	}
	r, err := receipt.Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	back, _ := receipt.Encode(r)
	if !bytes.Equal(back, got) {
		t.Errorf("decode+encode changed the receipt\n--- got\n%s", back)
	}
	if r.LockPreempted.TTL != 15*time.Minute || !r.StartedAt.Equal(t0) {
		t.Errorf("decoded lease TTL %v, started %v", r.LockPreempted.TTL, r.StartedAt)
	}
}

// TestPlanHashIsOptional: a receipt written before plan_hash existed
// (the golden file as it was) reads as before, with no hash, and writes
// back without one; the format version stays 1.
func TestPlanHashIsOptional(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "receipt-without-plan-hash.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := receipt.Decode(old)
	if err != nil {
		t.Fatalf("an older receipt no longer reads: %v", err)
	}
	if r.PlanHash != "" || r.Version != 1 {
		t.Errorf("older receipt: plan hash %q, version %d", r.PlanHash, r.Version)
	}
	back, _ := receipt.Encode(r)
	if !bytes.Equal(back, old) {
		t.Errorf("an older receipt changed on a round trip\n%s", back)
	}
	cur, _ := receipt.Encode(sample())
	if !bytes.Contains(cur, []byte(`"plan_hash": "sha256:0f0f`)) || !bytes.Contains(cur, []byte(`"version": 1`)) {
		t.Errorf("the plan hash is not recorded, or the version moved:\n%s", cur)
	}
}

func TestEncodeEmptyReceipt(t *testing.T) {
	got, err := receipt.Encode(&receipt.Receipt{Env: "preview", Scope: "main", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version": 1,`, `"lines": {}`, `"ledger": []`, `"history": []`, `"closed": null`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("empty receipt lacks %s:\n%s", want, got)
		}
	}
	for _, absent := range []string{"started_at", "lock_preempted", "superseded_by", "warnings"} {
		if strings.Contains(string(got), absent) {
			t.Errorf("empty receipt has %s:\n%s", absent, got)
		}
	}
	if _, err := receipt.Encode(&receipt.Receipt{Version: 2}); !errors.Is(err, errs.INTERNAL) {
		t.Errorf("encode of a version 2 receipt: %v", err)
	}
	if _, err := receipt.Encode(&receipt.Receipt{Lines: map[string]receipt.LineResult{"x": {Outputs: map[string]any{"f": func() {}}}}}); !errors.Is(err, errs.INTERNAL) {
		t.Errorf("encode of an unencodable output: %v", err)
	}
	if _, err := receipt.Encode(nil); !errors.Is(err, errs.INTERNAL) {
		t.Errorf("encode of nil: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		in   string
		code errs.Code
	}{
		{``, errs.RECEIPT_CORRUPT},
		{`{`, errs.RECEIPT_CORRUPT},
		{`null`, errs.RECEIPT_CORRUPT},
		{`[]`, errs.RECEIPT_CORRUPT},
		{`{}`, errs.RECEIPT_CORRUPT},
		{`{"version": "1"}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1.5}`, errs.RECEIPT_CORRUPT},
		{`{"version": 0}`, errs.RECEIPT_CORRUPT},
		{`{"version": -1}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1, "lines": []}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1, "started_at": "yesterday"}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1, "lock_preempted": {"ttl": "forever"}}`, errs.RECEIPT_CORRUPT},
		{`{"version": 1}garbage`, errs.RECEIPT_CORRUPT},
		{`{"version": 2}`, errs.RECEIPT_VERSION},
		{`{"version": 2, "ledger": {"a": "new shape"}}`, errs.RECEIPT_VERSION},
		{`{"ledger": "x", "version": 99}`, errs.RECEIPT_VERSION},
	}
	for _, c := range cases {
		_, err := receipt.DecodeFrom([]byte(c.in), "the receipt of preview/pr-1")
		if !errors.Is(err, c.code) {
			t.Errorf("Decode(%q) = %v, want %s", c.in, err, c.code)
			continue
		}
		if !strings.Contains(err.Error(), "preview/pr-1") {
			t.Errorf("Decode(%q): the error %q does not say where", c.in, err)
		}
	}
	r, err := receipt.Decode([]byte(`{"version": 1, "env": "preview", "a_field_from_a_later_1.x": {"x": 1}}` + "\n"))
	if err != nil || r.Env != "preview" {
		t.Errorf("unknown fields must be ignored: %+v, %v", r, err)
	}
}

// FuzzDecode: the receipt parser never panics, every rejection is coded,
// and whatever it accepts re-encodes to something it accepts unchanged.
func FuzzDecode(f *testing.F) {
	golden, _ := os.ReadFile(filepath.Join("testdata", "receipt.golden.json"))
	for _, s := range []string{string(golden), `{"version":1}`, `{"version":2}`, `{`, `null`, `{"version":1,"ledger":[{"provider":null}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := receipt.Decode(data)
		if err != nil {
			if c := errs.CodeOf(err); c != errs.RECEIPT_CORRUPT && c != errs.RECEIPT_VERSION {
				t.Fatalf("rejection coded %s: %v", c, err)
			}
			return
		}
		enc, err := receipt.Encode(r)
		if err != nil {
			t.Fatalf("an accepted receipt does not encode: %v", err)
		}
		r2, err := receipt.Decode(enc)
		if err != nil {
			t.Fatalf("a re-encoded receipt does not decode: %v\n%s", err, enc)
		}
		enc2, _ := receipt.Encode(r2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable\n%s\n%s", enc, enc2)
		}
	})
}

func TestLeaseJSON(t *testing.T) {
	l := receipt.NewLease(receipt.ParentTarget("auth0:x:client:y"), receipt.Owner{RunID: "r1", Kind: receipt.KindBot}, 4, t0, 0)
	if l.TTL != receipt.DefaultTTL || !l.ExpiresAt.Equal(t0.Add(receipt.DefaultTTL)) {
		t.Fatalf("NewLease with no TTL: %+v", l)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ttl":"15m0s"`, `"holder":"r1"`, `"generation":4`, `"identity":"auth0:x:client:y"`, `"kind":"bot"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("lease JSON %s lacks %s", b, want)
		}
	}
	var back receipt.Lease
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.TTL != l.TTL || !back.Same(l) || !back.ExpiresAt.Equal(l.ExpiresAt) || back.Owner != l.Owner {
		t.Errorf("lease round trip: %+v, want %+v", back, l)
	}
	r := l.Renewed(t0.Add(time.Minute))
	if !r.ExpiresAt.Equal(t0.Add(time.Minute+receipt.DefaultTTL)) || !r.RenewedAt.Equal(t0.Add(time.Minute)) || !r.Same(l) {
		t.Errorf("Renewed = %+v", r)
	}
	if l.Expired(l.ExpiresAt.Add(-time.Nanosecond)) || !l.Expired(l.ExpiresAt) {
		t.Error("a lease expires exactly at ExpiresAt")
	}
}

func TestHeldAndLostErrors(t *testing.T) {
	owner := receipt.Owner{RunID: "run-9", Operation: receipt.OpApply, Kind: receipt.KindAction, Host: "runner", PID: 12,
		GitHubRunID: 777, GitHubRunAttempt: 2, Actor: "octocat"}
	scope := receipt.NewLease(receipt.ScopeTarget("preview", "pr-12"), owner, 5, t0, 15*time.Minute)
	err := error(receipt.HeldError(scope, t0.Add(12*time.Minute)))
	e := errs.As(err)
	if e.Code != errs.LOCK_HELD || errs.ExitCode(err) != 3 {
		t.Fatalf("HeldError code %s exit %d", e.Code, errs.ExitCode(err))
	}
	for _, want := range []string{"preview/pr-12", "run-9", "action", "actor octocat", "GitHub run 777 attempt 2", "host runner pid 12",
		"since 2026-10-11T14:02:05Z", "until 2026-10-11T14:17:05Z", "3m0s left", "generation 5"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("LOCK_HELD message %q lacks %q", e.Message, want)
		}
	}
	for _, want := range []string{"--lock-wait", `sponson unlock preview pr-12 --reason "..."`} {
		if !strings.Contains(e.HintText(), want) {
			t.Errorf("LOCK_HELD hint %q lacks %q", e.HintText(), want)
		}
	}
	if l, ok := receipt.HeldLease(err); !ok || !l.Same(scope) {
		t.Errorf("HeldLease = %+v, %v", l, ok)
	}
	if _, ok := receipt.HeldLease(errs.New(errs.LOCK_LOST, "x")); ok {
		t.Error("HeldLease of a LOCK_LOST")
	}
	env, _ := json.Marshal(e.Details)
	if !strings.Contains(string(env), `"expires_at":"2026-10-11T14:17:05.123456789Z"`) {
		t.Errorf("the details do not serialise the lease: %s", env)
	}

	parent := receipt.NewLease(receipt.ParentTarget("auth0:t:client:c"), owner, 1, t0, time.Minute)
	pe := receipt.HeldError(parent, t0)
	if pe.Details["parent"] != "auth0:t:client:c" || !strings.Contains(pe.HintText(), `sponson unlock --parent "auth0:t:client:c"`) {
		t.Errorf("parent LOCK_HELD: details %v, hint %q", pe.Details, pe.HintText())
	}

	succ := receipt.NewLease(scope.Target, receipt.Owner{RunID: "run-10"}, 6, t0.Add(20*time.Minute), time.Minute)
	lost := receipt.LostError(scope, &succ)
	if lost.Code != errs.LOCK_LOST || !strings.Contains(lost.Message, "run-10") || !strings.Contains(lost.Message, "generation 6") {
		t.Errorf("LostError = %v", lost)
	}
	if err := receipt.CheckFence(scope, &scope); err != nil {
		t.Errorf("CheckFence(self) = %v", err)
	}
	if err := receipt.CheckFence(scope, nil); !errors.Is(err, errs.LOCK_LOST) {
		t.Errorf("CheckFence(no lease) = %v", err)
	}
	renewed := scope.Renewed(t0.Add(time.Minute))
	if err := receipt.CheckFence(scope, &renewed); err != nil {
		t.Errorf("a renewal is the same grant: %v", err)
	}
}

func TestTargets(t *testing.T) {
	cases := []struct {
		t     receipt.Target
		valid bool
		key   string
	}{
		{receipt.ScopeTarget("preview", "pr-1"), true, "preview/pr-1"},
		{receipt.ScopeTarget("_locks", "x"), true, "%5Flocks/x"},
		{receipt.ScopeTarget("a/b", ".."), true, "a%2Fb/%2E%2E"},
		{receipt.ParentTarget("preview/pr-1"), true, "_locks/" + receipt.ParentLockID("preview/pr-1")},
		{receipt.Target{}, false, ""},
		{receipt.Target{Env: "e"}, false, ""},
		{receipt.Target{Env: "e", Scope: "s", Identity: "i"}, false, ""},
	}
	for _, c := range cases {
		err := c.t.Validate()
		if (err == nil) != c.valid {
			t.Errorf("%+v: Validate = %v", c.t, err)
			continue
		}
		if err != nil && !errors.Is(err, errs.USAGE) {
			t.Errorf("%+v: Validate = %v, want USAGE", c.t, err)
		}
		if c.valid && c.t.Key() != c.key {
			t.Errorf("%+v: Key = %q, want %q", c.t, c.t.Key(), c.key)
		}
	}
	if id := receipt.ParentLockID("auth0:x"); len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Errorf("ParentLockID = %q", id)
	}
}

func TestCheckWrites(t *testing.T) {
	l := receipt.NewLease(receipt.ScopeTarget("preview", "pr-1"), receipt.Owner{RunID: "r"}, 1, t0, time.Minute)
	r := &receipt.Receipt{Env: "preview", Scope: "pr-1"}
	if err := receipt.CheckWrites([]receipt.Write{{Receipt: r, Lease: l}}); err != nil {
		t.Fatal(err)
	}
	for name, ws := range map[string][]receipt.Write{
		"nil receipt": {{Lease: l}},
		"no scope":    {{Receipt: &receipt.Receipt{Env: "preview"}, Lease: l}},
		"other scope": {{Receipt: &receipt.Receipt{Env: "preview", Scope: "pr-2"}, Lease: l}},
		"twice":       {{Receipt: r, Lease: l}, {Receipt: r, Lease: l}},
	} {
		if err := receipt.CheckWrites(ws); !errors.Is(err, errs.INTERNAL) {
			t.Errorf("%s: %v, want INTERNAL", name, err)
		}
	}
}

// Index finds an entry by identity, whatever the order of its provider
// block's keys and however its key is spelt in invalid UTF-8.
func TestLedgerIndex(t *testing.T) {
	l := receipt.Ledger{
		{Adapter: "http", Op: "resource", Provider: map[string]any{"a": 1.0, "b": "x"}, Key: "k"},
		{Adapter: "http", Op: "resource", Provider: map[string]any{"a": 2.0}, Key: "k"},
		{Adapter: "http", Op: "list_item", Key: "k"},
		{Adapter: "http", Op: "resource", Key: "bad\xff"},
	}
	for _, c := range []struct {
		ref  receipt.ResourceRef
		want int
	}{
		{receipt.ResourceRef{Adapter: "http", Op: "resource", Provider: map[string]any{"b": "x", "a": 1}, Key: "k"}, 0},
		{receipt.ResourceRef{Adapter: "http", Op: "resource", Provider: map[string]any{"a": 2}, Key: "k"}, 1},
		{receipt.ResourceRef{Adapter: "http", Op: "list_item", Provider: map[string]any{}, Key: "k"}, 2},
		{receipt.ResourceRef{Adapter: "http", Op: "resource", Key: "bad\xfe"}, 3}, // both encode as "bad\ufffd"
		{receipt.ResourceRef{Adapter: "http", Op: "resource", Key: "other"}, -1},
	} {
		if got := l.Index(c.ref); got != c.want {
			t.Errorf("Index(%s) = %d, want %d", c.ref.Identity(), got, c.want)
		}
	}
}
