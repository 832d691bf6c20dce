package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/sponson/apply/pkg/engine"
)

// Change is one resource a plan would write, and each of its values as a
// reviewer needs to see it.
type Change struct {
	Key    string  `json:"key"`
	Action string  `json:"action"` // create, update, delete
	Fields []Field `json:"fields,omitempty"`
}

// Field is one value of a change: what is there now (Before, "" for a
// create) and what will be written (After), each as shown to people:
//
//   - a literal or a known value as JSON ("main", 3, ["a"]);
//   - (pending ← db.connection_string): another line's output, not known yet;
//   - (secret ← env://NAME): a secret, never shown;
//   - (kept): {keep: true}, whatever is live;
//   - (hidden): a value the provider does not show (a Vercel variable's
//     current value), or one Sponson may not show.
type Field struct {
	Path   string `json:"path"`
	Before string `json:"before,omitempty"`
	After  string `json:"after"`
}

// Value forms that are not values: text a plan refuses as a value, so it
// can never be mistaken for one.
const (
	ShownHidden = "(hidden)"
	ShownKept   = "(kept)"
)

// ShownRef is how a value that comes from a reference is shown:
// "(pending ← db.url)", "(secret ← env://X)"; "(secret)" without one.
func ShownRef(state, ref string) string {
	if ref == "" {
		return "(" + state + ")"
	}
	return "(" + state + " ← " + ref + ")"
}

// changesOf is what a plan line would write, value by value. Adapters do
// not always put values in their diffs (a provider that never shows a
// variable's value, a value pending on another line): the line's inputs
// then say what will be written, and a current value nobody may see is
// (hidden).
func changesOf(l engine.PlanLine) []Change {
	var out []Change
	for _, d := range l.Diffs {
		if d.Action == "unchanged" && len(d.Fields) == 0 {
			continue
		}
		c := Change{Key: d.Key, Action: d.Action}
		for _, f := range d.Fields {
			in := inputAt(l.Inputs, f.Path)
			if in != nil && in.State == engine.StateSecret {
				// The plan says secret: whatever the diff carries, both
				// sides are shown as the reference.
				f.Before, f.After = nil, nil
				f.BeforeState, f.AfterState = engine.StateSecret, engine.StateSecret
			}
			fd := Field{Path: f.Path, After: shownAfter(f, in)}
			if d.Action != "create" {
				fd.Before = shownBefore(f)
			}
			c.Fields = append(c.Fields, fd)
		}
		out = append(out, c)
	}
	return out
}

func shownAfter(f engine.FieldDiff, in *engine.Input) string {
	switch f.AfterState {
	case engine.StatePending, engine.StateSecret:
		ref := f.AfterRef
		if ref == "" && in != nil {
			ref = in.Ref
		}
		return ShownRef(f.AfterState, ref)
	case engine.StateKept:
		return ShownKept
	}
	if f.After != nil {
		return jsonText(f.After)
	}
	if in == nil {
		return ShownHidden
	}
	switch in.State {
	case engine.StatePending, engine.StateSecret:
		return ShownRef(in.State, in.Ref)
	case engine.StateKept:
		return ShownKept
	}
	if in.Value == nil {
		return ShownHidden
	}
	return jsonText(in.Value)
}

func shownBefore(f engine.FieldDiff) string {
	switch f.BeforeState {
	case engine.StateSecret, engine.StatePending:
		return ShownRef(f.BeforeState, "")
	case engine.StateKept:
		return ShownKept
	}
	if f.Before == nil {
		return ShownHidden
	}
	return jsonText(f.Before)
}

// inputAt is the input whose path is path, or the nearest enclosing or
// enclosed one (a diff may name "values.X" where the input is "values.X"
// or "values").
func inputAt(ins []engine.Input, path string) *engine.Input {
	var best *engine.Input
	for i := range ins {
		p := ins[i].Path
		switch {
		case p == path:
			return &ins[i]
		case strings.HasPrefix(path, p+"."), strings.HasSuffix(path, "."+p):
			if best == nil || len(p) > len(best.Path) {
				best = &ins[i]
			}
		}
	}
	return best
}

// shownOutputs are a run line's outputs that may be shown (resolved or
// literal), sorted by name, each as JSON.
func shownOutputs(line string, outputs map[string]any) []Output {
	var out []Output
	for name, v := range outputs {
		st, ok := v.(map[string]any)
		if !ok {
			out = append(out, Output{Line: line, Name: name, Value: jsonText(v)})
			continue
		}
		state, _ := st["state"].(string)
		if state != "" && state != engine.StateResolved && state != engine.StateLiteral {
			continue
		}
		out = append(out, Output{Line: line, Name: name, Value: jsonText(st["value"])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// jsonText is a value as compact JSON, HTML left alone.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
