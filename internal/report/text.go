package report

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// TextOptions are how a report is drawn on a terminal or in a log.
type TextOptions struct {
	// Color turns on colour and emphasis: a terminal, NO_COLOR unset.
	Color bool
	// Width is the width values are elided to (0: 120). The full value is
	// always in --json.
	Width int
	// Reported says an error is printed by the caller itself (the error
	// that ends the command, on stderr): a line whose error it is shows
	// only the code there, so no error is printed twice.
	Reported func(code errs.Code, message string) bool
}

func (o TextOptions) width() int {
	if o.Width > 0 {
		return o.Width
	}
	return 120
}

// statusWidth is the narrowest status column: plan and apply statuses
// line up the same way whatever the statuses of one run.
const statusWidth = len("unchanged")

// StatusStyle is the emphasis of a line or run status.
func StatusStyle(status string) Style {
	switch status {
	case "create", "created", "complete", "ok":
		return Green
	case "update", "updated", "partial":
		return Yellow
	case "destroyed", "forgotten", "rolled_back":
		return Red
	case "pending", "waiting":
		return Cyan
	case "unchanged", "skipped", "stale", "orphan", "unmanaged":
		return Dim
	case "error", "blocked", "failed", "rollback_failed", "destroy_failed", "missing", "changed":
		return RedBold
	}
	return Plain
}

