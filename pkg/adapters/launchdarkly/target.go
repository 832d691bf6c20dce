package launchdarkly

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

// The environment the adapter reads.
const (
	TokenVar   = "LAUNCHDARKLY_ACCESS_TOKEN"
	URLVar     = "LAUNCHDARKLY_API_URL"
	DefaultURL = "https://app.launchdarkly.com"
	apiPath    = "/api/v2"
	// SemanticPatch is the media type of a semantic patch.
	SemanticPatch = "application/json; domain-model=launchdarkly.semanticpatch"
)

const opName = "launchdarkly.flag_target"

// DefaultContextKind is the context kind of a target unless the line says.
const DefaultContextKind = "user"

// TargetOp is launchdarkly.flag_target.
type TargetOp struct {
	base.Op
}

var (
	_ adapter.Op               = (*TargetOp)(nil)
	_ adapter.Defaulter        = (*TargetOp)(nil)
	_ adapter.ProductionWriter = (*TargetOp)(nil)
	_ adapter.ScopeLister      = (*TargetOp)(nil)
)

// NewTarget returns launchdarkly.flag_target reading its credential and base
// URL from env at each call.
func NewTarget(env httpclient.Env, client *httpclient.Client) *TargetOp {
	return &TargetOp{Op: base.New(targetSpec, env, client, base.Endpoint{Root: base.Suffix(apiPath), RawToken: true})}
}

// Key is the ledger key of one target.
func Key(env, flag, kind, key string) string {
	return "target:" + env + ":" + flag + ":" + kind + ":" + key
}

// ParseKey splits a key made by Key. The context key is last and may hold
// ':'; environment, flag and kind keys cannot.
func ParseKey(k string) (env, flag, kind, key string, ok bool) {
	rest, found := strings.CutPrefix(k, "target:")
	parts := strings.SplitN(rest, ":", 4)
	if !found || len(parts) != 4 || parts[0] == "" || parts[1] == "" || parts[2] == "" || parts[3] == "" {
		return "", "", "", "", false
	}
	return parts[0], parts[1], parts[2], parts[3], true
}

type block struct {
	project, environment string
	production           bool
}

func readBlock(p adapter.Provider) (block, error) {
	var b block
	var err error
	if b.project, err = param.RequiredSetting("launchdarkly", p, "project"); err != nil {
		return b, err
	}
	if b.environment, err = param.RequiredSetting("launchdarkly", p, "environment"); err != nil {
		return b, err
	}
	switch v := p["production"].(type) {
	case nil:
	case bool:
		b.production = v
	case string:
		if b.production, err = strconv.ParseBool(v); err != nil {
			return b, errs.New(errs.PARAM_INVALID, "providers.launchdarkly.production must be true or false").With("param", "providers.launchdarkly.production")
		}
	default:
		return b, errs.New(errs.PARAM_INVALID, "providers.launchdarkly.production must be true or false, got %s", param.Describe(v)).With("param", "providers.launchdarkly.production")
	}
	return b, nil
}

type targetReq struct {
	block
	flag, key, kind string
	variation       any // a name or a value
}

func (r targetReq) ledgerKey() string { return Key(r.environment, r.flag, r.kind, r.key) }

func (op *TargetOp) parse(params map[string]any, p adapter.Provider, allowPending bool) (targetReq, error) {
	var r targetReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.block, err = readBlock(p); err != nil {
		return r, err
	}
	if r.flag, _, err = param.Required(opName, params, "flag", false); err != nil {
		return r, err
	}
	if r.key, _, err = param.Required(opName, params, "key", allowPending); err != nil {
		return r, err
	}
	kind, present, _, err := param.Str(opName, params, "context_kind", false)
	if err != nil {
		return r, err
	}
	if !present {
		kind = DefaultContextKind
	}
	if strings.TrimSpace(kind) == "" || strings.Contains(kind, ":") {
		return r, param.Invalid(opName, "context_kind", "must be a context kind key such as user or organization")
	}
	r.kind = kind
	if strings.Contains(r.flag, ":") || strings.Contains(r.environment, ":") {
		return r, param.Invalid(opName, "flag", "and the environment key must not contain ':'")
	}
	v, ok := params["variation"]
	switch {
	case !ok || v == nil:
		r.variation = true
	default:
		if _, isM := adapter.MarkerOf(v); isM {
			return r, param.Invalid(opName, "variation", "must be a variation's name or value written in the plan, it is %s", param.Describe(v))
		}
		switch v.(type) {
		case string, bool, int, int64, float64:
			r.variation = v
		default:
			return r, param.Invalid(opName, "variation", "must be a variation's name or value (a string, number or bool), got %s", param.Describe(v))
		}
	}
	return r, nil
}

