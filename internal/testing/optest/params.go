package optest

import (
	"sort"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

// project is the provider block's project, DefaultProject when unset.
// providerSpec is the providers.fake block: its project alone.
var providerSpec = []adapter.ParamSpec{{Name: "project", Type: adapter.TypeString, Doc: "the fake project (default " + DefaultProject + ")"}}

func project(p adapter.Provider) (string, error) {
	v, ok := p["project"]
	if !ok || v == nil {
		return DefaultProject, nil
	}
	s, ok := v.(string)
	if !ok || s == "" || strings.Contains(s, ":") {
		return "", errs.New(errs.PARAM_INVALID, "providers.fake.project must be a non-empty string without ':', got %s", describe(v))
	}
	return s, nil
}

// checkKnown refuses parameters the op does not have, naming them.
func checkKnown(op string, params map[string]any, known ...string) error {
	var bad []string
	for k := range params {
		found := false
		for _, n := range known {
			found = found || k == n
		}
		if !found {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return errs.New(errs.PARAM_INVALID, "%s has no parameter %s", op, strings.Join(bad, ", ")).
		WithHint("%s takes %s.", op, strings.Join(known, ", "))
}

// identity reads a required string parameter that is part of the key.
// allowPending accepts a Pending marker (Defaults runs before references
// resolve); everything that reads or writes needs the concrete string.
func identity(op string, params map[string]any, name string, allowPending, allowColon bool) (string, bool, error) {
	v, ok := params[name]
	if m, isM := adapter.MarkerOf(v); isM {
		if allowPending && m.Kind == adapter.Pending {
			return "", false, nil
		}
		return "", false, errs.New(errs.PARAM_INVALID, "%s parameter %s must be a known string, it is %s", op, name, m.Kind)
	}
	s, isS := v.(string)
	switch {
	case !ok || v == nil:
		return "", false, errs.New(errs.PARAM_INVALID, "%s parameter %s is required", op, name)
	case !isS:
		return "", false, errs.New(errs.PARAM_INVALID, "%s parameter %s must be a string, got %s", op, name, describe(v))
	case s == "":
		return "", false, errs.New(errs.PARAM_INVALID, "%s parameter %s must not be empty", op, name)
	case !allowColon && strings.Contains(s, ":"):
		return "", false, errs.New(errs.PARAM_INVALID, "%s parameter %s must not contain ':', got %q", op, name, s)
	}
	return s, true, nil
}

// optBool reads an optional bool parameter; a Pending marker reads as
// false and is accepted only when allowPending.
func optBool(op string, params map[string]any, name string, allowPending bool) (bool, error) {
	v, ok := params[name]
	if !ok || v == nil {
		return false, nil
	}
	if m, isM := adapter.MarkerOf(v); isM {
		if allowPending && m.Kind == adapter.Pending {
			return false, nil
		}
		return false, errs.New(errs.PARAM_INVALID, "%s parameter %s must be a known bool, it is %s", op, name, m.Kind)
	}
	b, isB := v.(bool)
	if !isB {
		return false, errs.New(errs.PARAM_INVALID, "%s parameter %s must be a bool, got %s", op, name, describe(v))
	}
	return b, nil
}

// optString reads an optional string parameter.
func optString(op string, params map[string]any, name string) (string, error) {
	v, ok := params[name]
	if !ok || v == nil {
		return "", nil
	}
	if _, isM := adapter.MarkerOf(v); isM {
		return "", nil
	}
	s, isS := v.(string)
	if !isS {
		return "", errs.New(errs.PARAM_INVALID, "%s parameter %s must be a string, got %s", op, name, describe(v))
	}
	return s, nil
}

// optMap reads an optional map parameter (fields, create_only): a map, or a
// marker standing for the whole map (Keep: whatever is live). Absent is an
// empty map.
func optMap(op string, params map[string]any, name string) (any, error) {
	v, ok := params[name]
	if !ok || v == nil {
		return map[string]any{}, nil
	}
	if _, isM := adapter.MarkerOf(v); isM {
		return v, nil
	}
	switch t := v.(type) {
	case map[string]any, map[string]string:
		return copyValue(t), nil
	}
	return nil, errs.New(errs.PARAM_INVALID, "%s parameter %s must be a map, got %s", op, name, describe(v))
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case int, int64, float64:
		return "a number"
	case []any, []string:
		return "a list"
	case map[string]any, map[string]string:
		return "a map"
	}
	if m, ok := adapter.MarkerOf(v); ok {
		return "a " + string(m.Kind) + " marker"
	}
	return "an unsupported value"
}

// resolveKeep replaces every Keep marker in desired by the live value at the
// same place. A Keep where nothing is live is left out (ok false): the
// provider's default, which for the fake is "absent". Other markers stay.
func resolveKeep(desired, live any, hasLive bool) (any, bool) {
	if m, ok := adapter.MarkerOf(desired); ok && m.Kind == adapter.Keep {
		if !hasLive {
			return nil, false
		}
		return copyValue(live), true
	}
	switch d := desired.(type) {
	case map[string]any:
		lm, _ := live.(map[string]any)
		out := make(map[string]any, len(d))
		for k, v := range d {
			lv, has := lm[k]
			if r, ok := resolveKeep(v, lv, has); ok {
				out[k] = r
			}
		}
		return out, true
	case []any:
		ll, _ := live.([]any)
		out := make([]any, 0, len(d))
		for i, v := range d {
			var lv any
			has := i < len(ll)
			if has {
				lv = ll[i]
			}
			if r, ok := resolveKeep(v, lv, has); ok {
				out = append(out, r)
			}
		}
		return out, true
	}
	return copyValue(desired), true
}

// diffValues appends the differences between before and after under path:
// maps are compared key by key, anything else as a whole in canonical form
// (a value holding a marker always differs: it is not known).
func diffValues(out []adapter.FieldDiff, path string, before, after any) []adapter.FieldDiff {
	bm, bok := before.(map[string]any)
	am, aok := after.(map[string]any)
	if bok && aok {
		keys := map[string]bool{}
		for k := range bm {
			keys[k] = true
		}
		for k := range am {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			out = diffValues(out, path+"."+k, bm[k], am[k])
		}
		return out
	}
	if adapter.Equal(before, after) {
		return out
	}
	return append(out, adapter.FieldDiff{Path: path, Before: copyValue(before), After: copyValue(after)})
}

// asMap is v as a map, empty for anything else.
func asMap(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}
