package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
)

// decode parses src into the root node of its only document. On failure it
// records the error and returns nil.
func (p *parser) decode(src []byte) (root *yaml.Node) {
	defer func() {
		// The YAML library turns its own failures into errors; anything else
		// is one of its bugs, reported as a parse failure rather than a crash.
		if r := recover(); r != nil {
			p.errs = append(p.errs, errs.At(errs.Pos{File: p.file, Line: 1}, errs.PLAN_PARSE,
				"the YAML parser failed on this file (%v)", r))
			root = nil
		}
	}()
	// The YAML library reads src a few hundred bytes at a time: each read
	// looks at the context, so a signal stops a large file's decoding
	// within one read, not after the whole file.
	dec := yaml.NewDecoder(&ctxReader{p: p, r: bytes.NewReader(src)})
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if p.stopped != nil {
			return nil
		}
		if errors.Is(err, io.EOF) {
			p.empty()
		} else {
			p.yamlError(err, src)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case p.stopped != nil:
		return nil
	case errors.Is(err, io.EOF):
	case err != nil:
		p.yamlError(err, src)
		return nil
	default:
		p.invalid(&next, "a second YAML document starts here; a plan file holds exactly one").
			WithHint("Remove the --- separator and everything after it, or merge the documents into one plan.")
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" && doc.Content[0].Value == "" {
		p.empty()
		return nil
	}
	return doc.Content[0]
}

func (p *parser) empty() {
	p.errs = append(p.errs, errs.At(errs.Pos{File: p.file, Line: 1, Column: 1}, errs.PLAN_INVALID,
		"the plan file is empty").WithHint("A plan needs at least `version: 1` and a `changes:` list; see docs/plan-format.md."))
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// parserProblems are the problems of the YAML library's parser (as opposed
// to its scanner). For them it reports the 0-based line of the context, so
// the 1-based line is one more.
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>",
	"did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document", "found undefined tag handle",
}

var unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// yamlError records a YAML error as PLAN_PARSE at the position YAML reports,
// corrected for the library's counting.
func (p *parser) yamlError(err error, src []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pos := errs.Pos{File: p.file}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	switch {
	case slices.Contains(parserProblems, msg):
		pos.Line++
	case strings.Contains(msg, "UTF-") || strings.Contains(msg, "control characters") ||
		strings.Contains(msg, "Unicode character") || strings.Contains(msg, "surrogate"):
		if l, c := badChar(src); l > 0 {
			pos.Line, pos.Column = l, c
		}
	default:
		if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
			if i := bytes.Index(src, []byte("*"+m[1])); i >= 0 {
				pos.Line, pos.Column = lineCol(src, i)
			}
		}
	}
	if pos.Line == 0 {
		// Zero is the library's "first line": it omits line 0.
		pos.Line = 1
	}
	if pos.Column == 0 {
		// The library names a line only: point at its first character
		// (a column is never 0).
		pos.Column = firstColumn(src, pos.Line)
	}
	msg, pos = explainYAML(msg, pos, src)
	p.errs = append(p.errs, errs.At(pos, errs.PLAN_PARSE, "invalid YAML: %s", msg))
}

// badChar finds the first character YAML refuses (invalid UTF-8 or a control
// character), as a 1-based line and column, or 0, 0.
func badChar(src []byte) (line, col int) {
	if bytes.HasPrefix(src, []byte{0xFF, 0xFE}) || bytes.HasPrefix(src, []byte{0xFE, 0xFF}) {
		return 0, 0 // UTF-16: positions are not byte offsets
	}
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		ok := r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0x7E || r == 0x85 ||
			r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
		if r == utf8.RuneError && size <= 1 || !ok {
			return lineCol(src, i)
		}
		i += size
	}
	return 0, 0
}

// firstColumn is the 1-based column of the first non-blank character of
// the 1-based line of src, 1 for a blank line or one past the end.
func firstColumn(src []byte, line int) int {
	lines := bytes.Split(src, []byte{'\n'})
	if line < 1 || line > len(lines) {
		return 1
	}
	l := lines[line-1]
	trimmed := bytes.TrimLeft(l, " \t")
	if len(bytes.TrimSpace(trimmed)) == 0 {
		return 1
	}
	return utf8.RuneCount(l[:len(l)-len(trimmed)]) + 1
}

// lineCol converts a byte offset to a 1-based line and character column.
func lineCol(src []byte, off int) (line, col int) {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	return bytes.Count(src[:off], []byte{'\n'}) + 1, utf8.RuneCount(src[start:off]) + 1
}

// warnAnchors raises YAML_ANCHOR once per anchor and once per alias, walking
// the document as written (aliases are not followed).
func (p *parser) warnAnchors(n *yaml.Node) {
	if n.Anchor != "" {
		p.warns = append(p.warns, errs.At(p.pos(n), errs.YAML_ANCHOR, "YAML anchor &%s: a value copied by an alias is easy to misread in review", n.Anchor))
	}
	if n.Kind == yaml.AliasNode {
		at := ""
		if n.Alias != nil {
			at = fmt.Sprintf(" (line %d)", n.Alias.Line)
		}
		p.warns = append(p.warns, errs.At(p.pos(n), errs.YAML_ANCHOR, "YAML alias *%s copies the value of anchor &%s%s", n.Value, n.Value, at))
		return
	}
	for _, c := range n.Content {
		p.warnAnchors(c)
	}
}

