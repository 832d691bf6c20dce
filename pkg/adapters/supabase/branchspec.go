package supabase

import "github.com/sponson/apply/pkg/adapter"

var branchSpec = adapter.Spec{
	Adapter: "supabase", Op: "branch",
	Summary: "a Supabase preview branch of the project, waited for until healthy",
	Params: []adapter.ParamSpec{
		{Name: "name", Type: adapter.TypeString, Default: "sponson-${ctx.env}-${ctx.scope}", Doc: "the branch name"},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "project_ref", When: adapter.Immediate, Doc: "the branch's own project ref"},
		{Name: "api_url", When: adapter.Immediate, Doc: "https://<project_ref>.supabase.co"},
		{Name: "db_host", When: adapter.Immediate, Doc: "the branch database's host"},
		{Name: "connection_string", When: adapter.Immediate, Sensitive: true, Doc: "postgresql://user:password@db_host:port/postgres"},
	},
	Key: "branch:<name>",
	Unmanaged: "the project's preview branches that are the line's branch in another scope (its name with the scope replaced by another " +
		"scope's name: `sponson-preview-pr-12` beside this line's `sponson-preview-pr-7`) and that no scope's receipt holds; the default " +
		"branch and the project's other branches are never reported.",
	Provider:    []adapter.ParamSpec{{Name: "project", Type: adapter.TypeString, Required: true, Doc: "the parent project's ref"}},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "Supabase Management API v1: /v1/projects/{ref}/branches, GET and DELETE /v1/branches/{branch_id}",
	Sources: []string{
		"https://supabase.com/docs/reference/api/v1-create-a-branch",
		"https://supabase.com/docs/reference/api/v1-get-a-branch-config",
		"https://supabase.com/docs/reference/api/v1-delete-a-branch",
		"https://github.com/supabase/terraform-provider-supabase/blob/main/internal/provider/branch_resource.go",
	},
}
