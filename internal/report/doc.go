// Package report turns the engine's typed results into one report model
// (Report) and renders it as GitHub Markdown: the pull request comment and
// the job summary. The model and the renderers are apart, so another
// renderer (terminal text) reads the same model.
//
// Invariants:
//   - Building a report (FromPlan, FromRun, FromError, Skip) does no I/O and
//     reads no clock: times come from the results.
//   - Every string that did not come from this package (provider messages,
//     resource keys, output values, branch names, environment and line ids)
//     is escaped by one function (Escape) before it reaches Markdown, so no
//     HTML error page, '|', backtick, @mention or "-->" can break a table,
//     start a code span, ping anyone or close the comment's hidden marker.
//     The one exception is a manual step's instructions and undo, Markdown
//     the plan's author wrote to be read as Markdown: they go through Quote,
//     which keeps them inside one quote, turns < and > into entities and
//     breaks @mentions outside code, and drops control characters.
//   - A manual step waiting on a person (Report.Steps) is shown by every
//     renderer: the terminal text, the comment and the summary, each with
//     the exact command (ConfirmCommand) and Action input that confirm it.
//   - A line's changes (Line.Changes: each field a plan would write,
//     before → after) are rendered in the comment and the summary as one
//     collapsed <details> section a line, a row a field. A secret or a
//     value not known yet is shown as its reference ("(secret ← env://X)"),
//     never as a value, even when an adapter's diff carries one.
//   - The comment starts with the hidden marker Marker(env) and is at most
//     CommentLimit bytes (GitHub refuses a body over 65,536 characters; a
//     byte count is never below the character count); the job summary is at
//     most SummaryLimit bytes. What does not fit is cut at a row, never
//     inside one, with a pointer to where it all is: for a comment, the
//     run's job summary when the run is known (and the receipt branch for
//     apply and destroy); else the receipt branch.
//   - Rendering is deterministic: the same report renders to the same bytes
//     (golden files in testdata, refreshed with go test -update).
//   - The report holds what the engine already redacted; the caller still
//     passes every rendered byte through its redactor before it leaves.
package report
