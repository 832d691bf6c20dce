package plan

import (
	"slices"
	"strings"

	"github.com/sponson/apply/pkg/errs"
)

// Catalog is what Check needs to know of the adapters: their names, their
// ops, and each op's outputs. The adapter registry implements it; plan does
// not import it.
type Catalog interface {
	// Adapters returns the names of every adapter.
	Adapters() []string
	// Ops returns the ops of an adapter, nil when the adapter is unknown.
	Ops(adapter string) []string
	// Outputs returns the outputs of an op (empty for an op with none).
	Outputs(adapter, op string) []string
}

// LineOutputs is implemented by a Catalog some of whose ops declare outputs
// in their parameters (http.resource: id plus the keys of outputs:). When
// the catalogue implements it, Check asks it instead of Outputs.
type LineOutputs interface {
	// OutputsOf returns the outputs of an op for a line with these
	// parameters.
	OutputsOf(adapter, op string, params *Value) []string
}

// ProviderSettings is implemented by a Catalog that knows the settings of
// each adapter's providers: block; Check then refuses a key no op of the
// adapter takes.
type ProviderSettings interface {
	// ProviderSettings returns the settings adapter's block may hold, and
	// ok false when its keys are the plan's own names (http's APIs) or
	// the adapter is unknown.
	ProviderSettings(adapter string) (names []string, ok bool)
}

// Check validates the plan against a catalogue of ops, for every line
// whatever its environments: ADAPTER_UNKNOWN for a line or provider block
// naming an adapter the catalogue lacks (the message lists the adapters),
// OP_UNKNOWN for an op its adapter lacks (listing the adapter's ops), and
// PARAM_INVALID for a provider block's key the adapter does not take
// (at the key, with the closest setting; when cat is a ProviderSettings),
// REF_OUTPUT_UNKNOWN for a from naming an output the referenced line's op
// lacks (listing the outputs that exist). All errors are returned together
// as an errs.List, sorted by position; nil when there are none.
func (p *Plan) Check(cat Catalog) error {
	var l errs.List
	adapters := cat.Adapters()
	list := func(names []string) string {
		if len(names) == 0 {
			return "(none)"
		}
		return strings.Join(names, ", ")
	}
	for name, pos := range p.providerPos {
		if !slices.Contains(adapters, name) {
			l = append(l, suggest(errs.At(pos, errs.ADAPTER_UNKNOWN,
				"providers names adapter %q, which does not exist; the adapters are: %s", clip(name), list(adapters)), name, adapters))
		}
	}
	if ps, ok := cat.(ProviderSettings); ok {
		for name, block := range p.Providers {
			settings, ok := ps.ProviderSettings(name)
			if !ok || block == nil {
				continue
			}
			for _, f := range block.Fields {
				if slices.Contains(settings, f.Key) {
					continue
				}
				takes, hint := "takes no settings", "Remove it."
				if len(settings) > 0 {
					takes, hint = "takes "+strings.Join(settings, ", "), "Remove it, or use one of the settings listed (docs/adapters.md describes them)."
				}
				e := errs.At(f.KeyPos, errs.PARAM_INVALID, "providers.%s has no setting %q; %s %s", name, clip(f.Key), name, takes).
					With("param", "providers."+name+"."+f.Key).WithHint("%s", hint)
				l = append(l, suggest(e, f.Key, settings))
			}
		}
	}
	known := make(map[*Line]bool, len(p.Lines))
	for _, ln := range p.Lines {
		ops := cat.Ops(ln.Adapter)
		switch {
		case ops == nil:
			l = append(l, suggest(errs.At(ln.AdapterPos, errs.ADAPTER_UNKNOWN,
				"line %q names adapter %q, which does not exist; the adapters are: %s", ln.ID, clip(ln.Adapter), list(adapters)), ln.Adapter, adapters))
		case !slices.Contains(ops, ln.Op):
			l = append(l, suggest(errs.At(ln.OpPos, errs.OP_UNKNOWN,
				"adapter %s has no op %q; its ops are: %s", ln.Adapter, clip(ln.Op), list(ops)), ln.Op, ops))
		default:
			known[ln] = true
		}
	}
	lo, _ := cat.(LineOutputs)
	for _, ln := range p.Lines {
		for _, v := range ln.FromRefs() {
			t := p.byID[v.From.Line]
			if t == nil || !known[t] {
				continue // reported already
			}
			var outs []string
			if lo != nil {
				outs = lo.OutputsOf(t.Adapter, t.Op, t.Params)
			} else {
				outs = cat.Outputs(t.Adapter, t.Op)
			}
			if !slices.Contains(outs, v.From.Output) {
				l = append(l, suggest(errs.At(v.Pos, errs.REF_OUTPUT_UNKNOWN,
					"line %q (%s.%s) has no output %q; its outputs are: %s",
					t.ID, t.Adapter, t.Op, v.From.Output, list(outs)).
					With("outputs", slices.Clone(outs)), v.From.Output, outs))
			}
		}
	}
	if e := p.checkEnvironmentURL(cat, known); e != nil {
		l = append(l, e)
	}
	return l.Err()
}