// Defaults sets key to the scope, context_kind to user and variation to
// true.
func (op *TargetOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	out := param.Copy(params)
	if _, ok := out["key"]; !ok {
		if run.Scope == "" {
			return nil, param.Invalid(opName, "key", "is required: the run has no scope to target")
		}
		out["key"] = run.Scope
	}
	if _, ok := out["context_kind"]; !ok {
		out["context_kind"] = DefaultContextKind
	}
	if _, ok := out["variation"]; !ok {
		out["variation"] = true
	}
	if _, err := op.parse(out, p, true); err != nil {
		return nil, err
	}
	return out, nil
}

// WritesEnvironment is "production" when the provider block says the
// environment is production, else the environment's key: the engine gates
// a name that says production (plan.Production: production, prod-eu) the
// same way.
func (op *TargetOp) WritesEnvironment(_ map[string]any, p adapter.Provider, _ adapter.RunCtx) string {
	b, err := readBlock(p)
	switch {
	case err != nil:
		return ""
	case b.production:
		return "production"
	}
	return b.environment
}

// flag is the part of a flag the op reads.
type flag struct {
	Key        string `json:"key"`
	Variations []struct {
		ID    string          `json:"_id"`
		Value json.RawMessage `json:"value"`
		Name  string          `json:"name"`
	} `json:"variations"`
	Environments map[string]struct {
		Targets        []target `json:"targets"`
		ContextTargets []target `json:"contextTargets"`
	} `json:"environments"`
}

type target struct {
	Values      []string `json:"values"`
	Variation   int      `json:"variation"`
	ContextKind string   `json:"contextKind"`
}

func flagPath(project, key string) string {
	return "/flags/" + url.PathEscape(project) + "/" + url.PathEscape(key)
}

// getFlag reads the flag in one environment. PROVIDER_NOT_FOUND when the
// flag does not exist (the op never creates flags); PROVIDER_INVALID when
// the environment is not the flag's.
func (op *TargetOp) getFlag(ctx context.Context, a httpclient.API, b block, key string) (*flag, error) {
	var f flag
	if err := a.Get(ctx, flagPath(b.project, key), url.Values{"env": {b.environment}}, &f); err != nil {
		if httpclient.IsNotFound(err) {
			return nil, errs.Wrap(err, errs.PROVIDER_NOT_FOUND, "launchdarkly: project %s has no flag %s", b.project, key).With("param", "flag").
				WithHint("Create the flag in LaunchDarkly first: Sponson only targets existing flags.")
		}
		return nil, err
	}
	if _, ok := f.Environments[b.environment]; !ok {
		return nil, errs.New(errs.PROVIDER_NOT_FOUND, "launchdarkly: flag %s of project %s has no environment %s", key, b.project, b.environment).With("param", "providers.launchdarkly.environment")
	}
	return &f, nil
}

// current is the variation index that targets the key, or -1.
func (f *flag) current(env, kind, key string) int {
	e := f.Environments[env]
	for _, list := range [][]target{e.Targets, e.ContextTargets} {
		for _, t := range list {
			k := t.ContextKind
			if k == "" {
				k = DefaultContextKind
			}
			if k != kind {
				continue
			}
			for _, v := range t.Values {
				if v == key {
					return t.Variation
				}
			}
		}
	}
	return -1
}

// variationIndex finds the variation the line names: by name first, then
// by value (a string also matches the JSON text of a non-string value, so
// "true" names the variation true).
func (f *flag) variationIndex(want any) int {
	if s, ok := want.(string); ok {
		for i, v := range f.Variations {
			if v.Name != "" && v.Name == s {
				return i
			}
		}
	}
	wantJSON, _ := json.Marshal(want)
	for i, v := range f.Variations {
		if jsonEqual(v.Value, wantJSON) {
			return i
		}
		if s, ok := want.(string); ok && strings.TrimSpace(string(v.Value)) == s {
			return i
		}
	}
	return -1
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return adapter.Equal(x, y)
}

// label is how a variation is shown and hashed: its name, else its value.
func (f *flag) label(i int) any {
	if i < 0 || i >= len(f.Variations) {
		return nil
	}
	if f.Variations[i].Name != "" {
		return f.Variations[i].Name
	}
	var v any
	_ = json.Unmarshal(f.Variations[i].Value, &v)
	return v
}

