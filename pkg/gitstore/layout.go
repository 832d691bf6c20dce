package gitstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// The layout (stores.md, "The git-branch store").
const (
	// RefPrefix is the namespace of every ref the store writes.
	RefPrefix = "refs/heads/sponson-receipts/"
	// UnsavedDir is the namespace of unsaved-receipt side refs, under
	// RefPrefix: "_unsaved/<env>/<scope>/<run>".
	UnsavedDir = "_unsaved"
	// ReadmeFile explains the branch to whoever finds it in the hosting UI.
	ReadmeFile = "README.md"
	// GenerationFile holds the last lease generation granted on the branch's
	// target, in decimal. It stays when lock.json is removed, so a release or
	// a force-release never lets a generation be granted twice.
	GenerationFile = "generation"
	// CompactedFile is what a squash carries of the history it replaced
	// (compact.go): the latest events and the provenance of the ledger.
	CompactedFile = "compacted.json"
)

// Commit message trailers. The subject is for people
// ("<operation> <key> <run> <status>"); the trailers are for the store.
const (
	// trailerEvent is a receipt.Event as one line of JSON, on commits that
	// wrote a receipt or force-released a lease: History is made of them.
	trailerEvent = "Sponson-Event: "
	// trailerReceipt names the commit that wrote the tree's receipt.json,
	// on commits that carried it over unchanged (lease commits), so a
	// receipt's version stays the commit that wrote it.
	trailerReceipt = "Sponson-Receipt: "
	// noReceipt is trailerReceipt's value on a commit whose tree has no
	// receipt.json because none was ever written on the branch.
	noReceipt = "none"
	// trailerLease says which lease operation a commit is.
	trailerLease = "Sponson-Lease: "
	// trailerDepth is the number of commits on the commit's first-parent
	// line down to its root, itself included: how the store knows, from the
	// tip it holds anyway, when a branch is due for compaction (compact.go).
	trailerDepth = "Sponson-Depth: "
	// trailerSquash marks a squash (a parentless commit that stands for
	// the history before it, compact.go) and names the tip it replaced.
	trailerSquash = "Sponson-Squash: "
	// trailerNonce makes every commit unique (run id, time, random): two
	// byte-identical commits would both "succeed" (the second push is
	// NoErrAlreadyUpToDate), so two writers could each believe they won.
	trailerNonce = "Sponson-Nonce: "
)

// author is the identity of every commit the store makes.
var author = object.Signature{Name: "sponson", Email: "sponson@users.noreply.github.com"}

// refOf is the branch of a target: RefPrefix + Target.Key(), i.e.
// "<env>/<scope>" with encoded segments, or "_locks/<first 32 hex of
// sha256(identity)>".
func refOf(t receipt.Target) plumbing.ReferenceName {
	return plumbing.ReferenceName(RefPrefix + t.Key())
}

// unsavedRef is the create-only side ref of a receipt the store refused.
func unsavedRef(r *receipt.Receipt) plumbing.ReferenceName {
	return plumbing.ReferenceName(RefPrefix + UnsavedDir + "/" + receipt.EncodeSegment(r.Env) + "/" +
		receipt.EncodeSegment(r.Scope) + "/" + receipt.EncodeSegment(r.RunID))
}

// refKind is what a ref under RefPrefix is.
type refKind int

const (
	refOther refKind = iota // not the store's (or not in canonical form)
	refScope                // sponson-receipts/<env>/<scope>
	refLock                 // sponson-receipts/_locks/<id>
)

// parseRef classifies a ref name. A scope ref yields its decoded target; a
// lock ref its lock id. Names EncodeSegment cannot have made are refOther,
// so a branch someone else made under the prefix is never mistaken for a
// scope.
func parseRef(name string) (refKind, receipt.Target, string) {
	rest, ok := strings.CutPrefix(name, RefPrefix)
	if !ok {
		return refOther, receipt.Target{}, ""
	}
	a, b, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(b, "/") {
		return refOther, receipt.Target{}, ""
	}
	if a == receipt.LocksDir {
		if len(b) != 32 || strings.Trim(b, "0123456789abcdef") != "" {
			return refOther, receipt.Target{}, ""
		}
		return refLock, receipt.Target{}, b
	}
	env, err1 := receipt.DecodeSegment(a)
	scope, err2 := receipt.DecodeSegment(b)
	if err1 != nil || err2 != nil {
		return refOther, receipt.Target{}, ""
	}
	return refScope, receipt.ScopeTarget(env, scope), ""
}

