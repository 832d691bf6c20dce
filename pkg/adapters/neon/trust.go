package neon

import (
	"context"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

var _ adapter.Marked = (*BranchOp)(nil)

// namespace is where the names Sponson gives live: sponson/<env>/<scope>.
const namespace = "sponson/"

// DefaultName is the name a line without one gives its branch.
func DefaultName(run adapter.RunCtx) string {
	return namespace + run.Env + "/" + run.Scope
}

// CheckMark: a Neon branch carries no field Sponson writes but its name,
// so the name is the mark. A name under sponson/ (the names Sponson gives,
// sponson/<env>/<scope>) must be run's own: sponson/preview/pr-7 in the
// ledger of preview/pr-9, or sponson/production/main in a preview scope,
// is RESOURCE_UNMARKED, whatever the ledger claims. A name outside
// sponson/ is one a line gave (name: ...), which destroy cannot check
// without the plan (it works from the ledger); such a branch is not
// refused here, and rests on the other checks (the store's record, the
// key, the id). Pure: the name is the key's.
func (op *BranchOp) CheckMark(_ context.Context, _ adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	name, ok := strings.CutPrefix(r.Key, "branch:")
	if !ok || name == "" {
		return errs.New(errs.PARAM_INVALID, "%s: %q is not a neon.branch key (branch:<name>)", opName, r.Key)
	}
	if want := DefaultName(run); strings.HasPrefix(name, namespace) && name != want {
		return errs.New(errs.RESOURCE_UNMARKED, "neon: branch %s is named for another scope: the branch Sponson names for %s/%s is %s", name, run.Env, run.Scope, want)
	}
	return nil
}
