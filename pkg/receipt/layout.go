package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// The layout every store shares (stores.md): per scope "<env>/<scope>/"
// holding ReceiptFile and LockFile (and, in the local store, one file per
// run under HistoryDir); per parent object "_locks/<ParentLockID>/" holding
// LockFile, which records the identity in clear.
const (
	ReceiptFile = "receipt.json"
	LockFile    = "lock.json"
	HistoryDir  = "history"
	LocksDir    = "_locks"
	// DefaultLocalRoot is the local store's root, relative to the checkout.
	DefaultLocalRoot = ".sponson/receipts"
	// DefaultUnsavedDir is where SaveUnsaved keeps receipts a store refused.
	DefaultUnsavedDir = ".sponson/unsaved"
)

// ParentLockID is the first 32 hex digits of sha256(identity): the name of
// a parent object's lock. The identity itself is kept inside the lock.
func ParentLockID(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:])[:32]
}

// EncodeSegment turns an environment, scope or run name into one path
// segment that is safe as a file name and as a git ref component, and that
// DecodeSegment turns back: bytes in [A-Za-z0-9._-] are kept, every other
// byte becomes %XX (upper-case hex). On top of that, so no segment can
// escape its directory, hide, or fall into a reserved namespace:
//   - a leading '.' or '_' is encoded ("." and ".." become "%2E" and "%2E%2E",
//     "_locks" becomes "%5Flocks": names starting with '_' belong to Sponson);
//   - a trailing '.' is encoded (git refuses components ending in '.');
//   - the '.' of a trailing ".lock" is encoded (git reserves that suffix).
//
// The empty string encodes to "" and must be refused by the caller.
func EncodeSegment(s string) string {
	var b strings.Builder
	n := len(s)
	for i := 0; i < n; i++ {
		c := s[i]
		keep := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
		switch {
		case i == 0 && (c == '.' || c == '_'):
			keep = false
		case i == n-1 && c == '.':
			keep = false
		case c == '.' && i == n-5 && s[i:] == ".lock":
			keep = false
		}
		if keep {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// DecodeSegment reverses EncodeSegment. It fails on a segment EncodeSegment
// could not have produced (a malformed escape, or any non-canonical form),
// so a directory or ref made by something else is never mistaken for a
// scope.
func DecodeSegment(seg string) (string, error) {
	if seg == "" {
		return "", fmt.Errorf("empty segment")
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", fmt.Errorf("segment %q: truncated escape", seg)
		}
		v, err := hex.DecodeString(seg[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("segment %q: bad escape", seg)
		}
		b.WriteByte(v[0])
		i += 2
	}
	s := b.String()
	if EncodeSegment(s) != seg {
		return "", fmt.Errorf("segment %q is not in canonical form", seg)
	}
	return s, nil
}
