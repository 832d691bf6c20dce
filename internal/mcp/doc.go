// Package mcp is `sponson mcp`: the Model Context Protocol server that lets
// a coding agent plan, apply and destroy a pull request's side effects,
// read a scope's receipt and list the held leases, over stdio, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// A tool call is the command it names, run in-process with --json by a
// Runner (internal/cli's): the tool's typed arguments become the
// command's flags, and the command's own envelope is the answer. There is
// no second path through the engine and no second envelope (ADR 0015).
//
// Invariants:
//   - Every tool result's first text content is one line holding the
//     command's JSON envelope, compact, exactly as `sponson <command>
//     --json` would print it (redacted by the command's own redactor);
//     the second line is a one-line summary. The envelope is also the
//     result's structured content. isError is true exactly when the
//     command's exit code is not 0.
//   - Arguments that do not fit the tool's input schema (an unknown name,
//     a wrong type, a scope that is not pr-<n> or main) are a USAGE
//     envelope in an isError result, never a protocol error, so an agent
//     reads every refusal the same way. Only an unknown tool or a
//     malformed request is a protocol error (the SDK's).
//   - The request's context is the run's: a cancelled call stops the
//     command, which rolls back and releases its leases as on SIGINT; Run
//     returns only after every call in flight has finished, so a process
//     that exits when its client goes away never leaves a lease behind.
//   - Nothing but the protocol is written to the transport (stdout): the
//     commands' progress and the server's own log go to the log writer
//     (stderr).
package mcp
