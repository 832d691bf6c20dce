// Package secret resolves secret references (env://NAME, file://path, and
// whatever schemes are registered later: vault://, op://, aws-sm://) to their
// values.
//
// Invariants:
//   - A value never appears in an error: messages and hints name the
//     reference (env://NAME, file://path), never what it resolves to. A
//     malformed reference that has no "scheme://" is not echoed either, because
//     it may be a secret pasted where a reference belongs.
//   - The package reads nothing by itself: the environment lookup, the file
//     reader and the base directory are injected (Config), so tests and the bot
//     (one environment per webhook delivery) decide what a reference can see.
//   - Every error is an *errs.Error: PLAN_INVALID for a malformed reference
//     (decidable without I/O, see Resolver.Validate), SECRET_UNRESOLVED for a
//     reference that is well formed but cannot be resolved (unknown scheme,
//     missing, empty or whitespace-only value, unreadable file, cancelled
//     context), INTERNAL for a wiring bug (a nil lookup or reader).
//   - A resolved value is never empty. The caller registers it with the
//     redactor (pkg/redact) before anything is printed; this package does not
//     import redact, so redact may import it (LooksLikeCredentialEnv).
//   - A Resolver is safe for concurrent use; registering a scheme while
//     resolving is allowed.
package secret
