package engine

import (
	"time"

	"github.com/sponson/apply/pkg/adapter"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Value states: how a value that is not shown is explained (engine.md,
// "Output and errors"). A value whose state is not literal or resolved is
// null beside its state, never placeholder text.
const (
	StateLiteral  = "literal"  // written in the plan
	StateResolved = "resolved" // another line's output, known now
	StatePending  = "pending"  // not known yet (waiting_for says on what)
	StateSecret   = "secret"   // a secret, or a sensitive output: never shown
	StateKept     = "kept"     // {keep: true}, or a once-only output an earlier run wrote: whatever is live
)

// Plan line statuses.
const (
	PlanCreate    = "create"
	PlanUpdate    = "update"
	PlanUnchanged = "unchanged"
	PlanPending   = "pending"
	PlanBlocked   = "blocked"
	PlanError     = "error"
)

// Apply and destroy line statuses (receipt lines).
const (
	LineCreated        = "created"
	LineUpdated        = "updated"
	LineUnchanged      = "unchanged"
	LineWaiting        = "waiting"
	LineSkipped        = "skipped"
	LineBlocked        = "blocked"
	LineFailed         = "failed"
	LineRolledBack     = "rolled_back"
	LineRollbackFailed = "rollback_failed"
	LineDestroyed      = "destroyed"
	LineForgotten      = "forgotten"
	LineDestroyFailed  = "destroy_failed"
)

// Drift kinds.
const (
	DriftMissing   = "missing"   // the ledger says we applied it; it is gone live
	DriftChanged   = "changed"   // edited or replaced outside Sponson
	DriftOrphan    = "orphan"    // we created it; no line declares it now
	DriftUnmanaged = "unmanaged" // exists where a line could own it; no scope manages it
)

// PlanResult is what plan found: the JSON shape scripts, the Action and the
// bot rely on ({env, scope, lines, drift, warnings, lock}; fields are added,
// never renamed).
type PlanResult struct {
	Env      string     `json:"env"`
	Scope    string     `json:"scope"`
	Lines    []PlanLine `json:"lines"`
	Drift    []Drift    `json:"drift"`
	Warnings []Warning  `json:"warnings"`
	// Lock is the scope's lease when an apply holds it (plan takes none).
	Lock *LockInfo `json:"lock"`
	// ApprovalRequired says an apply of this plan needs --approved-by.
	ApprovalRequired bool `json:"approval_required"`
	// PlanHash is plan.Hash of the plan: an apply of the same content
	// records the same hash in its receipt (plan_hash).
	PlanHash string `json:"plan_hash"`
}

// PlanLine is one line of a plan.
type PlanLine struct {
	ID      string `json:"id"`
	Adapter string `json:"adapter"`
	Op      string `json:"op"`
	Status  string `json:"status"`
	Diffs   []Diff `json:"diffs"`
	// Inputs are the line's parameter leaves, each with its state.
	Inputs []Input `json:"inputs"`
	// WaitingOn are the outputs ("db.connection_string") not known yet;
	// WaitingFor, pairwise, what they wait for: an event ("deploy") or
	// "apply" (the line has not been applied).
	WaitingOn  []string   `json:"waiting_on"`
	WaitingFor []string   `json:"waiting_for"`
	Error      *LineError `json:"error"`
	// Parent is the shared object the line's writes lock, when it has one.
	Parent string `json:"parent,omitempty"`
	// Recipe is the recipe the line was written as (github.repo_webhook);
	// Op is what it runs as.
	Recipe string `json:"recipe,omitempty"`
	// Todo is the step a person is asked to do, for a manual step not yet
	// confirmed (apply --confirm <line> records who did it).
	Todo *adapter.Todo `json:"todo,omitempty"`
}

// Diff is one resource's diff.
type Diff struct {
	Key    string      `json:"key"`
	Action string      `json:"action"`
	Fields []FieldDiff `json:"fields"`
}

// FieldDiff is one field that differs. Before and After are values, or nil
// beside a state when they are not shown.
type FieldDiff struct {
	Path        string `json:"path"`
	Before      any    `json:"before"`
	After       any    `json:"after"`
	BeforeState string `json:"before_state,omitempty"`
	AfterState  string `json:"after_state,omitempty"`
	// AfterRef is the reference a pending or secret value comes from.
	AfterRef string `json:"after_ref,omitempty"`
}

// Input is one parameter leaf of a line.
type Input struct {
	Path  string `json:"path"`
	State string `json:"state"`
	// Ref is the from ("db.host") or secret ("env://X") reference.
	Ref   string `json:"ref,omitempty"`
	Value any    `json:"value"`
	// WaitingFor is what a pending input waits for: an event or "apply".
	WaitingFor string `json:"waiting_for,omitempty"`
}

// LineError is a line's error: its code, message and hint.
type LineError struct {
	Code    errs.Code `json:"code"`
	Message string    `json:"message"`
	Hint    string    `json:"hint,omitempty"`
}

// Drift is a difference between the ledger and the world.
type Drift struct {
	Kind    string `json:"kind"`
	Line    string `json:"line"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

// Warning is reported beside a result; it never changes the exit code.
type Warning = receipt.Warning

// LockInfo describes a lease seen on the scope.
type LockInfo struct {
	Held      bool          `json:"held"`
	Holder    string        `json:"holder"`
	Operation string        `json:"operation,omitempty"`
	Since     time.Time     `json:"since"`
	ExpiresAt time.Time     `json:"expires_at"`
	Expired   bool          `json:"expired"`
	Owner     receipt.Owner `json:"owner"`
}

// RunResult is what apply or destroy did: the JSON shape {env, scope,
// receipt: {version, run_id, status, stale, destroyed, closed, lines,
// ledger, history}, warnings}. Receipt is the receipt as written (or, for a
// stale run, as it would have been: nothing was written).
type RunResult struct {
	Env     string           `json:"env"`
	Scope   string           `json:"scope"`
	Receipt *receipt.Receipt `json:"receipt"`
	// Order is the ids of the receipt's lines: for apply in run order
	// (dependencies first, ties by file order) whatever the interleaving of
	// lines that ran at once; for destroy in the order the ledger was
	// walked.
	Order    []string  `json:"order"`
	Warnings []Warning `json:"warnings"`
	// Todos are the manual steps this run waits on (apply), in run order:
	// what to do, and how to confirm it.
	Todos []adapter.Todo `json:"todos,omitempty"`
	// Unsaved is set when the final receipt write failed after providers
	// were touched: where the receipt was kept and how to finish the job.
	Unsaved *Unsaved `json:"unsaved,omitempty"`
	// Changes are what an apply wrote, line by line in run order, field by
	// field as plan shows them: only lines created or updated, only
	// resources that changed. Destroy leaves it empty.
	Changes []LineChanges `json:"changes,omitempty"`
}

// LineChanges is what an apply wrote to one line's resources: its diffs
// (before → after; secrets and sensitive values as states, never values)
// and its inputs, which say what a value not in a diff came from.
type LineChanges struct {
	Line   string  `json:"line"`
	Diffs  []Diff  `json:"diffs"`
	Inputs []Input `json:"inputs"`
}

// Unsaved says what was applied but not recorded.
type Unsaved struct {
	Path      string   `json:"path"`
	Ref       string   `json:"ref,omitempty"` // the store's copy (git: a side ref), when it keeps one
	Resources []string `json:"resources"`     // "adapter.op key" of entries the stored ledger lacks or records differently
	Command   string   `json:"command"`
}

// lineError renders a coded error.
func lineError(err error) *LineError {
	if err == nil {
		return nil
	}
	e := errs.Coded(err)
	msg := e.Message
	if e.Err != nil {
		msg = e.Error()
		// Error() repeats the code: keep the message readable.
		if len(msg) > len(e.Code)+2 && msg[:len(e.Code)] == string(e.Code) {
			msg = msg[len(e.Code)+2:]
		}
	}
	return &LineError{Code: e.Code, Message: msg, Hint: e.HintText()}
}
