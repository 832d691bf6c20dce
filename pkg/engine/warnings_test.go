package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every warning the engine reports carries a code from the table, so
// scripts decide on it as on errors: no warn("", ...) and no Warning
// without a Code anywhere in the package.
func TestEveryWarningHasACode(t *testing.T) {
	uncoded := regexp.MustCompile(`\bwarn\(""|Warning\{Message:`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if uncoded.MatchString(line) {
				t.Errorf("%s:%d: a warning without a code: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
