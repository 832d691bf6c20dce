package plan

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// yamlSentences put the YAML library's messages in words a person acts on.
var yamlSentences = map[string]string{
	"mapping values are not allowed in this context":         "a `key:` is not allowed here: is this line indented under a value, or does a value hold a `: ` that needs quotes?",
	"did not find expected key":                              "this line does not line up with the keys of its block",
	"did not find expected '-' indicator":                    "this line does not line up with the items of the list above it (every item starts with `- ` at the same column)",
	"block sequence entries are not allowed in this context": "a `- ` item is not allowed here: is it indented under a value?",
	"found a tab character that violates indentation":        "a line is indented with a tab; YAML indents with spaces only",
	"found unexpected end of stream":                         "the file ends inside a quoted string, or inside a [ ] or { } that is never closed",
	"did not find expected ',' or ']'":                       "a [ ] list is not closed, or two of its items have no comma between them",
	"did not find expected ',' or '}'":                       "a { } map is not closed, or two of its entries have no comma between them",
	"could not find expected ':'":                            "a key has no `:` after it",
	"found character that cannot start any token":            "a value starts with a character YAML reserves (a tab, `@`, a backtick or `%`): put the value in quotes",
	"did not find expected node content":                     "a value is missing where YAML expects one (after `- `, `:` or `,`)",
}

// explainYAML turns a YAML error into a sentence a person understands and,
// where the library's position is not where the mistake is (a tab, a key
// that does not line up with its block), moves it to the line and column
// of the mistake. The library's own words stay in parentheses.
func explainYAML(msg string, pos errs.Pos, src []byte) (string, errs.Pos) {
	lines := strings.Split(string(src), "\n")
	sentence := yamlSentences[msg]
	if l, c := firstTabIndent(lines); l > 0 && (strings.Contains(msg, "tab") || l <= pos.Line+1) {
		return fmt.Sprintf("line %d is indented with a tab; YAML indents with spaces only (%s)", l, msg), errs.Pos{File: pos.File, Line: l, Column: c}
	}
	switch msg {
	case "mapping values are not allowed in this context", "did not find expected key",
		"did not find expected '-' indicator", "block sequence entries are not allowed in this context":
		if m := misaligned(lines); m != nil {
			return m.sentence + " (" + msg + ")", errs.Pos{File: pos.File, Line: m.line, Column: m.col}
		}
	case "found unexpected end of stream", "did not find expected ',' or ']'", "did not find expected ',' or '}'":
		if what, l, c := unclosed(lines); l > 0 {
			return fmt.Sprintf("%s: the %s opened at line %d, column %d is never closed (%s)", sentence, what, l, c, msg), pos
		}
	}
	if sentence == "" {
		return msg, pos
	}
	return sentence + " (" + msg + ")", pos
}

// firstTabIndent is the 1-based line and column of the first tab in a
// line's indentation, or 0, 0.
func firstTabIndent(lines []string) (int, int) {
	for i, l := range lines {
		for j, r := range l {
			if r == '\t' {
				return i + 1, j + 1
			}
			if r != ' ' {
				break
			}
		}
	}
	return 0, 0
}

type misalignment struct {
	line, col int
	sentence  string
}

var keyLine = regexp.MustCompile(`^("[^"]*"|'[^']*'|[^\s#'"\-{\[][^:#]*?|-[^\s][^:#]*?)\s*:(\s|$)`)

// block is an open block: the column its keys (or items) start at, and the
// line that opened it.
type block struct{ col, line int }

// misaligned finds the first line whose indentation lines up with no open
// block, or that is indented under a key that already has a value. It
// understands what plan files use: block maps, block lists, comments,
// block scalars (| and >) and one-line flow values; lines inside a quoted
// string or a [ ] / { } spanning lines are not judged.
func misaligned(lines []string) *misalignment {
	stack := []block{{0, 1}}
	expectChild := false // the previous line opened a block
	scalarAt := -1       // inside a block scalar: the column of its key
	depth, quote := 0, rune(0)
	for i, raw := range lines {
		n := i + 1
		trimmed := strings.TrimLeft(raw, " ")
		col := len(raw) - len(trimmed)
		if strings.TrimSpace(trimmed) == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if scalarAt >= 0 {
			if col > scalarAt {
				continue
			}
			scalarAt = -1
		}
		inside := depth > 0 || quote != 0
		depth, quote = scanFlow(raw, depth, quote)
		if inside {
			continue
		}
		if expectChild && col > stack[len(stack)-1].col {
			stack = append(stack, block{col, n})
		} else if col > stack[len(stack)-1].col {
			if keyLine.MatchString(trimmed) || strings.HasPrefix(trimmed, "- ") {
				prev := stack[len(stack)-1]
				return &misalignment{n, col + 1, fmt.Sprintf("%s is indented %d spaces, more than the block it belongs to (column %d, line %d), but the line above it already has a value",
					what(trimmed), col, prev.col+1, prev.line)}
			}
			continue // a plain value continued on the next line
		}
		expectChild = false
		var closed *block
		for col < stack[len(stack)-1].col {
			closed = &block{stack[len(stack)-1].col, stack[len(stack)-1].line}
			stack = stack[:len(stack)-1]
		}
		if top := stack[len(stack)-1]; col != top.col {
			s := fmt.Sprintf("%s is indented %d spaces, which lines up with no block above it", what(trimmed), col)
			if closed != nil {
				s += fmt.Sprintf(": the block it continues (line %d) starts at column %d, the one around it at column %d", closed.line, closed.col+1, top.col+1)
			}
			return &misalignment{n, col + 1, s}
		}
		content := trimmed
		for strings.HasPrefix(content, "- ") || content == "-" {
			// A list item: its own keys start after the dash.
			rest := strings.TrimLeft(strings.TrimPrefix(content, "-"), " ")
			item := col + (len(content) - len(rest))
			if rest == "" {
				expectChild = true
				break
			}
			stack = append(stack, block{item, n})
			col, content = item, rest
		}
		if m := keyLine.FindString(content); m != "" {
			value := strings.TrimSpace(stripComment(content[len(m):]))
			switch {
			case value == "":
				expectChild = true
			case strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">"):
				scalarAt = col
			}
		}
	}
	return nil
}