// open follows an alias and marks an anchored node as being expanded, so an
// alias inside its own anchor is an error instead of an endless expansion.
// It also counts the node against maxValues. It returns nil after recording
// an error; otherwise the caller must call close with the result.
func (p *parser) open(n *yaml.Node) *yaml.Node {
	if p.stopped != nil {
		return nil
	}
	if p.ctx != nil {
		if err := p.ctx.Err(); err != nil {
			p.stopped = err
			return nil
		}
	}
	p.count++
	if n.Kind == yaml.AliasNode {
		p.aliased++
	}
	if p.count == maxValues+1 {
		if p.aliased > 0 {
			p.invalid(n, "the file expands to more than %d values; aliases copy too much", maxValues)
		} else {
			p.invalid(n, "the file has more than %d values; a plan is a short list of lines", maxValues).
				WithHint("Split it, or check that it is the plan file: a release plan has a few dozen values.")
		}
	}
	if p.count > maxValues {
		return nil
	}
	t := n
	if n.Kind == yaml.AliasNode {
		t = n.Alias
		if t == nil {
			p.invalid(n, "alias *%s names no anchor", n.Value)
			return nil
		}
	}
	if t.Anchor != "" {
		if p.active[t] {
			p.invalid(n, "alias *%s is inside its own anchor &%s, which would copy it forever", n.Value, t.Anchor)
			return nil
		}
		p.active[t] = true
	}
	return t
}

func (p *parser) close(t *yaml.Node) {
	if t.Anchor != "" {
		delete(p.active, t)
	}
}

// target follows an alias, for a node that is read but not descended into.
func target(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// describe names what a node is, for messages. It never prints a string's
// text, which could be a secret.
func describe(n *yaml.Node) string {
	n = target(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!int", "!!float", "!!bool":
			return "the " + strings.TrimPrefix(n.Tag, "!!") + " " + n.Value
		case "!!str":
			return "a string"
		}
		return "a " + strings.TrimPrefix(n.Tag, "!!") + " value"
	}
	return "an alias"
}

// field is one key of a YAML map, after merge keys are applied.
type field struct {
	key string
	kn  *yaml.Node // the key
	val *yaml.Node // the value, possibly an alias
}

// fields returns the keys of a map in file order. Merge keys (<<: *anchor)
// contribute the keys the map does not set itself, at their place. A
// duplicate key is PLAN_INVALID; so is a key that is not a scalar or that
// uses ${ctx.*}.
func (p *parser) fields(m *yaml.Node) []field {
	out := make([]field, 0, len(m.Content)/2)
	var merged [][]field // per merge key, in order
	var at []int         // where each merged block goes in out
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := target(m.Content[i]), m.Content[i+1]
		if kn.Kind != yaml.ScalarNode || kn.Tag == "!!null" {
			p.invalid(kn, "a key must be a string, found %s", describe(kn))
			continue
		}
		if kn.Tag == "!!merge" {
			merged = append(merged, p.merge(vn))
			at = append(at, len(out))
			continue
		}
		if strings.Contains(kn.Value, "${ctx.") {
			p.invalid(kn, "${ctx.*} is only interpolated in string parameter values, not in keys")
		}
		if f := find(out, kn.Value); f != nil {
			p.invalid(kn, "duplicate key %q: it is already at line %d", kn.Value, f.kn.Line)
			continue
		}
		out = append(out, field{kn.Value, kn, vn})
	}
	if merged == nil {
		return out
	}
	// Merged keys fill in what the map does not set itself, earlier merge
	// keys first, each at the place of its merge key.
	explicit := len(out)
	var all []field
	prev := 0
	for i, fs := range merged {
		all = append(all, out[prev:at[i]]...)
		prev = at[i]
		for _, f := range fs {
			if find(out[:explicit], f.key) == nil && find(all, f.key) == nil {
				all = append(all, f)
			}
		}
	}
	return append(all, out[prev:]...)
}

func find(fs []field, key string) *field {
	for i := range fs {
		if fs[i].key == key {
			return &fs[i]
		}
	}
	return nil
}

// merge returns the fields a merge key's value contributes: one map, or a
// list of maps where earlier maps win.
func (p *parser) merge(v *yaml.Node) []field {
	t := p.open(v)
	if t == nil {
		return nil
	}
	defer p.close(t)
	switch t.Kind {
	case yaml.MappingNode:
		return p.fields(t)
	case yaml.SequenceNode:
		var out []field
		seen := map[string]bool{}
		for _, it := range t.Content {
			mt := p.open(it)
			if mt == nil {
				continue
			}
			if mt.Kind != yaml.MappingNode {
				p.invalid(it, "a merge key (<<) takes a map or a list of maps, found %s", describe(it))
			} else {
				for _, f := range p.fields(mt) {
					if !seen[f.key] {
						seen[f.key] = true
						out = append(out, f)
					}
				}
			}
			p.close(mt)
		}
		return out
	}
	p.invalid(v, "a merge key (<<) takes a map or a list of maps, found %s", describe(v))
	return nil
}

// str reads a scalar that must be a string, outside parameters: ${ctx.*} is
// refused in it.
func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	t := target(n)
	if t.Kind != yaml.ScalarNode || t.Tag != "!!str" {
		p.invalid(t, "%s must be a string, found %s", what, describe(t))
		return "", false
	}
	if strings.Contains(t.Value, "${ctx.") {
		p.invalid(t, "${ctx.*} is only interpolated in string parameter values, not in %s", what)
		return "", false
	}
	return t.Value, true
}

// ctxReader is src as the YAML decoder reads it, stopping at the first
// read after the parser's context is done (the parser's stopped is set).
type ctxReader struct {
	p *parser
	r io.Reader
}

func (c *ctxReader) Read(b []byte) (int, error) {
	if c.p.ctx != nil {
		if err := c.p.ctx.Err(); err != nil {
			c.p.stopped = err
			return 0, err
		}
	}
	return c.r.Read(b)
}
