package errs

import (
	"fmt"
	"strings"
)

// Suggest is the known name closest to name, for a "did you mean" — "" when
// none is close enough to be a likely typo. Close means an edit distance
// (insertions, deletions, substitutions and swaps of two neighbours,
// ignoring case) of at most one per three characters, and at least one.
// Ties go to the first in known's order.
func Suggest(name string, known []string) string {
	best, bestD := "", -1
	limit := max(1, len([]rune(name))/3)
	for _, k := range known {
		if k == name {
			return ""
		}
		d := distance(strings.ToLower(name), strings.ToLower(k))
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// DidYouMean is "Did you mean \"x\"? " for the closest known name, or "".
func DidYouMean(name string, known []string) string {
	if s := Suggest(name, known); s != "" {
		return fmt.Sprintf("Did you mean %q? ", s)
	}
	return ""
}

// distance is the optimal string alignment distance of a and b.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
