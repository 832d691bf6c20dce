// Package manual is the manual adapter: manual.step, a step a person does
// (rotate a key in a console, click "verify domain"), planned and recorded
// like any other line.
//
// manual.step parameters: title, instructions (Markdown), undo (Markdown,
// shown when the scope is destroyed), vars (NAME → value, value forms
// included, shown beside the instructions), verify ({url, method GET|HEAD,
// status default 200, contains}: a read-only HTTP check that the step is
// done).
//
// Model (decisions where the issue is silent):
//   - The step's state is the ledger: key step:<line>, its value the
//     title, instructions, undo, vars and verify. A step whose value is as
//     recorded is unchanged; a new or changed step is a todo: plan shows
//     it, apply leaves the line waiting (the run ends partial, lines that
//     depend on it wait) until apply --confirm <line> says it is done.
//   - Confirming runs verify first (STEP_NOT_DONE when it says no), then
//     records who confirmed it (--approved-by, else the git identity; USAGE
//     with neither) and when, as outputs.
//   - Nothing is sent to a provider: Read, Lookup and Destroy make no
//     request; a step is never rolled back. Destroy shows its undo and
//     waits on it as apply waits on the step: the entry stays and the
//     destroy ends partial until destroy --confirm <line> records who
//     undid it.
package manual

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

const opName = "manual.step"

var stepSpec = adapter.Spec{
	Adapter: "manual", Op: "step", Manual: true,
	Summary: "a step a person does, shown as a todo until apply --confirm <line> records who did it",
	API:     "none of a provider's: only verify, when given, sends one GET or HEAD to the URL the line names",
	Params: []adapter.ParamSpec{
		{Name: "title", Type: adapter.TypeString, Required: true, Doc: "what to do, in a few words"},
		{Name: "instructions", Type: adapter.TypeString, Required: true, Doc: "how to do it (Markdown)"},
		{Name: "undo", Type: adapter.TypeString, Doc: "how to undo it when the scope is destroyed (Markdown): destroy shows it and waits until destroy --confirm <line>"},
		{Name: "vars", Type: adapter.TypeMap, Doc: "NAME → value shown beside the instructions (value forms included)"},
		{Name: "verify", Type: adapter.TypeObject, Doc: "a read-only HTTP check that the step is done, run when it is confirmed",
			Fields: []adapter.ParamSpec{
				{Name: "url", Type: adapter.TypeString, Doc: "the URL to request (required)"},
				{Name: "method", Type: adapter.TypeString, Enum: []string{"GET", "HEAD"}, Default: "GET", Doc: "the method"},
				{Name: "status", Type: adapter.TypeInt, Default: "200", Doc: "the status that means done"},
				{Name: "contains", Type: adapter.TypeString, Doc: "text the answer's body must hold"},
			}},
	},
	Outputs: []adapter.OutputSpec{
		{Name: "confirmed_by", When: adapter.Immediate, Doc: "who confirmed the step: --approved-by, else the checkout's git identity"},
		{Name: "confirmed_at", When: adapter.Immediate, Doc: "when (RFC 3339, UTC)"},
		{Name: "title", When: adapter.Immediate, Doc: "the step's title, as confirmed"},
		{Name: "undo", When: adapter.Immediate, Doc: "its undo instructions, as confirmed: destroy shows them"},
	},
	Key: "step:<line>",
}

// StepOp is manual.step.
type StepOp struct {
	base.Op
	now func() time.Time
}

var (
	_ adapter.Op        = (*StepOp)(nil)
	_ adapter.Defaulter = (*StepOp)(nil)
	_ adapter.Stepper   = (*StepOp)(nil)
)

// NewStep returns manual.step; verify requests go through client, and now
// stamps confirmations.
func NewStep(client *httpclient.Client, now func() time.Time) *StepOp {
	if now == nil {
		now = time.Now
	}
	return &StepOp{Op: base.New(stepSpec, nil, client, base.Endpoint{}), now: now}
}

