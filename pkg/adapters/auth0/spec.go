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
	Unmanaged: "the entries of the line's list that are its URL in another scope (the scope in the URL replaced by another scope's name: " +
		"`https://pr-12.preview.acme.dev/cb` beside this line's `https://pr-7.preview.acme.dev/cb`) and that no scope's receipt holds; " +
		"the rest of the list (production URLs, wildcards, anyone's own) is never reported. A line whose URL holds no scope reports only its own URL.",
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
