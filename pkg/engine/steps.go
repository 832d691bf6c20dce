package engine

import (
	"cmp"
	"slices"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// A manual step (adapter.Stepper) is a person's act, so it is a person
// who says it is done, twice: apply waits on the step until --confirm
// names it, and destroy waits on its undo the same way. Both record who
// confirmed: Options.ApprovedBy, else Options.ConfirmedBy (the checkout's
// git identity, which the caller reads); with neither, a --confirm is
// refused (USAGE) before anything is read: a record that says "unknown"
// did it proves nothing.

// confirmer is who confirms the steps a run names: the approver, else the
// caller's git identity; "" when neither is known.
func confirmer(o Options) string { return cmp.Or(o.ApprovedBy, o.ConfirmedBy) }

// checkConfirmer refuses a run that confirms a step and cannot say who
// did (USAGE, exit 2).
func checkConfirmer(o Options) error {
	if len(o.Confirm) == 0 || confirmer(o) != "" {
		return nil
	}
	return errs.New(errs.USAGE, "--confirm %s: nobody to record as having done it", o.Confirm[0]).
		WithHint("Name who did it with --approved-by NAME (approved_by in the Action), or set user.name (and user.email) in the checkout's git config.")
}

// OnlySteps reports whether every entry of ledger is a manual step's
// (false for an empty ledger): after a destroy, such a scope waits on
// people confirming undos, and a sweep that destroyed it again would
// only show the same undos again.
func (e *Engine) OnlySteps(ledger receipt.Ledger) bool {
	for _, en := range ledger {
		op, ok := e.Ops.Lookup(en.Adapter, en.Op)
		if !ok {
			return false
		}
		if _, manual := op.(adapter.Stepper); !manual {
			return false
		}
	}
	return len(ledger) > 0
}

// checkUndos refuses a destroy's --confirm that names no manual step of
// the scope's ledger (USAGE), before anything is destroyed.
func (d *destroyer) checkUndos() error {
	var steps []string
	if d.prev != nil {
		for _, en := range d.prev.Ledger {
			if op, ok := d.w.st.e.Ops.Lookup(en.Adapter, en.Op); ok {
				if _, manual := op.(adapter.Stepper); manual {
					steps = append(steps, en.Line)
				}
			}
		}
	}
	for _, id := range d.w.st.o.Confirm {
		if !slices.Contains(steps, id) {
			return errs.New(errs.USAGE, "--confirm names %q, which is no manual step in the ledger of %s/%s", id, d.w.pr.env, d.w.pr.scope).
				WithHint("Confirm the undo of a step this scope recorded: `sponson receipt` lists its ledger.")
		}
	}
	return nil
}

// undoStep is destroy's handling of a manual step's entry: Sponson cannot
// undo what a person did, so it shows how (the undo recorded when the
// step was confirmed) and waits, leaving the entry and the line waiting
// (the destroy ends partial), until a destroy with --confirm <line>
// records who undid it and when, and lets the entry go.
func (d *destroyer) undoStep(en receipt.LedgerEntry) {
	str := func(k string) string { s, _ := en.Outputs[k].(string); return d.w.st.e.redactor().String(s) }
	o := d.w.st.o
	if slices.Contains(o.Confirm, en.Line) {
		d.w.led.remove(en.Ref())
		d.note(en, LineDestroyed, nil)
		lo := d.lines[cmp.Or(en.Line, en.Key)]
		lo.outputs = map[string]any{"title": str("title"), "undone_by": confirmer(o), "undone_at": d.w.st.e.now().UTC().Format(time.RFC3339)}
		return
	}
	t := adapter.Todo{Line: en.Line, Title: str("title"), Undo: str("undo"), ConfirmedBy: str("confirmed_by"), ConfirmedAt: str("confirmed_at")}
	if t.Undo == "" {
		t.Undo = "The step has no undo instructions: check by hand whether what it did should be reverted."
	}
	d.undo = append(d.undo, t)
	d.note(en, LineWaiting, nil)
	d.waiting++
}
