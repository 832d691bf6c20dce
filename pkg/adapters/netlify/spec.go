package netlify

import "github.com/sponson/apply/pkg/adapter"

var envSpec = adapter.Spec{
	Adapter: "netlify", Op: "env",
	Summary: "one deploy context's value of environment variables of a Netlify site",
	Params: []adapter.ParamSpec{
		{Name: "context", Type: adapter.TypeString, Enum: []string{Production, DeployPreview, BranchDeploy, Dev, Branch},
			Default: "deploy-preview for --env preview, production for --env production", Doc: "the deploy context whose value this is"},
		{Name: "branch", Type: adapter.TypeString, Default: "the git branch (context branch only)", Doc: "for context branch: the branch whose own value this is"},
		{Name: "values", Type: adapter.TypeMap, Required: true, Doc: "NAME → value (a string, number or bool, {from}, {secret} or {keep: true})"},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "preview_url", When: adapter.External, Event: "deploy", Doc: "the permalink of the newest ready deploy of this commit in the context, started after the values changed: a write rebuilds a production or branch deploy that started before it, and records a deploy preview (which the API cannot rebuild) as stale and waits for the next one (output redeploy on the values' ledger entries)"},
		{Name: "deploy_id", When: adapter.External, Event: "deploy", Doc: "that deploy's id"},
		{Name: "deploy_preview_url", When: adapter.External, Event: "deploy", Doc: "that deploy's alias (deploy-preview-N or branch URL)"},
	},
	Key:      "env:<context>[:<branch>]:<NAME>",
	ListItem: true,
	Lock:     "netlify:<site>:env",
	Mark: "Netlify keeps no comment on a variable, and its `scopes` (builds, functions, runtime, post-processing) say where a value is read, " +
		"not who wrote it: the mark is a value's branch context, `context: branch` with `context_parameter` the scope's git branch. Destroy leaves " +
		"alone a branch-context value for another branch than the scope's (RESOURCE_UNMARKED). Values of the other contexts are one value for " +
		"every scope and carry no scope's mark.",
	Provider: []adapter.ParamSpec{
		{Name: "site", Type: adapter.TypeString, Required: true, Doc: "the site id (or name)"},
		{Name: "account", Type: adapter.TypeString, Default: "the site's account", Doc: "the team's account id or slug"},
	},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "Netlify API v1: /api/v1/accounts/{account_id}/env[/{key}[/value/{id}]], GET /api/v1/sites/{site_id} and /deploys, POST /api/v1/sites/{site_id}/builds (the redeploy)",
	Sources: []string{
		"https://open-api.netlify.com/#tag/environmentVariables",
		"https://open-api.netlify.com/#tag/deploy",
		"https://open-api.netlify.com/#tag/build",
		"https://docs.netlify.com/build/environment-variables/overview.md",
		"https://app.unpkg.com/netlify@23.1.4/files/dist/commands/env/env-set.js",
	},
}
