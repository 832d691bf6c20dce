package vercel

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
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
	TokenVar   = "VERCEL_TOKEN"
	URLVar     = "VERCEL_API_URL"
	DefaultURL = "https://api.vercel.com"
)

const opName = "vercel.env"

// Targets Vercel knows.
const (
	Preview     = "preview"
	Production  = "production"
	Development = "development"
)

// AllBranches is the branch of a variable that applies to every branch.
const AllBranches = "*"

// EnvOp is vercel.env.
type EnvOp struct {
	base.Op
}

var (
	_ adapter.Op               = (*EnvOp)(nil)
	_ adapter.Defaulter        = (*EnvOp)(nil)
	_ adapter.ProductionWriter = (*EnvOp)(nil)
	_ adapter.Awaiter          = (*EnvOp)(nil)
	_ adapter.ScopeLister      = (*EnvOp)(nil)
)

// NewEnv returns vercel.env reading its credential and base URL from env at
// each call.
func NewEnv(env httpclient.Env, client *httpclient.Client) *EnvOp {
	return &EnvOp{Op: base.New(envSpec, env, client, base.Endpoint{})}
}

// envReq is a parsed line.
type envReq struct {
	project, team  string
	target, branch string
	values         map[string]any // NAME → string or marker
}

func (r envReq) key(name string) string { return Key(r.target, r.branch, name) }

// Key is the ledger key of one variable.
func Key(target, branch, name string) string {
	return "env:" + target + ":" + branch + ":" + name
}

// ParseKey splits a key made by Key. Branch names may hold ':' (git refuses
// it, but the key does not rely on that): target is before the first ':',
// the name after the last.
func ParseKey(key string) (target, branch, name string, ok bool) {
	rest, found := strings.CutPrefix(key, "env:")
	if !found {
		return "", "", "", false
	}
	i, j := strings.Index(rest, ":"), strings.LastIndex(rest, ":")
	if i <= 0 || j <= i+1 || j == len(rest)-1 {
		return "", "", "", false
	}
	return rest[:i], rest[i+1 : j], rest[j+1:], true
}

func (op *EnvOp) block(p adapter.Provider) (project, team string, err error) {
	if project, err = param.RequiredSetting("vercel", p, "project"); err != nil {
		return "", "", err
	}
	team, err = param.Setting("vercel", p, "team")
	return project, team, err
}

// parse reads the parameters after Defaults.
func (op *EnvOp) parse(params map[string]any, p adapter.Provider, run adapter.RunCtx) (envReq, error) {
	var r envReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.project, r.team, err = op.block(p); err != nil {
		return r, err
	}
	if r.target, r.branch, err = targetBranch(params, run); err != nil {
		return r, err
	}
	if r.values, err = param.EnvValues(opName, params, "values"); err != nil {
		return r, err
	}
	if len(r.values) == 0 {
		return r, param.Invalid(opName, "values", "is required: a map of variable names to values")
	}
	return r, nil
}

// targetBranch reads target and branch with their defaults.
func targetBranch(params map[string]any, run adapter.RunCtx) (target, branch string, err error) {
	target, present, _, err := param.Str(opName, params, "target", false)
	if err != nil {
		return "", "", err
	}
	if !present {
		target = run.Env
	}
	switch target {
	case Preview, Production, Development:
	default:
		if !present {
			return "", "", param.Invalid(opName, "target", "is required: the environment %q is not a Vercel target (preview, production, development)", run.Env)
		}
		return "", "", param.Invalid(opName, "target", "must be preview, production or development, got %q", target)
	}
	branch, present, _, err = param.Str(opName, params, "branch", false)
	if err != nil {
		return "", "", err
	}
	switch {
	case !present && target == Preview:
		if run.Branch == "" {
			return "", "", param.Invalid(opName, "branch", "is required: no git branch is known for this run (write branch: \"*\" for every branch)")
		}
		branch = run.Branch
	case !present:
		branch = AllBranches
	case strings.TrimSpace(branch) == "":
		return "", "", param.Invalid(opName, "branch", "must not be empty (write \"*\" for every branch)")
	case target != Preview && branch != AllBranches:
		return "", "", param.Invalid(opName, "branch", "must be \"*\" for target %s: Vercel scopes variables to a git branch only for preview", target)
	}
	return target, branch, nil
}

