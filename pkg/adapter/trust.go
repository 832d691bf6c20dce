package adapter

// KeyJudge is an op that can tell, from a ledger key alone (no line, no
// parameters), what the resource is. Destroy works from a ledger that a
// person with push access to the store could have edited, so it asks
// before deleting an entry. Pure: no provider call.
type KeyJudge interface {
	// KeyEnvironment returns "production" when the resource of key is
	// production's (destroying it needs a named approver), "" otherwise.
	KeyEnvironment(key string, provider Provider, run RunCtx) string
	// CheckKey returns nil when a line of this op could have produced key
	// in a run of run.Env and run.Scope, whatever its parameters; otherwise
	// an error that says why not (a production variable's key in a preview
	// scope, a key of another op's shape).
	CheckKey(key string, provider Provider, run RunCtx) error
}
