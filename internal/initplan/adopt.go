package initplan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

// Adoption is a line that declares an unmanaged resource, so that applying
// the plan adopts it (values it does not control are {keep: true}); an
// adopted resource is never destroyed.
type Adoption struct {
	ID   string `json:"id"`   // the new line's id, derived from Key
	Line string `json:"line"` // the line it was reported on
	Key  string `json:"key"`  // the unmanaged resource's key
	Text string `json:"-"`    // the line, as YAML items of changes (two-space indent)
}

// AdoptionID is the id of the line adopting key: derived from the key
// alone (the new line itself reports the key until it is applied), so
// appending twice adds nothing.
func AdoptionID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "adopt-" + hex.EncodeToString(sum[:4])
}

// Adopt renders the line that adopts the resource reported as unmanaged
// under key on line l, for environment env. An op whose keys it cannot
// turn back into parameters is USAGE, naming the key.
func Adopt(l *plan.Line, key, env string) (Adoption, error) {
	params, err := adoptParams(l, key)
	if err != nil {
		return Adoption{}, err
	}
	a := Adoption{ID: AdoptionID(key), Line: l.ID, Key: key}
	var b strings.Builder
	fmt.Fprintf(&b, "- id: %s   # adopts %s (unmanaged drift of line %s)\n", a.ID, key, l.ID)
	fmt.Fprintf(&b, "  adapter: %s\n  op: %s\n  environments: [%s]\n", l.Adapter, l.Op, env)
	for _, p := range params {
		fmt.Fprintf(&b, "  %s: %s\n", p[0], p[1])
	}
	a.Text = b.String()
	return a, nil
}

const keep = "{ keep: true }"

// adoptParams are the parameters, as YAML, that declare the resource of
// key for the op of l: the parts its key form (docs/adapters.md, "Key")
// names.
func adoptParams(l *plan.Line, key string) ([][2]string, error) {
	parts := func(prefix string, n int) ([]string, bool) {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok {
			return nil, false
		}
		ps := strings.SplitN(rest, ":", n)
		return ps, len(ps) == n
	}
	kv := func(name string, ps ...string) [2]string { return [2]string{name, strings.Join(ps, "")} }
	switch l.Adapter + "." + l.Op {
	case "neon.branch", "supabase.branch", "planetscale.branch":
		if p, ok := parts("branch:", 1); ok {
			return [][2]string{kv("name", q(p[0]))}, nil
		}
	case "auth0.callback":
		if list, url, ok := strings.Cut(key, ":"); ok {
			return [][2]string{kv("list", list), kv("url", q(url))}, nil
		}
	case "clerk.redirect_allow":
		if p, ok := parts("redirect_url:", 1); ok {
			return [][2]string{kv("url", q(p[0]))}, nil
		}
	case "supabase.auth_redirect":
		if p, ok := parts("redirect:", 2); ok {
			return [][2]string{kv("project", q(p[0])), kv("url", q(p[1]))}, nil
		}
	case "vercel.env":
		if p, ok := parts("env:", 3); ok {
			return [][2]string{kv("target", p[0]), kv("branch", q(p[1])), kv("values", "{ ", p[2], ": ", keep, " }")}, nil
		}
	case "netlify.env":
		return netlifyParams(key)
	case "cloudflare.pages_env":
		if p, ok := parts("env:", 2); ok {
			field := "vars"
			if v := l.Params.Get("secrets"); v != nil && v.Get(p[1]) != nil {
				field = "secrets"
			}
			return [][2]string{kv("target", p[0]), kv(field, "{ ", p[1], ": ", keep, " }")}, nil
		}
	case "planetscale.password":
		if p, ok := parts("password:", 2); ok {
			return [][2]string{kv("branch", q(p[0])), kv("name", q(p[1]))}, nil
		}
	case "launchdarkly.flag_target":
		if p, ok := parts("target:", 4); ok {
			out := [][2]string{kv("flag", q(p[1])), kv("context_kind", q(p[2])), kv("key", q(p[3]))}
			// The variation is the reporting line's: it cannot be kept.
			if v := literal(l.Params.Get("variation")); v != "" {
				out = append(out, kv("variation", v))
			}
			return out, nil
		}
	case "http.list_item":
		return listItemParams(l, key)
	}
	return nil, errs.New(errs.USAGE, "cannot write a line adopting %q: line %s's op %s.%s has no adoption rule for this key", key, l.ID, l.Adapter, l.Op).
		WithHint("Declare the resource with a line of your own (docs/adapters.md gives each op's key form), or leave it out.")
}

// literal is a literal value as YAML, "" for anything else.
func literal(v *plan.Value) string {
	if v == nil {
		return ""
	}
	switch v.Kind {
	case plan.KindString:
		return q(v.Str)
	case plan.KindBool, plan.KindInt, plan.KindFloat:
		return v.String()
	}
	return ""
}

