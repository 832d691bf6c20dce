package neon

import "github.com/sponson/apply/pkg/adapter"

var branchSpec = adapter.Spec{
	Adapter: "neon", Op: "branch",
	Summary: "a Neon database branch with a read-write compute",
	Params: []adapter.ParamSpec{
		{Name: "name", Type: adapter.TypeString, Default: "sponson/${ctx.env}/${ctx.scope}", Doc: "the branch name"},
		{Name: "parent", Type: adapter.TypeString, Default: DefaultParent, CreateOnly: true,
			Doc: "the parent branch (name or br-... id); a change replaces the branch"},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "branch_id", When: adapter.Immediate, Doc: "the branch id (br-...)"},
		{Name: "host", When: adapter.Immediate, Doc: "the read-write endpoint's host"},
		{Name: "connection_string", When: adapter.Immediate, Sensitive: true, Doc: "postgres:// URI for the provider block's database and role"},
	},
	Key: "branch:<name>",
	Mark: "the branch's name, Neon keeping nothing else Sponson writes on a branch: a name under `sponson/` (where Sponson's default names live) " +
		"must be the scope's own, `sponson/<env>/<scope>`, or destroy leaves the branch alone (RESOURCE_UNMARKED). A name a line gives outside " +
		"`sponson/` cannot be checked without the plan (destroy works from the ledger): it rests on the store's record, the key and the id.",
	Unmanaged: "the project's branches that are the line's branch in another scope (its name with the scope replaced by another scope's name: " +
		"`sponson/preview/pr-12` beside this line's `sponson/preview/pr-7`) and, for a line with the default name, any other branch under " +
		"`sponson/<env>/` (made there by hand), that no scope's receipt holds. The project's other branches (main, anyone's own) are never reported.",
	Provider: []adapter.ParamSpec{
		{Name: "project", Type: adapter.TypeString, Required: true, Doc: "the project id"},
		{Name: "database", Type: adapter.TypeString, Default: DefaultDatabase, Doc: "the database the connection string is made for"},
		{Name: "role", Type: adapter.TypeString, Default: DefaultRole, Doc: "the role the connection string is made for"},
	},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "Neon API v2: /api/v2/projects/{project_id}/branches[/{branch_id}], /connection_uri, /operations/{operation_id}",
	Sources: []string{
		"https://neon.com/docs/guides/branching-neon-api",
		"https://api-docs.neon.tech/reference/createprojectbranch",
		"https://neon.com/docs/reference/api/branches/list-project-branches.md",
		"https://neon.com/docs/reference/api/projects/get-connection-uri.md",
		"https://neon.com/docs/reference/api/operations.md",
	},
}
