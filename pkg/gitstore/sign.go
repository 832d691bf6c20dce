package gitstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sponson/apply/pkg/receipt"
)

// Signed commits (docs/adr/0012-receipt-signing.md). With Options.Keys,
// every commit the store makes carries, as its last trailer,
//
//	Sponson-MAC: hmac-sha256 <key id> <hex>
//
// an HMAC-SHA256, under a key derived from SPONSON_RECEIPT_KEY, of
// macInput: the branch, the parents, the tree, the message without this
// line (the subject and every other trailer: the event, the receipt it
// carries, the squash it stands for, the depth, the nonce), and the
// SHA-256 of the receipt.json and compacted.json it holds. Provenance —
// what destroy, gc and the sweep trust — then counts only commits whose
// MAC verifies under the current or the previous key: a commit pushed by
// hand, one that imitates the trailers, one signed with another key, one
// copied to another branch or onto another parent, records nothing, and a
// squash without a valid MAC carries no record forward.
//
// What the MAC cannot stop (the branch ruleset can): someone who holds the
// key forging anything, a branch rolled back to an older signed tip (a
// replay of what once was true) and a branch deleted.

// trailerMAC is the MAC of a signed commit; always the message's last line.
const trailerMAC = "Sponson-MAC: "

// macDomain opens every MAC input: the format of what is signed.
const macDomain = "sponson-receipt-commit/1"

// macInput is what a commit's MAC is over: length-prefixed fields, so no
// two different commits encode alike.
func macInput(ref plumbing.ReferenceName, parents []plumbing.Hash, tree plumbing.Hash, msg string, files *tipState) []byte {
	var b []byte
	field := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	field(macDomain)
	field(trailingKey(ref))
	ps := make([]string, len(parents))
	for i, p := range parents {
		ps[i] = p.String()
	}
	field(strings.Join(ps, ","))
	field(tree.String())
	field(msg)
	field(fileDigest(files, receipt.ReceiptFile))
	field(fileDigest(files, CompactedFile))
	return b
}

// fileDigest names a top-level file of t's tree for a MAC: "-" when
// absent, "sha256:<hex>" of its bytes when readable, else the git object
// it is ("unreadable:<mode>:<hash>"), so signing never fails on a damaged
// branch and a damaged file is still bound.
func fileDigest(t *tipState, name string) string {
	e, ok := t.tree[name]
	if !ok {
		return "-"
	}
	data, ok, err := t.file(name)
	if err != nil || !ok {
		return "unreadable:" + e.Mode.String() + ":" + e.Hash.String()
	}
	h := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(h[:])
}

// signed returns msg with the MAC of the commit it will be: on ref, with
// parents, tree and the files of entries (in st). msg is returned as it is
// when the store has no keys.
func (s *signer) signed(st *opStorage, ref plumbing.ReferenceName, parents []plumbing.Hash, tree plumbing.Hash, entries map[string]object.TreeEntry, msg string) string {
	if s.keys == nil {
		return msg
	}
	files := &tipState{ref: ref, st: st, tree: entries}
	return msg + trailerMAC + s.keys.Sign(macInput(ref, parents, tree, msg, files)) + "\n"
}

// authentic reports whether t's commit may count as Sponson's: always
// without keys (the history checks alone, as before signing); with keys,
// only when its MAC verifies.
func (s *signer) authentic(t *tipState) bool {
	if s.keys == nil {
		return true
	}
	if !t.exists() {
		return false
	}
	msg, tag, ok := splitMAC(t.commit.Message)
	if !ok {
		return false
	}
	return s.keys.Verify(macInput(t.ref, t.commit.ParentHashes, t.commit.TreeHash, msg, t), tag)
}

// splitMAC cuts the last line of a commit message off when it is the MAC
// trailer: the message that was signed, and the tag.
func splitMAC(m string) (msg, tag string, ok bool) {
	body := strings.TrimSuffix(m, "\n")
	i := strings.LastIndexByte(body, '\n')
	last := body[i+1:]
	tag, ok = strings.CutPrefix(last, trailerMAC)
	if !ok || len(body) == len(m) {
		return "", "", false
	}
	return m[:i+1], tag, true
}

// Signs implements receipt.Signing: whether the store signs its commits and
// trusts only signed ones.
func (s *Store) Signs() bool { return s.sign.keys != nil }

var _ receipt.Signing = (*Store)(nil)

// signer signs the store's commits and verifies others' (nil keys: neither).
type signer struct {
	keys *receipt.Keys
}
