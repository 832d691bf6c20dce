// Package initplan is what `sponson init` knows about a repository: it
// detects the stack (dependency manifests, provider files, ORMs, the names
// of variables in .env files and CI configuration, and provider ids in the
// environment), renders a starter release.plan.yaml for the providers an op
// manages, renders the lines that adopt unmanaged resources, and adds
// .sponson/ to .gitignore.
//
// Invariants:
//   - No secret value is ever read: a .env file's lines are cut at "=" and
//     only the name is kept; CI files are scanned for variable names and
//     deploy steps, and for the literal values of the provider ids named in
//     idVars (a project, a team, a site: never a token, never a value taken
//     from a secret); from the environment only those ids are read, and only
//     to fill a provider block, and only when they look like ids. No secret
//     reaches the plan but as a reference the user writes.
//   - Detection reads through an fs.FS (the root, and apps/* and packages/*
//     of a monorepo) and a lookup function: it does no other I/O, so it is
//     tested over in-memory trees. WriteFile is the one writer: whole or
//     not at all (a temporary file renamed over the target).
//   - Every provider the built-in registry has an adapter for is detected
//     (a test derives the list from pkg/adapters); a service no op manages
//     is reported with a pointer (a recipe of http.recipe, else the generic
//     http ops), never turned into a line.
//   - Starter renders a plan that parses and passes the catalogue's and the
//     ops' checks (the caller checks it again before writing); what it
//     cannot know is a placeholder value named in Starter.Placeholders and
//     marked "FILL IN" in a comment.
//   - Adoption lines are derived from the key an unmanaged resource was
//     reported under and the op of its line; their ids are derived from the
//     key, so appending twice adds nothing the second time.
package initplan
