// Package errs is the one error type and the one code table of Sponson.
//
// Invariants:
//   - Every error that crosses a package boundary is, or wraps, an *Error with
//     a Code from Table. An uncoded error reaching the CLI is a bug and is
//     reported as INTERNAL.
//   - The code alone decides the exit code and the default hint; callers
//     decide with errors.Is / errors.As (or CodeOf), never by matching text.
//   - Messages never contain a secret or a credential: they are written by
//     Sponson, and provider text passes through the redactor before it is
//     wrapped.
//   - docs/errors.md is generated from Table (go generate ./pkg/errs); a test
//     fails when it is out of date.
package errs

//go:generate go run ../../cmd/errdocs -o ../../docs/errors.md
