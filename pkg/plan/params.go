package plan

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/secret"
)

// where is the display path of a value being read ("values.STRIPE_KEY",
// "fields.tags[1]"). It is a chain on the stack, rendered only when an error
// needs it, so reading a valid plan builds no path strings.
type where struct {
	up      *where
	key     string
	index   int
	isIndex bool
}

func (w *where) String() string {
	if w == nil {
		return "(the whole value)"
	}
	s := ""
	if w.up != nil {
		s = w.up.String()
	}
	if w.isIndex {
		return s + "[" + strconv.Itoa(w.index) + "]"
	}
	return joinKey(s, w.key)
}

// value reads a parameter (or provider setting) at any depth. key is the
// name of the nearest enclosing map key, which decides whether a literal is
// a secret; path is the display path.
func (p *parser) value(n *yaml.Node, key string, path *where, m mode) *Value {
	t := p.open(n)
	if t == nil {
		return nil
	}
	defer p.close(t)
	switch t.Kind {
	case yaml.ScalarNode:
		return p.scalar(t, key, path, m)
	case yaml.SequenceNode:
		v := &Value{Kind: KindList, Pos: p.pos(t), Items: make([]*Value, 0, len(t.Content))}
		for i, it := range t.Content {
			if x := p.value(it, key, &where{up: path, index: i, isIndex: true}, m); x != nil {
				v.Items = append(v.Items, x)
			}
		}
		return v
	case yaml.MappingNode:
		fs := p.fields(t)
		for _, f := range fs {
			if (f.key == "from" || f.key == "secret" || f.key == "keep") && !namesOutputs(path, m) {
				return p.form(t, fs, path, m)
			}
		}
		v := &Value{Kind: KindMap, Pos: p.pos(t), Fields: make([]Field, 0, len(fs))}
		for _, f := range fs {
			if x := p.value(f.val, f.key, &where{up: path, key: f.key}, m); x != nil {
				v.Fields = append(v.Fields, Field{Key: f.key, KeyPos: p.pos(f.kn), Value: x})
			}
		}
		return v
	}
	p.invalid(n, "%s: unexpected YAML node", path.String())
	return nil
}

// namesOutputs reports whether path is a line's outputs parameter (the
// http ops'): a map of output names, never a value form, so an output may
// be named from, secret or keep.
func namesOutputs(path *where, m mode) bool {
	return m == modeParam && path != nil && path.up == nil && !path.isIndex && path.key == "outputs"
}

// form reads a map that holds from, secret or keep.
func (p *parser) form(t *yaml.Node, fs []field, path *where, m mode) *Value {
	if m == modeProvider {
		p.invalid(t, "%s: value forms ({from}, {secret}, {keep}) are not allowed in providers", path.String()).
			WithHint("Provider blocks are static settings; name credentials by environment variable (for example bearer_env: NAME).")
		return nil
	}
	if len(fs) != 1 {
		var names []string
		for _, f := range fs {
			names = append(names, clip(f.key))
		}
		p.invalid(t, "%s: a map with from, secret or keep is a value form and holds nothing else, found keys %s",
			path.String(), strings.Join(names, ", ")).
			WithHint("Write the value form alone, like {from: db.host}; put other keys in a map of their own.")
		return nil
	}
	f := fs[0]
	op := target(f.val)
	isStr := op.Kind == yaml.ScalarNode && op.Tag == "!!str"
	switch f.key {
	case "from":
		if !isStr {
			p.invalid(op, "%s: from takes \"<line>.<output>\", found %s", path.String(), describe(op))
			return nil
		}
		mm := refPattern.FindStringSubmatch(op.Value)
		if mm == nil {
			e := p.invalid(op, "%s: from %q must be \"<line>.<output>\", like db.connection_string", path.String(), clip(op.Value))
			if strings.Contains(op.Value, "${") {
				e.WithHint("A from names another line's output; it is always the whole value and never holds ${ctx.*}.")
			}
			return nil
		}
		v := &Value{Kind: KindFrom, Pos: p.pos(op), From: Ref{Line: mm[1], Output: mm[2]}}
		if p.cur != nil {
			p.cur.refs = append(p.cur.refs, edge{line: mm[1], output: mm[2], pos: v.Pos})
		}
		return v
	case "secret":
		if !isStr {
			p.invalid(op, "%s: secret takes a reference \"<scheme>://<ref>\", found %s", path.String(), describe(op))
			return nil
		}
		if what := credentialFormat(op.Value); what != "" {
			p.fail(op, errs.SECRET_LITERAL, "%s: the secret reference holds what looks like %s (%s, not shown)",
				path.String(), what, chars(op.Value)).
				WithHint("A reference says where the secret is, never what it is: {secret: \"env://NAME\"}. Rotate the value: it may be in git history.")
			return nil
		}
		if strings.Contains(op.Value, "${ctx.") {
			p.invalid(op, "%s: ${ctx.*} is only interpolated in string parameter values, not in a secret reference", path.String())
			return nil
		}
		if !secretRefPattern.MatchString(op.Value) {
			// The operand is not printed: a malformed reference is often the
			// secret itself, pasted.
			p.invalid(op, "%s: secret must be a reference \"<scheme>://<ref>\", like \"env://STRIPE_KEY\" (the value is not shown)", path.String())
			return nil
		}
		if err := secret.CheckRef(op.Value); err != nil {
			// A reference that can never resolve (env://MY-SECRET) is
			// refused here, before any run reads or writes anything.
			e := errs.Coded(err)
			p.invalid(op, "%s: %s", path.String(), e.Message).WithHint("%s", e.HintText())
			return nil
		}
		return &Value{Kind: KindSecret, Pos: p.pos(op), Secret: op.Value}
	default: // keep
		if op.Kind != yaml.ScalarNode || op.Tag != "!!bool" || !isTrue(op.Value) {
			p.invalid(op, "%s: keep takes only true, found %s", path.String(), describe(op)).
				WithHint("{keep: true} adopts whatever is live; to let the plan decide the value, write the value instead.")
			return nil
		}
		return &Value{Kind: KindKeep, Pos: p.pos(op)}
	}
}