// what names a line's key for a message: "`adapter`", or "this line".
func what(trimmed string) string {
	t := strings.TrimLeft(strings.TrimPrefix(trimmed, "-"), " ")
	if m := keyLine.FindStringSubmatch(t); m != nil {
		return "`" + strings.Trim(strings.TrimSpace(m[1]), `"'`) + "`"
	}
	return "this line"
}

func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	if strings.HasPrefix(s, "#") {
		return ""
	}
	return s
}

// scanFlow follows quotes and [ ] { } nesting through one line.
func scanFlow(line string, depth int, quote rune) (int, rune) {
	prev := rune(0)
	for _, r := range line {
		switch {
		case quote == '"' && r == '"' && prev != '\\', quote == '\'' && r == '\'':
			quote = 0
		case quote != 0:
		case r == '#' && (prev == ' ' || prev == 0):
			return depth, quote
		case r == '"' || r == '\'':
			if prev == 0 || prev == ' ' || prev == ':' || prev == '[' || prev == '{' || prev == ',' || prev == '-' {
				quote = r
			}
		case r == '[' || r == '{':
			depth++
		case r == ']' || r == '}':
			depth = max(depth-1, 0)
		}
		prev = r
	}
	return depth, quote
}

// unclosed finds the last quote, [ or { the file opens and never closes:
// what it is and its 1-based line and column; "", 0, 0 when all close.
func unclosed(lines []string) (string, int, int) {
	var s delimScan
	for i, line := range lines {
		s.scanLine(i+1, line)
	}
	names := map[rune]string{'"': "quoted string", '\'': "quoted string", '[': "[", '{': "{"}
	if o := s.lastOpen(); o != nil {
		return names[o.r], o.line, o.col
	}
	return "", 0, 0
}

// openDelim is a quote, [ or { and where it opens (1-based).
type openDelim struct {
	r         rune
	line, col int
}

// delimScan follows the brackets and the quote open so far; a quote may
// span lines.
type delimScan struct {
	stack []openDelim
	quote *openDelim
}

// scanLine reads line n up to its end or its comment.
func (s *delimScan) scanLine(n int, line string) {
	prev, col := rune(0), 0
	for _, r := range line {
		col++
		if s.quote == nil && r == '#' && (prev == ' ' || prev == 0) {
			return // the rest of the line is a comment
		}
		s.scanRune(r, prev, openDelim{r, n, col})
		prev = r
	}
}

// scanRune reads r, which follows prev on its line, at o.
func (s *delimScan) scanRune(r, prev rune, o openDelim) {
	switch {
	case s.quote != nil:
		if closesQuote(s.quote.r, r, prev) {
			s.quote = nil
		}
	case r == '"' || r == '\'':
		if opensQuote(prev) {
			s.quote = &o
		}
	case r == '[' || r == '{':
		s.stack = append(s.stack, o)
	case (r == ']' || r == '}') && len(s.stack) > 0:
		s.stack = s.stack[:len(s.stack)-1]
	}
}

// lastOpen is the quote left open, else the innermost bracket, else nil.
func (s *delimScan) lastOpen() *openDelim {
	if s.quote != nil {
		return s.quote
	}
	if len(s.stack) > 0 {
		return &s.stack[len(s.stack)-1]
	}
	return nil
}

// closesQuote: a double quote ends at a " not escaped, a single one at '.
func closesQuote(q, r, prev rune) bool {
	return q == '"' && r == '"' && prev != '\\' || q == '\'' && r == '\''
}

// opensQuote: a quote opens a quoted string only at the start of a value.
func opensQuote(prev rune) bool {
	return prev == 0 || strings.ContainsRune(" :[{,", prev)
}
