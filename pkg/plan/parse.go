package plan

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
)

// maxValues bounds the values one file may expand to. A plan has hundreds;
// the bound stops an alias bomb (an anchor aliased in an anchor aliased ...)
// long before it costs memory.
const maxValues = 100_000

var idPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// topKeys are the top-level keys of format version 1.
var topKeys = []string{"version", "environments", "providers", "receipts", "environment_url", "changes"}

// Load reads and parses a plan file. A file that cannot be read is
// PLAN_PARSE; otherwise see Parse.
func Load(path string) (*Plan, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		e := errs.Wrap(err, errs.PLAN_PARSE, "cannot read the plan file")
		e.Pos = errs.Pos{File: path}
		return nil, e
	}
	return Parse(path, src)
}

// Parse parses and validates a plan. file names the source in positions.
//
// On success the plan is valid and its Warnings hold YAML_ANCHOR and
// UNKNOWN_KEY warnings. Otherwise the plan is nil and the error is an
// errs.List of every error found, sorted by position, each carrying file,
// line and column (a line alone when YAML does not say the column).
func Parse(file string, src []byte) (*Plan, error) {
	return ParseContext(context.Background(), file, src)
}

// ParseContext is Parse that stops when ctx is done (a signal to the
// command): the reader looks at ctx before each value it reads, so a
// cancelled run does no more work on a large plan than one value, and
// returns INTERRUPTED (wrapping ctx's error) in place of the plan.
func ParseContext(ctx context.Context, file string, src []byte) (*Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, interrupted(err)
	}
	p := &parser{file: file, active: map[*yaml.Node]bool{}, ctx: ctx}
	root := p.decode(src)
	var pl *Plan
	if root != nil {
		p.warnAnchors(root)
		pl = p.plan(root)
	}
	if p.stopped != nil {
		return nil, interrupted(p.stopped)
	}
	if len(p.errs) > 0 {
		return nil, dedupe(p.errs).Err()
	}
	warns := dedupe(p.warns)
	warns.Sort()
	pl.Warnings = warns
	return pl, nil
}

func interrupted(err error) error {
	return errs.Wrap(err, errs.INTERRUPTED, "reading the plan was interrupted")
}

type mode uint8

const (
	modeParam    mode = iota // a line's parameter: value forms, ${ctx.*}
	modeProvider             // a provider block: literals only
)

type parser struct {
	file    string
	errs    errs.List
	warns   errs.List
	active  map[*yaml.Node]bool // anchored nodes being expanded
	count   int                 // values expanded, against maxValues
	aliased int                 // aliases followed while counting
	cur     *Line               // the line whose parameters are being read
	ctx     context.Context     // looked at before each value
	stopped error               // ctx's error, once the reader saw it
}

func (p *parser) pos(n *yaml.Node) errs.Pos {
	return errs.Pos{File: p.file, Line: n.Line, Column: n.Column}
}

func (p *parser) fail(n *yaml.Node, code errs.Code, format string, args ...any) *errs.Error {
	e := errs.At(p.pos(n), code, format, args...)
	p.errs = append(p.errs, e)
	return e
}

func (p *parser) invalid(n *yaml.Node, format string, args ...any) *errs.Error {
	return p.fail(n, errs.PLAN_INVALID, format, args...)
}

// dedupe drops repeated errors: a value reached through two aliases is
// checked twice, at the same position.
func dedupe(l errs.List) errs.List {
	type k struct {
		pos  errs.Pos
		code errs.Code
		msg  string
	}
	seen := make(map[k]bool, len(l))
	out := l[:0:0]
	for _, e := range l {
		key := k{e.Pos, e.Code, e.Message}
		if !seen[key] {
			seen[key] = true
			out = append(out, e)
		}
	}
	return out
}

func (p *parser) plan(root *yaml.Node) *Plan {
	pl := &Plan{File: p.file, Providers: map[string]*Value{}, providerPos: map[string]errs.Pos{}}
	r := p.open(root)
	if r == nil {
		return pl
	}
	defer p.close(r)
	if r.Kind != yaml.MappingNode {
		p.invalid(r, "a plan is a map with version and changes, found %s", describe(r))
		return pl
	}
	var version, changes *yaml.Node
	for _, f := range p.fields(r) {
		switch f.key {
		case "version":
			version = f.val
			p.version(pl, f.val)
		case "environments":
			pl.Environments, _ = p.envList(f.val, "environments", "the top-level environments")
			pl.EnvironmentsExplicit = true
			pl.envPos = p.pos(target(f.val))
		case "providers":
			p.providers(pl, f.val)
		case "receipts":
			if s, ok := p.str(f.val, "receipts"); ok {
				if s != ReceiptsGitBranch && s != ReceiptsLocal {
					p.invalid(target(f.val), "receipts must be %s or %s, found %q", ReceiptsGitBranch, ReceiptsLocal, clip(s))
				}
				pl.Receipts = s
			}
		case "environment_url":
			p.environmentURL(pl, f.val)
		case "changes":
			changes = f.val
		default:
			p.warns = append(p.warns, suggest(errs.At(p.pos(f.kn), errs.UNKNOWN_KEY,
				"unknown top-level key %q; format version 1 knows %s", clip(f.key), strings.Join(topKeys, ", ")), f.key, topKeys))
		}
	}
	if version == nil {
		p.invalid(r, "version is required").WithHint("Add `version: 1` at the top of the file.")
	}
	if changes == nil {
		p.invalid(r, "changes is required: a plan is a list of lines under changes:")
	} else {
		p.changes(pl, changes)
	}
	p.link(pl)
	return pl
}

