package cloudflare

import "github.com/sponson/apply/pkg/adapter"

var pagesEnvSpec = adapter.Spec{
	Adapter: "cloudflare", Op: "pages_env",
	Summary: "variables and secrets of a Cloudflare Pages project's preview or production deployment config (merge-patched)",
	Params: []adapter.ParamSpec{
		{Name: "target", Type: adapter.TypeString, Enum: []string{Preview, Production}, Default: "the run's --env", Doc: "the deployment config"},
		{Name: "vars", Type: adapter.TypeMap, Doc: "NAME → value, written as plain_text"},
		{Name: "secrets", Type: adapter.TypeMap, Doc: "NAME → value, written as secret_text; compared by presence"},
		{Name: "rewrite_secrets", Type: adapter.TypeBool, Default: "false", Doc: "write every secret again (rotate)"},
	},
	Outputs:  []adapter.OutputSpec{},
	Key:      "env:<target>:<NAME>",
	ListItem: true,
	Lock:     "cloudflare:<account>:pages:<project>:<target>",
	Provider: []adapter.ParamSpec{
		{Name: "account", Type: adapter.TypeString, Required: true, Doc: "the account id"},
		{Name: "project", Type: adapter.TypeString, Required: true, Doc: "the Pages project's name"},
	},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "Cloudflare API v4: GET and PATCH /client/v4/accounts/{account_id}/pages/projects/{project_name}",
	Sources: []string{
		"https://developers.cloudflare.com/api/resources/pages/subresources/projects/methods/edit/",
		"https://developers.cloudflare.com/api/resources/pages/subresources/projects/methods/get/",
		"https://developers.cloudflare.com/pages/configuration/build-configuration/",
	},
}
