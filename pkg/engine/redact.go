package engine

import (
	"encoding/json"

	"github.com/sponson/apply/pkg/errs"
)

// redactTyped passes a result through the redactor field by field (JSON
// strings, keys included) and decodes it back into its type, so what the
// caller serialises can hold no registered secret in any encoding.
func redactTyped[T any](e *Engine, v *T) (*T, error) {
	b, err := e.redactor().JSON(v)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "a redacted result does not decode")
	}
	return out, nil
}

// runError is the error a run that failed returns beside its result: the
// first failing line's error, as is when its code exits 1, else under
// RUN_FAILED (a line that failed after the run started is never a refusal,
// exit 2, nor a scope lease problem, exit 3, even when its own code is
// PARAM_INVALID or a parent object's LOCK_HELD). The line's own code stays
// in its result and in the chain (errors.Is finds it).
func runError(err error, what string) error {
	e := errs.Coded(err)
	if e.Code.Exit() == errs.ExitFailed {
		return err
	}
	return errs.Wrap(err, errs.RUN_FAILED, "%s failed", what).WithHint("%s", e.HintText())
}
