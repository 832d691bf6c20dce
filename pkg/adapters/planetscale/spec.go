package planetscale

import "github.com/sponson/apply/pkg/adapter"

var providerBlock = []adapter.ParamSpec{
	{Name: "organization", Type: adapter.TypeString, Required: true, Doc: "the organization's name"},
	{Name: "database", Type: adapter.TypeString, Required: true, Doc: "the database's name"},
}

var sources = []string{
	"https://planetscale.com/docs/api/reference/create_branch.md",
	"https://planetscale.com/docs/concepts/password-roles",
	"https://planetscale.com/docs/cli/password",
	"https://github.com/planetscale/planetscale-go",
}

var branchSpec = adapter.Spec{
	Adapter: "planetscale", Op: "branch",
	Summary: "a PlanetScale database branch, polled until ready",
	Params: []adapter.ParamSpec{
		{Name: "name", Type: adapter.TypeString, Default: "sponson-${ctx.env}-${ctx.scope}", Doc: "the branch name"},
		{Name: "parent", Type: adapter.TypeString, Default: DefaultParent, CreateOnly: true, Doc: "the branch it is made from; a change replaces the branch; {keep: true} keeps the live branch's (to adopt one made by hand)"},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "name", When: adapter.Immediate, Doc: "the branch name"},
		{Name: "id", When: adapter.Immediate, Doc: "the branch id"},
	},
	Key: "branch:<name>",
	Unmanaged: "the database's branches that are the line's branch in another scope (its name with the scope replaced by another " +
		"scope's name: `sponson-preview-pr-12` beside this line's `sponson-preview-pr-7`) and that no scope's receipt holds; main and " +
		"the database's other branches are never reported.",
	Provider:    providerBlock,
	Credentials: []string{TokenIDVar, TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API:     "PlanetScale API v1: /v1/organizations/{organization}/databases/{database}/branches[/{branch}]",
	Sources: sources,
}

var passwordSpec = adapter.Spec{
	Adapter: "planetscale", Op: "password",
	Summary: "a password on a PlanetScale branch; its secret is returned once",
	Params: []adapter.ParamSpec{
		{Name: "branch", Type: adapter.TypeString, Default: "sponson-${ctx.env}-${ctx.scope}", Doc: "the branch's name"},
		{Name: "name", Type: adapter.TypeString, Default: "sponson-${ctx.env}-${ctx.scope}", Doc: "the password's name"},
		{Name: "role", Type: adapter.TypeString, Enum: []string{"reader", "writer", "readwriter", "admin"}, Default: DefaultRole, CreateOnly: true,
			Doc: "the password's role; PlanetScale cannot change it, so a change asks for a new name (or apply --recreate)"},
		{Name: "connection_params", Type: adapter.TypeMap, Doc: "query parameters of connection_string ({sslaccept: strict})"},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "id", When: adapter.Immediate, Doc: "the password id"},
		{Name: "username", When: adapter.Immediate, Doc: "the user name"},
		{Name: "host", When: adapter.Immediate, Doc: "the host to connect to (access_host_url)"},
		{Name: "role", When: adapter.Immediate, Doc: "the role"},
		{Name: "password", When: adapter.Immediate, Sensitive: true, Once: true, Doc: "the password; answered once, by the create (apply --recreate makes a new one)"},
		{Name: "connection_string", When: adapter.Immediate, Sensitive: true, Once: true, Doc: "mysql://username:password@host/<database>?connection_params; once, like password"},
	},
	Key:         "password:<branch>:<name>",
	Provider:    providerBlock,
	Credentials: []string{TokenIDVar, TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API:     "PlanetScale API v1: /v1/organizations/{organization}/databases/{database}/branches/{branch}/passwords[/{id}]",
	Sources: sources,
}