// WriteText writes the report as terminal text: a plan's lines with what
// each would write value by value, or a run's lines with their resources
// and outputs; then drift, warnings (repeats collapsed), the lease, and a
// summary whose counts are the lines' own.
func WriteText(w io.Writer, r *Report, o TextOptions) error {
	p := Painter{Color: o.Color}
	var b strings.Builder
	if r.Command == "plan" {
		writePlanText(&b, r, o, p)
	} else {
		writeRunText(&b, r, o, p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writePlanText(b *strings.Builder, r *Report, o TextOptions, p Painter) {
	fmt.Fprintf(b, "%s %s\n", p.Paint(Bold, "plan"), p.Paint(Bold, r.Env+"/"+r.Scope))
	b.WriteString("\n")
	if len(r.Lines) == 0 {
		b.WriteString("  no lines in this environment\n")
	}
	t := &Table{Indent: "  "}
	for _, l := range r.Lines {
		t.Row(S(StatusStyle(l.Status), pad(l.Status, statusWidth)), S(Bold, l.ID), S(Dim, l.Op))
		for _, c := range l.Changes {
			t.Note(p.Paint(StatusStyle(c.Action+"d"), c.Action) + " " + Clean(c.Key, o.width()-10))
			for _, f := range c.Fields {
				t.Note("  " + fieldText(f, o.width()-10, p))
			}
		}
		for i, on := range l.WaitingOn {
			t.Note(p.Paint(Cyan, fmt.Sprintf("waiting on %s (%s)", on, at(l.WaitingFor, i))))
		}
		if l.Parent != "" && l.Status != "unchanged" {
			t.Note(p.Paint(Dim, "writes under the lock of "+l.Parent))
		}
		lineError(t, l, o, p)
	}
	t.Write(b, p)
	writeStepsText(b, r.Steps, o, p)
	writeDrift(b, r, o, p)
	writeWarningsText(b, r.Warnings, o, p)
	if r.Lock != nil {
		fmt.Fprintf(b, "\n%s %s holds %s (%s) since %s, until %s; this plan took no lock\n", p.Paint(Yellow, "lock:"),
			r.Lock.Owner.DescribeAs(r.Lock.Holder), r.Lock.Target, cmp.Or(r.Lock.Operation, "an operation"),
			r.Lock.Since.UTC().Format("2006-01-02 15:04:05Z"), r.Lock.Until.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if r.ApprovalRequired {
		fmt.Fprintf(b, "\n%s applying this plan writes production and needs --approved-by\n", p.Paint(Yellow, "approval:"))
	}
	counts := map[string]int{}
	for _, l := range r.Lines {
		counts[l.Status]++
	}
	var parts []string
	for _, s := range []string{"create", "update", "unchanged", "pending", "blocked", "error"} {
		if counts[s] > 0 {
			parts = append(parts, p.Paint(StatusStyle(s), fmt.Sprintf("%d %s", counts[s], s)))
		}
	}
	fmt.Fprintf(b, "\n%d %s", len(r.Lines), plural(len(r.Lines), "line", "lines"))
	if len(parts) > 0 {
		fmt.Fprintf(b, ": %s", strings.Join(parts, ", "))
	}
	b.WriteString("\n")
	if r.PlanHash != "" {
		fmt.Fprintf(b, "%s\n", p.Paint(Dim, "plan "+r.PlanHash))
	}
}

func fieldText(f Field, width int, p Painter) string {
	after := Clean(f.After, max(width-len(f.Path)-2, 16))
	if f.Before == "" {
		return f.Path + ": " + styleValue(after, p)
	}
	before := Clean(f.Before, max((width-len(f.Path))/2-3, 16))
	return f.Path + ": " + styleValue(before, p) + " → " + styleValue(after, p)
}

// styleValue dims the forms that are not values.
func styleValue(v string, p Painter) string {
	if strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")") {
		return p.Paint(Dim, v)
	}
	return v
}

func lineError(t *Table, l Line, o TextOptions, p Painter) {
	e := l.Error
	if e == nil {
		return
	}
	if e.Code == "" {
		// A note, not an error: "waiting for env.preview_url (deploy)".
		t.Note(p.Paint(Cyan, Clean(e.Message, 3*o.width())))
		return
	}
	if o.Reported != nil && o.Reported(e.Code, e.Message) {
		t.Note(p.Paint(Red, string(e.Code)) + p.Paint(Dim, " (the error below)"))
		return
	}
	t.Note(p.Paint(Red, string(e.Code)+":") + " " + Clean(e.Message, 3*o.width()))
	if e.Hint != "" {
		t.Note(p.Paint(Dim, "hint: "+Clean(e.Hint, 0)))
	}
}

func writeRunText(b *strings.Builder, r *Report, o TextOptions, p Painter) {
	status := r.Status
	if r.Status == StatusStale {
		status = "stale (nothing written)"
	}
	if r.Destroyed {
		status += ", destroyed"
	}
	fmt.Fprintf(b, "%s %s: %s", p.Paint(Bold, r.Command), p.Paint(Bold, r.Env+"/"+r.Scope), p.Paint(StatusStyle(r.Status), status))
	if r.RunID != "" {
		fmt.Fprintf(b, " %s", p.Paint(Dim, "(run "+r.RunID+")"))
	}
	b.WriteString("\n")
	if len(r.Lines) > 0 {
		b.WriteString("\n")
	}
	t := &Table{Indent: "  "}
	for _, l := range r.Lines {
		shown, forgotten := l.Resources, l.Forgotten
		if len(shown) == 0 {
			// Everything the line held was adopted: its status says so.
			shown, forgotten = l.Forgotten, nil
		}
		first := ""
		if len(shown) > 0 {
			first = shown[0]
		}
		t.Row(S(StatusStyle(l.Status), pad(l.Status, statusWidth)), S(Bold, l.ID), C(Clean(first, o.width()-30)))
		for _, res := range shownRest(shown) {
			t.Row(C(""), C(""), C(Clean(res, o.width()-30)))
		}
		if len(forgotten) > 0 {
			t.Note(p.Paint(Dim, "forgotten (adopted, left in place): "+Clean(strings.Join(forgotten, ", "), 2*o.width())))
		}
		lineError(t, l, o, p)
		for _, out := range l.Outputs {
			t.Note(p.Paint(Dim, out.Name+" =") + " " + Clean(out.Value, o.width()-len(out.Name)-12))
		}
	}
	t.Write(b, p)
	writeStepsText(b, r.Steps, o, p)
	if r.Ledger != nil {
		c := r.Ledger
		fmt.Fprintf(b, "\nledger: %d %s (%d created by sponson, %d adopted, %d intents, %d orphans)\n",
			c.Resources, plural(c.Resources, "resource", "resources"), c.Sponson, c.Adopted, c.Intents, c.Orphans)
	}
	if pre := r.Preempted; pre != nil {
		fmt.Fprintf(b, "%s took over the lease of %s (since %s): %s\n", p.Paint(Yellow, "lock preempted:"),
			pre.Owner.DescribeAs(pre.Holder), pre.Since.UTC().Format("2006-01-02 15:04:05Z"), pre.Reason)
	}
	writeWarningsText(b, r.Warnings, o, p)
	if u := r.Unsaved; u != nil {
		fmt.Fprintf(b, "\n%s\n", p.Paint(RedBold, "the receipt could not be written; applied but not recorded:"))
		for _, res := range u.Resources {
			fmt.Fprintf(b, "  %s\n", res)
		}
		if u.Path != "" {
			fmt.Fprintf(b, "saved to %s\n", u.Path)
		}
		if u.Ref != "" {
			fmt.Fprintf(b, "kept in the store as %s\n", u.Ref)
		}
		fmt.Fprintf(b, "finish the job with: %s\n", p.Paint(Bold, u.Command))
	}
}

func shownRest(s []string) []string {
	if len(s) <= 1 {
		return nil
	}
	return s[1:]
}

func writeDrift(b *strings.Builder, r *Report, o TextOptions, p Painter) {
	if len(r.Drift) == 0 {
		return
	}
	b.WriteString("\ndrift:\n")
	t := &Table{Indent: "  "}
	for _, d := range r.Drift {
		t.Row(S(StatusStyle(d.Kind), pad(d.Kind, statusWidth)), S(Bold, d.Line), C(Clean(d.Key+": "+d.Message, 2*o.width())))
	}
	t.Write(b, p)
}

// writeWarningsText writes the warnings once each: a warning repeated with
// the same code and message is one row with a count.
func writeWarningsText(b *strings.Builder, ws []Warning, o TextOptions, p Painter) {
	if len(ws) == 0 {
		return
	}
	b.WriteString("\nwarnings:\n")
	for _, g := range CollapseWarnings(ws) {
		text := Clean(g.Message, 3*o.width())
		if g.Code != "" {
			text = p.Paint(Yellow, string(g.Code)+":") + " " + text
		}
		if g.Count > 1 {
			text += p.Paint(Dim, fmt.Sprintf(" (×%d)", g.Count))
		}
		fmt.Fprintf(b, "  %s\n", text)
	}
}

// WarningGroup is one warning and how many times it was given.
type WarningGroup struct {
	Warning
	Count int
}

// CollapseWarnings groups identical warnings (same code and message), in
// the order each was first given.
func CollapseWarnings(ws []Warning) []WarningGroup {
	var out []WarningGroup
	at := map[Warning]int{}
	for _, w := range ws {
		if i, ok := at[w]; ok {
			out[i].Count++
			continue
		}
		at[w] = len(out)
		out = append(out, WarningGroup{Warning: w, Count: 1})
	}
	return out
}

// WriteLedger writes what a scope manages, one resource per row: op, key,
// who created it and the line that declares it.
func WriteLedger(w io.Writer, ledger receipt.Ledger, o TextOptions) error {
	p := Painter{Color: o.Color}
	t := &Table{Indent: "  "}
	for _, e := range ledger {
		who := string(e.CreatedBy) + ", line " + e.Line
		if e.Orphan {
			who += ", orphan"
		}
		t.Row(S(Dim, e.Adapter+"."+e.Op), C(Clean(e.Key, o.width()-40)), S(Dim, "("+who+")"))
	}
	return t.Write(w, p)
}

func pad(s string, n int) string {
	if w := width(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

// Count is n with its noun: "1 line", "3 lines" (the plural adds "s").
func Count(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, plural(n, noun, noun+"s"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Clean makes text from outside (provider messages, keys, values) safe for a
// terminal: control characters, escape sequences and bidirectional
// overrides become visible escapes instead of acting on the terminal, runs
// of blanks and newlines become one blank, and what is longer than limit
// runes (0: no limit) is elided; the full text is in --json.
func Clean(s string, limit int) string {
	var b strings.Builder
	blank := false
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == ' ':
			if !blank {
				b.WriteByte(' ')
			}
			blank = true
			continue
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
		blank = false
	}
	out := strings.TrimSpace(b.String())
	if limit > 0 {
		out = Elide(out, limit)
	}
	return out
}
