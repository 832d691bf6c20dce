// Package cli is the sponson command line: flag parsing, rendering and the
// mapping of errors to exit codes and the JSON envelope. Building a run
// (store, remote and token, lease settings, owner, engine, the static-check
// engine) is internal/wire's, shared with the Action and the bot; the CLI
// gives it its flags, environment and checkout. cmd/sponson's main is two
// lines over Main.
//
// Each command is an options struct, a constructor newCmdX(f, runF) and a
// run function xRun(opts) over one Factory, the invocation's world; a
// command adds the flag groups it reads (addScopeFlags, addPlanFlag,
// addStoreFlags, addRunFlags) and carries its traits as annotations
// (traits.go).
//
// Invariants:
//   - Main never reads the process environment, the working directory or
//     the standard streams itself: everything comes in through Env and IO,
//     so tests run it in-process with buffers.
//   - With --json, stdout receives exactly one JSON document in every
//     outcome (success, usage error, plan error, a panic turned into
//     INTERNAL), and its "ok" is true exactly when the exit code is 0.
//     Everything else (progress, stack traces) goes to stderr.
//   - The exit code is decided by the error's code alone (pkg/errs).
//   - `sponson mcp`'s tool calls (ToolRunner) are this same command line
//     run in-process with --json, its one document handed to a sink
//     instead of stdout: the MCP answer is the envelope, never a copy.
package cli
