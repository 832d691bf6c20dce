package report

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/engine"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/receipt"
)

// Statuses of a report beside the receipt's (complete, partial, failed).
const (
	StatusStale   = "stale"   // apply: this commit is older than one applied; nothing written
	StatusSkipped = "skipped" // nothing ran (a fork, a closed scope, no open pull request)
	StatusOK      = "ok"      // plan: no line in error or blocked
	StatusError   = "error"   // plan: a line in error or blocked, or the plan was refused
)

// Report is what one run of the Action, the bot or the CLI did, in the words
// of its reader: the command, where it ran, how it ended, each line, drift,
// warnings, the preview URLs, the lease that blocked it and where to read
// more.
type Report struct {
	Command string `json:"command"` // plan, apply or destroy
	Env     string `json:"env"`
	Scope   string `json:"scope"`
	// Status is complete, partial, failed, stale or skipped for apply and
	// destroy; ok, error or skipped for plan.
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	RunID    string `json:"run_id,omitempty"`
	// Destroyed is set by a destroy that emptied the ledger; Closed when it
	// also left the tombstone of a closed pull request.
	Destroyed bool `json:"destroyed,omitempty"`
	Closed    bool `json:"closed,omitempty"`
	// SkipReason says why nothing ran (Status skipped).
	SkipReason string `json:"skip_reason,omitempty"`

	Lines    []Line    `json:"lines"`
	Drift    []Drift   `json:"drift"`
	Warnings []Warning `json:"warnings"`
	// URLs are the preview URL outputs of the lines (outputs named
	// preview_url, deploy_url, ... whose value is an http or https URL).
	URLs []Output `json:"urls"`
	// Errors are the run's errors: one, or every error of a refused plan.
	Errors []Error `json:"errors"`
	// Steps are the manual steps waiting on a person: to do (plan,
	// apply) or to undo (destroy), each with how to confirm it.
	Steps []Step `json:"steps,omitempty"`
	// PlanHash is the hash of the plan planned (plan) or applied (the
	// receipt's plan_hash).
	PlanHash string `json:"plan_hash,omitempty"`
	// Lock is the lease of another run that blocked this one (LOCK_HELD,
	// or a wait that timed out), or, for a plan, the apply holding the
	// scope.
	Lock *Lock `json:"lock,omitempty"`
	// Preempted is the lease this run took over (expired, or its GitHub
	// run was over), with why.
	Preempted *Lock `json:"preempted,omitempty"`
	// ApprovalRequired says an apply of this plan needs an approver.
	ApprovalRequired bool `json:"approval_required,omitempty"`
	// Unsaved is set when the receipt could not be written.
	Unsaved *engine.Unsaved `json:"unsaved,omitempty"`
	// Ledger counts what the scope manages after the run.
	Ledger *LedgerCount `json:"ledger,omitempty"`

	Links Links `json:"links"`
	// Store is where the receipt lives and what that store guarantees,
	// so the guarantee in force is visible (the job summary shows it).
	Store *StoreInfo `json:"store,omitempty"`
}

// StoreInfo names a receipt store and its guarantees.
type StoreInfo struct {
	Kind         string               `json:"kind"`     // git-branch, local
	Location     string               `json:"location"` // the remote (no credentials) or folder
	Capabilities receipt.Capabilities `json:"capabilities"`
}

// Line is one plan line's outcome.
type Line struct {
	ID     string `json:"id"`
	Op     string `json:"op"` // adapter.op; "" when unknown
	Status string `json:"status"`
	// Resources are the keys of what the line manages (apply, destroy) or
	// would write (plan).
	Resources []string `json:"resources"`
	// Forgotten are adopted resources a destroy let go of.
	Forgotten []string `json:"forgotten,omitempty"`
	// Drift are the kinds of drift found on the line (missing, changed).
	Drift []string `json:"drift,omitempty"`
	// WaitingOn are the outputs the line waits for ("env.preview_url").
	WaitingOn []string `json:"waiting_on,omitempty"`
	Error     *Error   `json:"error,omitempty"`

	// WaitingFor pairs with WaitingOn: what each waits for ("deploy",
	// "apply"). Parent is the shared object the line's writes lock (plan).
	// Changes are what a plan would write, or an apply wrote, value by
	// value (values.go).
	// Outputs are the line's shown outputs after a run.
	WaitingFor []string `json:"waiting_for,omitempty"`
	Parent     string   `json:"parent,omitempty"`
	Changes    []Change `json:"changes,omitempty"`
	Outputs    []Output `json:"outputs,omitempty"`
}

