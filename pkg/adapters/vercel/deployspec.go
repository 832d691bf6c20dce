package vercel

import "github.com/sponson/apply/pkg/adapter"

var deploySpec = adapter.Spec{
	Adapter: "vercel", Op: "deploy",
	Summary: "a deployment of this commit through the project's git connection, waited for until READY (destroy leaves it)",
	Outputs: []adapter.OutputSpec{
		{Name: "preview_url", When: adapter.Immediate, Doc: "the READY deployment's URL"},
		{Name: "deployment_id", When: adapter.Immediate, Doc: "the deployment's id"},
	},
	Key:         "deployment:<target>:<sha>",
	Provider:    []adapter.ParamSpec{{Name: "project", Type: adapter.TypeString, Required: true, Doc: "the project id or name"}, {Name: "team", Type: adapter.TypeString, Doc: "the team id (sent as teamId)"}},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "Vercel REST API: GET /v9/projects/{idOrName}, GET /v6/deployments, GET and POST /v13/deployments",
	Sources: []string{
		"https://vercel.com/docs/rest-api/deployments/create-a-new-deployment",
		"https://vercel.com/docs/rest-api/deployments/get-a-deployment-by-id-or-url",
		"https://vercel.com/docs/rest-api/projects/find-a-project-by-id-or-name",
		"https://vercel-site.vercel.sh/docs/rest-api/reference/endpoints/deployments/list-deployments",
	},
}
