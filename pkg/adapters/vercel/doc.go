// Package vercel is the vercel adapter: vercel.env, the environment
// variables of a Vercel project per target and git branch, with the
// deployment of the commit as its external outputs.
//
// Credentials and endpoint: VERCEL_TOKEN (bearer), VERCEL_API_URL (default
// https://api.vercel.com). Provider block: project (id or name, required),
// team (team id, optional: sent as teamId on every request).
//
// vercel.env parameters:
//   - target: preview, production or development; default the run's --env
//     when it is one of them (PARAM_INVALID otherwise);
//   - branch: the git branch a preview variable applies to; default the
//     run's git branch for preview, "*" (every branch) for the other
//     targets; only "*" is accepted for production and development (Vercel
//     scopes variables to a branch only for preview);
//   - values: NAME → value. A value is a string (numbers and bools are
//     written as their text), {from}, {secret} or {keep: true}. Every
//     variable is written as type "encrypted".
//
// Keys: env:<target>:<branch or *>:<NAME>, one resource per NAME. The
// canonical value is the variable's value alone (ids, timestamps and the
// type are the provider's); a variable whose value cannot be read back
// (type "sensitive") reads as null and is rewritten (as encrypted) when the
// plan gives a value. Diffs show a known value before and after; the
// engine hides both sides of one that comes from a secret or a sensitive
// output, and a pending value is not known.
//
// Scope mark: every variable a line creates carries the comment
// "sponson <env>/<scope>" (Mark), and an update writes it on a variable
// with no comment (a person's comment is kept: the variable is theirs to
// describe, and one the line only adopted is never destroyed). Before it
// deletes an entry, destroy reads the variable (CheckMark): another
// scope's mark, or a person's comment, is RESOURCE_UNMARKED, and the entry
// stays. A variable with no comment is destroyed: one made before Sponson
// wrote marks has none, and destroy reaches the check only for an entry
// the store proves Sponson created in the scope, so the absence
// contradicts nothing (refusing it would strand every existing scope).
// The check and the delete decide on one listing of the project's
// variables (the engine's read cache of that entry's destroy): destroy
// reads a variable once, then deletes it.
//
// External outputs (event deploy): preview_url and deployment_id, from the
// newest deployment of the run's commit for the target
// (GET /v6/deployments?projectId&target&sha), once it was created after the
// line's variables last changed (their updatedAt). READY gives them; ERROR
// or CANCELED is EXTERNAL_FAILED; anything else, or a deployment built
// before the variables, is "not yet".
//
// Redeploy. Vercel's git integration starts building a commit when it is
// pushed, while the workflow that writes its variables is still running:
// that build has none of them. So after a write (a create or an update),
// when the newest deployment of the run's commit for the target was
// created before the write and has not failed (ERROR, CANCELED), the op
// rebuilds it: POST /v13/deployments {name, project, deploymentId: that
// deployment, target (production only), gitSource: the project's
// connection at the run's branch and commit}. The record {deployment_id:
// the new one, replaces: the old one} is the output redeploy of every
// resource the line wrote, so the receipt's ledger shows it. No deployment
// yet (the one to come reads the variables), one created after the write,
// a failed one (it stays the commit's failure), target development (no
// deployments) or a run without a commit: nothing is rebuilt. A rebuild
// that fails fails the line (the variables it created are rolled back).
//
// Decisions where the documentation is silent:
//   - A live variable with the same name and branch whose targets include
//     this one and others (one variable for preview and production) is the
//     resource, but Sponson refuses to change or delete it
//     (PROVIDER_CONFLICT): the write would reach the other targets.
//   - Creates use POST ...?upsert=true, which the documentation describes
//     as "a new environment variable will not be created if it already
//     exists but the existing variable's value will be updated": repeating
//     it is harmless, so it is declared idempotent to the HTTP client.
//   - The env listing (filterProjectEnvs) declares no target and no paging
//     parameter and answers every variable at once: it is read in one
//     request and filtered by target here.
//   - When a listed variable says decrypted: false, its value is read from
//     GET /v1/projects/{id}/env/{envId} (which answers the decrypted value).
//   - ListScope lists every variable of the target and branch (adoption
//     with {keep: true}, unmanaged drift).
//
// Sources (the search tool's stored copies):
//   - the Vercel description, vercel/sdk vercel-spec.json (createDeployment's
//     deploymentId, "An deployment id for an existing deployment to
//     redeploy"; getProject's Bitbucket link {uuid, workspaceUuid, owner,
//     slug}; filterProjectEnvs' parameters);
//   - Vercel REST API, "Create one or more environment variables",
//     https://vercel.com/docs/rest-api/projects/create-one-or-more-environment-variables
//     (POST /v10/projects/{idOrName}/env, upsert, teamId);
//   - "Retrieve the environment variables of a project by id or name",
//     https://vercel.com/docs/rest-api/projects/retrieve-the-environment-variables-of-a-project-by-id-or-name
//     and filter_project_envs (gitBranch "must have target=preview",
//     decrypt), https://vercel.com/docs/agent-resources/vercel-mcp/tools/environment-variables/filter_project_envs;
//   - "Edit an environment variable" (PATCH /v9/projects/{idOrName}/env/{id})
//     and "Remove an environment variable" (DELETE /v9/...),
//     https://vercel.com/docs/rest-api/sdk/projects/edit-an-environment-variable;
//   - "List deployments" (GET /v6/deployments; response {pagination:
//     {count,next,prev}, deployments: [{uid, url, readyState, target,
//     createdAt, meta}]}),
//     https://vercel-site.vercel.sh/docs/rest-api/reference/endpoints/deployments/list-deployments;
//   - vercel/terraform-provider-vercel client/environment_variable.go (the
//     env var object: id, key, value, type, target, gitBranch; the {envs}
//     list shape; created/failed of a create).
//
// # vercel.deploy
//
// A deployment of the run's commit through the project's git connection,
// for target production under --env production and preview otherwise. No
// parameters; the provider block is vercel.env's. Key
// deployment:<target>:<sha>; canonical value {target, sha}; the id is the
// deployment's uid.
//
// Read finds the newest deployment of the commit for the target (GET
// /v6/deployments?projectId&target&sha, as vercel.env's external outputs);
// a failed one (ERROR, CANCELED) counts as none. Apply waits for an
// existing one (the git integration usually made it: never repeated) and
// otherwise creates one: GET /v9/projects/{idOrName} for its link (type,
// repoId or org/repo; gitlab projectId; bitbucket uuid, sent as repoUuid,
// with workspaceUuid, or owner/slug),
// then POST /v13/deployments {name, project, target (production only),
// gitSource {type, repoId, ref: the run's branch, sha}}, intend first. It
// then polls GET /v13/deployments/{id} (the shared client's clock, within
// its budget) until READY; ERROR or CANCELED is EXTERNAL_FAILED. Outputs,
// immediate once READY: preview_url (https://<url>), deployment_id. A
// project without a git connection is PROVIDER_INVALID before any write.
//
// Destroy leaves deployments alone (nothing is sent): a deployment is the
// commit's history, and Vercel ages its own out. Rollback of a run that
// created one therefore deletes nothing either.
//
// Sources: "Create a new deployment" (POST /v13/deployments, gitSource
// forms), https://vercel.com/docs/rest-api/deployments/create-a-new-deployment;
// "Get a deployment by ID or URL" (readyState),
// https://vercel.com/docs/rest-api/deployments/get-a-deployment-by-id-or-url;
// "Find a project by id or name" (link), https://vercel.com/docs/rest-api/projects/find-a-project-by-id-or-name.
package vercel
