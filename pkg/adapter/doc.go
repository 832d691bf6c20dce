// Package adapter is the op contract's home: the Op interface and its
// optional roles, the Spec every op carries, the registry the engine looks
// ops up in, and the catalogue derived from it.
//
// # One list of ops
//
// An op owns its Spec (spec.go of its package): summary, parameters (with
// type, default, enum, create-only, doc), outputs (immediate or external,
// sensitive), the ledger key's form, the model (object, list entry, manual
// step), the parent lock's form, the provider block's settings, the
// credential variables, the base-URL variable and its default, and the
// documentation pages it follows. Everything else is derived from the
// registry of ops:
//
//   - the catalogue plans are checked against (Registry.Catalog; the engine
//     uses the registry it is given, so there is no second list to agree);
//   - docs/adapters.md and the JSON schema's per-op parameters
//     (go generate ./pkg/adapters);
//   - the parameters an op accepts: its parser calls
//     param.Known(op, params, spec.ParamNames()...), so the documentation
//     cannot name a parameter the op refuses, or miss one it takes.
//
// NewRegistry checks every Spec (Spec.Check) and panics on a malformed one,
// so the first test that builds the registry catches it.
//
// # Adding an op
//
//  1. pkg/adapters/<provider>/spec.go: var fooSpec = adapter.Spec{...}, with
//     Credentials (the variables checked present before any I/O) and
//     BaseURLVar/BaseURL (the override tests and the demo point at pkg/sim).
//  2. The op type: Spec() returns fooSpec; Read, Diff, Apply, Lookup,
//     Destroy; the optional roles it has (Defaulter, ParentLocker, Awaiter,
//     ScopeLister, ProductionWriter, LineOutputser).
//  3. A list op (an entry in a list on a shared provider object, written by
//     read-modify-write) sets ListItem and Lock in its Spec, implements
//     ParentLocker, and implements only listentry.Parent (Load, Put,
//     Remove) for its provider: package listentry runs Read, Diff, Apply,
//     Lookup and Destroy for it (see auth0.callback, the smallest).
//  4. Register it in pkg/adapters.Registry, run go generate ./pkg/adapters,
//     and call adaptertest.Run from its tests against pkg/sim.
//
// Two roles change how the engine runs a line:
//   - Expander (http.recipe): the line stands for another op of its
//     adapter; the engine expands it before defaults and sees only the
//     expansion from then on (the ledger records the expanded op and
//     provider block, never the recipe). Recipes are declared in
//     Spec.Recipes, so docs and schema list them.
//   - Stepper (manual.step, Spec.Manual): a step a person does. Its state
//     is the ledger; the engine shows it as a todo (PlanLine.Todo,
//     RunResult.Todos), applies it only when apply --confirm names it and
//     its Verify passes (recording the approver, else the git identity, as
//     who confirmed it), never rolls it back, and on destroy shows its undo
//     and keeps it until destroy --confirm names it.
//
// Invariants:
//   - Output and parameter names are stable once published: plans use
//     them.
//   - A Spec says nothing an op does not do: tests in pkg/adapters check a
//     list op is a ParentLocker, an op with external outputs an Awaiter, a
//     declared parameter is never refused as unknown and an undeclared one
//     always is.
package adapter
