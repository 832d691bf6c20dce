// Package param reads op parameters and provider settings for the built-in
// adapters: one place that decides what a missing, mistyped or not-yet-known
// parameter is, so every op answers PARAM_INVALID naming the parameter in
// the same words.
//
// Invariants:
//   - Markers are classified with adapter.MarkerOf, never by parsing text.
//   - A Pending marker is accepted only where the caller says so (Defaults
//     runs before references are resolved); a Secret marker is never an
//     identity (a key or a path must not depend on a secret).
//   - Messages name the op and the parameter and never quote a value that
//     could be a secret: values are described by kind.
package param

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
)

// Known refuses parameters op does not take, naming them.
func Known(op string, params map[string]any, known ...string) error {
	var bad []string
	for k := range params {
		found := false
		for _, n := range known {
			if k == n {
				found = true
				break
			}
		}
		if !found {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	var dym string
	for _, b := range bad {
		if s := errs.Suggest(b, known); s != "" {
			dym += fmt.Sprintf("%s: did you mean %q? ", b, s)
		}
	}
	return errs.New(errs.PARAM_INVALID, "%s has no parameter %s", op, strings.Join(bad, ", ")).
		WithHint("%s%s takes %s.", dym, op, strings.Join(known, ", ")).With("param", bad[0])
}

// Invalid is PARAM_INVALID about one parameter.
func Invalid(op, name, format string, args ...any) *errs.Error {
	return errs.New(errs.PARAM_INVALID, "%s parameter %s %s", op, name, fmt.Sprintf(format, args...)).With("param", name)
}

// Str reads a string parameter. It returns known=false (and no error) for
// a Pending marker when allowPending; absent is "" with present=false.
// Any other marker, or a non-string, is PARAM_INVALID.
func Str(op string, params map[string]any, name string, allowPending bool) (s string, present, known bool, err error) {
	v, ok := params[name]
	if !ok || v == nil {
		return "", false, true, nil
	}
	if m, isM := adapter.MarkerOf(v); isM {
		if allowPending && m.Kind == adapter.Pending {
			return "", true, false, nil
		}
		return "", true, false, Invalid(op, name, "must be a known string, it is %s", Describe(v))
	}
	s, isS := v.(string)
	if !isS {
		return "", true, false, Invalid(op, name, "must be a string, got %s", Describe(v))
	}
	return s, true, true, nil
}

// Required reads a required, non-empty string parameter (see Str).
func Required(op string, params map[string]any, name string, allowPending bool) (string, bool, error) {
	s, present, known, err := Str(op, params, name, allowPending)
	switch {
	case err != nil:
		return "", false, err
	case !present:
		return "", false, Invalid(op, name, "is required")
	case known && strings.TrimSpace(s) == "":
		return "", false, Invalid(op, name, "must not be empty")
	}
	return s, known, nil
}

// Map reads an optional map parameter; absent is nil.
func Map(op string, params map[string]any, name string) (map[string]any, error) {
	v, ok := params[name]
	if !ok || v == nil {
		return nil, nil
	}
	switch t := v.(type) {
	case map[string]any:
		return t, nil
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = x
		}
		return m, nil
	}
	return nil, Invalid(op, name, "must be a map, got %s", Describe(v))
}

// Setting reads a string setting of a provider block (project, domain):
// "" when absent. PARAM_INVALID when it is not a string.
func Setting(adapterName string, p adapter.Provider, name string) (string, error) {
	v, ok := p[name]
	if !ok || v == nil {
		return "", nil
	}
	s, isS := v.(string)
	if !isS {
		return "", errs.New(errs.PARAM_INVALID, "providers.%s.%s must be a string, got %s", adapterName, name, Describe(v)).With("param", "providers."+adapterName+"."+name)
	}
	return strings.TrimSpace(s), nil
}

// RequiredSetting reads a setting that must be set.
func RequiredSetting(adapterName string, p adapter.Provider, name string) (string, error) {
	s, err := Setting(adapterName, p, name)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", errs.New(errs.PARAM_INVALID, "providers.%s.%s is required", adapterName, name).With("param", "providers."+adapterName+"."+name).
			WithHint("Add it to the plan: providers: {%s: {%s: ...}}.", adapterName, name)
	}
	return s, nil
}

// Describe names a value's kind for messages, never the value.
func Describe(v any) string {
	if m, ok := adapter.MarkerOf(v); ok {
		return "a " + string(m.Kind) + " value"
	}
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
	return "an unsupported value"
}

// Copy returns a deep copy of a parameter map (markers are values and are
// copied as they are).
func Copy(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return CopyValue(m).(map[string]any)
}

// CopyValue deep-copies maps and lists.
func CopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = CopyValue(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = CopyValue(x)
		}
		return out
	}
	return v
}

// Concrete refuses a Pending or Secret marker anywhere in v: Apply must
// never receive one (the engine resolves them first).
func Concrete(op, name string, v any) error {
	if adapter.HasMarker(v, adapter.Pending, adapter.Secret) {
		return errs.New(errs.PARAM_INVALID, "%s parameter %s is not known yet (a pending or unresolved secret value reached apply)", op, name).With("param", name)
	}
	return nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// EnvValues reads the map parameter name as environment variables: every
// key a valid variable name, every value a string (a bool or number is
// written as its text) or a marker ({from}, {secret}, {keep}). A missing
// parameter is an empty map.
func EnvValues(op string, params map[string]any, name string) (map[string]any, error) {
	m, err := Map(op, params, name)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !envNamePattern.MatchString(k) {
			return nil, Invalid(op, name+"."+k, "is not a valid variable name (letters, digits and _, not starting with a digit)")
		}
		switch t := v.(type) {
		case string:
			out[k] = t
		case bool:
			out[k] = strconv.FormatBool(t)
		case int:
			out[k] = strconv.Itoa(t)
		case int64:
			out[k] = strconv.FormatInt(t, 10)
		case float64:
			out[k] = strconv.FormatFloat(t, 'f', -1, 64)
		default:
			if _, ok := adapter.MarkerOf(v); ok {
				out[k] = v
				continue
			}
			return nil, Invalid(op, name+"."+k, "must be a string, {from}, {secret} or {keep: true}, got %s", Describe(v))
		}
	}
	return out, nil
}

// Int is a whole number as a plan's value carries it (int, int64, or a
// float64 with no fraction, as YAML and JSON decode numbers).
func Int(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), n == float64(int(n))
	}
	return 0, false
}
