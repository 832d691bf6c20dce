package cli_test

import (
	"os"
	"strings"
	"testing"
)

// An op whose outputs depend on the line (http.resource: id plus its
// outputs:) is checked with the line's own outputs.
func TestValidatePerLineOutputs(t *testing.T) {
	src, err := os.ReadFile("testdata/http-outputs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t, map[string]string{}, map[string]string{"release.plan.yaml": string(src)})
	r := runCLI(t, env, "validate")
	if r.code != 2 {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
	want := `release.plan.yaml:20:55: REF_OUTPUT_UNKNOWN: line "app" (http.resource) has no output "nope"; its outputs are: id, slug`
	if !strings.Contains(r.err, want) {
		t.Errorf("stderr lacks\n%s\ngot\n%s", want, r.err)
	}
	if strings.Contains(r.err, `"slug"`) {
		t.Errorf("a declared output was refused:\n%s", r.err)
	}
}