func (r targetReq) resource(f *flag, idx int) adapter.Resource {
	return adapter.Resource{Key: r.ledgerKey(), Value: map[string]any{"variation": f.label(idx)},
		Outputs: map[string]any{"key": r.key, "variation": f.label(idx)}}
}

// wantIndex resolves the line's variation on the flag; PARAM_INVALID when
// the flag has no such variation.
func (r targetReq) wantIndex(f *flag) (int, error) {
	i := f.variationIndex(r.variation)
	if i < 0 {
		var names []string
		for j := range f.Variations {
			b, _ := json.Marshal(f.label(j))
			names = append(names, string(b))
		}
		return -1, param.Invalid(opName, "variation", "names no variation of flag %s (it has %s)", r.flag, strings.Join(names, ", "))
	}
	return i, nil
}

// Read returns the target when the key is an individual target of the
// flag in the environment. Its value is the targeted variation in the
// line's own terms: the name or value the line wrote when it is that one,
// else the targeted variation's name (or value, when it has none).
func (op *TargetOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	f, err := op.getFlag(ctx, a, r.block, r.flag)
	if err != nil {
		return nil, err
	}
	want, err := r.wantIndex(f)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}, Read: &flagRead{project: r.project, environment: r.environment, flag: f}}
	cur := f.current(r.environment, r.kind, r.key)
	if cur < 0 {
		return live, nil
	}
	res := r.resource(f, cur)
	if cur == want {
		res.Value = map[string]any{"variation": r.variation}
	}
	live.Resources = append(live.Resources, res)
	live.Outputs = res.Outputs
	return live, nil
}

// Diff: create when the key is not targeted, update when it is targeted
// on another variation, unchanged otherwise.
func (op *TargetOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	d := adapter.ResourceDiff{Key: r.ledgerKey()}
	lr := live.Resource(d.Key)
	if lr == nil {
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: "variation", After: r.variation}}
		return []adapter.ResourceDiff{d}, nil
	}
	lv, _ := lr.Value.(map[string]any)
	if adapter.Equal(lv["variation"], r.variation) {
		d.Action, d.Desired = adapter.Unchanged, lr.Value
		return []adapter.ResourceDiff{d}, nil
	}
	d.Action = adapter.Update
	d.Fields = []adapter.FieldDiff{{Path: "variation", Before: lv["variation"], After: r.variation}}
	return []adapter.ResourceDiff{d}, nil
}

type instruction struct {
	Kind        string   `json:"kind"`
	ContextKind string   `json:"contextKind"`
	Values      []string `json:"values"`
	VariationID string   `json:"variationId"`
}

// patch sends one semantic patch to the flag in the block's environment.
// An environment that requires approvals refuses it; that is said plainly.
func (op *TargetOp) patch(ctx context.Context, a httpclient.API, b block, flagKey, comment string, ins ...instruction) error {
	body := map[string]any{"environmentKey": b.environment, "instructions": ins, "comment": comment}
	a.Header = http.Header{"Content-Type": {SemanticPatch}}
	// Adding a target that is there, or removing one that is not, changes
	// nothing: the patch is safe to repeat.
	err := a.Send(ctx, http.MethodPatch, flagPath(b.project, flagKey), nil, body, true, nil)
	if err == nil {
		return nil
	}
	st := httpclient.Status(err)
	if st == http.StatusMethodNotAllowed || (st/100 == 4 && strings.Contains(strings.ToLower(err.Error()), "approval")) {
		return errs.Wrap(err, errs.PROVIDER_CONFLICT, "launchdarkly: environment %s of project %s requires approval for changes to flag %s", b.environment, b.project, flagKey).
			WithHint("Sponson does not bypass LaunchDarkly approvals: target this scope in an environment without required approvals, or request the change in LaunchDarkly.")
	}
	return err
}

// flagRead is the flag as Read fetched it (adapter.Live.Read): the
// variations' ids and the environment's targets Apply needs.
type flagRead struct {
	project, environment string
	flag                 *flag
}

// from is the flag Read fetched for r, or nil when live holds none for it.
func (fr *flagRead) from(r targetReq) *flag {
	if fr == nil || fr.flag == nil || fr.project != r.project || fr.environment != r.environment || fr.flag.Key != r.flag {
		return nil
	}
	return fr.flag
}

