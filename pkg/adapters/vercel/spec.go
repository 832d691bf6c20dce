package vercel

import "github.com/sponson/apply/pkg/adapter"

var envSpec = adapter.Spec{
	Adapter: "vercel", Op: "env",
	Summary: "environment variables of a Vercel project, per target and git branch",
	Params: []adapter.ParamSpec{
		{Name: "target", Type: adapter.TypeString, Enum: []string{Preview, Production, Development}, Default: "the run's --env",
			Doc: "the deployment target the variables apply to"},
		{Name: "branch", Type: adapter.TypeString, Default: "the git branch (preview), * otherwise",
			Doc: "the git branch a preview variable applies to; * is every branch (the only choice for production and development)"},
		{Name: "values", Type: adapter.TypeMap, Required: true,
			Doc: "NAME → value (a string, number or bool, {from}, {secret} or {keep: true}); written as type encrypted"},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "preview_url", When: adapter.External, Event: "deploy", Doc: "URL of the newest READY deployment of this commit for the target, created after the line's variables last changed: a write rebuilds the commit's deployment that started before it (recorded on the variables' ledger entries as output redeploy)"},
		{Name: "deployment_id", When: adapter.External, Event: "deploy", Doc: "that deployment's id"},
	},
	Key: "env:<target>:<branch or *>:<NAME>",
	Mark: "the variable's comment, `sponson <env>/<scope>`, written when a line creates the variable and when it updates one that has no comment " +
		"(a person's comment is kept). Destroy leaves alone a variable whose comment is another scope's mark or a person's text (RESOURCE_UNMARKED); " +
		"one with no comment at all, as variables made before Sponson wrote marks are, is destroyed when the store proves Sponson made it in the scope.",
	Provider:    []adapter.ParamSpec{{Name: "project", Type: adapter.TypeString, Required: true, Doc: "the project id or name"}, {Name: "team", Type: adapter.TypeString, Doc: "the team id (sent as teamId)"}},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "Vercel REST API: GET and POST /v10/projects/{idOrName}/env, PATCH and DELETE /v9/projects/{idOrName}/env/{id}, deployments by GET /v6/deployments, the redeploy by GET /v9/projects/{idOrName} and POST /v13/deployments",
	Sources: []string{
		"https://vercel.com/docs/rest-api/projects/create-one-or-more-environment-variables",
		"https://vercel.com/docs/rest-api/projects/retrieve-the-environment-variables-of-a-project-by-id-or-name",
		"https://vercel.com/docs/rest-api/sdk/projects/edit-an-environment-variable",
		"https://vercel-site.vercel.sh/docs/rest-api/reference/endpoints/deployments/list-deployments",
		"https://vercel.com/docs/rest-api/deployments/create-a-new-deployment",
	},
}
