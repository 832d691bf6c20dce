package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// HashPrefix starts every plan hash: the algorithm, so a later one can be
// told apart.
const HashPrefix = "sha256:"

// Hash is a stable hash of the plan's normalized content: what the plan
// says, not how it is written. Comments, blank lines, quoting, flow or
// block style, the order of keys inside a map and anchors (expanded) do
// not change it; any value, a line's id, op, environments or depends_on,
// the order of the lines (it breaks ties in the run order) and the
// providers and receipts blocks do. The file's name is not part of it. It
// is "sha256:" and 64 hex digits; plan shows it, apply records it in the
// receipt (plan_hash), so a reader can tell which plan a run applied.
func (p *Plan) Hash() string {
	if p == nil {
		return ""
	}
	type line struct {
		ID           string   `json:"id"`
		Adapter      string   `json:"adapter"`
		Op           string   `json:"op"`
		Environments []string `json:"environments"`
		DependsOn    []string `json:"depends_on"`
		Params       any      `json:"params"`
	}
	doc := struct {
		Version      int            `json:"version"`
		Environments []string       `json:"environments"`
		Explicit     bool           `json:"environments_explicit"`
		Providers    map[string]any `json:"providers"`
		Receipts     string         `json:"receipts"`
		Lines        []line         `json:"changes"`
	}{Version: p.Version, Environments: p.Environments, Explicit: p.EnvironmentsExplicit, Providers: map[string]any{}, Receipts: p.Receipts}
	for name, v := range p.Providers {
		doc.Providers[name] = v.Data()
	}
	for _, l := range p.Lines {
		ln := line{ID: l.ID, Adapter: l.Adapter, Op: l.Op, Environments: l.Environments, DependsOn: l.DependsOn}
		if l.Params != nil {
			ln.Params = l.Params.Data()
		}
		doc.Lines = append(doc.Lines, ln)
	}
	// encoding/json writes map keys sorted, so the encoding of equal
	// content is equal bytes.
	data, err := json.Marshal(doc)
	if err != nil {
		// Data holds strings, numbers, bools, maps and lists only.
		panic("plan: hash: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return HashPrefix + hex.EncodeToString(sum[:])
}