// Key is the ledger key of a line's step.
func Key(line string) string { return "step:" + line }

type verify struct {
	url, method, contains string
	status                int
}

type step struct {
	title, instructions, undo string
	vars                      map[string]any
	verify                    *verify
}

func (op *StepOp) parse(params map[string]any, allowPending bool) (step, error) {
	var s step
	if err := op.Known(params); err != nil {
		return s, err
	}
	var err error
	for _, f := range []struct {
		name string
		dst  *string
		req  bool
	}{{"title", &s.title, true}, {"instructions", &s.instructions, true}, {"undo", &s.undo, false}} {
		if f.req {
			if *f.dst, _, err = param.Required(opName, params, f.name, allowPending); err != nil {
				return s, err
			}
		} else if *f.dst, _, _, err = param.Str(opName, params, f.name, allowPending); err != nil {
			return s, err
		}
	}
	if s.vars, err = param.Map(opName, params, "vars"); err != nil {
		return s, err
	}
	vm, err := param.Map(opName, params, "verify")
	if err != nil || vm == nil {
		return s, err
	}
	s.verify, err = parseVerify(vm, allowPending)
	return s, err
}

// parseVerify reads the verify block: a GET (or HEAD) that answers the
// status, and holds the text, once the step is done.
func parseVerify(vm map[string]any, allowPending bool) (*verify, error) {
	v := &verify{method: http.MethodGet, status: http.StatusOK}
	for k, x := range vm {
		if err := v.set(k, x, allowPending); err != nil {
			return nil, err
		}
	}
	if _, ok := vm["url"]; !ok {
		return nil, param.Invalid(opName, "verify.url", "is required")
	}
	return v, nil
}

// set reads one setting of the verify block.
func (v *verify) set(k string, x any, allowPending bool) error {
	switch k {
	case "url":
		u, isS := x.(string)
		if m, isM := adapter.MarkerOf(x); isM && m.Kind == adapter.Pending && allowPending {
			return nil
		}
		pu, perr := url.Parse(u)
		if !isS || perr != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return param.Invalid(opName, "verify.url", "must be an absolute http(s) URL")
		}
		v.url = u
	case "method":
		m, _ := x.(string)
		if m = strings.ToUpper(m); m != http.MethodGet && m != http.MethodHead {
			return param.Invalid(opName, "verify.method", "must be GET or HEAD: the check never writes")
		}
		v.method = m
	case "status":
		n, ok := param.Int(x)
		if !ok || n < 100 || n > 599 {
			return param.Invalid(opName, "verify.status", "must be an HTTP status such as 200")
		}
		v.status = n
	case "contains":
		c, isS := x.(string)
		if !isS {
			return param.Invalid(opName, "verify.contains", "must be a string")
		}
		v.contains = c
	default:
		return param.Invalid(opName, "verify."+k, "is not a verify setting (url, method, status, contains)")
	}
	return nil
}

// Defaults validates the parameters.
func (op *StepOp) Defaults(params map[string]any, _ adapter.Provider, _ adapter.RunCtx) (map[string]any, error) {
	if _, err := op.parse(params, true); err != nil {
		return nil, err
	}
	return param.Copy(params), nil
}

// value is the step as the ledger hashes it: a change to any part makes it
// a todo again.
func value(params map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range stepSpec.ParamNames() {
		if v, ok := params[k]; ok {
			out[k] = v
		}
	}
	return out
}

// Read makes no request: a step leaves nothing at a provider, and whether
// it was done is the ledger's to say.
func (op *StepOp) Read(_ context.Context, req adapter.Request) (*adapter.Live, error) {
	if _, err := op.parse(req.Params, true); err != nil {
		return nil, err
	}
	return &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}, nil
}

