// Package supabase is the supabase adapter: supabase.auth_redirect, one URL
// in a Supabase project's auth redirect allow-list.
//
// Credentials and endpoint: SUPABASE_ACCESS_TOKEN (a personal access token,
// bearer), SUPABASE_API_URL (default https://api.supabase.com). Provider
// block: project (the project ref; the line's project parameter overrides
// it).
//
// supabase.auth_redirect parameters:
//   - url: the redirect URL; it must not hold a comma (the list is one
//     comma-separated string) nor be blank (PARAM_INVALID);
//   - project: the project ref; default the provider block's project.
//
// Key: redirect:<project>:<url>. The canonical value is the URL; the output
// url is the URL. LockOn: supabase:<project>:auth-uri-allow-list.
//
// Model: uri_allow_list is ONE string of comma-separated URLs on the
// project's auth config. Apply and Destroy read the config (GET
// /v1/projects/{ref}/config/auth), add or remove the URL, and write the
// whole string back (PATCH with only uri_allow_list). There is no
// precondition, so the engine holds the parent lock around every write
// (LockOn). Entries are compared after trimming spaces; other entries keep
// their order and text; an entry present twice is removed in both places.
// The PATCH sets an absolute value and is declared idempotent to the HTTP
// client (repeating it after a lost answer writes the same string).
//
// Decisions: auth_redirect's ListScope lists, for unmanaged drift, the
// line's URL and the entries that are that URL in another scope
// (adapter.OtherScope), never the rest of the allow-list.
//
// Sources (the search tool's stored copies):
//   - Supabase Management API reference, https://supabase.com/docs/reference/api
//     (bearer personal access token; 60 requests a minute, then 429);
//   - "Update Project's Auth Config" (PATCH /v1/projects/{ref}/config/auth;
//     uri_allow_list is a string; site_url),
//     https://withone.ai/knowledge/supabase/conn_mod_def%3A%3AGC43ZRsFwpU%3A%3A1bl7idCRTmm-sL79xQMM5Q;
//   - "v1-get-auth-service-config" (GET /v1/projects/{ref}/config/auth),
//     https://zone-www-dot-aapwkakko-supabase.vercel.app/docs/reference/api/v1-get-auth-service-config.
//
// # supabase.branch
//
// A preview branch of the provider block's project (project: the parent
// ref). Parameter name, default sponson-<env>-<scope>. Key branch:<name>;
// the canonical value is {name}; the id is the branch's (a uuid).
//
// Create is POST /v1/projects/{ref}/branches {branch_name} (201, a
// BranchResponse); the branch's own project then provisions, and Apply
// polls GET /v1/branches/{id} (with the shared client's clock, within its
// budget) until its status is ACTIVE_HEALTHY; a final failure status
// (INIT_FAILED, ...) is PROVIDER_INVALID. The branch is found by name in
// GET /v1/projects/{ref}/branches (a 422 there, a project without
// branching, is "no branches"; the default branch is never the line's).
// Destroy is DELETE /v1/branches/{id}; gone, another id, or the parent
// project gone (404 for its branch listing) is success.
//
// Outputs, immediate: project_ref (the branch's own ref), api_url
// (https://<ref>.supabase.co), db_host and, sensitive, connection_string
// (postgresql://db_user:db_pass@db_host:db_port/postgres, from the branch
// detail). A lost create answer is resolved by looking the name up.
//
// Sources: supabase/terraform-provider-supabase
// internal/provider/branch_resource.go and branch_resource_test.go
// (V1ListAllBranches, V1CreateABranch {branch_name, git_branch, region},
// V1GetABranchConfig {ref, db_host, db_port, db_user, db_pass, status},
// V1DeleteABranch expecting 200); "Create a database branch"
// (BranchResponse attributes), https://supabase.com/docs/reference/api/v2-create-a-branch.
package supabase
