package cloudflare

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/envdiff"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

// The environment the adapter reads.
const (
	TokenVar   = "CLOUDFLARE_API_TOKEN"
	URLVar     = "CLOUDFLARE_API_URL"
	DefaultURL = "https://api.cloudflare.com/client/v4"
)

const opName = "cloudflare.pages_env"

// Deployment configs of a Pages project.
const (
	Preview    = "preview"
	Production = "production"
)

const (
	plainText  = "plain_text"
	secretText = "secret_text"
)

// PagesEnvOp is cloudflare.pages_env.
type PagesEnvOp struct {
	base.Op
}

var (
	_ adapter.Op               = (*PagesEnvOp)(nil)
	_ adapter.Defaulter        = (*PagesEnvOp)(nil)
	_ adapter.ProductionWriter = (*PagesEnvOp)(nil)
	_ adapter.ParentLocker     = (*PagesEnvOp)(nil)
	_ adapter.ScopeLister      = (*PagesEnvOp)(nil)
)

// NewPagesEnv returns cloudflare.pages_env reading its credential and base
// URL from env at each call.
func NewPagesEnv(env httpclient.Env, client *httpclient.Client) *PagesEnvOp {
	return &PagesEnvOp{Op: base.New(pagesEnvSpec, env, client, base.Endpoint{Root: base.Version("/client/v4")})}
}

// Key is the ledger key of one variable of a deployment config.
func Key(target, name string) string { return "env:" + target + ":" + name }

func parseKey(key string) (target, name string, err error) {
	rest, ok := strings.CutPrefix(key, "env:")
	target, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || (target != Preview && target != Production) || name == "" {
		return "", "", errs.New(errs.PARAM_INVALID, "%s: %q is not a cloudflare.pages_env key (env:<target>:<NAME>)", opName, key)
	}
	return target, name, nil
}

type block struct{ account, project string }

func readBlock(p adapter.Provider) (block, error) {
	var b block
	var err error
	if b.account, err = param.RequiredSetting("cloudflare", p, "account"); err != nil {
		return b, err
	}
	b.project, err = param.RequiredSetting("cloudflare", p, "project")
	return b, err
}

func (b block) path() string {
	return "/accounts/" + url.PathEscape(b.account) + "/pages/projects/" + url.PathEscape(b.project)
}

type envReq struct {
	block
	target  string
	vars    map[string]any // NAME → string or marker
	secrets map[string]any // NAME → string or marker
	rewrite bool
}

