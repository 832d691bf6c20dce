package engine

import (
	"slices"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

// missingOutput is the error of line ls, which needs p, an immediate
// output line src ran without returning. When src's op takes its outputs
// from the line (adapter.LineOutputser: http.resource's outputs, name →
// JSON pointer) and the line declares p's, the path it wrote names nothing
// in the object the API answered: the plan's mistake, PARAM_INVALID at
// that output in the plan file, naming the line and the path. Otherwise an
// op returned less than its Spec promised: INTERNAL.
func missingOutput(ls, src *lineState, p pendingRef) error {
	if lo, ok := src.pl.op.(adapter.LineOutputser); ok && slices.Contains(lo.LineOutputs(src.pl.params), p.output) {
		outs, _ := src.pl.params["outputs"].(map[string]any)
		path, _ := outs[p.output].(string)
		x := errs.New(errs.PARAM_INVALID, "line %q needs %s, but the object line %q (%s) got back from the API has nothing at %s, the path its outputs.%s names",
			ls.pl.id, p.ref(), src.pl.id, src.pl.spec.Name(), path, p.output).
			With("param", "outputs."+p.output).With("line", src.pl.id).With("path", path).
			WithHint("Point outputs.%s of line %q at a field the API returns (a JSON pointer such as /id; read the object to see its fields); what this run created was rolled back.", p.output, src.pl.id)
		x.Pos = paramPos(src.pl.line, x)
		return x
	}
	return errs.New(errs.INTERNAL, "line %q needs %s, which line %q (%s) did not return", ls.pl.id, p.ref(), p.line, src.pl.spec.Name())
}
