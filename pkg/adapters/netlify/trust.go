package netlify

import (
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
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
