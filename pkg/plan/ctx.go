package plan

import (
	"slices"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// ctxNames are the ${ctx.*} variables of format version 1, in the order of
// plan-format.md.
var ctxNames = []string{"env", "scope", "git.branch", "git.sha", "git.short_sha", "pr.number", "repo"}

// CtxNames returns the names ${ctx.NAME} may use: env, scope, git.branch,
// git.sha, git.short_sha, pr.number and repo. They are the keys of the vars
// map Interpolate takes.
func CtxNames() []string { return slices.Clone(ctxNames) }

func knownCtx(name string) bool { return slices.Contains(ctxNames, name) }

// segment is one piece of a template string: literal text, or a variable.
type segment struct {
	text string // literal text, when name is ""
	name string // the ctx variable ("git.branch"), without "ctx."
}

// templateProblem is what is wrong with a template string.
type templateProblem struct {
	code errs.Code
	msg  string
	hint string
}

// parseTemplate splits a string parameter into literal text and ${ctx.NAME}
// placeholders. "$${" is always a literal "${". Any other "${" must open a
// well-formed ${ctx.NAME} with a known NAME. It returns nil segments for a
// string with no "${" at all, which is nearly every string.
func parseTemplate(s string) ([]segment, []templateProblem) {
	if !strings.Contains(s, "${") {
		return nil, nil
	}
	// One segment per placeholder, plus the literals between them: sized
	// once, so a string of 300,000 placeholders does not grow its slice
	// by doubling (the plan reader's memory stays bounded by the file).
	segs := make([]segment, 0, strings.Count(s, "${")+1)
	var probs []templateProblem
	var lit strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			lit.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			lit.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			probs = append(probs, templateProblem{errs.PLAN_INVALID,
				"an unterminated ${ in a string parameter",
				"Close it as ${ctx.NAME}, or write $${ for a literal ${."})
			lit.WriteString(s[i:])
			break
		}
		inner := s[i+2 : i+end]
		i += end + 1
		name, ok := strings.CutPrefix(inner, "ctx.")
		switch {
		case !ok:
			probs = append(probs, templateProblem{errs.PLAN_INVALID,
				"only ${ctx.NAME} is interpolated, found ${" + inner + "}",
				"Use one of " + ctxList() + ", or write $${ for a literal ${."})
			continue
		case !knownCtx(name):
			hint := ""
			if s := errs.Suggest(name, ctxNames); s != "" {
				hint = "Did you mean ${ctx." + s + "}? Use one of the names listed."
			}
			probs = append(probs, templateProblem{errs.CTX_NULL,
				"unknown variable ${ctx." + name + "}; the names that exist: " + ctxList(), hint})
			continue
		}
		if lit.Len() > 0 {
			segs = append(segs, segment{text: lit.String()})
			lit.Reset()
		}
		segs = append(segs, segment{name: name})
	}
	if lit.Len() > 0 || len(segs) == 0 {
		segs = append(segs, segment{text: lit.String()})
	}
	return segs, probs
}

func ctxList() string {
	parts := make([]string, len(ctxNames))
	for i, n := range ctxNames {
		parts[i] = "ctx." + n
	}
	return strings.Join(parts, ", ")
}

// Interpolate returns a copy of v with every ${ctx.NAME} replaced by
// vars[NAME] and every $${ by ${. A name missing from vars, or mapped to a
// nil pointer (a null value, such as pr.number outside a pull request), is
// CTX_NULL at the string's position; the message lists the names that have
// a value. All such errors are returned together, as an errs.List. v itself
// is not changed; subtrees without placeholders are shared.
func (v *Value) Interpolate(vars map[string]*string) (*Value, error) {
	var l errs.List
	out := v.interpolate(vars, &l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (v *Value) interpolate(vars map[string]*string, l *errs.List) *Value {
	switch v.Kind {
	case KindString:
		if v.tmpl == nil {
			return v
		}
		var b strings.Builder
		n := 0
		for _, s := range v.tmpl {
			if s.name == "" {
				n += len(s.text)
			} else if val := vars[s.name]; val != nil {
				n += len(*val)
			}
		}
		b.Grow(n)
		for _, s := range v.tmpl {
			if s.name == "" {
				b.WriteString(s.text)
				continue
			}
			val, ok := vars[s.name]
			if !ok || val == nil {
				*l = append(*l, errs.At(v.Pos, errs.CTX_NULL,
					"${ctx.%s} has no value in this run; the names with a value: %s",
					s.name, valued(vars)))
				continue
			}
			b.WriteString(*val)
		}
		c := *v
		c.Str, c.tmpl = b.String(), nil
		return &c
	case KindMap:
		var fields []Field
		for i, f := range v.Fields {
			nv := f.Value.interpolate(vars, l)
			if nv != f.Value && fields == nil {
				fields = slices.Clone(v.Fields)
			}
			if fields != nil {
				fields[i].Value = nv
			}
		}
		if fields == nil {
			return v
		}
		c := *v
		c.Fields = fields
		return &c
	case KindList:
		var items []*Value
		for i, it := range v.Items {
			nv := it.interpolate(vars, l)
			if nv != it && items == nil {
				items = slices.Clone(v.Items)
			}
			if items != nil {
				items[i] = nv
			}
		}
		if items == nil {
			return v
		}
		c := *v
		c.Items = items
		return &c
	}
	return v
}

// valued lists the names of vars that have a value, in the order of CtxNames.
func valued(vars map[string]*string) string {
	var names []string
	for _, n := range ctxNames {
		if p := vars[n]; p != nil {
			names = append(names, "ctx."+n)
		}
	}
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}
