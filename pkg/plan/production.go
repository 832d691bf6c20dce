package plan

import "strings"

// Production reports whether an environment's name makes it production:
// a name containing "prod", in any case (production, prod-eu, PROD,
// preprod). A run that may write such an environment, whether it is the
// run's own (--env) or one an op names (a LaunchDarkly environment), needs
// a named approver (ENV_NOT_APPROVED otherwise), and destroying what it
// holds does too. The rule errs towards asking: a name that merely
// contains the letters (product-demo) is gated as well.
func Production(env string) bool {
	return strings.Contains(strings.ToLower(env), "prod")
}
