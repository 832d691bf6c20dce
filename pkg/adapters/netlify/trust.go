package netlify

import (
	"context"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/scope"
)

var _ adapter.KeyJudge = (*EnvOp)(nil)

// KeyEnvironment is "production" for a value of context production.
func (op *EnvOp) KeyEnvironment(key string, _ adapter.Provider, _ adapter.RunCtx) string {
	if c, _, _, ok := ParseKey(key); ok && c == Production {
		return Production
	}
	return ""
}

// CheckKey accepts the keys a line can make in run's environment: a value
// of context production only in the environment production.
func (op *EnvOp) CheckKey(key string, _ adapter.Provider, run adapter.RunCtx) error {
	c, _, _, ok := ParseKey(key)
	switch {
	case !ok:
		return errs.New(errs.PARAM_INVALID, "%s: %q is not a netlify.env key (env:<context>:<NAME>)", opName, key)
	case c == Production && run.Env != Production:
		return errs.New(errs.PARAM_INVALID, "%s: %q is a production value, which a line writes only in the environment production, not in %s", opName, key, run.Env)
	}
	return nil
}

var _ adapter.Marked = (*EnvOp)(nil)

// CheckMark: Netlify keeps no comment on a variable, and its scopes
// (builds, functions, runtime, post-processing) say where a value is
// read, not who wrote it; what does tie a value to one scope is a value of
// context branch, whose context_parameter is a git branch. So a
// branch-context value (env:branch:<branch>:<NAME>) is marked for run
// when its branch is the scope's: the branch the scope's receipt recorded
// (run.Branch), else, for a branch-<name> scope, any branch that scope is
// made from (scope.BranchScope); a pull request's scope whose receipt
// recorded no branch cannot tell. A value for another branch is
// RESOURCE_UNMARKED. The other contexts (deploy-preview, branch-deploy,
// dev, production) are one value for every scope by Netlify's design:
// they carry no scope's mark, and rest on the other checks. Pure: the
// branch is the key's, which the value Destroy finds always has.
func (op *EnvOp) CheckMark(_ context.Context, _ adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	c, br, _, ok := ParseKey(r.Key)
	if !ok {
		return errs.New(errs.PARAM_INVALID, "%s: %q is not a netlify.env key (env:<context>[:<branch>]:<NAME>)", opName, r.Key)
	}
	if c != Branch {
		return nil
	}
	kind, _, err := scope.Parse(run.Scope)
	if err != nil {
		return err
	}
	switch {
	case run.Branch == "" && kind == scope.KindBranch && scope.BranchScope(br) != run.Scope:
		return errs.New(errs.RESOURCE_UNMARKED, "netlify: the value of %s is for branch %q, which is not the branch of scope %s", r.Key, br, run.Scope)
	case run.Branch != "" && br != run.Branch:
		return errs.New(errs.RESOURCE_UNMARKED, "netlify: the value of %s is for branch %q, not %q, the branch of scope %s", r.Key, br, run.Branch, run.Scope)
	}
	return nil
}
