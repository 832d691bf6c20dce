package engine

import (
	"fmt"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// judgeIn is what the judgement of one declared resource looks at.
type judgeIn struct {
	Entry     *receipt.LedgerEntry // this scope's entry for the resource, nil when none
	Foreign   string               // the other scope of this env that manages it, "" when none
	Live      *adapter.Resource    // what Read found, nil when it does not exist
	LiveHash  string               // the keyed hash of Live.Value, "" when unknown
	Action    adapter.Action       // what the op's diff says
	Keep      bool                 // the line adopts what is live ({keep: true})
	Reconcile bool                 // the run accepts outside changes
}

// verdict is the judgement of one resource (engine.md, "Inspect one line").
type verdict struct {
	Block   errs.Code // the refusal, "" when the line may go on
	Drift   string    // DriftMissing or DriftChanged, "" when none
	Message string    // says what was found (drift and refusals)
	Quiet   bool      // a live edit that already equals the plan: accepted
	// Foreign: another scope manages it and the line only relies on it; it
	// is never written nor recorded in this scope's ledger.
	Foreign bool
	// Adopt: after this line the entry is created_by adopted (a resource
	// found live that Sponson did not create, or, under --reconcile, one
	// replaced outside Sponson).
	Adopt bool
}

// judge decides one resource. It is the judgement table of engine.md, and
// pure: table tests cover every row.
//
//	entry  foreign live   diff       → verdict
//	none   yes     any    unchanged  → rely on it (Foreign)
//	none   yes     any    other      → OWNED_BY_OTHER_SCOPE
//	none   no      none   create     → create
//	none   no      yes    unchanged  → adopt (it is what the plan says)
//	none   no      yes    keep       → adopt
//	none   no      yes    other      → PROVIDER_CONFLICT (exists, nobody manages it)
//	intent any     any    any        → the create landed (live) or not: no drift
//	ours   any     none   any        → drift missing: recreate
//	ours   any     new id any        → drift changed (replaced): DRIFT_CHANGED, or adopt under --reconcile
//	ours   any     edited unchanged  → accepted quietly
//	ours   any     edited other      → drift changed: DRIFT_CHANGED, or update under --reconcile
func judge(in judgeIn) verdict {
	if in.Entry == nil {
		switch {
		case in.Foreign != "" && in.Action == adapter.Unchanged:
			return verdict{Foreign: true}
		case in.Foreign != "":
			return verdict{Block: errs.OWNED_BY_OTHER_SCOPE,
				Message: fmt.Sprintf("scope %s of this environment manages it; this line may rely on it unchanged but not %s it", in.Foreign, in.Action)}
		case in.Live == nil:
			return verdict{}
		case in.Keep || in.Action == adapter.Unchanged:
			return verdict{Adopt: true}
		default:
			return verdict{Block: errs.PROVIDER_CONFLICT,
				Message: "it exists at the provider and no scope manages it; Sponson does not change what it did not create"}
		}
	}
	if in.Entry.CreatedBy == receipt.CreatedByIntent {
		return verdict{}
	}
	if in.Live == nil {
		return verdict{Drift: DriftMissing, Message: "recorded as applied, gone at the provider: the line recreates it"}
	}
	replaced := in.Entry.ID != "" && in.Live.ID != "" && in.Entry.ID != in.Live.ID
	edited := in.Entry.Hash != "" && in.LiveHash != "" && in.Entry.Hash != in.LiveHash
	switch {
	case replaced && in.Reconcile:
		return verdict{Drift: DriftChanged, Adopt: true,
			Message: fmt.Sprintf("replaced outside Sponson (id %s, was %s): taken over as adopted", in.Live.ID, in.Entry.ID)}
	case replaced:
		return verdict{Block: errs.DRIFT_CHANGED, Drift: DriftChanged,
			Message: fmt.Sprintf("replaced outside Sponson (id %s, was %s)", in.Live.ID, in.Entry.ID)}
	case edited && in.Action == adapter.Unchanged:
		return verdict{Quiet: true}
	case edited && in.Reconcile:
		return verdict{Drift: DriftChanged, Message: "changed outside Sponson: reconciled to the plan"}
	case edited:
		return verdict{Block: errs.DRIFT_CHANGED, Drift: DriftChanged, Message: "changed outside Sponson since the last apply"}
	}
	return verdict{}
}