// Defaults fills target and branch and validates every parameter.
func (op *EnvOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	r, err := op.parse(params, p, run)
	if err != nil {
		return nil, err
	}
	out := param.Copy(params)
	out["target"] = r.target
	out["branch"] = r.branch
	return out, nil
}

// WritesEnvironment is "production" for target production.
func (op *EnvOp) WritesEnvironment(params map[string]any, p adapter.Provider, run adapter.RunCtx) string {
	if t, _, err := targetBranch(params, run); err == nil && t == Production {
		return Production
	}
	return ""
}

// envVar is a variable as the API answers it.
type envVar struct {
	ID        string  `json:"id"`
	Key       string  `json:"key"`
	Value     *string `json:"value"`
	Type      string  `json:"type"`
	Target    targets `json:"target"`
	GitBranch string  `json:"gitBranch"`
	Comment   string  `json:"comment"`
	Decrypted *bool   `json:"decrypted"`
	// CreatedAt and UpdatedAt are the provider's milliseconds.
	CreatedAt json.Number `json:"createdAt"`
	UpdatedAt json.Number `json:"updatedAt"`
}

// targets decodes a target that is a string or a list of strings.
type targets []string

func (t *targets) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		if one == "" {
			*t = nil
		} else {
			*t = targets{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*t = many
	return nil
}

func (v envVar) branch() string {
	if v.GitBranch == "" {
		return AllBranches
	}
	return v.GitBranch
}

// shared reports whether the variable applies to more targets than one.
func (v envVar) shared() bool { return len(v.Target) > 1 }

func (v envVar) value() any {
	if v.Value == nil || v.Type == "sensitive" || v.Type == "secret" {
		return nil
	}
	return *v.Value
}

func projectPath(project string, rest ...string) string {
	p := "/projects/" + url.PathEscape(project) + "/env"
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

func teamQuery(team string) url.Values {
	q := url.Values{}
	if team != "" {
		q.Set("teamId", team)
	}
	return q
}

// list returns the project's variables for target and branch, keyed by
// name. When several match one name, the one for this target alone wins.
// The description declares neither a target nor a paging parameter for
// this listing (filterProjectEnvs: gitBranch, decrypt, source,
// customEnvironmentId/Slug, teamId, slug) and answers every variable in
// one response, so it is read once and filtered here.
func (op *EnvOp) list(ctx context.Context, a httpclient.API, project, team, target, branch string) (map[string]envVar, error) {
	out, err := op.listed(ctx, a, project, team, target, branch)
	if err != nil {
		return nil, err
	}
	for name, v := range out {
		if v.Decrypted != nil && !*v.Decrypted && v.Type == "encrypted" {
			var one envVar
			if err := a.Get(ctx, "/v1"+projectPath(project, v.ID), teamQuery(team), &one); err != nil {
				return nil, err
			}
			v.Value = one.Value
			out[name] = v
		}
	}
	return out, nil
}

// listed is list without the values the listing did not decrypt: enough
// for ids and timestamps.
func (op *EnvOp) listed(ctx context.Context, a httpclient.API, project, team, target, branch string) (map[string]envVar, error) {
	q := teamQuery(team)
	q.Set("decrypt", "true")
	if target == Preview && branch != AllBranches {
		q.Set("gitBranch", branch)
	}
	out := map[string]envVar{}
	var page struct {
		Envs []envVar `json:"envs"`
	}
	if err := a.Get(ctx, "/v10"+projectPath(project), q, &page); err != nil {
		return nil, err
	}
	for _, v := range page.Envs {
		if v.branch() != branch || !slices.Contains(v.Target, target) {
			continue
		}
		if cur, seen := out[v.Key]; seen && len(cur.Target) <= len(v.Target) {
			continue
		}
		out[v.Key] = v
	}
	return out, nil
}

func resourceOf(key string, v envVar) adapter.Resource {
	return adapter.Resource{Key: key, ID: v.ID, Value: v.value(), Outputs: map[string]any{}}
}

// Read returns the line's variables that exist. External outputs are not
// read here (AwaitExternal).
func (op *EnvOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	vars, err := op.list(ctx, a, r.project, r.team, r.target, r.branch)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(r.values)) {
		if v, ok := vars[name]; ok {
			live.Resources = append(live.Resources, resourceOf(r.key(name), v))
		}
	}
	return live, nil
}

// Diff compares each declared variable with live. A pending or secret value
// differs from anything live (it is not known here) and has no Desired.
// A known value is in the field diff, before and after (the engine hides
// both when it comes from a secret or a sensitive output); a pending or
// secret one is not.
func (op *EnvOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	return envdiff.Values("values", r.values, live, r.key, r.keepMissing)
}

// keepMissing refuses {keep: true} on a variable that does not exist.
func (r envReq) keepMissing(name string) error {
	return param.Invalid(opName, "values."+name, "is {keep: true}, but no variable %s exists for %s/%s to keep", name, r.target, r.branch)
}

// Apply creates missing variables (intend first, all at once) and updates
// changed ones, from a fresh read of the project (live is not trusted for
// the shape of variables it does not describe).
func (op *EnvOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	for name, v := range r.values {
		if err := param.Concrete(opName, "values."+name, v); err != nil {
			return nil, err
		}
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	vars, err := op.list(ctx, a, r.project, r.team, r.target, r.branch)
	if err != nil {
		return nil, err
	}
	creates, updates, err := r.plan(vars)
	if err != nil {
		return nil, err
	}
	if len(creates) > 0 {
		if err := intend(r.keys(creates)...); err != nil {
			return nil, err
		}
	}
	if err := r.write(ctx, a, vars, creates, updates, Mark(req.Run)); err != nil {
		return nil, err
	}
	var redeployed map[string]any
	if len(creates)+len(updates) > 0 {
		if vars, err = op.list(ctx, a, r.project, r.team, r.target, r.branch); err != nil {
			return nil, err
		}
		if redeployed, err = op.redeploy(ctx, a, r, req.Run, vars); err != nil {
			return nil, err
		}
	}
	res, err := r.result(vars, redeployed)
	if err != nil {
		return nil, err
	}
	res.Created = r.keys(creates)
	return res, nil
}

// plan sorts the line's variables into creates and updates by the
// env-value rule; a variable shared with other targets is not changed
// (PROVIDER_CONFLICT).
func (r envReq) plan(vars map[string]envVar) (creates, updates []string, err error) {
	for _, name := range slices.Sorted(maps.Keys(r.values)) {
		want := r.values[name]
		v, exists := vars[name]
		verdict, err := envdiff.Write(want, exists, v.value(), func() error { return r.keepMissing(name) })
		if err != nil {
			return nil, nil, err
		}
		switch verdict {
		case envdiff.Create:
			creates = append(creates, name)
		case envdiff.Update:
			if v.shared() {
				return nil, nil, errs.New(errs.PROVIDER_CONFLICT, "vercel: variable %s of project %s applies to %s, not only %s: changing it would change the others", name, r.project, strings.Join(v.Target, ", "), r.target).
					WithHint("Split the variable per target in the Vercel dashboard, or adopt it unchanged with {keep: true}.")
			}
			updates = append(updates, name)
		}
	}
	return creates, updates, nil
}

func (r envReq) keys(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, r.key(n))
	}
	return out
}

