package receipt

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"unicode/utf8"

	"github.com/sponson/apply/pkg/errs"
)

// LedgerEntry is one resource the scope manages (engine.md, "The ledger").
// Adapter, Op, Provider and Key together are its identity (Ref); ID is the
// provider's id for it, which may change when it is re-created.
type LedgerEntry struct {
	Adapter string `json:"adapter"`
	Op      string `json:"op"`
	// Provider is the provider block the resource lives in, as it was when
	// the entry was recorded; destroy uses it, not the current plan.
	Provider  map[string]any `json:"provider"`
	Key       string         `json:"key"`
	ID        string         `json:"id,omitempty"`
	Hash      string         `json:"hash,omitempty"` // HashValue of the live value under the scope's HashKey
	CreatedBy CreatedBy      `json:"created_by"`
	Line      string         `json:"line,omitempty"`
	Orphan    bool           `json:"orphan,omitempty"`
	Outputs   map[string]any `json:"outputs,omitempty"`
	// Parent is the identity of the shared provider object the resource is
	// an entry of (LockOn); rollback and destroy lock it even when the line
	// is gone.
	Parent string `json:"parent,omitempty"`
	// Fingerprints are, for the once-only outputs of the resource (a
	// password the provider answers only to its create), HashValue of the
	// value under the scope's HashKey, by output name: what a later run can
	// compare without the value, which is never written.
	Fingerprints map[string]string `json:"fingerprints,omitempty"`
}

// Ref is the entry's identity.
func (e LedgerEntry) Ref() ResourceRef {
	return ResourceRef{Adapter: e.Adapter, Op: e.Op, Provider: e.Provider, Key: e.Key}
}

// ResourceRef identifies a resource at a provider: the same key in two
// provider blocks (two projects) is two resources.
type ResourceRef struct {
	Adapter  string
	Op       string
	Provider map[string]any
	Key      string
}

// Identity is the canonical string of r: a JSON array
// [adapter, op, provider, key] with the provider block's keys sorted and a
// nil block written as {}. Two refs are the same resource exactly when their
// identities are equal; numbers compare by value (1 and 1.0 are equal, as
// after a JSON round trip).
func (r ResourceRef) Identity() string {
	p := r.Provider
	if p == nil {
		p = map[string]any{}
	}
	b, err := json.Marshal([]any{r.Adapter, r.Op, p, r.Key})
	if err != nil {
		// A provider block comes from YAML or JSON and always encodes; keep
		// an identity that still tells blocks apart rather than panic.
		b, _ = json.Marshal([]any{r.Adapter, r.Op, err.Error(), r.Key})
	}
	return string(b)
}

// String is the identity, for messages.
func (r ResourceRef) String() string { return r.Identity() }

// Ledger is the list of resources a scope manages, in creation order
// (destroy walks it in reverse).
type Ledger []LedgerEntry

// Index is the position of the entry with ref's identity, or -1. Equal
// identities have equal adapters, ops and keys (the identity is their
// JSON, which tells valid UTF-8 strings apart), so only entries that may
// share those are compared by identity.
func (l Ledger) Index(ref ResourceRef) int {
	id := ""
	for i := range l {
		if differ(l[i].Key, ref.Key) || differ(l[i].Op, ref.Op) || differ(l[i].Adapter, ref.Adapter) {
			continue
		}
		if id == "" {
			id = ref.Identity()
		}
		if l[i].Ref().Identity() == id {
			return i
		}
	}
	return -1
}

// differ reports whether two strings are sure to encode to different JSON
// (invalid UTF-8 encodes as U+FFFD, so two invalid strings may not).
func differ(a, b string) bool {
	return a != b && utf8.ValidString(a) && utf8.ValidString(b)
}

// Lookup returns the entry with ref's identity.
func (l Ledger) Lookup(ref ResourceRef) (LedgerEntry, bool) {
	if i := l.Index(ref); i >= 0 {
		return l[i], true
	}
	return LedgerEntry{}, false
}

// ByIdentity maps every entry's identity to its position, for callers that
// look up many refs (the last position wins if the ledger holds duplicates).
func (l Ledger) ByIdentity() map[string]int {
	m := make(map[string]int, len(l))
	for i := range l {
		m[l[i].Ref().Identity()] = i
	}
	return m
}

// NewHashKey returns a fresh random HMAC key for a scope (32 bytes, hex).
// rnd nil means crypto/rand.
func NewHashKey(rnd io.Reader) (string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return "", errs.Wrap(err, errs.INTERNAL, "generate the scope's hash key")
	}
	return hex.EncodeToString(b), nil
}

// HashValue is the ledger hash of a value: HMAC-SHA256, keyed by the scope's
// hash key, of the sha256 of the value's canonical bytes, as
// "hmac-sha256:<hex>". Keying by a random per-scope key means a receipt does
// not let anyone test guesses of a low-entropy value against a public hash
// table; it does not hide the value from someone who can read the receipt's
// hash key.
func HashValue(key string, canonical []byte) string {
	sum := sha256.Sum256(canonical)
	m := hmac.New(sha256.New, []byte(key))
	m.Write(sum[:])
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}
