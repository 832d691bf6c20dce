package action

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/receipt"
)

// SPONSON_RECEIPT_KEY in the step's environment is a secret of the job:
// masked with ::add-mask:: before the first other byte of output and never
// shown anywhere else, and the run still applies.
func TestReceiptKeyIsMaskedFirst(t *testing.T) {
	t.Parallel()
	const key = "c0ffee1e3a5f9b2d4e6f8a0c1e3b5d7f9a2c4e6b8d0f1a3c5e7b9d2f4a6c8e0b"
	w := newWorld(t)
	w.vars[receipt.ReceiptKeyVar] = key
	w.openPR()
	w.event("pull_request", fixture(t, "pull_request/opened.payload.json"))
	if code := w.run(); code != 0 {
		t.Fatalf("exit %d\n%s", code, w.out.String())
	}
	masked := false
	for _, l := range strings.Split(w.out.String(), "\n") {
		v, ok := strings.CutPrefix(l, "::add-mask::")
		if !ok {
			break
		}
		masked = masked || v == key
	}
	if !masked || strings.Count(w.out.String(), key) != 1 {
		t.Fatalf("the receipt key is not masked first, or shows elsewhere:\n%s", w.out.String())
	}
}
