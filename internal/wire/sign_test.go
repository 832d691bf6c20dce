package wire_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

const receiptKey = "7c1e3a5f9b2d4e6a8c0f1b3d5e7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a"

// SPONSON_RECEIPT_KEY reaches the store the CLI (Choose) and the Action
// (ActionConfig) open: every receipt commit of a run carries its MAC, and
// the run's redactor masks the key (and the previous one) in anything it
// prints. A key too short, or a previous key alone, is USAGE before any
// store is opened.
func TestReceiptKeyIsWiredAndMasked(t *testing.T) {
	ctx := context.Background()
	bare, fileURL := gittest.NewBareRepo(t)
	prev := strings.Repeat("9f", 20)
	env := map[string]string{receipt.ReceiptKeyVar: receiptKey, receipt.PreviousReceiptKeyVar: prev}
	cfg, err := wire.Choose(wire.Choice{Remote: fileURL, Getenv: getenv(env)})
	if err != nil || cfg.Keys == nil {
		t.Fatalf("Choose: %+v, %v", cfg, err)
	}
	st, err := wire.OpenStore(ctx, cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := wire.Build(st, wire.Config{Identity: wire.IdentityFromEnv(receipt.KindCLI, getenv(nil)), Ops: optest.New().Registry(), Dir: t.TempDir(),
		LookupEnv: lookup(map[string]string{"APP_KEY": appKey})})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	for _, k := range []string{receiptKey, prev} {
		if got := run.Redactor.String("key=" + k); strings.Contains(got, k) {
			t.Errorf("the redactor shows a receipt key: %q", got)
		}
	}
	if _, err := run.Engine.Apply(ctx, mustPlan(t), prCtx(3, "b"), run.Options(receipt.OpApply)); err != nil {
		t.Fatal(err)
	}
	log := gittest.Run(t, bare, "log", "--format=%B", "refs/heads/sponson-receipts/preview/pr-3")
	if !strings.Contains(log, "Sponson-MAC: hmac-sha256 "+cfg.Keys.ID()+" ") {
		t.Fatalf("the receipt commits are not signed with the key: %s", log)
	}
	if strings.Contains(log, receiptKey) {
		t.Fatal("the key is in a commit")
	}

	action := map[string]string{"GITHUB_REPOSITORY": "acme/shop", receipt.ReceiptKeyVar: receiptKey}
	if ac, err := wire.ActionConfig(getenv(action), "tok"); err != nil || ac.Store.Keys == nil || ac.Store.Keys.ID() != cfg.Keys.ID() {
		t.Fatalf("ActionConfig: %+v, %v", ac.Store, err)
	}
	for _, bad := range []map[string]string{{receipt.ReceiptKeyVar: "short"}, {receipt.PreviousReceiptKeyVar: receiptKey}} {
		if _, err := wire.Choose(wire.Choice{Remote: fileURL, Getenv: getenv(bad)}); errs.CodeOf(err) != errs.USAGE || strings.Contains(err.Error(), receiptKey) {
			t.Errorf("Choose(%v): %v, want USAGE", bad, err)
		}
	}
}
