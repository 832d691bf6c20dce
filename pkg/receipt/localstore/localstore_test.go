package localstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/localstore"
	"github.com/sponson/apply/pkg/receipt/receipttest"
)

func TestConformance(t *testing.T) {
	receipttest.Run(t, func(t *testing.T, clock *clock.Fake) receipt.Store {
		return localstore.New(filepath.Join(t.TempDir(), "receipts"), clock)
	}, receipttest.WithPlant(func(t *testing.T, s receipt.Store, env, scope string, raw []byte) {
		dir := s.(*localstore.Store).Dir(receipt.ScopeTarget(env, scope))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, receipt.ReceiptFile), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}))
}
