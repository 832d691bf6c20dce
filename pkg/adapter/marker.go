package adapter

// MarkerKind is the kind of a parameter that is not a concrete value.
type MarkerKind string

const (
	// Pending: an input not known yet (another line's output, perhaps an
	// external one). Ref is "line.output".
	Pending MarkerKind = "pending"
	// Secret: a secret reference whose value is not handed to this call
	// (plan shows it, never the value). Ref is the reference, "env://X".
	Secret MarkerKind = "secret"
	// Keep: whatever is live; Sponson owns the resource's existence, not
	// this value.
	Keep MarkerKind = "keep"
)

// Marker stands in a parameter for a value that is not concrete. Adapters
// classify parameters with MarkerOf, never by parsing text: a string that
// looks like "(pending ← db.x)" is a string.
type Marker struct {
	Kind MarkerKind `json:"state"`
	Ref  string     `json:"ref,omitempty"`
}

// MarkerOf reports whether v is a marker, and which.
func MarkerOf(v any) (Marker, bool) {
	switch m := v.(type) {
	case Marker:
		return m, true
	case *Marker:
		if m != nil {
			return *m, true
		}
	}
	return Marker{}, false
}

// HasMarker reports whether v or anything inside it (maps, lists) is a
// marker of one of kinds (any kind when none is given).
func HasMarker(v any, kinds ...MarkerKind) bool {
	switch t := v.(type) {
	case map[string]any:
		for _, x := range t {
			if HasMarker(x, kinds...) {
				return true
			}
		}
		return false
	case []any:
		for _, x := range t {
			if HasMarker(x, kinds...) {
				return true
			}
		}
		return false
	}
	m, ok := MarkerOf(v)
	if !ok {
		return false
	}
	if len(kinds) == 0 {
		return true
	}
	for _, k := range kinds {
		if m.Kind == k {
			return true
		}
	}
	return false
}
