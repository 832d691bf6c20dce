package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/sponson/apply/pkg/errs"
)

// FormatVersion is the receipt format this Sponson writes and the newest it
// reads. A receipt with a larger version is refused with RECEIPT_VERSION.
const FormatVersion = 1

// Operation is what a run did.
type Operation string

// The operations a receipt, a lease or a history event can record.
const (
	OpPlan       Operation = "plan"
	OpApply      Operation = "apply"
	OpDestroy    Operation = "destroy"
	OpSuccession Operation = "succession"
	OpUnlock     Operation = "unlock"
	OpPush       Operation = "push"
	OpReopen     Operation = "reopen"
)

// Status is how a run ended.
type Status string

// Run statuses (engine.md, "Apply").
const (
	StatusComplete Status = "complete"
	StatusPartial  Status = "partial"
	StatusFailed   Status = "failed"
)

// CreatedBy says how a ledger entry came to be managed, which decides what
// destroy does with it.
type CreatedBy string

// Ledger entry origins (engine.md, "The ledger").
const (
	CreatedBySponson CreatedBy = "sponson" // destroyed with the scope
	CreatedByAdopted CreatedBy = "adopted" // never destroyed, only forgotten
	CreatedByIntent  CreatedBy = "intent"  // about to be created: located first, then destroyed
)

