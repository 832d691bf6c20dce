package report

import (
	"fmt"
	"strings"
)

// changeRows counts the rows of the changes section: one a field, or one
// for a change that names no field.
func changeRows(r *Report) int {
	n := 0
	for _, l := range r.Lines {
		for _, c := range l.Changes {
			n += max(len(c.Fields), 1)
		}
	}
	return n
}

// changes shows what a plan would write, field by field (before → after),
// one collapsed section a line. Values are as Change shows them: a secret
// or a pending value is its reference, never a value. Cut to m.n rows in
// all, with a row that says where the rest is.
func (m *mdRows) changes() {
	total := changeRows(m.r)
	if total == 0 {
		return
	}
	room := m.take(total)
	shown := 0
	for _, l := range m.r.Lines {
		if len(l.Changes) == 0 || shown >= room {
			continue
		}
		fmt.Fprintf(&m.b, "<details><summary>Changes of <b>%s</b> · %s: %s</summary>\n\n", word(l.ID), word(l.Op), fieldCount(l.Changes))
		m.b.WriteString("| resource | field | before | after |\n|---|---|---|---|\n")
		for _, c := range l.Changes {
			shown += m.writeChange(c, room-shown)
		}
		m.b.WriteString("\n</details>\n\n")
	}
	if shown < total {
		fmt.Fprintf(&m.b, "_… %d more changed fields: %s._\n\n", total-shown, m.where())
	}
}

// writeChange writes at most room rows of one change and says how many it
// wrote.
func (m *mdRows) writeChange(c Change, room int) int {
	if room <= 0 {
		return 0
	}
	res := icon(c.Action) + " " + word(c.Action) + " " + Escape(c.Key, m.s.cell)
	if len(c.Fields) == 0 {
		fmt.Fprintf(&m.b, "| %s | _whole resource_ | | |\n", res)
		return 1
	}
	k := min(room, len(c.Fields))
	for _, f := range c.Fields[:k] {
		before := Escape(f.Before, m.s.cell)
		if f.Before == "" {
			before = "_none_"
		}
		fmt.Fprintf(&m.b, "| %s | %s | %s | %s |\n", res, Escape(f.Path, m.s.cell), before, Escape(f.After, m.s.cell))
	}
	return k
}

// fieldCount is "1 resource, 2 fields".
func fieldCount(cs []Change) string {
	fields := 0
	for _, c := range cs {
		fields += len(c.Fields)
	}
	parts := []string{fmt.Sprintf("%d %s", len(cs), plural(len(cs), "resource", "resources"))}
	if fields > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", fields, plural(fields, "field", "fields")))
	}
	return strings.Join(parts, ", ")
}
