package report

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Style is the emphasis of a piece of terminal text.
type Style int

// Styles. Colour says what kind of thing happens (green adds, yellow
// changes, red removes or fails, cyan waits); dim is what does not matter
// much; bold is what matters most.
const (
	Plain Style = iota
	Bold
	Dim
	Green
	Yellow
	Red
	Cyan
	RedBold
)

var ansi = map[Style]string{
	Bold: "\x1b[1m", Dim: "\x1b[2m", Green: "\x1b[32m", Yellow: "\x1b[33m", Red: "\x1b[31m", Cyan: "\x1b[36m", RedBold: "\x1b[1;31m",
}

const ansiReset = "\x1b[0m"

// Painter applies styles: with Color off (NO_COLOR, not a terminal) it
// returns text unchanged, so plain output is byte for byte what a log or a
// golden file holds.
type Painter struct{ Color bool }

// Paint is text in style s.
func (p Painter) Paint(s Style, text string) string {
	if !p.Color || s == Plain || text == "" {
		return text
	}
	return ansi[s] + text + ansiReset
}

// Cell is one cell of a table row.
type Cell struct {
	Text  string
	Style Style
}

// C is a plain cell; S a styled one.
func C(text string) Cell          { return Cell{Text: text} }
func S(s Style, text string) Cell { return Cell{Text: text, Style: s} }

// Table aligns columns: every command's rows go through it, so plan, apply,
// destroy, receipts and locks line up the same way. Widths count runes of
// the text before styling, so colour never shifts a column; the last cell
// of a row is never padded, so no line ends in blanks. A cell wider than
// MaxWidth is elided in the middle ("sponson/pre…/pr-12"): the full value
// is always in --json.
type Table struct {
	Indent   string
	Gap      int // blanks between columns; 0 is 2
	MaxWidth int // widest cell of a non-last column before it is elided; 0 is no limit
	rows     [][]Cell
	notes    map[int][]string // lines printed under a row, already styled
}

// Row adds a row.
func (t *Table) Row(cells ...Cell) { t.rows = append(t.rows, cells) }

// Note adds a line under the last row, indented under its second column
// (the line's id), not aligned.
func (t *Table) Note(text string) {
	if t.notes == nil {
		t.notes = map[int][]string{}
	}
	i := len(t.rows) - 1
	t.notes[i] = append(t.notes[i], text)
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Write writes the table.
func (t *Table) Write(w io.Writer, p Painter) error {
	gap := t.Gap
	if gap == 0 {
		gap = 2
	}
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i == len(r)-1 {
				continue
			}
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], width(t.cell(c.Text, i, len(r))))
		}
	}
	var b strings.Builder
	for ri, r := range t.rows {
		b.WriteString(t.Indent)
		for i, c := range r {
			text := t.cell(c.Text, i, len(r))
			b.WriteString(p.Paint(c.Style, text))
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-width(text)+gap))
			}
		}
		line := strings.TrimRight(b.String(), " ")
		b.Reset()
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return err
		}
		for _, n := range t.notes[ri] {
			if _, err := io.WriteString(w, t.Indent+"    "+n+"\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *Table) cell(text string, i, n int) string {
	if t.MaxWidth > 0 && i < n-1 {
		return Elide(text, t.MaxWidth)
	}
	return text
}

func width(s string) int { return utf8.RuneCountInString(s) }

// Elide shortens s to at most n runes by cutting its middle: the start and
// the end of a key or URL are what tell values apart.
func Elide(s string, n int) string {
	if n <= 1 || width(s) <= n {
		return s
	}
	r := []rune(s)
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
