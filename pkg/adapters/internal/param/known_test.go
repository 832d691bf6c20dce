package param

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
)

// An unknown parameter gets a "did you mean" from the op's own names.
func TestKnownSuggests(t *testing.T) {
	err := Known("neon.branch", map[string]any{"parnet": "main", "zzz": 1}, "name", "parent", "region")
	e := errs.As(err)
	if e == nil || e.Code != errs.PARAM_INVALID || !strings.Contains(e.HintText(), `parnet: did you mean "parent"?`) || strings.Contains(e.HintText(), "zzz: did") {
		t.Fatalf("%v, hint %q", err, errs.Coded(err).HintText())
	}
	if err := Known("neon.branch", map[string]any{"name": "x"}, "name"); err != nil {
		t.Fatal(err)
	}
}
