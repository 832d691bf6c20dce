// Package envdiff is the one rule the env-value ops (vercel.env,
// netlify.env, cloudflare.pages_env) compare a declared variable value with
// the live one by: in Diff, what the plan shows, and in Apply, whether the
// value is written.
//
// Invariants:
//   - {keep: true} adopts the live value unchanged, and is refused when
//     nothing live exists to keep (the op words the refusal).
//   - A pending or secret value differs from anything live (it is not
//     known here) and has no Desired; its field diff names the path only.
//   - A known value is shown on both sides of its field diff (the engine
//     hides both when it comes from a secret or a sensitive output); a live
//     value that is not a string (a provider's secret) is never shown.
//   - Apply writes a value unless the provider answered it, readable, and
//     equal to the declared one: a value the provider does not answer (a
//     secret, a sensitive type) is always written.
package envdiff

import (
	"maps"
	"slices"

	"github.com/sponson/apply/pkg/adapter"
)

// Value diffs one declared value want, at parameter path, with the live
// resource lr of key (nil when none exists). keepMissing is the error when
// want is {keep: true} and nothing exists to keep.
func Value(key, path string, want any, lr *adapter.Resource, keepMissing func() error) (adapter.ResourceDiff, error) {
	d := adapter.ResourceDiff{Key: key}
	m, isMarker := adapter.MarkerOf(want)
	switch {
	case isMarker && m.Kind == adapter.Keep:
		if lr == nil {
			return d, keepMissing()
		}
		d.Action, d.Desired = adapter.Unchanged, lr.Value
		return d, nil
	case isMarker:
		d.Action = adapter.Update
		if lr == nil {
			d.Action = adapter.Create
		}
		d.Fields = []adapter.FieldDiff{{Path: path}}
	case lr == nil:
		d.Action, d.Desired = adapter.Create, want
		d.Fields = []adapter.FieldDiff{{Path: path, After: want}}
	case adapter.Equal(lr.Value, want):
		d.Action, d.Desired = adapter.Unchanged, want
	default:
		d.Action, d.Desired = adapter.Update, want
		f := adapter.FieldDiff{Path: path, After: want}
		if before, ok := lr.Value.(string); ok {
			f.Before = before
		}
		d.Fields = []adapter.FieldDiff{f}
	}
	return d, nil
}

// Values diffs every declared value of the parameter group (values[name]
// at group+"."+name, live at key(name)), in name order.
func Values(group string, values map[string]any, live *adapter.Live, key func(name string) string, keepMissing func(name string) error) ([]adapter.ResourceDiff, error) {
	var out []adapter.ResourceDiff
	for _, name := range slices.Sorted(maps.Keys(values)) {
		d, err := Value(key(name), group+"."+name, values[name], live.Resource(key(name)), func() error { return keepMissing(name) })
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Verdict is what Apply does with one declared value.
type Verdict int

const (
	// Keep is {keep: true} on a value that exists: nothing is written.
	Keep Verdict = iota
	// Unchanged is a value the provider answered equal: nothing is written.
	Unchanged
	// Create is a value that does not exist yet.
	Create
	// Update is a value that exists and differs, or is not known to be
	// equal.
	Update
)

// Write classifies one concrete declared value for Apply. exists says
// whether the provider has a value for it; live is that value as the
// provider answers it, nil when it does not (a secret). keepMissing is the
// error when want is {keep: true} and nothing exists.
func Write(want any, exists bool, live any, keepMissing func() error) (Verdict, error) {
	if m, ok := adapter.MarkerOf(want); ok && m.Kind == adapter.Keep {
		if !exists {
			return Keep, keepMissing()
		}
		return Keep, nil
	}
	switch {
	case !exists:
		return Create, nil
	case live == nil || !adapter.Equal(live, want):
		return Update, nil
	}
	return Unchanged, nil
}
