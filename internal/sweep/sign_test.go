package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/engine/enginetest"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

// With SPONSON_RECEIPT_KEY, the sweep (the bot's, and `sponson gc`'s)
// tears down only what writes signed with the key recorded: a closed pull
// request whose receipts no key signed (or a forger wrote) is a
// LEDGER_UNPROVEN finding that deletes nothing, while one applied under
// the key is destroyed whole in the same sweep.
func TestSignedSweepDestroysOnlyWhatSignedWritesRecorded(t *testing.T) {
	tm := enginetest.NewTime(t0)
	_, url := gittest.NewBareRepo(t)
	open := func(key string) receipt.Store {
		k, err := receipt.NewKeys(key, "")
		if err != nil {
			t.Fatal(err)
		}
		st, err := gitstore.New(context.Background(), gitstore.Options{URL: url, Clock: tm, Keys: k, Sleep: func(context.Context, time.Duration) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	const key = "3e5a7c9f1b2d4e6f8a0c1e3b5d7f9a2c4e6b8d0f1a3c5e7b9d2f4a6c8e0b1d3f"
	w := newWorld(t, open(""), tm)
	w.apply("preview", 9, "feat/j") // unsigned
	signed := newWorld(t, open(key), tm)
	signed.cloud, signed.gh = w.cloud, w.gh
	signed.eng.Ops = w.cloud.Registry()
	signed.apply("preview", 10, "feat/k")
	w.close(9)
	w.close(10)

	rep := signed.sweep()
	var unproven, destroyed bool
	for _, f := range rep.Findings {
		switch f.Scope {
		case "pr-9":
			unproven = f.Code == string(errs.LEDGER_UNPROVEN) && len(f.Destroyed) == 0
		case "pr-10":
			destroyed = f.Code == "" && len(f.Destroyed) == 2
		}
	}
	if !unproven || !destroyed {
		t.Fatalf("findings: %+v", rep.Findings)
	}
	if left := w.keys("pr-9"); len(left) != 2 {
		t.Fatalf("the unsigned scope's resources: %v, want both left", left)
	}
	if left := w.keys("pr-10"); len(left) != 0 {
		t.Fatalf("the signed scope's resources left: %v", left)
	}
}
