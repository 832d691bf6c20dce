package initplan

import (
	"bytes"
	"strings"
)

// IgnoreEntry is what .gitignore gets: the local store, leases and unsaved
// receipts live under .sponson/.
const IgnoreEntry = ".sponson/"

// Ignore returns .gitignore's content with .sponson/ added, and whether it
// changed: a file that already ignores it (.sponson, /.sponson/, ...) is
// left as it is, so running init again changes nothing.
func Ignore(src []byte) ([]byte, bool) {
	for _, l := range bytes.Split(src, []byte("\n")) {
		switch strings.TrimSpace(string(l)) {
		case ".sponson", ".sponson/", "/.sponson", "/.sponson/", ".sponson/*", "/.sponson/*":
			return src, false
		}
	}
	out := bytes.Clone(src)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, "# sponson: the local store, leases and unsaved receipts\n"+IgnoreEntry+"\n"...)
	return out, true
}
