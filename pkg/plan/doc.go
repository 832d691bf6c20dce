// Package plan reads release.plan.yaml, format version 1
// (see docs/plan-format.md): it parses the file, validates every rule
// that needs no catalogue of ops, and gives the engine a typed model of it.
//
// Invariants:
//
//   - Parse returns either a valid *Plan or a nil plan and an errs.List of
//     every error found in one pass, sorted by position. Every error and
//     warning carries the file and the line (and the column when known) of
//     the node it is about. Codes come from pkg/errs only.
//   - No message prints a literal that was refused as a secret, nor the
//     operand of a malformed {secret: ...}: both may be the secret itself.
//     Any other user text quoted in a message is hidden when it looks like
//     a credential (a token pasted as an id).
//   - A *Plan and its Lines and Values are immutable after Parse. Select,
//     Check, Interpolate and Plain read them and return new values; they are
//     safe for concurrent use.
//   - A valid plan has unique ids, no reference to an unknown line, no
//     dependency cycle (checked over all lines, whatever their
//     environments), no literal secret, no pasted display text, and no
//     ${ctx.*} outside string parameter values nor naming an unknown
//     variable.
//   - What needs the adapters (ADAPTER_UNKNOWN, OP_UNKNOWN,
//     REF_OUTPUT_UNKNOWN) is Check's, against a Catalog the caller supplies
//     (plan owns the interface, the adapter registry implements it); what
//     needs the run (ENV_UNKNOWN, REF_FILTERED, CTX_NULL for a null value)
//     is Select's and Interpolate's.
//   - Positions are 1-based and come from the YAML nodes. For a value form
//     the position is that of its operand. YAML syntax errors carry the
//     line the YAML library reports (corrected for its off-by-one on parser
//     errors) and no column, except for bad characters and unknown anchors,
//     which are located exactly.
//
// Decisions the format leaves open:
//
//   - null is not a value: a parameter that is null is PLAN_INVALID, with a
//     hint to write "" or {keep: true} or to remove the key.
//   - Interpolation: "${ctx.NAME}" is replaced; "$${" is always a literal
//     "${"; any other "${" in a string parameter is PLAN_INVALID, so a typo
//     such as ${env.x} is never sent to a provider verbatim. Value.Str keeps
//     the text as written until Interpolate.
//   - Secret literals: a literal under a key named like a secret (_KEY,
//     _SECRET, _TOKEN, PASSWORD, _PASS, PASSWD, PRIVATE_KEY, any case) is
//     refused at any depth, the nearest enclosing map key deciding (list
//     items inherit it); a literal that looks like a known credential is
//     refused anywhere, provider blocks included.
//   - Provider blocks are maps of literals: value forms and ${ctx.*} are
//     refused in them.
//   - Environment names follow the id pattern ^[a-z][a-z0-9_-]*$.
//   - YAML merge keys (<<) work, with anchors; every anchor and alias raises
//     YAML_ANCHOR. A YAML timestamp is read as the string written.
//   - A file that expands (through aliases) to more than 100 000 values is
//     PLAN_INVALID; an alias inside its own anchor is PLAN_INVALID.
//   - Ordering: a topological order over from and depends_on, the earliest
//     line in the file first among the ready ones; cycles are reported once
//     per strongly connected group, as the shortest cycle through its first
//     line ("a → b → a"), at that line's reference to the next.
package plan