// Receipt is what one run of one scope did (Lines) and what the scope
// manages after it (Ledger). It is the unit a Store reads and writes.
type Receipt struct {
	Version   int       `json:"version"` // FormatVersion; 0 is written as FormatVersion
	Env       string    `json:"env"`
	Scope     string    `json:"scope"`
	RunID     string    `json:"run_id"`
	Operation Operation `json:"operation"`
	Status    Status    `json:"status"`
	Stale     bool      `json:"stale"`
	Destroyed bool      `json:"destroyed"`
	// Closed is the tombstone left when the scope's pull request closed; a
	// run on a closed scope is refused (SCOPE_CLOSED) unless reopened.
	Closed       *Tombstone `json:"closed"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	// Branch is the git branch the scope was applied from; a different
	// branch collapsing to the same scope is SCOPE_COLLISION.
	Branch string `json:"branch,omitempty"`
	SHA    string `json:"sha,omitempty"`
	// PlanHash is the hash of the plan an apply ran (plan.Hash,
	// "sha256:<hex>"); "" for a destroy, which runs from the ledger, and
	// in receipts written before it was recorded. An optional field added
	// within format version 1: older receipts read as before, and an
	// older Sponson reading a newer receipt ignores it.
	PlanHash string `json:"plan_hash,omitempty"`
	// ApprovedBy is who approved the run (required for a run that may write
	// production); "" when none was needed or given.
	ApprovedBy string `json:"approved_by,omitempty"`
	// HashKey is the scope's random HMAC key (NewHashKey), generated once per
	// scope and carried forward by every run; ledger hashes are keyed by it.
	HashKey       string                `json:"hash_key,omitempty"`
	Lines         map[string]LineResult `json:"lines"`
	Ledger        Ledger                `json:"ledger"`
	LockPreempted *Lease                `json:"lock_preempted,omitempty"`
	History       []HistoryEntry        `json:"history"`
	Warnings      []Warning             `json:"warnings,omitempty"`
	StartedAt     time.Time             `json:"started_at,omitzero"`
	FinishedAt    time.Time             `json:"finished_at,omitzero"`
}

// Tombstone records that a scope was closed (its pull request closed).
type Tombstone struct {
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	HeadSHA string    `json:"head_sha,omitempty"`
}

// LineResult is what a run did with one plan line.
type LineResult struct {
	Status    string    `json:"status"`
	ErrorCode errs.Code `json:"error_code,omitempty"`
	Error     string    `json:"error,omitempty"`
	Resources []string  `json:"resources,omitempty"`
	// Forgotten are adopted resources a destroy let go of: they stay at the
	// provider and are no longer managed.
	Forgotten []string       `json:"forgotten,omitempty"`
	Outputs   map[string]any `json:"outputs,omitempty"`
}

// HistoryEntry is one commit applied to the scope, carried forward by the
// engine (the stale-run check compares against the last one).
type HistoryEntry struct {
	SHA    string    `json:"sha"`
	At     time.Time `json:"at"`
	RunID  string    `json:"run_id,omitempty"`
	Status Status    `json:"status,omitempty"`
}

// Warning is a warning reported beside a run's result.
type Warning struct {
	Code    errs.Code `json:"code,omitempty"`
	Message string    `json:"message"`
}

// receiptJSON has Receipt's fields without its methods.
type receiptJSON Receipt

// MarshalJSON writes empty collections as {} and [] rather than null, and a
// zero Version as FormatVersion, so every consumer sees one shape.
func (r Receipt) MarshalJSON() ([]byte, error) {
	c := receiptJSON(r)
	if c.Version == 0 {
		c.Version = FormatVersion
	}
	if c.Lines == nil {
		c.Lines = map[string]LineResult{}
	}
	if c.Ledger == nil {
		c.Ledger = Ledger{}
	}
	if c.History == nil {
		c.History = []HistoryEntry{}
	}
	return marshalNoEscape(c)
}

// marshalNoEscape is json.Marshal without HTML escaping: URLs with '&'
// stay readable in stored receipts and diffs.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Encode renders r as stored: pretty-printed JSON (two spaces), map keys
// sorted, no HTML escaping, a trailing newline. The same receipt always
// encodes to the same bytes. A receipt of a newer format, or one holding a
// value JSON cannot represent, is INTERNAL: only a bug can make one.
func Encode(r *Receipt) ([]byte, error) {
	if r == nil {
		return nil, errs.New(errs.INTERNAL, "encode: nil receipt")
	}
	if r.Version < 0 || r.Version > FormatVersion {
		return nil, errs.New(errs.INTERNAL, "encode: receipt version %d, this Sponson writes %d", r.Version, FormatVersion)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil { // Encode appends the trailing newline
		return nil, errs.Wrap(err, errs.INTERNAL, "encode receipt %s/%s", r.Env, r.Scope)
	}
	return buf.Bytes(), nil
}

// Decode parses a stored receipt. Bytes that are not one JSON object of a
// receipt are RECEIPT_CORRUPT; a receipt whose version is newer than
// FormatVersion is RECEIPT_VERSION, decided before the rest of the document
// is interpreted (a newer format may have changed any field). Unknown fields
// are ignored: a field added within version 1 must not break an older reader.
func Decode(data []byte) (*Receipt, error) { return DecodeFrom(data, "receipt") }

// DecodeFrom is Decode with where (a path, a ref, "receipt of preview/pr-1")
// named in the error message.
func DecodeFrom(data []byte, where string) (*Receipt, error) {
	var probe struct {
		Version *json.RawMessage `json:"version"`
	}
	if err := strictUnmarshal(data, &probe); err != nil {
		return nil, errs.Wrap(err, errs.RECEIPT_CORRUPT, "%s is not valid JSON", where)
	}
	if probe.Version == nil {
		return nil, errs.New(errs.RECEIPT_CORRUPT, "%s has no \"version\"", where)
	}
	var v int
	if err := json.Unmarshal(*probe.Version, &v); err != nil {
		return nil, errs.Wrap(err, errs.RECEIPT_CORRUPT, "%s has a version that is not an integer: %s", where, *probe.Version)
	}
	if v > FormatVersion {
		return nil, errs.New(errs.RECEIPT_VERSION, "%s has format version %d; this Sponson reads up to %d", where, v, FormatVersion).
			With("receipt_version", v).With("supported_version", FormatVersion)
	}
	if v < 1 {
		return nil, errs.New(errs.RECEIPT_CORRUPT, "%s has format version %d", where, v)
	}
	var r Receipt
	if err := strictUnmarshal(data, (*receiptJSON)(&r)); err != nil {
		return nil, errs.Wrap(err, errs.RECEIPT_CORRUPT, "%s cannot be read as a version %d receipt", where, v)
	}
	return &r, nil
}

// strictUnmarshal decodes exactly one JSON value, with nothing after it.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON document")
	}
	return nil
}

// Clone returns a deep copy of r with JSON semantics (numbers inside
// outputs and provider blocks become float64, as after a store round trip).
func (r *Receipt) Clone() (*Receipt, error) {
	if r == nil {
		return nil, nil
	}
	data, err := Encode(r)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

// Target is the scope target of r.
func (r *Receipt) Target() Target { return ScopeTarget(r.Env, r.Scope) }
