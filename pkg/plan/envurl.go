package plan

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
)

// environmentURL reads the top-level environment_url: a {from:
// "<line>.<output>"} naming the output that is the environment's URL.
// Anything else is PLAN_INVALID at the value.
func (p *parser) environmentURL(pl *Plan, n *yaml.Node) {
	t := target(n)
	if t.Kind != yaml.MappingNode {
		p.invalid(t, "environment_url takes {from: \"<line>.<output>\"}, found %s", describe(t)).
			WithHint("Name the output that is the environment's URL, like environment_url: {from: web.url}.")
		return
	}
	v := p.value(n, "environment_url", &where{key: "environment_url"}, modeParam)
	if v == nil {
		return // reported
	}
	if v.Kind != KindFrom {
		p.invalid(t, "environment_url takes {from: \"<line>.<output>\"}, found a %s", v.Kind).
			WithHint("Name the output that is the environment's URL, like environment_url: {from: web.url}.")
		return
	}
	pl.EnvironmentURL = v
}

// linkEnvironmentURL checks that environment_url names a line of the plan
// (REF_UNKNOWN otherwise, at its operand). ids are the plan's line ids.
func (p *parser) linkEnvironmentURL(pl *Plan, ids []string) {
	v := pl.EnvironmentURL
	if v == nil || pl.byID[v.From.Line] != nil {
		return
	}
	p.errs = append(p.errs, suggest(errs.At(v.Pos, errs.REF_UNKNOWN, "environment_url names line %q, which does not exist; the lines are: %s",
		v.From.Line, strings.Join(ids, ", ")), v.From.Line, ids))
}

// checkEnvironmentURL is REF_OUTPUT_UNKNOWN when environment_url names an
// output its line's op lacks; nil otherwise (or when the line itself is
// unknown, reported elsewhere).
func (p *Plan) checkEnvironmentURL(cat Catalog, known map[*Line]bool) *errs.Error {
	v := p.EnvironmentURL
	if v == nil {
		return nil
	}
	t := p.byID[v.From.Line]
	if t == nil || !known[t] {
		return nil
	}
	outs := cat.Outputs(t.Adapter, t.Op)
	if lo, ok := cat.(LineOutputs); ok {
		outs = lo.OutputsOf(t.Adapter, t.Op, t.Params)
	}
	if slices.Contains(outs, v.From.Output) {
		return nil
	}
	return suggest(errs.At(v.Pos, errs.REF_OUTPUT_UNKNOWN, "environment_url: line %q (%s.%s) has no output %q; its outputs are: %s",
		t.ID, t.Adapter, t.Op, v.From.Output, strings.Join(outs, ", ")).
		With("outputs", slices.Clone(outs)), v.From.Output, outs)
}

// URLLine is the id of the line whose output is the environment's URL and
// that output's name; ok is false when the plan names none.
func (p *Plan) URLLine() (line, output string, ok bool) {
	if p == nil || p.EnvironmentURL == nil {
		return "", "", false
	}
	return p.EnvironmentURL.From.Line, p.EnvironmentURL.From.Output, true
}