func isTrue(s string) bool { return s == "true" || s == "True" || s == "TRUE" }

// scalar reads a literal.
func (p *parser) scalar(t *yaml.Node, key string, path *where, m mode) *Value {
	v := &Value{Pos: p.pos(t)}
	switch t.Tag {
	case "!!null":
		p.invalid(t, "%s is null, which is not a value", path.String()).
			WithHint("Give it a value, write \"\" for an empty string, {keep: true} to adopt what is live, or remove the key.")
		return nil
	case "!!str", "!!timestamp":
		return p.literal(t, key, path, m)
	case "!!int":
		i, err := strconv.ParseInt(t.Value, 10, 64)
		if err != nil {
			if err = t.Decode(&i); err != nil {
				p.invalid(t, "%s: the integer %s does not fit in 64 bits", path.String(), clip(t.Value))
				return nil
			}
		}
		v.Kind, v.Int = KindInt, i
	case "!!float":
		f, err := strconv.ParseFloat(t.Value, 64)
		if err != nil {
			err = t.Decode(&f)
		}
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			p.invalid(t, "%s: %s is not a finite number", path.String(), clip(t.Value))
			return nil
		}
		v.Kind, v.Float = KindFloat, f
	case "!!bool":
		var b bool
		if err := t.Decode(&b); err != nil {
			p.invalid(t, "%s: %s is not a bool", path.String(), clip(t.Value))
			return nil
		}
		v.Kind, v.Bool = KindBool, b
	case "!!binary":
		p.invalid(t, "%s: binary values (!!binary) are not supported", path.String())
		return nil
	default:
		p.invalid(t, "%s: the YAML tag %s is not supported in a plan", path.String(), clip(t.Tag))
		return nil
	}
	if secretName(key) {
		p.secretNamed(t, key, path)
		return nil
	}
	return v
}

// literal reads a string literal: refused when it is or looks like a
// secret, or is display text; templated when it holds ${.
func (p *parser) literal(t *yaml.Node, key string, path *where, m mode) *Value {
	s := t.Value
	if what := credentialFormat(s); what != "" {
		p.fail(t, errs.SECRET_LITERAL, "%s holds a literal that looks like %s (%s, not shown)",
			path.String(), what, chars(s)).
			WithHint("Remove it from the file (and rotate it: it may be in git history), and reference it instead: {secret: \"env://%s\"}.", envName(key))
		return nil
	}
	if secretName(key) {
		p.secretNamed(t, key, path)
		return nil
	}
	if form, ok := pasted(s); ok {
		p.invalid(t, "%s holds %q, which is how Sponson displays a value, not a value", path.String(), clip(s)).
			WithHint("Write the value form instead: %s.", form)
		return nil
	}
	v := &Value{Kind: KindString, Pos: p.pos(t), Str: s}
	if m == modeProvider {
		if strings.Contains(s, "${ctx.") {
			p.invalid(t, "%s: ${ctx.*} is only interpolated in string parameter values, not in provider settings", path.String())
			return nil
		}
		return v
	}
	segs, probs := parseTemplate(s)
	for _, pr := range probs {
		e := p.fail(t, pr.code, "%s: %s", path.String(), pr.msg)
		if pr.hint != "" {
			e.WithHint("%s", pr.hint)
		}
	}
	if len(probs) > 0 {
		return nil
	}
	v.tmpl = segs
	return v
}

func (p *parser) secretNamed(t *yaml.Node, key string, path *where) {
	p.fail(t, errs.SECRET_LITERAL, "%s is named like a secret and holds a literal (%s, not shown)",
		path.String(), chars(t.Value)).
		WithHint("Reference the secret instead: {secret: \"env://%s\"}; if a value was committed, rotate it.", envName(key))
}

// chars says how long a hidden value is.
func chars(s string) string {
	if n := utf8.RuneCountInString(s); n != 1 {
		return strconv.Itoa(n) + " characters"
	}
	return "1 character"
}

// clip shortens user text quoted in a message, and hides it when it looks
// like a credential: a token pasted where an id belongs must not reach a CI
// log through the error about it.
func clip(s string) string {
	if what := credentialFormat(s); what != "" {
		return "(hidden: it looks like " + what + ")"
	}
	const max = 60
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