// Drift is a difference between the ledger and the world.
type Drift struct {
	Kind    string `json:"kind"`
	Line    string `json:"line"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

// Warning is a coded warning.
type Warning struct {
	Code    errs.Code `json:"code"`
	Message string    `json:"message"`
}

// Output is one output value of a line.
type Output struct {
	Line  string `json:"line"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Error is a coded error, with its place in the plan file when it has one.
type Error struct {
	Code    errs.Code `json:"code"`
	Message string    `json:"message"`
	Hint    string    `json:"hint,omitempty"`
	File    string    `json:"file,omitempty"`
	Line    int       `json:"line,omitempty"`
	Column  int       `json:"column,omitempty"`
}

// Lock is a lease as a reader needs it: who holds it, since and until when,
// the GitHub run behind it.
type Lock struct {
	Target     string        `json:"target"`
	Holder     string        `json:"holder"`
	Owner      receipt.Owner `json:"owner"`
	Operation  string        `json:"operation,omitempty"`
	Generation int64         `json:"generation,omitempty"`
	Since      time.Time     `json:"since"`
	Until      time.Time     `json:"until"`
	// RunURL is the holder's GitHub run, when the lease names one and the
	// server is known.
	RunURL string `json:"run_url,omitempty"`
	// Reason says why a lease was taken over (Preempted).
	Reason string `json:"reason,omitempty"`
}

// LedgerCount is what the scope manages after the run.
type LedgerCount struct {
	Resources int `json:"resources"`
	Sponson   int `json:"sponson"`
	Adopted   int `json:"adopted"`
	Intents   int `json:"intents"`
	Orphans   int `json:"orphans"`
}

// Links are where a reader goes next.
type Links struct {
	// Server is GITHUB_SERVER_URL ("https://github.com"); Repo is
	// owner/name. Together they make the run and receipt branch links.
	Server string `json:"server,omitempty"`
	Repo   string `json:"repo,omitempty"`
	// RunID and RunAttempt are this run's GITHUB_RUN_ID and
	// GITHUB_RUN_ATTEMPT.
	RunID      int64 `json:"run_id,omitempty"`
	RunAttempt int   `json:"run_attempt,omitempty"`
	// SHA is the commit the run was for.
	SHA string `json:"sha,omitempty"`
	// PR is the pull request number, 0 outside one.
	PR int `json:"pr,omitempty"`
}

// RunURL is the link to this run, or "".
func (l Links) RunURL() string { return l.runURL(l.RunID, l.RunAttempt) }

func (l Links) runURL(id int64, attempt int) string {
	if l.Server == "" || l.Repo == "" || id == 0 {
		return ""
	}
	u := fmt.Sprintf("%s/%s/actions/runs/%d", strings.TrimRight(l.Server, "/"), l.Repo, id)
	if attempt > 1 {
		u += fmt.Sprintf("/attempts/%d", attempt)
	}
	return u
}

// ReceiptRef is the branch holding the scope's receipt:
// "sponson-receipts/<env>/<scope>" with encoded segments; "" when the scope
// is unknown.
func ReceiptRef(env, scope string) string {
	if env == "" || scope == "" {
		return ""
	}
	return "sponson-receipts/" + receipt.ScopeTarget(env, scope).Key()
}

// ReceiptURL is the link to the receipt branch, or "".
func (r *Report) ReceiptURL() string {
	ref := ReceiptRef(r.Env, r.Scope)
	if ref == "" || r.Links.Server == "" || r.Links.Repo == "" {
		return ""
	}
	// Each segment of the branch is already safe in a path; the '%' of an
	// encoded byte is not, so it is escaped once more.
	return fmt.Sprintf("%s/%s/tree/%s", strings.TrimRight(r.Links.Server, "/"), r.Links.Repo, strings.ReplaceAll(ref, "%", "%25"))
}

// FromPlan is the report of a plan. p, when given, supplies each line's op
// where the result lacks it; err is the plan's error (nil, or a refusal
// before anything was read, when res is nil).
func FromPlan(res *engine.PlanResult, err error, links Links) *Report {
	r := &Report{Command: "plan", Status: StatusOK, Links: links}
	if res != nil {
		r.Env, r.Scope = res.Env, res.Scope
		r.ApprovalRequired = res.ApprovalRequired
		r.PlanHash = res.PlanHash
		drift := map[string][]string{}
		for _, d := range res.Drift {
			r.Drift = append(r.Drift, Drift{Kind: d.Kind, Line: d.Line, Key: d.Key, Message: d.Message})
			if d.Line != "" && !slices.Contains(drift[d.Line], d.Kind) {
				drift[d.Line] = append(drift[d.Line], d.Kind)
			}
		}
		for _, l := range res.Lines {
			line := Line{ID: l.ID, Op: op(l.Adapter, l.Op), Status: l.Status, WaitingOn: l.WaitingOn, Drift: drift[l.ID],
				WaitingFor: l.WaitingFor, Parent: l.Parent, Changes: changesOf(l)}
			for _, d := range l.Diffs {
				if d.Key != "" {
					line.Resources = append(line.Resources, d.Key)
				}
			}
			if l.Error != nil {
				line.Error = &Error{Code: l.Error.Code, Message: l.Error.Message, Hint: l.Error.Hint}
			}
			if l.Status == engine.PlanError || l.Status == engine.PlanBlocked {
				r.Status = StatusError
			}
			r.Lines = append(r.Lines, line)
			if l.Todo != nil {
				r.Steps = append(r.Steps, StepsOf("plan", res.Env, res.Scope, []adapter.Todo{*l.Todo})...)
			}
		}
		r.Warnings = warnings(res.Warnings)
		if res.Lock != nil && res.Lock.Held {
			r.Lock = &Lock{Target: receipt.ScopeTarget(res.Env, res.Scope).String(), Holder: res.Lock.Holder, Owner: res.Lock.Owner,
				Operation: res.Lock.Operation, Since: res.Lock.Since, Until: res.Lock.ExpiresAt}
			r.Lock.RunURL = links.holderURL(res.Lock.Owner)
		}
	}
	r.setError(err)
	if err != nil {
		r.Status = StatusError
	}
	r.ExitCode = exitCode(err, r.Status == StatusError)
	return r
}

// FromRun is the report of an apply or destroy (command). p, when given,
// names each line's op (a receipt's lines do not carry it; the ledger
// names the ops of lines that manage something).
func FromRun(command string, res *engine.RunResult, err error, p *plan.Plan, links Links) *Report {
	r := &Report{Command: command, Status: string(receipt.StatusFailed), Links: links}
	if res != nil {
		r.Env, r.Scope = res.Env, res.Scope
		r.Warnings = warnings(res.Warnings)
		r.Unsaved = res.Unsaved
		if len(res.Todos) > 0 {
			r.Steps = StepsOf(command, res.Env, res.Scope, res.Todos)
		}
	}
	if res != nil && res.Receipt != nil {
		r.fromReceipt(res, p, links)
	}
	r.setError(err)
	if err != nil && r.Status != string(receipt.StatusFailed) && errs.CodeOf(err).Exit() != errs.ExitOK {
		r.Status = string(receipt.StatusFailed)
	}
	r.ExitCode = exitCode(err, false)
	return r
}

// fromReceipt fills what the run's receipt says: its status, ledger, lines
// (in the run's order, then the others by id) and a preempted lease.
func (r *Report) fromReceipt(res *engine.RunResult, p *plan.Plan, links Links) {
	rc := res.Receipt
	r.RunID, r.PlanHash = rc.RunID, rc.PlanHash
	r.Status = string(rc.Status)
	if rc.Stale {
		r.Status = StatusStale
	}
	r.Destroyed, r.Closed = rc.Destroyed, rc.Closed != nil
	r.Ledger = ledgerCount(rc.Ledger)
	ops := lineOps(p, rc.Ledger)
	wrote := map[string]engine.LineChanges{}
	for _, c := range res.Changes {
		wrote[c.Line] = c
	}
	for _, id := range lineOrder(res.Order, rc.Lines) {
		l := rc.Lines[id]
		line := reportLine(id, ops[id], l)
		if c, ok := wrote[id]; ok {
			line.Changes = changesOf(engine.PlanLine{ID: id, Diffs: c.Diffs, Inputs: c.Inputs})
		}
		r.Lines = append(r.Lines, line)
		r.URLs = append(r.URLs, previewURLs(id, l.Outputs)...)
	}
	if pre := rc.LockPreempted; pre != nil {
		r.Preempted = lockOf(*pre, links)
		r.Preempted.Reason = "its lease had expired"
		for _, w := range rc.Warnings {
			if w.Code == errs.LEASE_TAKEN_OVER {
				r.Preempted.Reason = w.Message
			}
		}
	}
}

// lineOps names each line's op: the plan's, else the ledger's (a receipt's
// lines do not carry it).
func lineOps(p *plan.Plan, ledger receipt.Ledger) map[string]string {
	ops := map[string]string{}
	if p != nil {
		for _, l := range p.Lines {
			ops[l.ID] = op(l.Adapter, l.Op)
		}
	}
	for _, e := range ledger {
		if e.Line != "" && ops[e.Line] == "" {
			ops[e.Line] = op(e.Adapter, e.Op)
		}
	}
	return ops
}

// ledgerCount counts the ledger's resources by who created them.
func ledgerCount(ledger receipt.Ledger) *LedgerCount {
	count := &LedgerCount{}
	for _, e := range ledger {
		count.Resources++
		switch e.CreatedBy {
		case receipt.CreatedBySponson:
			count.Sponson++
		case receipt.CreatedByAdopted:
			count.Adopted++
		case receipt.CreatedByIntent:
			count.Intents++
		}
		if e.Orphan {
			count.Orphans++
		}
	}
	return count
}

// lineOrder is the receipt's lines in the run's order, then the others by
// id.
func lineOrder(order []string, lines map[string]receipt.LineResult) []string {
	var ids []string
	for _, id := range order {
		if _, ok := lines[id]; ok {
			ids = append(ids, id)
		}
	}
	rest := make([]string, 0, len(lines))
	for id := range lines {
		if !slices.Contains(order, id) {
			rest = append(rest, id)
		}
	}
	slices.Sort(rest)
	return append(ids, rest...)
}

// reportLine is one line of the receipt as the report shows it.
func reportLine(id, op string, l receipt.LineResult) Line {
	line := Line{ID: id, Op: op, Status: l.Status, Resources: l.Resources, Forgotten: l.Forgotten, Outputs: shownOutputs(id, l.Outputs)}
	if l.Error != "" || l.ErrorCode != "" {
		line.Error = &Error{Code: l.ErrorCode, Message: l.Error}
		if errs.Known(l.ErrorCode) {
			line.Error.Hint = l.ErrorCode.Hint()
		}
		if l.ErrorCode == errs.DRIFT_CHANGED {
			line.Drift = []string{engine.DriftChanged}
		}
	}
	return line
}

// FromError is the report of a command that failed before it had a result
// (no plan, no store, a refusal): status error for plan, failed otherwise.
func FromError(command, env, scope string, err error, links Links) *Report {
	status := string(receipt.StatusFailed)
	if command == "plan" {
		status = StatusError
	}
	r := &Report{Command: command, Env: env, Scope: scope, Status: status, Links: links}
	r.setError(err)
	r.ExitCode = exitCode(err, true)
	return r
}

// Skip is the report of a run that did nothing on purpose: a pull request
// from a fork, a scope closed with its pull request, a deployment with no
// open pull request. Its exit code is 0.
func Skip(command, env, scope, reason string, links Links) *Report {
	return &Report{Command: command, Env: env, Scope: scope, Status: StatusSkipped, SkipReason: reason, Links: links}
}

// In sets where the run was when its result did not say (a refusal before
// the engine ran): the environment and scope, each only when unset.
func (r *Report) In(env, scope string) *Report {
	if r.Env == "" {
		r.Env = env
	}
	if r.Scope == "" {
		r.Scope = scope
	}
	return r
}

func (r *Report) setError(err error) {
	if err == nil {
		return
	}
	var list errs.List
	if !errors.As(err, &list) || len(list) == 0 {
		list = errs.List{errs.Coded(err)}
	}
	for _, e := range list {
		r.Errors = append(r.Errors, errorOf(e))
		if r.Lock != nil {
			continue
		}
		// The blocking lease: on a LOCK_HELD, or a wait (WAIT_TIMEOUT) or a
		// run error (RUN_FAILED) wrapping one.
		if held, ok := e.Details["lease"].(receipt.Lease); ok && (e.Code == errs.LOCK_HELD || e.Code == errs.WAIT_TIMEOUT) {
			r.Lock = lockOf(held, r.Links)
		} else if held, ok := receipt.HeldLease(e.Err); ok {
			r.Lock = lockOf(held, r.Links)
		}
	}
}

func errorOf(e *errs.Error) Error {
	msg := e.Message
	if e.Err != nil {
		msg = strings.TrimPrefix(e.Error(), string(e.Code)+": ")
	}
	return Error{Code: e.Code, Message: msg, Hint: e.HintText(), File: e.File, Line: e.Line, Column: e.Column}
}

func lockOf(l receipt.Lease, links Links) *Lock {
	return &Lock{Target: l.Target.String(), Holder: l.Holder, Owner: l.Owner, Operation: string(l.Operation), Generation: l.Generation,
		Since: l.AcquiredAt, Until: l.ExpiresAt, RunURL: links.holderURL(l.Owner)}
}

// holderURL is the link to a lease holder's GitHub run: on its own
// repository when the owner names one, else on this run's.
func (l Links) holderURL(o receipt.Owner) string {
	if o.GitHubRunID == 0 {
		return ""
	}
	if o.Repository != "" {
		l.Repo = o.Repository
	}
	return l.runURL(o.GitHubRunID, o.GitHubRunAttempt)
}

func warnings(ws []engine.Warning) []Warning {
	var out []Warning
	for _, w := range ws {
		out = append(out, Warning{Code: w.Code, Message: w.Message})
	}
	return out
}

// previewURLs are the outputs of a line that name a preview or a
// deployment's URL (preview_url, deploy_url, deployment_url, ...) and whose
// resolved value is an http or https URL, sorted by name.
func previewURLs(line string, outputs map[string]any) []Output {
	var out []Output
	for name, v := range outputs {
		n := strings.ToLower(name)
		if !strings.HasSuffix(n, "url") || !(strings.Contains(n, "preview") || strings.Contains(n, "deploy")) {
			continue
		}
		s, ok := outputValue(v)
		if !ok {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			continue
		}
		out = append(out, Output{Line: line, Name: name, Value: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// outputValue is a shown output's string value: outputs are stored as
// {state, value}; only literal and resolved values are shown.
func outputValue(v any) (string, bool) {
	switch o := v.(type) {
	case string:
		return o, true
	case map[string]any:
		state, _ := o["state"].(string)
		if state != "" && state != engine.StateResolved && state != engine.StateLiteral {
			return "", false
		}
		s, ok := o["value"].(string)
		return s, ok
	}
	return "", false
}

func op(adapter, o string) string {
	if adapter == "" {
		return o
	}
	return adapter + "." + o
}

func exitCode(err error, failed bool) int {
	if err != nil {
		return errs.CodeOf(err).Exit()
	}
	if failed {
		return errs.ExitFailed
	}
	return errs.ExitOK
}