// write sends the updates, then the creates (upserts: safe to repeat).
func (r envReq) write(ctx context.Context, a httpclient.API, vars map[string]envVar, creates, updates []string, mark string) error {
	for _, name := range updates {
		body := map[string]any{"value": r.values[name], "type": "encrypted"}
		if c := vars[name].Comment; c == "" || c == mark {
			// A person's comment stays: the variable is theirs to
			// describe (and an adopted one is never destroyed).
			body["comment"] = mark
		}
		if err := a.Send(ctx, http.MethodPatch, "/v9"+projectPath(r.project, vars[name].ID), teamQuery(r.team), body, true, nil); err != nil {
			return err
		}
	}
	for _, name := range creates {
		body := map[string]any{"key": name, "value": r.values[name], "type": "encrypted", "target": []string{r.target}, "comment": mark}
		if r.target == Preview && r.branch != AllBranches {
			body["gitBranch"] = r.branch
		}
		q := teamQuery(r.team)
		q.Set("upsert", "true")
		if err := a.Send(ctx, http.MethodPost, "/v10"+projectPath(r.project), q, body, true, nil); err != nil {
			return err
		}
	}
	return nil
}

// result is every variable of the line as the project now has it.
func (r envReq) result(vars map[string]envVar, redeployed map[string]any) (*adapter.Result, error) {
	res := &adapter.Result{Outputs: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(r.values)) {
		v, ok := vars[name]
		if !ok {
			return nil, errs.New(errs.PROVIDER_RESPONSE, "vercel: variable %s of project %s is missing right after it was written", name, r.project)
		}
		rs := resourceOf(r.key(name), v)
		if redeployed != nil {
			rs.Outputs[RedeployOutput] = redeployed
		}
		res.Resources = append(res.Resources, rs)
	}
	return res, nil
}