// Apply adds the key as a target of the variation (intend first), or moves
// it there from another variation in one patch. It starts from the flag
// the engine's Read just fetched (live.Read), so a create or a move is one
// read and one write; without it, it reads the flag first. A read that
// went stale in between does no harm: the semantic patch's instructions
// name the key and a variation id, not positions or versions (adding a
// present target, or removing an absent one, changes nothing; a key added
// to one variation leaves the others), so the patch is right against the
// flag as it is when LaunchDarkly applies it.
func (op *TargetOp) Apply(ctx context.Context, req adapter.Request, live *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	var f *flag
	if live != nil {
		fr, _ := live.Read.(*flagRead)
		f = fr.from(r)
	}
	if f == nil {
		if f, err = op.getFlag(ctx, a, r.block, r.flag); err != nil {
			return nil, err
		}
	}
	want, err := r.wantIndex(f)
	if err != nil {
		return nil, err
	}
	cur := f.current(r.environment, r.kind, r.key)
	res := &adapter.Result{}
	comment := "sponson: " + req.Line
	switch {
	case cur == want:
	case cur >= 0:
		err = op.patch(ctx, a, r.block, r.flag, comment,
			instruction{Kind: "removeTargets", ContextKind: r.kind, Values: []string{r.key}, VariationID: f.Variations[cur].ID},
			instruction{Kind: "addTargets", ContextKind: r.kind, Values: []string{r.key}, VariationID: f.Variations[want].ID})
	default:
		if err := intend(r.ledgerKey()); err != nil {
			return nil, err
		}
		err = op.patch(ctx, a, r.block, r.flag, comment,
			instruction{Kind: "addTargets", ContextKind: r.kind, Values: []string{r.key}, VariationID: f.Variations[want].ID})
		if err != nil && !httpclient.IsAmbiguous(err) && httpclient.Status(err)/100 == 4 {
			return nil, adapter.NotCreated(err, r.ledgerKey())
		}
		res.Created = []string{r.ledgerKey()}
	}
	if err != nil {
		return nil, err
	}
	rs := r.resource(f, want)
	rs.Value = map[string]any{"variation": r.variation}
	res.Resources = []adapter.Resource{rs}
	res.Outputs = rs.Outputs
	return res, nil
}

func (op *TargetOp) fromKey(p adapter.Provider, key string) (targetReq, error) {
	var r targetReq
	env, fl, kind, k, ok := ParseKey(key)
	if !ok {
		return r, errs.New(errs.PARAM_INVALID, "%s: %q is not a launchdarkly.flag_target key (target:<env>:<flag>:<kind>:<key>)", opName, key)
	}
	b, err := readBlock(p)
	if err != nil {
		return r, err
	}
	b.environment = env
	return targetReq{block: b, flag: fl, kind: kind, key: k}, nil
}

// Lookup finds a target by key; nil, nil when the key is not targeted.
// Its value names the targeted variation, whichever it is.
func (op *TargetOp) Lookup(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	r, err := op.fromKey(p, key)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	f, err := op.getFlag(ctx, a, r.block, r.flag)
	if err != nil {
		return nil, err
	}
	cur := f.current(r.environment, r.kind, r.key)
	if cur < 0 {
		return nil, nil
	}
	res := r.resource(f, cur)
	return &res, nil
}

// Destroy removes the key from the flag's individual targets, whichever
// variation it is on. Not targeted, or the flag gone, is success. The flag
// itself is never deleted, created or toggled.
func (op *TargetOp) Destroy(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, res adapter.Resource) error {
	r, err := op.fromKey(p, res.Key)
	if err != nil {
		return err
	}
	a, err := op.API()
	if err != nil {
		return err
	}
	f, err := op.getFlag(ctx, a, r.block, r.flag)
	if errs.CodeOf(err) == errs.PROVIDER_NOT_FOUND {
		return nil
	}
	if err != nil {
		return err
	}
	cur := f.current(r.environment, r.kind, r.key)
	if cur < 0 {
		return nil
	}
	return op.patch(ctx, a, r.block, r.flag, "sponson: destroy",
		instruction{Kind: "removeTargets", ContextKind: r.kind, Values: []string{r.key}, VariationID: f.Variations[cur].ID})
}

// ListScope is the line's target when the key is targeted.
func (op *TargetOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	live, err := op.Read(ctx, req)
	if err != nil {
		return nil, err
	}
	return live.Resources, nil
}
