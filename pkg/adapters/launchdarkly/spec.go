package launchdarkly

import "github.com/sponson/apply/pkg/adapter"

var targetSpec = adapter.Spec{
	Adapter: "launchdarkly", Op: "flag_target",
	Summary: "this scope as an individual target of a flag's variation in one environment (semantic patch; flags are never created, deleted or toggled)",
	Params: []adapter.ParamSpec{
		{Name: "flag", Type: adapter.TypeString, Required: true, Doc: "the flag's key; the flag must exist"},
		{Name: "key", Type: adapter.TypeString, Default: "${ctx.scope}", Doc: "the context key to target"},
		{Name: "context_kind", Type: adapter.TypeString, Default: DefaultContextKind, Doc: "the context kind"},
		{Name: "variation", Type: adapter.TypeAny, Default: "true", Doc: "the variation, by name or by value"},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "key", When: adapter.Immediate, Doc: "the targeted context key"},
		{Name: "variation", When: adapter.Immediate, Doc: "the targeted variation (as the line names it)"},
	},
	Key: "target:<environment>:<flag>:<context_kind>:<key>",
	Provider: []adapter.ParamSpec{
		{Name: "project", Type: adapter.TypeString, Required: true, Doc: "the project key"},
		{Name: "environment", Type: adapter.TypeString, Required: true, Doc: "the environment key"},
		{Name: "production", Type: adapter.TypeBool, Default: "false", Doc: "the environment is production: lines need an approver (a key containing prod, such as production or prod-eu, needs one whatever this says)"},
	},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "LaunchDarkly REST API v2: GET /api/v2/flags/{projectKey}/{featureFlagKey}, PATCH of it as a semantic patch",
	Sources: []string{
		"https://launchdarkly.com/docs/api/feature-flags/update-feature-flag",
		"https://launchdarkly.com/docs/api/feature-flags/get-feature-flag",
		"https://launchdarkly.com/docs/api/feature-flags/update-expiring-context-targets-on-feature-flag",
		"https://launchdarkly.com/docs/api/approvals/post-approval-request",
	},
}