// Diff is a create of the step (the engine compares it with the ledger).
func (op *StepOp) Diff(_ *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	if _, err := op.parse(req.Params, true); err != nil {
		return nil, err
	}
	v := value(req.Params)
	d := adapter.ResourceDiff{Key: Key(req.Line), Action: adapter.Create, Fields: []adapter.FieldDiff{{Path: "title", After: req.Params["title"]}}}
	if !adapter.HasMarker(v) {
		d.Desired = v
	}
	return []adapter.ResourceDiff{d}, nil
}

// Todo is the line's step, its values for display (markers are null).
func (op *StepOp) Todo(req adapter.Request) adapter.Todo {
	s, _ := op.parse(req.Params, true)
	t := adapter.Todo{Line: req.Line, Title: s.title, Instructions: s.instructions, Undo: s.undo}
	if len(s.vars) > 0 {
		t.Vars = map[string]any{}
		for k, v := range s.vars {
			if adapter.HasMarker(v) {
				v = nil
			}
			t.Vars[k] = v
		}
	}
	if s.verify != nil && s.verify.url != "" {
		t.Verify = s.verify.method + " " + s.verify.url + " → " + strconv.Itoa(s.verify.status)
		if s.verify.contains != "" {
			t.Verify += " containing " + strconv.Quote(s.verify.contains)
		}
	}
	return t
}

// Verify runs the step's check: the answer's status (and body text) must
// be the step's. STEP_NOT_DONE when they are not; PROVIDER_* when the URL
// cannot be reached.
func (op *StepOp) Verify(ctx context.Context, req adapter.Request) error {
	s, err := op.parse(req.Params, false)
	if err != nil || s.verify == nil {
		return err
	}
	resp, err := op.Client.Do(ctx, &httpclient.Request{Provider: "manual verify", Method: s.verify.method, BaseURL: s.verify.url})
	status, body := 0, ""
	var se *httpclient.StatusError
	switch {
	case err == nil:
		status, body = resp.Status, string(resp.Body)
	case errors.As(err, &se):
		status = se.Status
	default:
		return err
	}
	if status != s.verify.status || (s.verify.contains != "" && !strings.Contains(body, s.verify.contains)) {
		return errs.New(errs.STEP_NOT_DONE, "%s %q: %s %s answered %d, the step wants %d%s", opName, s.title, s.verify.method, s.verify.url, status, s.verify.status,
			map[bool]string{true: " with " + strconv.Quote(s.verify.contains) + " in the body", false: ""}[s.verify.contains != ""]).With("line", req.Line)
	}
	return nil
}

// Apply records the confirmed step: who confirmed it (req.Run.Actor: the
// approver, else the git identity) and when. It sends nothing, and
// records nobody as "unknown": without a confirmer it is USAGE.
func (op *StepOp) Apply(_ context.Context, req adapter.Request, _ *adapter.Live, _ adapter.Intend) (*adapter.Result, error) {
	s, err := op.parse(req.Params, false)
	if err != nil {
		return nil, err
	}
	if req.Run.Actor == "" {
		return nil, errs.New(errs.USAGE, "%s %q: confirmed with nobody to record as having done it", opName, s.title).With("line", req.Line).
			WithHint("Name who did it with --approved-by NAME, or set user.name in the checkout's git config.")
	}
	outs := map[string]any{"confirmed_by": req.Run.Actor, "confirmed_at": op.now().UTC().Format(time.RFC3339), "title": s.title}
	if s.undo != "" {
		outs["undo"] = s.undo
	}
	res := adapter.Resource{Key: Key(req.Line), Value: value(req.Params), Outputs: outs}
	return &adapter.Result{Resources: []adapter.Resource{res}, Created: []string{res.Key}, Outputs: outs}, nil
}

// Lookup makes no request: a step leaves nothing to find.
func (op *StepOp) Lookup(context.Context, adapter.Provider, adapter.RunCtx, string) (*adapter.Resource, error) {
	return nil, nil
}

// Destroy makes no request (the engine never calls it for a step: it
// shows the undo and waits for a person to confirm it).
func (op *StepOp) Destroy(context.Context, adapter.Provider, adapter.RunCtx, adapter.Resource) error {
	return nil
}
