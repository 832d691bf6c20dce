// Package neon is the neon adapter: neon.branch, a database branch of a
// Neon project with a read-write compute.
//
// Credentials and endpoint: NEON_API_KEY (bearer), NEON_API_URL (default
// https://console.neon.tech/api/v2). Provider block: project (the project
// id, required); database and role (optional, default neondb and
// neondb_owner: the database and role the connection string is made for,
// Neon's defaults).
//
// neon.branch parameters:
//   - name: the branch name; default sponson/${ctx.env}/${ctx.scope};
//   - parent: the parent branch's name (or id, br-...); default main. It is
//     a create-time field: Neon cannot re-parent a branch, so a changed
//     parent is a Replace (delete the branch, create it again from the new
//     parent), which the plan shows before anything happens. {keep: true}
//     keeps whatever parent the live branch has.
//
// Key: branch:<name>. The canonical value is {"name", "parent"} (the parent
// by name); ids, timestamps, hosts and passwords are the provider's.
// Outputs, immediate: branch_id, host (the read-write endpoint's host, read
// from the connection URI), connection_string (sensitive). A branch without
// a read-write compute (made outside Sponson) has only branch_id.
//
// Scope mark: Neon keeps nothing Sponson writes on a branch but its name,
// so the name is the mark (CheckMark). A name under sponson/, where the
// default names live, must be the scope's own (sponson/<env>/<scope>):
// any other is RESOURCE_UNMARKED and destroy leaves the branch alone. A
// name a line gives outside sponson/ is the plan's to say, and destroy
// works from the ledger without the plan: such a branch is not refused by
// its name, and rests on the store's record, the key and the id.
//
// Asynchronous creation: a create answers at once with operations
// (create_branch, start_compute) still running; Apply polls each operation
// (GET /projects/{id}/operations/{op}) until it is finished, skipped or
// cancelled, within the HTTP client's budget. While operations run, Neon
// answers 423 Locked to conflicting writes (a delete of the new branch, a
// branch from it): the HTTP client retries 423 for every method, creates
// included, because a 423 is a refusal, not an ambiguous failure.
//
// A create whose answer is lost (network error, 5xx) is not repeated: the op
// re-reads the branch by name (the intent it declared), and carries on when
// it is there.
//
// Sources (the search tool's stored copies):
//   - "Branching with the Neon API",
//     https://neon.com/docs/guides/branching-neon-api (create with
//     endpoints [{type: read_write}] and branch {parent_id});
//   - "Create branch", https://api-docs.neon.tech/reference/createprojectbranch
//     (parent_id is a branch id; without it, the default branch);
//   - "List branches",
//     https://neon.com/docs/reference/api/branches/list-project-branches.md
//     (search, cursor = pagination.next, limit; the root branch is main);
//   - "Retrieve connection URI",
//     https://neon.com/docs/reference/api/projects/get-connection-uri.md
//     (branch_id, database_name, role_name required; {"uri"});
//   - "Operations", https://neon.com/docs/reference/api/operations.md
//     (statuses; terminal finished, skipped, cancelled; 423 Locked while a
//     conflicting operation runs; retry with backoff).
package neon