// lookup finds the variable of a key, with its value.
func (op *EnvOp) lookup(ctx context.Context, p adapter.Provider, key string) (httpclient.API, string, string, *envVar, error) {
	return op.find(ctx, p, key, op.list)
}

// located finds the variable of a key for CheckMark and Destroy, which
// need its id, comment and targets but not its value: the listing alone
// (no read per encrypted variable). When ctx carries the read cache the
// engine makes for one entry's destroy, the mark check and the delete
// share that one listing: the variable is read once before it is deleted.
func (op *EnvOp) located(ctx context.Context, p adapter.Provider, key string) (httpclient.API, string, string, *envVar, error) {
	c, identity := adapter.ReadCacheFrom(ctx)
	if c == nil {
		return op.find(ctx, p, key, op.listed)
	}
	return op.find(ctx, p, key, func(ctx context.Context, a httpclient.API, project, team, target, branch string) (map[string]envVar, error) {
		v, err := c.Load(identity, opName+" "+project+" "+team+" "+target+" "+branch, func() (any, error) {
			return op.listed(ctx, a, project, team, target, branch)
		})
		vars, _ := v.(map[string]envVar)
		return vars, err
	})
}

type lister func(ctx context.Context, a httpclient.API, project, team, target, branch string) (map[string]envVar, error)

// find finds the variable of a key in what read lists.
func (op *EnvOp) find(ctx context.Context, p adapter.Provider, key string, read lister) (httpclient.API, string, string, *envVar, error) {
	target, branch, name, ok := ParseKey(key)
	if !ok {
		return httpclient.API{}, "", "", nil, errs.New(errs.PARAM_INVALID, "%s: %q is not a vercel.env key (env:<target>:<branch>:<NAME>)", opName, key)
	}
	project, team, err := op.block(p)
	if err != nil {
		return httpclient.API{}, "", "", nil, err
	}
	a, err := op.API()
	if err != nil {
		return httpclient.API{}, "", "", nil, err
	}
	vars, err := read(ctx, a, project, team, target, branch)
	if err != nil {
		return httpclient.API{}, "", "", nil, err
	}
	v, found := vars[name]
	if !found {
		return a, project, team, nil, nil
	}
	return a, project, team, &v, nil
}

// Lookup finds one variable by key; nil, nil when it does not exist.
func (op *EnvOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	_, _, _, v, err := op.lookup(ctx, p, key)
	if err != nil || v == nil {
		return nil, err
	}
	res := resourceOf(key, *v)
	return &res, nil
}

// Destroy deletes the variable of r.Key. Gone, or replaced by a variable
// with another id (someone re-created it), is success and touches nothing.
// A variable shared with other targets is refused (PROVIDER_CONFLICT).
func (op *EnvOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	a, project, team, v, err := op.located(ctx, p, r.Key)
	if err != nil || v == nil {
		return err
	}
	if r.ID != "" && v.ID != r.ID {
		return nil
	}
	if v.shared() {
		return errs.New(errs.PROVIDER_CONFLICT, "vercel: variable %s of project %s applies to %s: deleting it would delete it for the others too", v.Key, project, strings.Join(v.Target, ", ")).
			WithHint("Remove it in the Vercel dashboard, or drop it from the ledger with sponson's forget.")
	}
	err = a.Send(ctx, http.MethodDelete, "/v9"+projectPath(project, v.ID), teamQuery(team), nil, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

// ListScope lists every variable of the line's project, target and branch:
// what a line could adopt with {keep: true}.
func (op *EnvOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	project, team, err := op.block(req.Provider)
	if err != nil {
		return nil, err
	}
	target, branch, err := targetBranch(req.Params, req.Run)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	vars, err := op.list(ctx, a, project, team, target, branch)
	if err != nil {
		return nil, err
	}
	out := make([]adapter.Resource, 0, len(vars))
	for name, v := range vars {
		out = append(out, resourceOf(Key(target, branch, name), v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
