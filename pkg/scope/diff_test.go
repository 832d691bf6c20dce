package scope_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// diff renders want and got as indented JSON and returns a line diff
// ("-" want, "+" got), or "" when they are equal.
func diff(t *testing.T, want, got any) string {
	t.Helper()
	w, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	g, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(w) == string(g) {
		return ""
	}
	return lineDiff(strings.Split(string(w), "\n"), strings.Split(string(g), "\n"))
}

// lineDiff is a longest-common-subsequence diff of two line lists.
func lineDiff(a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + b[j] + "\n")
			j++
		default:
			out.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return out.String()
}

func TestLineDiffShowsChanges(t *testing.T) {
	got := lineDiff([]string{"a", "b", "c"}, []string{"a", "x", "c"})
	want := "  a\n+ x\n- b\n  c\n"
	if got != want {
		t.Errorf("lineDiff:\ngot\n%s\nwant\n%s", got, want)
	}
}
