// Package planetscale is the planetscale adapter: planetscale.branch, a
// database branch, and planetscale.password, a password on a branch.
//
// Credentials and endpoint: a service token, PLANETSCALE_SERVICE_TOKEN_ID
// and PLANETSCALE_SERVICE_TOKEN, sent as "Authorization: <id>:<token>" (no
// scheme); PLANETSCALE_API_URL (default https://api.planetscale.com/v1; a
// URL with only a host gets /v1). Provider block: organization and
// database, both required.
//
// planetscale.branch parameters:
//   - name: default sponson-<env>-<scope> (lowercase, dashes);
//   - parent: the branch it is made from, default main. Create-time: a
//     changed parent is a Replace (PlanetScale cannot re-parent a branch).
//     {keep: true} keeps whatever parent the live branch has (to adopt a
//     branch made by hand); with no branch, the create names no parent and
//     PlanetScale makes it from the database's default branch.
//
// Key branch:<name>; canonical value {name, parent}. Outputs, immediate:
// name, id. Creation is asynchronous: the branch answers ready: false
// first, and Apply polls GET .../branches/{name} (with the shared client's
// clock, within its budget) until ready is true. Delete is by name.
//
// planetscale.password parameters:
//   - branch: the branch's name, default sponson-<env>-<scope> (the
//     default of planetscale.branch; write from: to order the lines);
//   - name: default sponson-<env>-<scope>;
//   - role: reader, writer, readwriter or admin (default admin, as
//     PlanetScale's); PlanetScale cannot change a role, so a changed role
//     is PARAM_INVALID asking for a new name (or apply --recreate);
//   - connection_params: query parameters of connection_string
//     ({sslaccept: strict}, {tls: "true"}, ...).
//
// Key password:<branch>:<name>; canonical value {branch, name, role}.
// Outputs, immediate: id, username, host (access_host_url), role, and,
// sensitive, password (plain_text) and connection_string
// (mysql://username:password@host/<database>?connection_params). The
// secret is answered once, by the create: later reads have the other
// outputs only. A create whose answer was lost leaves a password whose
// secret nobody has; the op deletes it and creates it again (the intent
// made it this line's).
//
// Sources (the search tool's stored copies):
//   - PlanetScale API reference, "Create a branch" (POST
//     /organizations/{organization}/databases/{database}/branches; service
//     token accesses; server https://api.planetscale.com/v1),
//     https://planetscale.com/docs/api/reference/create_branch.md;
//   - planetscale/planetscale-go branches.go (the branch object: name,
//     parent_branch, ready; create {name, parent_branch}; get and delete by
//     name; lists under data) and passwords.go (the password object: id,
//     name, access_host_url, username, role, plain_text; create {name,
//     role, ttl}; list with page/per_page; delete by id);
//   - "Password roles" (reader, writer, read/write, admin; "Once a password
//     is created, its role cannot be changed"),
//     https://planetscale.com/docs/concepts/password-roles;
//   - pscale CLI "password" (create/list/delete; roles),
//     https://planetscale.com/docs/cli/password.
package planetscale
