package engine

import (
	"bytes"
	"fmt"
	"io"

	"github.com/sponson/apply/pkg/receipt"
)

// RenderPush writes a PushUnsaved result: the difference, and what was
// written.
func RenderPush(w io.Writer, r *PushResult) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "receipts push %s/%s from %s\n\n", r.Env, r.Scope, r.Path)
	row := func(sign string, e receipt.LedgerEntry) {
		fmt.Fprintf(&b, "  %s %s.%s %s (%s)\n", sign, e.Adapter, e.Op, e.Key, e.CreatedBy)
	}
	for _, e := range r.Diff.Missing {
		row("+", e)
	}
	for _, e := range r.Diff.Extra {
		row("-", e)
	}
	for _, c := range r.Diff.Changed {
		row("~", c.Unsaved)
	}
	if r.Diff.Empty() {
		b.WriteString("  the stored ledger and the unsaved one agree\n")
	}
	switch {
	case r.Written:
		fmt.Fprintf(&b, "\nwritten (%s)\n", r.Mode)
	default:
		b.WriteString("\nnothing written: pass --adopt-missing to add what the stored ledger lacks, or --replace to write the unsaved receipt whole\n")
	}
	return writeTrimmed(w, b.Bytes())
}

// writeTrimmed writes text with the trailing blanks of every line removed
// (padding of the last column), so golden files and diffs stay clean.
func writeTrimmed(w io.Writer, text []byte) error {
	lines := bytes.Split(text, []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimRight(l, " ")
	}
	_, err := w.Write(bytes.Join(lines, []byte("\n")))
	return err
}
