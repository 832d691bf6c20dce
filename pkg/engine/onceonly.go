package engine

// Once-only outputs (adapter.OutputSpec.Once: a password the provider
// answers only to its create). The value is never written anywhere; the
// receipt keeps its fingerprint (the keyed hash, LedgerEntry.Fingerprints)
// on the producer's entry. A later run, which cannot know the value, uses
// the fingerprint to tell whether a line using it still holds it:
//
//   - a line whose resource is gone or new has nothing live to keep, so
//     the value cannot be written again: the line is blocked with
//     OUTPUT_UNAVAILABLE, hint --recreate <producer>, before it writes;
//   - a line whose live values were changed since Sponson wrote them and
//     none of which, at any depth, has the fingerprint no longer holds the
//     value (it was changed or removed outside Sponson): blocked the same
//     way, before drift (--reconcile would write the changed value back).
//
// A line whose values cannot all be read (a provider's secret type) is
// not judged by its values: what it holds stays, as before.

import (
	"slices"

	"github.com/sponson/apply/pkg/errs"
)

// onceRef is one use, by a line, of a once-only output that will not come
// this run.
type onceRef struct {
	line, output, ref string
}

// goneOnce lists the line's references to once-only outputs that this run
// will not have (onceGone), in file order.
func (r *inspector) goneOnce(pl *pline) []onceRef {
	var out []onceRef
	for _, v := range pl.line.FromRefs() {
		if r.onceGone(v.From.Line, v.From.Output) {
			out = append(out, onceRef{line: v.From.Line, output: v.From.Output, ref: v.From.String()})
		}
	}
	return out
}

// fingerprint is the receipt's fingerprint of line's once-only output out,
// "" when none is recorded.
func (l *ledger) fingerprint(line, out string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, en := range l.entries {
		if en.Line == line && en.Fingerprints[out] != "" {
			return en.Fingerprints[out]
		}
	}
	return ""
}

// onceUnavailable is the refusal of a line that uses a once-only output
// the run cannot have: why says what is wrong with the line's copy.
func (r *inspector) onceUnavailable(ls *lineState, u onceRef, why string) *errs.Error {
	src := r.pr.byID[u.line]
	name := u.line
	if src != nil {
		name = src.spec.Name()
	}
	return errs.New(errs.OUTPUT_UNAVAILABLE,
		"line %q uses %s, which %s answers only when it is created (line %q was created by an earlier run), and %s; the line is not written",
		ls.pl.id, u.ref, name, u.line, why).With("line", ls.pl.id).
		WithHint("Recreate the line that makes the value: --recreate %s (the lines using it get the new value in the same run).", u.line)
}

// onceNothingToKeep blocks a line whose Diff failed while it uses a
// once-only output this run does not have: the reference stands for the
// live value, and there is none (the line's resource is new or gone).
// It reports whether the line was blocked.
func (r *inspector) onceNothingToKeep(ls *lineState, diffErr error) bool {
	gone := r.goneOnce(ls.pl)
	if len(gone) == 0 {
		return false
	}
	e := r.onceUnavailable(ls, gone[0], "the line has no live value to keep ("+r.e.redactor().String(errs.Coded(diffErr).Message)+")")
	ls.status, ls.err = PlanBlocked, e
	return true
}

// onceStale compares the live values of a line using once-only outputs
// this run does not have with their fingerprints in the receipt. The line
// no longer holds a value when a live value was changed since Sponson
// wrote it (its hash is not the ledger's) and no value of the line, at any
// depth, has the value's fingerprint: only recreating the producer mends
// that. A value the provider does not answer (nil) is never judged.
func (r *inspector) onceStale(ls *lineState) *errs.Error {
	gone := r.goneOnce(ls.pl)
	if len(gone) == 0 {
		return nil
	}
	if ls.live == nil || len(ls.live.Resources) == 0 {
		return r.onceUnavailable(ls, gone[0], "the line has nothing live that holds it (its resource is new or was deleted)")
	}
	var leaves []string
	changed := false
	for _, res := range ls.live.Resources {
		if res.Value == nil {
			return nil // a value the provider does not answer: nothing to compare
		}
		h := r.led.hash(res.Value)
		if _, en := r.led.entry(ls.pl.ref(res.Key)); en == nil || en.Hash != h {
			changed = true
		}
		leaves = r.leafHashes(res.Value, leaves)
	}
	if !changed {
		return nil // as Sponson wrote it, with the value it had
	}
	for _, u := range gone {
		fp := r.led.fingerprint(u.line, u.output)
		if fp == "" || slices.Contains(leaves, fp) {
			continue
		}
		return r.onceUnavailable(ls, u, "none of the line's live values matches the fingerprint the receipt keeps of it (it was changed or removed outside Sponson)")
	}
	return nil
}

// leafHashes appends the keyed hashes of v's leaves (v itself when it is
// not a map or a list).
func (r *inspector) leafHashes(v any, out []string) []string {
	switch t := v.(type) {
	case map[string]any:
		for _, x := range t {
			out = r.leafHashes(x, out)
		}
		return out
	case []any:
		for _, x := range t {
			out = r.leafHashes(x, out)
		}
		return out
	case nil:
		return out
	}
	return append(out, r.led.hash(v))
}
