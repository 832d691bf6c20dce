package vercel

import (
	"context"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

var (
	_ adapter.KeyJudge = (*EnvOp)(nil)
	_ adapter.KeyJudge = (*DeployOp)(nil)
)

// KeyEnvironment is "production" for a variable of target production.
func (op *EnvOp) KeyEnvironment(key string, _ adapter.Provider, _ adapter.RunCtx) string {
	if t, _, _, ok := ParseKey(key); ok && t == Production {
		return Production
	}
	return ""
}

// CheckKey accepts the keys a line can make in run's environment: a
// variable of target production only in the environment production (a
// line writes it there, with an approver), a target other than preview
// only for every branch ("*").
func (op *EnvOp) CheckKey(key string, _ adapter.Provider, run adapter.RunCtx) error {
	t, branch, _, ok := ParseKey(key)
	switch {
	case !ok:
		return errs.New(errs.PARAM_INVALID, "%s: %q is not a vercel.env key (env:<target>:<branch>:<NAME>)", opName, key)
	case t != Preview && t != Production && t != Development:
		return errs.New(errs.PARAM_INVALID, "%s: %q names no Vercel target", opName, key)
	case t == Production && run.Env != Production:
		return errs.New(errs.PARAM_INVALID, "%s: %q is a production variable, which a line writes only in the environment production, not in %s", opName, key, run.Env)
	case t != Preview && branch != AllBranches:
		return errs.New(errs.PARAM_INVALID, "%s: %q scopes a %s variable to a branch, which only preview variables are", opName, key, t)
	}
	return nil
}

// KeyEnvironment is "production" for a production deployment.
func (op *DeployOp) KeyEnvironment(key string, _ adapter.Provider, _ adapter.RunCtx) string {
	if t, _, err := parseDeployKey(key); err == nil && t == Production {
		return Production
	}
	return ""
}

// CheckKey accepts the deployment of run's target: production in the
// environment production, preview elsewhere.
func (op *DeployOp) CheckKey(key string, _ adapter.Provider, run adapter.RunCtx) error {
	t, _, err := parseDeployKey(key)
	if err != nil {
		return err
	}
	if t != deployTarget(run) {
		return errs.New(errs.PARAM_INVALID, "%s: %q is a %s deployment, which a run of %s does not make", deployOpName, key, t, run.Env)
	}
	return nil
}

var _ adapter.Marked = (*EnvOp)(nil)

// markPrefix starts every mark Sponson writes in a variable's comment.
const markPrefix = "sponson "

// Mark is the comment Sponson writes on the variables a run of run's
// environment and scope creates or updates: "sponson <env>/<scope>".
func Mark(run adapter.RunCtx) string {
	return markPrefix + run.Env + "/" + run.Scope
}

// CheckMark reads the variable of r.Key and accepts it when its comment is
// run's mark, or when it has no comment at all: a variable created before
// Sponson wrote marks has none, and destroy reaches this check only for an
// entry the store proves Sponson created in this scope, so an empty
// comment contradicts nothing. A comment that is another scope's mark, or
// any other text (a person wrote it, or changed the variable), is
// RESOURCE_UNMARKED. A variable that is gone, or that has another id than
// the ledger's (Destroy leaves it alone), is nil. Destroy, in the same
// entry's destroy, decides on the very listing this check read (located).
func (op *EnvOp) CheckMark(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	_, project, _, v, err := op.located(ctx, p, r.Key)
	if err != nil || v == nil || (r.ID != "" && v.ID != r.ID) {
		return err
	}
	want := Mark(run)
	switch {
	case v.Comment == want || v.Comment == "":
		return nil
	case strings.HasPrefix(v.Comment, markPrefix):
		return errs.New(errs.RESOURCE_UNMARKED, "vercel: variable %s (%s) of project %s is marked %q, another scope's, not %q", v.Key, v.ID, project, v.Comment, want)
	}
	return errs.New(errs.RESOURCE_UNMARKED, "vercel: variable %s (%s) of project %s has the comment %q, not Sponson's mark %q: someone else wrote it", v.Key, v.ID, project, v.Comment, want)
}