// netlifyParams: env:<context>[:<branch>]:<NAME>.
func netlifyParams(key string) ([][2]string, error) {
	ps := strings.Split(strings.TrimPrefix(key, "env:"), ":")
	switch {
	case !strings.HasPrefix(key, "env:"):
	case len(ps) == 2:
		return [][2]string{{"context", ps[0]}, {"values", "{ " + ps[1] + ": " + keep + " }"}}, nil
	case len(ps) == 3:
		return [][2]string{{"context", ps[0]}, {"branch", q(ps[1])}, {"values", "{ " + ps[2] + ": " + keep + " }"}}, nil
	}
	return nil, errs.New(errs.USAGE, "cannot write a line adopting %q: it is not a netlify.env key (env:<context>[:<branch>]:<NAME>)", key)
}

// listItemParams: <api>:<parent path>#<list_path>=<item>, with the list's
// shape as the reporting line has it.
func listItemParams(l *plan.Line, key string) ([][2]string, error) {
	api, rest, ok1 := strings.Cut(key, ":")
	parent, rest, ok2 := strings.Cut(rest, "#")
	listPath, item, ok3 := strings.Cut(rest, "=")
	if !ok1 || !ok2 || !ok3 {
		return nil, errs.New(errs.USAGE, "cannot write a line adopting %q: it is not an http.list_item key (<api>:<parent path>#<list_path>=<item>)", key)
	}
	out := [][2]string{{"api", api}, {"parent", "{ path: " + q(parent) + " }"}, {"list_path", q(listPath)}}
	for _, name := range []string{"shape", "delimiter"} {
		if v := l.Params.Get(name); v != nil && v.Kind == plan.KindString {
			out = append(out, [2]string{name, q(v.Str)})
		}
	}
	if strings.HasPrefix(item, "{") {
		out = append(out, [2]string{"item", item}) // canonical JSON: a YAML flow mapping
	} else {
		out = append(out, [2]string{"item", q(item)})
	}
	return out, nil
}

// Append adds the adoptions to the plan's changes, leaving every byte of
// the file as it was and skipping a line whose id the plan already has.
// It returns the new source and the ids it added. A plan whose changes is
// not a block sequence is PLAN_INVALID at changes.
func Append(file string, src []byte, adoptions []Adoption) ([]byte, []string, error) {
	changes, next, err := changesList(file, src)
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, it := range changes.Content {
		for j := 0; it.Kind == yaml.MappingNode && j+1 < len(it.Content); j += 2 {
			if it.Content[j].Value == "id" {
				have[it.Content[j+1].Value] = true
			}
		}
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	indent := dashIndent(lines, changes.Content[0].Line)
	var add bytes.Buffer
	var added []string
	for _, a := range adoptions {
		if have[a.ID] {
			continue
		}
		have[a.ID] = true
		added = append(added, a.ID)
		for _, l := range strings.SplitAfter(a.Text, "\n") {
			if l != "" {
				add.WriteString(indent + l)
			}
		}
	}
	if len(added) == 0 {
		return src, nil, nil
	}
	cut := len(src)
	if next > 0 {
		// Before the next top-level key and the comments and blank lines
		// that lead up to it.
		i := next - 1
		for i > 0 && isBlankOrComment(lines[i-1]) {
			i--
		}
		cut = len(bytes.Join(lines[:i], nil))
	}
	var out bytes.Buffer
	out.Write(src[:cut])
	if cut > 0 && src[cut-1] != '\n' {
		out.WriteByte('\n')
	}
	out.Write(add.Bytes())
	out.Write(src[cut:])
	return out.Bytes(), added, nil
}

// changesList finds the plan's changes, a non-empty block list, and the
// line of the top-level key after it (0: none).
func changesList(file string, src []byte) (*yaml.Node, int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, 0, errs.New(errs.PLAN_PARSE, "%s is not a YAML mapping", file).WithHint("Run `sponson validate` and fix what it reports first.")
	}
	root := doc.Content[0]
	var changes *yaml.Node
	next := 0
	for i := 0; i+1 < len(root.Content); i += 2 {
		if changes != nil && next == 0 {
			next = root.Content[i].Line
		}
		if root.Content[i].Value == "changes" {
			changes = root.Content[i+1]
		}
	}
	if changes == nil || changes.Kind != yaml.SequenceNode || changes.Style&yaml.FlowStyle != 0 || len(changes.Content) == 0 {
		pos := errs.Pos{File: file, Line: 1}
		if changes != nil {
			pos.Line, pos.Column = changes.Line, changes.Column
		}
		return nil, 0, errs.At(pos, errs.PLAN_INVALID, "changes is not a block list of lines, so init cannot append to it").
			WithHint("Write changes as a block list (one `- id: ...` item per line), then run init again.")
	}
	return changes, next, nil
}

// dashIndent is the indentation of the first item's dash: the items added
// line up with it.
func dashIndent(lines [][]byte, line int) string {
	if line < 1 || line > len(lines) {
		return "  "
	}
	l := lines[line-1]
	i := bytes.IndexByte(l, '-')
	if i < 0 || len(bytes.TrimLeft(l[:i], " ")) > 0 {
		return "  "
	}
	return string(l[:i])
}

func isBlankOrComment(l []byte) bool {
	t := bytes.TrimSpace(l)
	return len(t) == 0 || t[0] == '#'
}
