package receipt

import (
	"github.com/sponson/apply/pkg/errs"
)

// MaxBytes bounds every stored receipt, lease or history file a store reads:
// a file larger than this is RECEIPT_CORRUPT before it is decoded, so a
// hostile branch cannot make a reader allocate without end. A receipt of a
// thousand-resource scope is well under a megabyte.
const MaxBytes = 16 << 20

// DecodeStored decodes the receipt read from target's place in a store
// (where names it in messages). Beyond Decode it refuses bytes over MaxBytes
// and a receipt whose own env or scope is not target's: a receipt copied
// onto another scope's branch must never be taken for that scope's
// (RECEIPT_CORRUPT, never silently accepted).
func DecodeStored(data []byte, target Target, where string) (*Receipt, error) {
	if len(data) > MaxBytes {
		return nil, TooLarge(target, where, int64(len(data)))
	}
	r, err := DecodeFrom(data, where)
	if err != nil {
		return nil, err
	}
	if r.Env != target.Env || r.Scope != target.Scope {
		return nil, errs.New(errs.RECEIPT_CORRUPT, "%s names %s/%s, but was read from %s's place in the store", where, r.Env, r.Scope, target).
			With("receipt_env", r.Env).With("receipt_scope", r.Scope)
	}
	return r, nil
}

// TooLarge is the RECEIPT_CORRUPT error for a stored file over MaxBytes.
func TooLarge(target Target, where string, size int64) error {
	return errs.New(errs.RECEIPT_CORRUPT, "%s is %d bytes, more than the %d a receipt may have", where, size, MaxBytes).
		With("size", size)
}

// Missing is the RECEIPT_CORRUPT error for a scope whose place in the store
// shows that a receipt was written, but holds none now (receipt.json was
// deleted by hand): its ledger is unknown, and reading it as empty would
// make Sponson forget, and so leak, everything the scope created.
func Missing(target Target, where string) error {
	return errs.New(errs.RECEIPT_CORRUPT, "%s: %s is missing, though a receipt was written there before", where, ReceiptFile).
		WithHint("Restore %s from the history of %s (every earlier run's receipt is there); Sponson never takes a missing receipt for an empty ledger.", ReceiptFile, target)
}
