package auth0

import "github.com/sponson/apply/pkg/adapter"

var callbackSpec = adapter.Spec{
	Adapter: "auth0", Op: "callback",
	Summary: "a URL in a list of an Auth0 application (callbacks, logout URLs, web origins)",
	Params: []adapter.ParamSpec{
		{Name: "url", Type: adapter.TypeString, Required: true, Doc: "the URL"},
		{Name: "list", Type: adapter.TypeString, Enum: Lists, Default: Lists[0], Doc: "the application's list"},
	},
	Outputs:  []adapter.OutputSpec{{Name: "url", When: adapter.Immediate, Doc: "the URL"}},
	Key:      "<list>:<url>",
	ListItem: true,
	Lock:     "auth0:<domain>:client:<client>",
	Provider: []adapter.ParamSpec{
		{Name: "domain", Type: adapter.TypeString, Required: true, Doc: "the tenant domain (example.eu.auth0.com)"},
		{Name: "client", Type: adapter.TypeString, Required: true, Doc: "the application's client id"},
	},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: "https://<domain>",
	API: "Auth0 Management API v2: GET and PATCH /api/v2/clients/{id}",
	Sources: []string{
		"https://auth0.com/docs/api/management/v2/clients/patch-clients-by-id",
		"https://auth0.com/docs/api/management/v2/#!/Clients/get_clients_by_id",
		"https://auth0.com/blog/why-getting-429s-and-how-to-stop-them",
	},
}