func (p *parser) version(pl *Plan, n *yaml.Node) {
	t := target(n)
	if t.Kind == yaml.ScalarNode && t.Tag == "!!int" {
		if v, err := strconv.ParseInt(t.Value, 0, 64); err == nil && v == Version {
			pl.Version = Version
			return
		}
		p.invalid(t, "format version %s is not supported: this Sponson reads version 1", clip(t.Value)).
			WithHint("Write `version: 1`, or upgrade Sponson if the plan was written for a newer one.")
		return
	}
	e := p.invalid(t, "version must be the integer 1, found %s", describe(t))
	if t.Kind == yaml.ScalarNode && (t.Value == "1" || t.Value == "1.0") {
		e.WithHint("Write `version: 1`: a bare integer, not quoted, with no decimals.")
	}
}

// envList reads a non-empty list of environment names.
func (p *parser) envList(n *yaml.Node, what, whose string) ([]string, []errs.Pos) {
	t := target(n)
	if t.Kind != yaml.SequenceNode {
		p.invalid(t, "%s must be a list of environment names, like [preview], found %s", what, describe(t))
		return nil, nil
	}
	if len(t.Content) == 0 {
		e := p.invalid(t, "%s must not be empty", what)
		if whose != "the top-level environments" {
			e.WithHint("Remove the key to run the line in every environment, or name at least one.")
		}
		return nil, nil
	}
	names := make([]string, 0, len(t.Content))
	poss := make([]errs.Pos, 0, len(t.Content))
	for _, it := range t.Content {
		s, ok := p.str(it, "an environment name")
		if !ok {
			continue
		}
		switch {
		case !idPattern.MatchString(s):
			p.invalid(target(it), "environment name %q must match ^[a-z][a-z0-9_-]*$", clip(s))
		case slices.Contains(names, s):
			p.invalid(target(it), "environment %q is listed twice in %s", s, whose)
		default:
			names = append(names, s)
			poss = append(poss, p.pos(target(it)))
		}
	}
	return names, poss
}

func (p *parser) providers(pl *Plan, n *yaml.Node) {
	t := p.open(n)
	if t == nil {
		return
	}
	defer p.close(t)
	if t.Kind != yaml.MappingNode {
		p.invalid(t, "providers must be a map of adapter name to settings, like {neon: {project: ...}}, found %s", describe(t))
		return
	}
	for _, f := range p.fields(t) {
		v := p.value(f.val, f.key, &where{up: &where{key: "providers"}, key: f.key}, modeProvider)
		if v == nil {
			continue
		}
		if v.Kind != KindMap {
			p.invalid(target(f.val), "the settings of provider %q must be a map, like {project: ...}, found %s", clip(f.key), describe(f.val))
			continue
		}
		pl.Providers[f.key] = v
		pl.providerPos[f.key] = p.pos(f.kn)
	}
}

func (p *parser) changes(pl *Plan, n *yaml.Node) {
	t := p.open(n)
	if t == nil {
		return
	}
	defer p.close(t)
	if t.Kind != yaml.SequenceNode {
		p.invalid(t, "changes must be a list of lines, found %s", describe(t))
		return
	}
	if len(t.Content) == 0 {
		p.invalid(t, "changes must hold at least one line")
		return
	}
	for i, it := range t.Content {
		if l := p.line(it, i); l != nil {
			pl.Lines = append(pl.Lines, l)
		}
	}
}