// readme is the README.md of a target's branch.
func readme(t receipt.Target) []byte {
	var b strings.Builder
	if t.IsParent() {
		fmt.Fprintf(&b, "# Sponson lease on a shared object\n\n")
		fmt.Fprintf(&b, "This branch holds Sponson's lease on one shared provider object:\n\n    %s\n\n", strconv.Quote(t.Identity))
		b.WriteString("Runs of different scopes that add or remove entries of one of its lists take this lease " +
			"around their write, so none of them loses another's entry.\n\n")
		b.WriteString("- `lock.json` is the lease, while a run holds it (it names the object in clear).\n")
		b.WriteString("- `generation` is the last lease generation granted; it stays after a release so the next lease is always newer.\n\n")
		b.WriteString("**Never merge this branch** into another, and never push to it by hand: Sponson takes and " +
			"releases the lease with a compare-and-swap push of this branch's tip.\n\n")
		b.WriteString("**Deleting it is safe** when no apply is running (no `lock.json`, or one whose `expires_at` has passed).\n")
		return []byte(b.String())
	}
	fmt.Fprintf(&b, "# Sponson receipts of %s\n\n", strconv.Quote(t.Env+"/"+t.Scope))
	fmt.Fprintf(&b, "This branch is Sponson's record of the scope %s in the environment %s: what its runs did, "+
		"what it manages, and who holds its lease. Sponson writes it, one commit per write; its history is the "+
		"scope's run history.\n\n", strconv.Quote(t.Scope), strconv.Quote(t.Env))
	b.WriteString("- `receipt.json` is the latest receipt: what the last run did, and the ledger of every resource the scope manages.\n")
	b.WriteString("- `lock.json` is the lease, while a run holds it.\n")
	b.WriteString("- `generation` is the last lease generation granted; it stays after a release so the next lease is always newer.\n")
	b.WriteString("- `compacted.json`, once the branch has been compacted, is what the history before its first commit recorded: " +
		"Sponson keeps the branch a few hundred commits deep by writing, now and then, on a squash of its history.\n\n")
	b.WriteString("**Never merge this branch** into another, and never push to it by hand: every write checks the lease " +
		"against this branch's tip with a compare-and-swap push, and a merge or a rewrite would make Sponson forget " +
		"resources it created.\n\n")
	b.WriteString("**Deleting it is safe** only once the scope is gone: `receipt.json` has `\"closed\"` set, or " +
		"`\"destroyed\": true` with an empty `\"ledger\"`, and no live `lock.json`. The Sponson bot's sweep deletes such " +
		"branches after the retention period. Deleting it earlier makes Sponson forget what it created, and those " +
		"resources are then left behind.\n")
	return []byte(b.String())
}

// unsavedReadme is the README.md of an unsaved-receipt side ref.
func unsavedReadme(r *receipt.Receipt) []byte {
	return []byte(fmt.Sprintf("# An unsaved Sponson receipt\n\n"+
		"Run %s of the scope %s could not record its receipt: its final write was refused after it had changed "+
		"providers. `receipt.json` is what it would have written.\n\n"+
		"Finish the job with `sponson receipts push <this ref>`: it takes the scope's lease, shows how this receipt's "+
		"ledger differs from the stored one, and with `--adopt-missing` adds the entries the stored ledger lacks.\n\n"+
		"**Never merge this branch.** Delete it once the receipt is pushed.\n",
		strconv.Quote(r.RunID), strconv.Quote(r.Env+"/"+r.Scope)))
}

// message is a commit message: the subject, a blank line, the trailers.
func message(subject string, trailers ...string) string {
	var b strings.Builder
	b.WriteString(subject)
	b.WriteString("\n\n")
	for _, t := range trailers {
		if t != "" {
			b.WriteString(t)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// subject is "<operation> <key> <run> <status>", each field free of spaces.
func subject(op string, t receipt.Target, run, status string) string {
	field := func(s string) string {
		if s == "" {
			return "-"
		}
		return strings.Map(func(r rune) rune {
			if r <= ' ' || r == 0x7f {
				return '_'
			}
			return r
		}, s)
	}
	return field(op) + " " + t.Key() + " " + field(receipt.EncodeSegment(run)) + " " + field(status)
}

// trailer returns the value of the first line of msg starting with key.
func trailer(msg, key string) (string, bool) {
	for _, line := range strings.Split(msg, "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

func eventTrailer(ev receipt.Event) (string, error) {
	b, err := json.Marshal(ev) // one line: JSON escapes every newline
	if err != nil {
		return "", errs.Wrap(err, errs.INTERNAL, "encode a history event of %s", ev.Target)
	}
	return trailerEvent + string(b), nil
}

// commitEvent parses a commit's Sponson-Event trailer.
func commitEvent(c *object.Commit) (*receipt.Event, bool) {
	v, ok := trailer(c.Message, trailerEvent)
	if !ok {
		return nil, false
	}
	var ev receipt.Event
	if json.Unmarshal([]byte(v), &ev) != nil {
		return nil, false
	}
	return &ev, true
}

// receiptVersion is the version of the receipt in c's tree: the commit that
// wrote it. A commit that wrote a receipt is its own version; a lease or
// unlock commit names it in its Sponson-Receipt trailer; a commit someone
// else made (no trailers) is taken as the writer.
func receiptVersion(c *object.Commit) receipt.Version {
	if ev, ok := commitEvent(c); ok && ev.Operation != receipt.OpUnlock {
		return receipt.Version(c.Hash.String())
	}
	if v, ok := trailer(c.Message, trailerReceipt); ok && plumbing.IsHash(v) {
		return receipt.Version(v)
	}
	return receipt.Version(c.Hash.String())
}

// neverWritten reports whether c, a tip with no receipt.json, is a commit
// Sponson made on a branch where no receipt was ever written.
func neverWritten(c *object.Commit) bool {
	v, ok := trailer(c.Message, trailerReceipt)
	return ok && v == noReceipt
}

// encodeLease renders lock.json: pretty, trailing newline.
func encodeLease(l receipt.Lease) ([]byte, error) {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "encode the lease of %s", l.Target)
	}
	return append(b, '\n'), nil
}
