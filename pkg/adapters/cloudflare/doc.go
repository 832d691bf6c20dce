// Package cloudflare is the cloudflare adapter: cloudflare.pages_env, the
// variables and secrets of a Cloudflare Pages project's preview or
// production deployment config.
//
// Credentials and endpoint: CLOUDFLARE_API_TOKEN (bearer; Pages Write),
// CLOUDFLARE_API_URL (default https://api.cloudflare.com/client/v4; a URL
// with only a host gets /client/v4). Provider block: account (the account
// id) and project (the Pages project's name), both required.
//
// cloudflare.pages_env parameters:
//   - target: preview or production; default the run's --env when it is
//     one of them;
//   - vars: NAME → value, written as plain_text;
//   - secrets: NAME → value, written as secret_text ({secret: env://...}
//     keeps it out of the plan);
//   - rewrite_secrets: true writes every secret again (to rotate); by
//     default a secret that exists is left as it is.
//
// Key env:<target>:<NAME>, one resource per variable. A plain variable's
// canonical value is its value; a secret's is its presence
// ({secret: true}): Cloudflare never answers a secret's value, so secrets
// are compared by presence, and a plain variable the line now wants secret
// (or the reverse) is an update.
//
// The variables are one map on the project (deployment_configs.<target>.
// env_vars), written by merge patch: PATCH
// /accounts/{account}/pages/projects/{project} with only the line's
// changed variables; destroy sets the key to null (a project that answers
// 404, code 8000007, is deleted and holds no variables: success). Every write of a line
// is one patch (absolute values, declared idempotent), under LockOn
// cloudflare:<account>:pages:<project>:<target>. The op has no outputs.
//
// Sources (the search tool's stored copies):
//   - Cloudflare API, "Update project" (PATCH
//     /accounts/{account_id}/pages/projects/{project_name}; "Modify
//     environment variables. To delete an environment variable, set the
//     key to null."; API token auth),
//     https://developers.cloudflare.com/api/go/resources/pages/subresources/projects/methods/edit;
//   - the pages_project-patch schema example (env_vars {NAME: {value}},
//     {type: secret_text, value}, null to delete),
//     api-evangelist engineering-platform json-schema;
//   - terraform-provider-cloudflare docs/resources/pages_project.md
//     (deployment_configs preview and production);
//   - the API envelope {success, errors, messages, result}, "Purge build
//     cache", https://developers.cloudflare.com/api/resources/pages/subresources/projects/methods/purge_build_cache/.
package cloudflare
