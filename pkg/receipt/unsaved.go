package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt/internal/atomicfile"
)

// SaveUnsaved keeps a receipt the store refused (stores.md: "A failed
// conditional write is terminal, never merged") in
// <dir>/<env>/<scope>/<run>.json, each segment encoded by EncodeSegment, and
// returns the path. dir is the unsaved root, normally DefaultUnsavedDir
// under the checkout. The file appears whole or not at all and is private to
// the user (0600). The receipt must already have passed the redactor.
// Saving the same run again replaces its file.
func SaveUnsaved(dir string, r *Receipt) (string, error) {
	if r == nil || r.Env == "" || r.Scope == "" || r.RunID == "" {
		return "", errs.New(errs.INTERNAL, "save unsaved receipt: it needs an environment, a scope and a run id")
	}
	data, err := Encode(r)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, EncodeSegment(r.Env), EncodeSegment(r.Scope), EncodeSegment(r.RunID)+".json")
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return "", ioError(err, "save the unsaved receipt of %s to %s", r.Target(), path)
	}
	return path, nil
}

// LoadUnsaved reads a receipt SaveUnsaved wrote (or any receipt file):
// RECEIPT_CORRUPT / RECEIPT_VERSION as Decode, USAGE when the file does not
// exist.
func LoadUnsaved(path string) (*Receipt, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errs.Wrap(err, errs.USAGE, "no unsaved receipt at %s", path)
	}
	if err != nil {
		return nil, ioError(err, "read the unsaved receipt %s", path)
	}
	return DecodeFrom(data, path)
}

// ioError codes a file-system error: STORE_PERMISSION or STORE_UNAVAILABLE.
func ioError(err error, format string, args ...any) *errs.Error {
	if errors.Is(err, fs.ErrPermission) {
		return errs.Wrap(err, errs.STORE_PERMISSION, format, args...).WithHint("Check the permissions of the directory named.")
	}
	return errs.Wrap(err, errs.STORE_UNAVAILABLE, format, args...)
}

// Diff is the difference between a stored ledger and an unsaved one, entry
// by entry (identity: ResourceRef.Identity), each list in its ledger's order.
type Diff struct {
	Missing []LedgerEntry `json:"missing"` // in the unsaved ledger, not in the stored one: applied but not recorded
	Extra   []LedgerEntry `json:"extra"`   // in the stored ledger, not in the unsaved one
	Changed []Change      `json:"changed"` // in both, with different content
}

// Change is one resource recorded differently in the two ledgers.
type Change struct {
	Stored  LedgerEntry `json:"stored"`
	Unsaved LedgerEntry `json:"unsaved"`
}

// Empty reports whether the ledgers agree.
func (d Diff) Empty() bool { return len(d.Missing)+len(d.Extra)+len(d.Changed) == 0 }

// CompareLedgers compares the ledger of the stored receipt with the ledger
// of the unsaved one. Either may be nil (no receipt: an empty ledger).
// Entries are compared by their JSON encoding, so a number that became
// float64 in a round trip is not a change.
func CompareLedgers(stored, unsaved *Receipt) Diff {
	s, u := ledgerOf(stored), ledgerOf(unsaved)
	d := Diff{Missing: []LedgerEntry{}, Extra: []LedgerEntry{}, Changed: []Change{}}
	inStored, inUnsaved := s.ByIdentity(), u.ByIdentity()
	for _, e := range u {
		i, ok := inStored[e.Ref().Identity()]
		switch {
		case !ok:
			d.Missing = append(d.Missing, e)
		case !sameEntry(s[i], e):
			d.Changed = append(d.Changed, Change{Stored: s[i], Unsaved: e})
		}
	}
	for _, e := range s {
		if _, ok := inUnsaved[e.Ref().Identity()]; !ok {
			d.Extra = append(d.Extra, e)
		}
	}
	return d
}

// AdoptMissing returns a copy of stored whose ledger also holds the entries
// of unsaved's ledger it lacks (Diff.Missing), appended in unsaved's order.
// Nothing is removed and no entry stored already is changed; every other
// field is stored's (the caller stamps the run that pushes it). With no
// stored receipt the result is a copy of unsaved. A stored receipt without a
// hash key takes unsaved's. Both receipts of one scope normally share the
// hash key; when they differ, adopted hashes stay as recorded, so the next
// inspection reports them changed rather than silently unchanged.
func AdoptMissing(stored, unsaved *Receipt) (*Receipt, error) {
	if stored == nil {
		return unsaved.Clone()
	}
	out, err := stored.Clone()
	if err != nil {
		return nil, err
	}
	if unsaved == nil {
		return out, nil
	}
	missing := CompareLedgers(stored, unsaved).Missing
	if len(missing) > 0 {
		extra, err := (&Receipt{Ledger: missing}).Clone()
		if err != nil {
			return nil, err
		}
		out.Ledger = append(out.Ledger, extra.Ledger...)
	}
	if out.HashKey == "" {
		out.HashKey = unsaved.HashKey
	}
	return out, nil
}

func ledgerOf(r *Receipt) Ledger {
	if r == nil {
		return nil
	}
	return r.Ledger
}

func sameEntry(a, b LedgerEntry) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
