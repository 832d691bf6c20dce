package launchdarkly

import (
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

var _ adapter.KeyJudge = (*TargetOp)(nil)

// KeyEnvironment is the entry's environment as WritesEnvironment names
// it: "production" when its provider block says so, else its key (which
// the engine gates by name, plan.Production).
func (op *TargetOp) KeyEnvironment(_ string, p adapter.Provider, run adapter.RunCtx) string {
	return op.WritesEnvironment(nil, p, run)
}

// CheckKey accepts every well-formed key: a preview scope may target a
// flag of a production environment (with an approver).
func (op *TargetOp) CheckKey(key string, _ adapter.Provider, _ adapter.RunCtx) error {
	if _, _, _, _, ok := ParseKey(key); !ok {
		return errs.New(errs.PARAM_INVALID, "%s: %q is not a %s key", opName, key, opName)
	}
	return nil
}
