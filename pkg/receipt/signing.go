package receipt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// Receipt signing (docs/adr/0012-receipt-signing.md). With
// SPONSON_RECEIPT_KEY set — one secret the Action, the bot and the CLI
// share — a store that supports it puts a MAC on every write it makes, over
// what the write records, and proves (Provenance) only what writes under a
// valid MAC recorded. Anyone can push a commit that imitates Sponson's
// trailers; only a holder of the key can make its MAC.
const (
	// ReceiptKeyVar holds the key that signs and verifies.
	ReceiptKeyVar = "SPONSON_RECEIPT_KEY"
	// PreviousReceiptKeyVar holds, during a rotation, the key that signed
	// before: it verifies, never signs.
	PreviousReceiptKeyVar = "SPONSON_RECEIPT_KEY_PREVIOUS"
	// MinReceiptKeyLen is the shortest key accepted, in bytes: 32 random
	// bytes' worth of hex (`openssl rand -hex 32` gives 64 characters) is
	// the intent; a shorter value is a password, guessable from one MAC.
	MinReceiptKeyLen = 32
	// macScheme names the MAC and its input's format in every tag.
	macScheme = "hmac-sha256"
)

// Keys are the receipt signing keys: the current one signs and verifies,
// a previous one (a rotation in progress) only verifies. The raw values
// never leave the process: stores keep only keys derived from them, and
// Secrets hands the raw values to the redactor.
type Keys struct {
	raw  []string
	keys []derived // keys[0] signs
}

type derived struct {
	id  string // names the key in a tag, for messages: not a secret
	mac []byte
}

// NewKeys returns the keys of current (SPONSON_RECEIPT_KEY) and previous
// (SPONSON_RECEIPT_KEY_PREVIOUS, "" for none); nil, nil when both are
// empty (signing off). USAGE when a key is shorter than MinReceiptKeyLen,
// when only a previous key is set (there is nothing to sign with), or
// when the two are equal.
func NewKeys(current, previous string) (*Keys, error) {
	current, previous = strings.TrimSpace(current), strings.TrimSpace(previous)
	if current == "" && previous == "" {
		return nil, nil
	}
	hint := "Generate one with `openssl rand -hex 32` and store it as a secret of the repository (Actions) and of the bot."
	if current == "" {
		return nil, errs.New(errs.USAGE, "%s is set but %s is not: the previous key only verifies, and receipts need a key to be signed with", PreviousReceiptKeyVar, ReceiptKeyVar).
			WithHint("Set %s to the new key; keep the old one in %s until every receipt branch has been written under the new one.", ReceiptKeyVar, PreviousReceiptKeyVar)
	}
	k := &Keys{}
	for _, v := range []struct{ name, value string }{{ReceiptKeyVar, current}, {PreviousReceiptKeyVar, previous}} {
		if v.value == "" {
			continue
		}
		if len(v.value) < MinReceiptKeyLen {
			return nil, errs.New(errs.USAGE, "%s is %d bytes long; a receipt key needs at least %d", v.name, len(v.value), MinReceiptKeyLen).WithHint("%s", hint)
		}
		k.raw = append(k.raw, v.value)
		k.keys = append(k.keys, derive(v.value))
	}
	if len(k.keys) == 2 && k.keys[0].id == k.keys[1].id {
		return nil, errs.New(errs.USAGE, "%s and %s are the same key", ReceiptKeyVar, PreviousReceiptKeyVar).
			WithHint("Unset %s once the rotation is over.", PreviousReceiptKeyVar)
	}
	return k, nil
}

// derive makes the MAC key and the key id of a raw key, each an
// HMAC-SHA256 keyed by the raw key over its own label, so neither is
// the raw key and the id says nothing about the MAC key.
func derive(raw string) derived {
	f := func(label string) []byte {
		m := hmac.New(sha256.New, []byte(raw))
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	return derived{id: hex.EncodeToString(f("sponson receipt key id v1")[:4]), mac: f("sponson receipt mac v1")}
}

// Secrets are the raw keys, for the redactor: no output may show them.
func (k *Keys) Secrets() []string {
	if k == nil {
		return nil
	}
	return append([]string(nil), k.raw...)
}

// ID is the id of the signing key (8 hex digits), as tags carry it.
func (k *Keys) ID() string {
	if k == nil {
		return ""
	}
	return k.keys[0].id
}

// Sign returns the tag of msg under the current key:
// "hmac-sha256 <key id> <hex MAC>".
func (k *Keys) Sign(msg []byte) string {
	d := k.keys[0]
	return macScheme + " " + d.id + " " + hex.EncodeToString(sum(d.mac, msg))
}

// Verify reports whether tag is a valid tag of msg under one of the keys
// (the current or the previous one), compared in constant time. A tag of
// another scheme, of a key these are not, or malformed, is not.
func (k *Keys) Verify(msg []byte, tag string) bool {
	if k == nil {
		return false
	}
	f := strings.Fields(tag)
	if len(f) != 3 || f[0] != macScheme {
		return false
	}
	want, err := hex.DecodeString(f[2])
	if err != nil {
		return false
	}
	for _, d := range k.keys {
		if d.id == f[1] && hmac.Equal(sum(d.mac, msg), want) {
			return true
		}
	}
	return false
}

func sum(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// Signing is implemented by a store that can sign its writes. Signs
// reports whether it does: it then proves (Provenance) only what writes
// under a valid MAC of its keys recorded, and destroy says so when it
// refuses an entry.
type Signing interface {
	Signs() bool
}
