package adapter

import "context"

// KeyJudge is an op that can tell, from a ledger key alone (no line, no
// parameters), what the resource is. Destroy works from a ledger that a
// person with push access to the store could have edited, so it asks
// before deleting an entry. Pure: no provider call.
type KeyJudge interface {
	// KeyEnvironment returns "production" when the resource of key is
	// production's, or the name of the provider's environment it is in,
	// "" when it cannot tell; destroying it needs a named approver when
	// the name is production's by plan.Production.
	KeyEnvironment(key string, provider Provider, run RunCtx) string
	// CheckKey returns nil when a line of this op could have produced key
	// in a run of run.Env and run.Scope, whatever its parameters; otherwise
	// an error that says why not (a production variable's key in a preview
	// scope, a key of another op's shape).
	CheckKey(key string, provider Provider, run RunCtx) error
}

// Marked is an op whose resources carry, at the provider, a mark of the
// scope that made them (a Neon branch's name, a Vercel variable's
// comment, a Netlify value's branch context). Destroy asks it, just
// before it deletes an entry the store proves, whether the resource still
// carries the mark of the scope whose ledger names it: a resource whose
// mark names another scope, or that lacks the mark where the op always
// writes one, is left alone (RESOURCE_UNMARKED). The op's doc says what
// its mark is and what it cannot tell.
type Marked interface {
	// CheckMark returns nil when the resource of r (its key and id as the
	// ledger records them) carries the mark of run.Env and run.Scope, or
	// is gone (Destroy then finds nothing to delete); an error coded
	// RESOURCE_UNMARKED that says what the mark is when it does not; any
	// other error when the provider could not be read. run.Branch is the
	// scope's git branch as its receipt recorded it. Never writes.
	CheckMark(ctx context.Context, provider Provider, run RunCtx, r Resource) error
}
