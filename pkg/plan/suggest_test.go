package plan_test

import (
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

// A mistyped adapter, op, output, line id, environment or top-level key
// gets a "did you mean" from the known names, in the hint; a name nothing
// is close to gets none.
func TestDidYouMean(t *testing.T) {
	src := `version: 1
environments: [preview, production]
chnges: []
changes:
  - id: db
    adapter: neno
    op: branch
  - id: db2
    adapter: neon
    op: brnch
  - id: b3
    adapter: neon
    op: branch
  - id: cb
    adapter: auth0
    op: callback
    url: { from: b3.connection_strng }
  - id: far
    adapter: aws
    op: bucket
`
	p, err := plan.Parse("release.plan.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0].HintText(), `Did you mean "changes"?`) {
		t.Errorf("unknown key: %v", p.Warnings)
	}
	want := map[errs.Code]string{
		errs.ADAPTER_UNKNOWN:    `Did you mean "neon"?`,
		errs.OP_UNKNOWN:         `Did you mean "branch"?`,
		errs.REF_OUTPUT_UNKNOWN: `Did you mean "connection_string"?`,
	}
	got := errs.Flatten(p.Check(fakeCatalog{}))
	seen := map[errs.Code]bool{}
	for _, e := range got {
		if e.Line == 19 { // adapter aws: nothing is close
			if strings.Contains(e.HintText(), "Did you mean") {
				t.Errorf("aws got a suggestion: %s", e.HintText())
			}
			continue
		}
		if w, ok := want[e.Code]; ok {
			seen[e.Code] = true
			if !strings.HasPrefix(e.HintText(), w) {
				t.Errorf("%s at line %d: hint %q, want it to start %q", e.Code, e.Line, e.HintText(), w)
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("saw %v of %v in %v", seen, want, got)
	}

	_, err = plan.Parse("release.plan.yaml", []byte("version: 1\nchanges:\n  - id: a\n    adapter: x\n    op: y\n    p: { from: bb.out }\n  - id: b\n    adapter: x\n    op: y\n"))
	if e := errs.Flatten(err); len(e) != 1 || e[0].Code != errs.REF_UNKNOWN || !strings.HasPrefix(e[0].HintText(), `Did you mean "b"?`) {
		t.Errorf("line id: %v", err)
	}
	if e := errs.Flatten(err)[0]; e.Code != errs.REF_UNKNOWN || !strings.HasPrefix(e.HintText(), `Did you mean "b"?`) {
		t.Errorf("line id: %v (hint %q)", err, errs.Coded(err).HintText())
	}
	if _, err := p.Select("previwe"); errs.CodeOf(err) != errs.ENV_UNKNOWN || !strings.HasPrefix(errs.Coded(err).HintText(), `Did you mean "preview"?`) {
		t.Errorf("environment: %v", err)
	}
}
