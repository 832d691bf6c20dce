// Package netlify is the netlify adapter: netlify.env, one deploy
// context's value of environment variables of a Netlify site, with the
// site's deploy of the commit as its external outputs.
//
// Credentials and endpoint: NETLIFY_AUTH_TOKEN (bearer), NETLIFY_API_URL
// (default https://api.netlify.com/api/v1; a URL with only a host gets
// /api/v1, as the Netlify CLI reads the variable). Provider block: site
// (id or name, required), account (the team's account id or slug; looked
// up from the site, GET /sites/{site}, when absent).
//
// netlify.env parameters:
//   - context: production, deploy-preview, branch-deploy, dev or branch;
//     default deploy-preview for --env preview and production for --env
//     production (PARAM_INVALID otherwise);
//   - branch: for context branch only, the branch whose own value this is
//     (default the run's git branch);
//   - values: NAME → value (a string; numbers and bools as their text),
//     {from}, {secret} or {keep: true}.
//
// Key env:<context>:<NAME>, or env:branch:<branch>:<NAME>. The resource
// is one context's value of a variable (its id is the value's id); the
// canonical value is the value alone. A secret variable's values cannot be
// read back (null) and are rewritten when the plan gives one.
//
// Writes: a variable that does not exist is created with its one value
// (POST /accounts/{account}/env?site_id, an array, every new variable of
// the line at once); a value on an existing variable is set with PATCH
// /accounts/{account}/env/{key}?site_id {context, context_parameter,
// value} (absolute, so declared idempotent); destroy deletes the value
// (DELETE .../env/{key}/value/{id}), or the whole variable when that value
// was its only one; a site that answers 404 (deleted) holds no values, so
// destroying or looking one up is success. A variable with one value for all contexts is refused
// (PROVIDER_CONFLICT): a per-context value would change it for every
// context. LockOn netlify:<site>:env: the scopes share a variable (and the
// deploy-preview value), and a create races with a value set.
//
// Scope mark: Netlify keeps no comment on a variable, and its scopes
// (builds, functions, runtime, post-processing) say where a value is
// read, not who wrote it. What ties a value to one scope is context branch
// with context_parameter the scope's git branch: destroy (CheckMark)
// leaves alone a branch-context value of another branch than the scope's
// (the one a branch-<name> scope is made from; the one a pull request's
// scope recorded in its receipt), RESOURCE_UNMARKED. The other contexts
// are one value for every scope, so they carry no mark.
//
// External outputs (event deploy): preview_url (the deploy's permalink,
// deploy_ssl_url), deploy_id and deploy_preview_url (links.alias: the
// deploy-preview-N or branch URL), from the newest deploy of the run's
// commit (commit_ref) in the line's context (branch-deploy of the branch
// for context branch) that started after the line's variables last
// changed (updated_at). ready gives them; error or rejected is
// EXTERNAL_FAILED, and so is a failed deploy of the commit from before the
// change when none started since; anything else is "not yet". Deploys are
// read newest first, page by page, until one started before the change.
//
// Redeploy. Netlify starts building a pushed commit at once, while the
// workflow that writes its variables is still running. After a write, when
// the newest deploy of the run's commit in the line's context (among the
// site's 100 newest deploys) started before the write and has not failed, a production or branch deploy is
// rebuilt: POST /sites/{site}/builds (createSiteBuild; branch: the deploy's
// branch, none for production; title saying why), recorded as {deploy_id,
// replaces}. A deploy preview cannot be rebuilt through the API (no
// operation takes a pull request): it is recorded as {stale: its id}, and
// the line waits for the pull request's next deploy. Context dev has no
// deploys. The record is the output redeploy of every value the line
// wrote, so the receipt's ledger shows it.
//
// Sources (the search tool's stored copies):
//   - Netlify API reference (environmentVariables: getEnvVars, createEnvVars,
//     setEnvVarValue, deleteEnvVarValue, deleteEnvVar; getSite;
//     listSiteDeploys; createSiteBuild, npm @netlify/open-api 2.60.0:
//     "If no branch is specified, it is treated as a production deploy ...
//     If a branch is specified and doesn't match the main branch, it is a
//     branch deploy"), https://open-api.netlify.com;
//   - "Environment variables overview" (contexts and contextual values),
//     https://docs.netlify.com/build/environment-variables/overview.md;
//   - netlify CLI env-set.js and env utilities (accountId from the site's
//     account_slug; EnvVar {key, scopes, values [{value, context,
//     context_parameter, id}], is_secret, updated_at}; setEnvVarValue per
//     context), https://app.unpkg.com/netlify@23.1.4/files/dist/commands/env/env-set.js;
//   - netlify_py EnvVarsClient (DELETE /accounts/{account_id}/env/{key}
//     and .../env/{key}/value/{id});
//   - SferaDev/openapi-clients netlify-api CHANGELOG (Site.account_id;
//     "Add context branch parameter").
package netlify