func (r envReq) names() []string {
	var out []string
	for n := range r.vars {
		out = append(out, n)
	}
	for n := range r.secrets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func target(params map[string]any, run adapter.RunCtx) (string, error) {
	t, present, _, err := param.Str(opName, params, "target", false)
	if err != nil {
		return "", err
	}
	if !present {
		t = run.Env
	}
	if t != Preview && t != Production {
		if !present {
			return "", param.Invalid(opName, "target", "is required: the environment %q is not a Pages deployment config (preview, production)", run.Env)
		}
		return "", param.Invalid(opName, "target", "must be preview or production, got %q", t)
	}
	return t, nil
}

func values(params map[string]any, name string) (map[string]any, error) {
	return param.EnvValues(opName, params, name)
}

func (op *PagesEnvOp) parse(params map[string]any, p adapter.Provider, run adapter.RunCtx) (envReq, error) {
	var r envReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.block, err = readBlock(p); err != nil {
		return r, err
	}
	if r.target, err = target(params, run); err != nil {
		return r, err
	}
	if r.vars, err = values(params, "vars"); err != nil {
		return r, err
	}
	if r.secrets, err = values(params, "secrets"); err != nil {
		return r, err
	}
	for n := range r.vars {
		if _, dup := r.secrets[n]; dup {
			return r, param.Invalid(opName, "secrets."+n, "is also in vars: a Pages variable is either plain text or a secret")
		}
	}
	if len(r.vars)+len(r.secrets) == 0 {
		return r, param.Invalid(opName, "vars", "or secrets is required: a map of variable names to values")
	}
	switch v := params["rewrite_secrets"].(type) {
	case nil:
	case bool:
		r.rewrite = v
	default:
		return r, param.Invalid(opName, "rewrite_secrets", "must be true or false, got %s", param.Describe(v))
	}
	return r, nil
}

// Defaults fills target and validates every parameter.
func (op *PagesEnvOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	r, err := op.parse(params, p, run)
	if err != nil {
		return nil, err
	}
	out := param.Copy(params)
	out["target"] = r.target
	return out, nil
}

// WritesEnvironment is "production" for target production.
func (op *PagesEnvOp) WritesEnvironment(params map[string]any, _ adapter.Provider, run adapter.RunCtx) string {
	if t, err := target(params, run); err == nil && t == Production {
		return Production
	}
	return ""
}

// LockOn is the deployment config: its variables are one map on the
// project, written by merge patches.
func (op *PagesEnvOp) LockOn(params map[string]any, p adapter.Provider) string {
	b, err := readBlock(p)
	if err != nil {
		return ""
	}
	t, _, _, _ := param.Str(opName, params, "target", false)
	if t == "" {
		t = Preview
	}
	return "cloudflare:" + b.account + ":pages:" + b.project + ":" + t
}

type envVar struct {
	Type  string  `json:"type"`
	Value *string `json:"value"`
}

// read answers the target's variables.
func (op *PagesEnvOp) read(ctx context.Context, a httpclient.API, b block, t string) (map[string]envVar, error) {
	var out struct {
		Success bool `json:"success"`
		Result  struct {
			DeploymentConfigs map[string]*struct {
				EnvVars map[string]*envVar `json:"env_vars"`
			} `json:"deployment_configs"`
		} `json:"result"`
	}
	if err := a.Get(ctx, b.path(), nil, &out); err != nil {
		return nil, err
	}
	vars := map[string]envVar{}
	if cfg := out.Result.DeploymentConfigs[t]; cfg != nil {
		for k, v := range cfg.EnvVars {
			if v != nil {
				vars[k] = *v
			}
		}
	}
	return vars, nil
}

// canonical is a variable's canonical value: a plain variable's value; a
// secret's presence only (its value is never answered).
func canonical(v envVar) any {
	if v.Type == secretText {
		return map[string]any{"secret": true}
	}
	if v.Value == nil {
		return nil
	}
	return *v.Value
}

func resourceOf(t, name string, v envVar) adapter.Resource {
	return adapter.Resource{Key: Key(t, name), Value: canonical(v), Outputs: map[string]any{}}
}

// Read returns the line's variables that exist in the target.
func (op *PagesEnvOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	vars, err := op.read(ctx, a, r.block, r.target)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	for _, n := range r.names() {
		if v, ok := vars[n]; ok {
			live.Resources = append(live.Resources, resourceOf(r.target, n, v))
		}
	}
	return live, nil
}

// want is what the line asks of one name: its canonical value (nil when
// not known here) and whether it is kept.
func (r envReq) want(name string) (secret bool, v any) {
	if x, ok := r.secrets[name]; ok {
		return true, x
	}
	return false, r.vars[name]
}

// Diff: plain variables compared by value; secrets by presence (a secret
// that exists is unchanged unless rewrite_secrets). Values are never
// shown.
func (op *PagesEnvOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	var out []adapter.ResourceDiff
	for _, name := range r.names() {
		secret, want := r.want(name)
		key := Key(r.target, name)
		lr := live.Resource(key)
		if m, isMarker := adapter.MarkerOf(want); secret && (!isMarker || m.Kind != adapter.Keep) {
			// A secret is compared by presence; {keep: true} on one is
			// the shared rule's.
			out = append(out, r.secretDiff(key, name, want, lr))
			continue
		}
		path := r.group(secret) + name
		d, err := envdiff.Value(key, path, want, lr, func() error { return r.keepMissing(path, name) })
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (r envReq) group(secret bool) string {
	if secret {
		return "secrets."
	}
	return "vars."
}

// keepMissing refuses {keep: true} on a variable that does not exist.
func (r envReq) keepMissing(path, name string) error {
	return param.Invalid(opName, path, "is {keep: true}, but the %s config has no %s to keep", r.target, name)
}

// secretDiff compares a secret by presence: one that exists is unchanged
// unless rewrite_secrets. Its value is never shown.
func (r envReq) secretDiff(key, name string, want any, lr *adapter.Resource) adapter.ResourceDiff {
	d := adapter.ResourceDiff{Key: key}
	desired := map[string]any{"secret": true}
	_, isMarker := adapter.MarkerOf(want)
	switch {
	case lr == nil:
		d.Action = adapter.Create
		if !isMarker {
			d.Desired = desired
		}
	case adapter.Equal(lr.Value, desired) && !r.rewrite:
		return adapter.ResourceDiff{Key: key, Action: adapter.Unchanged, Desired: lr.Value}
	default:
		d.Action, d.Desired = adapter.Update, desired
	}
	d.Fields = []adapter.FieldDiff{{Path: "secrets." + name}}
	return d
}

// Apply writes every missing or changed variable of the line in one merge
// patch (intend first for the new ones).
func (op *PagesEnvOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	if err := r.concrete(); err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	vars, err := op.read(ctx, a, r.block, r.target)
	if err != nil {
		return nil, err
	}
	patch, created, err := r.plan(vars)
	if err != nil {
		return nil, err
	}
	if len(created) > 0 {
		if err := intend(created...); err != nil {
			return nil, err
		}
	}
	if len(patch) > 0 {
		body := map[string]any{"deployment_configs": map[string]any{r.target: map[string]any{"env_vars": patch}}}
		// A merge patch of absolute values: safe to repeat.
		if err := a.Send(ctx, http.MethodPatch, r.path(), nil, body, true, nil); err != nil {
			if httpclient.Status(err)/100 == 4 {
				return nil, adapter.NotCreated(err, created...)
			}
			return nil, err
		}
		if vars, err = op.read(ctx, a, r.block, r.target); err != nil {
			return nil, err
		}
	}
	res := &adapter.Result{Outputs: map[string]any{}, Created: created}
	for _, name := range r.names() {
		v, ok := vars[name]
		if !ok {
			return nil, errs.New(errs.PROVIDER_RESPONSE, "cloudflare: variable %s of Pages project %s is missing right after it was written", name, r.project)
		}
		res.Resources = append(res.Resources, resourceOf(r.target, name, v))
	}
	return res, nil
}

// concrete refuses a value not known yet: Apply must never receive one.
func (r envReq) concrete() error {
	for n, v := range r.vars {
		if err := param.Concrete(opName, "vars."+n, v); err != nil {
			return err
		}
	}
	for n, v := range r.secrets {
		if err := param.Concrete(opName, "secrets."+n, v); err != nil {
			return err
		}
	}
	return nil
}

// plan is the merge patch of every missing or changed variable (plain ones
// by the env-value rule, secrets by presence unless rewrite_secrets) and
// the keys it creates.
func (r envReq) plan(vars map[string]envVar) (map[string]any, []string, error) {
	patch := map[string]any{}
	var created []string
	for _, name := range r.names() {
		secret, want := r.want(name)
		cur, exists := vars[name]
		var live any
		if cur.Type == plainText && cur.Value != nil {
			live = *cur.Value
		}
		verdict, err := envdiff.Write(want, exists, live, func() error { return r.keepMissing(name, name) })
		if err != nil {
			return nil, nil, err
		}
		typ := plainText
		if secret {
			typ = secretText
		}
		switch {
		case verdict == envdiff.Keep:
			continue
		case verdict == envdiff.Create:
			created = append(created, Key(r.target, name))
		case secret && cur.Type == secretText && !r.rewrite:
			continue
		case !secret && verdict == envdiff.Unchanged:
			continue
		}
		patch[name] = map[string]any{"type": typ, "value": want}
	}
	return patch, created, nil
}

// Lookup finds one variable by key; nil, nil when it does not exist.
func (op *PagesEnvOp) Lookup(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	t, name, err := parseKey(key)
	if err != nil {
		return nil, err
	}
	b, err := readBlock(p)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	vars, err := op.read(ctx, a, b, t)
	if httpclient.IsNotFound(err) {
		return nil, nil // the project is gone, and its variables with it
	}
	if err != nil {
		return nil, err
	}
	v, ok := vars[name]
	if !ok {
		return nil, nil
	}
	res := resourceOf(t, name, v)
	return &res, nil
}

// Destroy deletes the variable (the key set to null in a merge patch);
// gone, or the project gone (404, code 8000007), is success.
func (op *PagesEnvOp) Destroy(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, r adapter.Resource) error {
	t, name, err := parseKey(r.Key)
	if err != nil {
		return err
	}
	b, err := readBlock(p)
	if err != nil {
		return err
	}
	a, err := op.API()
	if err != nil {
		return err
	}
	vars, err := op.read(ctx, a, b, t)
	if httpclient.IsNotFound(err) {
		return nil // the project is gone, and its variables with it
	}
	if err != nil {
		return err
	}
	if _, ok := vars[name]; !ok {
		return nil
	}
	body := map[string]any{"deployment_configs": map[string]any{t: map[string]any{"env_vars": map[string]any{name: nil}}}}
	err = a.Send(ctx, http.MethodPatch, b.path(), nil, body, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

// ListScope lists every variable of the target: what a line could adopt
// with {keep: true}.
func (op *PagesEnvOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	b, err := readBlock(req.Provider)
	if err != nil {
		return nil, err
	}
	t, err := target(req.Params, req.Run)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	vars, err := op.read(ctx, a, b, t)
	if err != nil {
		return nil, err
	}
	out := []adapter.Resource{}
	for n, v := range vars {
		out = append(out, resourceOf(t, n, v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
