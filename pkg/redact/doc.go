// Package redact is the one redactor: every byte Sponson prints, logs,
// comments or stores passes through it.
//
// Invariants:
//   - One Redactor per command (per webhook delivery in the bot), created
//     before any output exists and passed down; there is no global one.
//   - Register records a value in every form a provider or serializer may
//     produce (see Register). After Register returns, String, Writer, JSON,
//     Value and Error mask every registered form, including in output that
//     started before the registration; what was already written cannot be
//     recalled, which is why secrets are registered before anything is printed.
//   - Masking replaces every byte covered by an occurrence of any registered
//     form with "***"; overlapping occurrences (of one or of several secrets)
//     become one "***". The Writer gives exactly what String gives for the
//     same bytes, however they are split across Write calls; it holds back at
//     most the longest form minus one byte and never emits part of a secret.
//   - A value shorter than 4 characters (after trimming surrounding
//     whitespace) is not masked, because masking it would eat ordinary text:
//     Register returns a SHORT_SECRET warning that names the origin, never the
//     value. Whitespace-only values are ignored.
//   - JSON is redacted string by string (keys too) while it is re-encoded, so
//     the result is always valid JSON with the structure of the input.
//     Document does the same for a document whose structure is its own (the
//     CLI's --json answer): keys, and whatever the members the caller names
//     as structure hold, are never masked (docs/adr/0020); the caller
//     refuses a secret equal to such a name before it could be printed.
//   - A form that would only appear by joining masked output with its
//     surroundings (a secret containing "***") or by joining two JSON tokens is
//     not looked for.
//   - A program whose output is a log (the GitHub Action, the bot) prints
//     through one Lines: its writers pass on whole lines only, redacted, one
//     writer's lines never cut into another's, and every value registered
//     and not yet sent as a mask (::add-mask::) is sent, on lines of its
//     own, before the next line is printed. So a workflow command always
//     starts a line and the runner knows a mask before any line that could
//     hold its value.
//   - Every method is safe for concurrent use. Writes of all the Writers of
//     one Redactor are serialised, so several goroutines may write to them and
//     to the same underlying writer.
package redact