func (p *parser) line(item *yaml.Node, index int) *Line {
	t := p.open(item)
	if t == nil {
		return nil
	}
	defer p.close(t)
	if t.Kind != yaml.MappingNode {
		p.invalid(item, "a line must be a map with id, adapter and op, found %s", describe(item))
		return nil
	}
	l := &Line{Index: index, Pos: p.pos(item)}
	l.Params = &Value{Kind: KindMap, Pos: l.Pos}
	p.cur = l
	defer func() { p.cur = nil }()
	var seenID, seenAdapter, seenOp bool
	for _, f := range p.fields(t) {
		vt := target(f.val)
		switch f.key {
		case "id":
			seenID = true
			l.IDPos = p.pos(vt)
			if s, ok := p.str(f.val, "id"); ok {
				if !idPattern.MatchString(s) {
					p.invalid(vt, "id %q must match ^[a-z][a-z0-9_-]*$", clip(s)).
						WithHint("Use lower-case letters, digits, - and _, starting with a letter: db, preview-env, auth_callback.")
				} else {
					l.ID = s
				}
			}
		case "adapter", "op":
			if f.key == "adapter" {
				seenAdapter, l.AdapterPos = true, p.pos(vt)
			} else {
				seenOp, l.OpPos = true, p.pos(vt)
			}
			s, ok := p.str(f.val, f.key)
			if ok && s == "" {
				p.invalid(vt, "%s must not be empty", f.key)
			}
			if f.key == "adapter" {
				l.Adapter = s
			} else {
				l.Op = s
			}
		case "environments":
			l.Environments, l.envPos = p.envList(f.val, "environments", "the line's environments")
		case "depends_on":
			p.dependsOn(l, f.val)
		default:
			if v := p.value(f.val, f.key, &where{key: f.key}, modeParam); v != nil {
				l.Params.Fields = append(l.Params.Fields, Field{Key: f.key, KeyPos: p.pos(f.kn), Value: v})
			}
		}
	}
	if !seenOp && l.Adapter == "http" && l.Params.Get("recipe") != nil {
		// A recipe line: adapter http, recipe <provider>.<op>; op is
		// implied.
		seenOp, l.Op, l.OpPos = true, "recipe", l.AdapterPos
	}
	name := "this line"
	if l.ID != "" {
		name = fmt.Sprintf("line %q", l.ID)
	}
	for _, m := range []struct {
		seen bool
		key  string
	}{{seenID, "id"}, {seenAdapter, "adapter"}, {seenOp, "op"}} {
		if !m.seen {
			p.invalid(item, "%s has no %s; every line needs id, adapter and op", name, m.key)
		}
	}
	return l
}

func (p *parser) dependsOn(l *Line, n *yaml.Node) {
	t := target(n)
	if t.Kind != yaml.SequenceNode {
		e := p.invalid(t, "depends_on must be a list of line ids, found %s", describe(t))
		if t.Kind == yaml.ScalarNode && t.Tag == "!!str" {
			e.WithHint("Write a list, even of one id: depends_on: [%s].", clip(t.Value))
		}
		return
	}
	for _, it := range t.Content {
		s, ok := p.str(it, "a depends_on entry")
		if !ok {
			continue
		}
		if !idPattern.MatchString(s) {
			p.invalid(target(it), "depends_on entry %q is not a line id (^[a-z][a-z0-9_-]*$)", clip(s))
			continue
		}
		l.refs = append(l.refs, edge{line: s, pos: p.pos(target(it))})
		if !slices.Contains(l.DependsOn, s) {
			l.DependsOn = append(l.DependsOn, s)
		}
	}
}

// link checks what spans lines: unique ids, references, environments,
// cycles; and fills what is derived from them.
func (p *parser) link(pl *Plan) {
	pl.byID = make(map[string]*Line, len(pl.Lines))
	var ids []string
	for _, l := range pl.Lines {
		if l.ID == "" {
			continue
		}
		if first, dup := pl.byID[l.ID]; dup {
			at := l.IDPos
			if at == first.IDPos { // the same text, reached through an alias
				at = l.Pos
			}
			p.errs = append(p.errs, errs.At(at, errs.PLAN_INVALID, "duplicate id %q: the change at line %d already has it", l.ID, first.IDPos.Line).
				WithHint("Every line needs its own id; rename one of them."))
			continue
		}
		pl.byID[l.ID] = l
		ids = append(ids, l.ID)
	}
	for _, l := range pl.Lines {
		for _, e := range l.refs {
			if pl.byID[e.line] == nil {
				p.errs = append(p.errs, suggest(errs.At(e.pos, errs.REF_UNKNOWN, "%s names line %q, which does not exist; the lines are: %s",
					e.describe(), e.line, strings.Join(ids, ", ")), e.line, ids))
				continue
			}
			if !slices.Contains(l.deps, e.line) {
				l.deps = append(l.deps, e.line)
			}
		}
	}
	if pl.EnvironmentsExplicit {
		for _, l := range pl.Lines {
			if len(pl.Environments) == 0 {
				break // the list itself is wrong, and reported
			}
			for i, env := range l.Environments {
				if !slices.Contains(pl.Environments, env) {
					p.errs = append(p.errs, errs.At(l.envPos[i], errs.PLAN_INVALID,
						"environment %q is not declared; the plan's environments are: %s", env, strings.Join(pl.Environments, ", ")).
						WithHint("Add %s to the top-level environments, or use one of those.", env))
				}
			}
		}
	} else {
		pl.Environments = slices.Clone(defaultEnvironments)
		for _, l := range pl.Lines {
			for _, env := range l.Environments {
				if !slices.Contains(pl.Environments, env) {
					pl.Environments = append(pl.Environments, env)
				}
			}
		}
	}
	p.linkEnvironmentURL(pl, ids)
	p.errs = append(p.errs, cycles(pl)...)
}
