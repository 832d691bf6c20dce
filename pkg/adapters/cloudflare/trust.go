package cloudflare

import (
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

var _ adapter.KeyJudge = (*PagesEnvOp)(nil)

// KeyEnvironment is "production" for a variable of target production.
func (op *PagesEnvOp) KeyEnvironment(key string, _ adapter.Provider, _ adapter.RunCtx) string {
	if t, _, err := parseKey(key); err == nil && t == Production {
		return Production
	}
	return ""
}

// CheckKey accepts the keys a line can make in run's environment: a
// variable of target production only in the environment production.
func (op *PagesEnvOp) CheckKey(key string, _ adapter.Provider, run adapter.RunCtx) error {
	t, _, err := parseKey(key)
	if err != nil {
		return err
	}
	if t == Production && run.Env != Production {
		return errs.New(errs.PARAM_INVALID, "%s: %q is a production variable, which a line writes only in the environment production, not in %s", opName, key, run.Env)
	}
	return nil
}
