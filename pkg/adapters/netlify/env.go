package netlify

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/base"
	"github.com/sponson/apply/pkg/adapters/internal/envdiff"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

// The environment the adapter reads.
const (
	TokenVar   = "NETLIFY_AUTH_TOKEN"
	URLVar     = "NETLIFY_API_URL"
	DefaultURL = "https://api.netlify.com/api/v1"
)

const opName = "netlify.env"

// Contexts a value can be set for.
const (
	Production    = "production"
	DeployPreview = "deploy-preview"
	BranchDeploy  = "branch-deploy"
	Dev           = "dev"
	Branch        = "branch" // with a branch name (context_parameter)
)

// EnvOp is netlify.env.
type EnvOp struct {
	base.Op
}

var (
	_ adapter.Op               = (*EnvOp)(nil)
	_ adapter.Defaulter        = (*EnvOp)(nil)
	_ adapter.ProductionWriter = (*EnvOp)(nil)
	_ adapter.ParentLocker     = (*EnvOp)(nil)
	_ adapter.Awaiter          = (*EnvOp)(nil)
	_ adapter.ScopeLister      = (*EnvOp)(nil)
)

// NewEnv returns netlify.env reading its credential and base URL from env at
// each call.
func NewEnv(env httpclient.Env, client *httpclient.Client) *EnvOp {
	return &EnvOp{Op: base.New(envSpec, env, client, base.Endpoint{Root: base.Version("/api/v1")})}
}

// Key is the ledger key of one variable's value in one context.
func Key(context, branch, name string) string {
	if context == Branch {
		return "env:" + Branch + ":" + branch + ":" + name
	}
	return "env:" + context + ":" + name
}

// ParseKey splits a key made by Key (a branch may hold ':'; the name is
// after the last one).
func ParseKey(key string) (context, branch, name string, ok bool) {
	rest, found := strings.CutPrefix(key, "env:")
	i, j := strings.Index(rest, ":"), strings.LastIndex(rest, ":")
	if !found || i <= 0 || j == len(rest)-1 {
		return "", "", "", false
	}
	context, name = rest[:i], rest[j+1:]
	if context == Branch {
		if j <= i+1 {
			return "", "", "", false
		}
		branch = rest[i+1 : j]
	} else if i != j {
		return "", "", "", false
	}
	return context, branch, name, true
}

type block struct{ site, account string }

func readBlock(p adapter.Provider) (block, error) {
	var b block
	var err error
	if b.site, err = param.RequiredSetting("netlify", p, "site"); err != nil {
		return b, err
	}
	b.account, err = param.Setting("netlify", p, "account")
	return b, err
}

type envReq struct {
	block
	context, branch string
	values          map[string]any
}

func (r envReq) key(name string) string { return Key(r.context, r.branch, name) }

// contextBranch reads context and branch with their defaults: context
// deploy-preview for --env preview, production for --env production;
// branch (context branch only) the run's git branch.
func contextBranch(params map[string]any, run adapter.RunCtx) (string, string, error) {
	ctx, present, _, err := param.Str(opName, params, "context", false)
	if err != nil {
		return "", "", err
	}
	if !present {
		switch run.Env {
		case "preview":
			ctx = DeployPreview
		case "production":
			ctx = Production
		default:
			return "", "", param.Invalid(opName, "context", "is required: the environment %q is not a Netlify deploy context (production, deploy-preview, branch-deploy, dev, branch)", run.Env)
		}
	}
	switch ctx {
	case Production, DeployPreview, BranchDeploy, Dev, Branch:
	default:
		return "", "", param.Invalid(opName, "context", "must be production, deploy-preview, branch-deploy, dev or branch, got %q", ctx)
	}
	br, bpresent, _, err := param.Str(opName, params, "branch", false)
	if err != nil {
		return "", "", err
	}
	switch {
	case ctx != Branch && bpresent:
		return "", "", param.Invalid(opName, "branch", "is only for context branch (a branch's own value)")
	case ctx == Branch && !bpresent:
		if run.Branch == "" {
			return "", "", param.Invalid(opName, "branch", "is required for context branch: no git branch is known for this run")
		}
		br = run.Branch
	case ctx == Branch && strings.TrimSpace(br) == "":
		return "", "", param.Invalid(opName, "branch", "must not be empty")
	}
	return ctx, br, nil
}

func (op *EnvOp) parse(params map[string]any, p adapter.Provider, run adapter.RunCtx) (envReq, error) {
	var r envReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.block, err = readBlock(p); err != nil {
		return r, err
	}
	if r.context, r.branch, err = contextBranch(params, run); err != nil {
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

// Defaults fills context (and branch) and validates every parameter.
func (op *EnvOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	r, err := op.parse(params, p, run)
	if err != nil {
		return nil, err
	}
	out := param.Copy(params)
	out["context"] = r.context
	if r.context == Branch {
		out["branch"] = r.branch
	}
	return out, nil
}

// WritesEnvironment is "production" for context production.
func (op *EnvOp) WritesEnvironment(params map[string]any, _ adapter.Provider, run adapter.RunCtx) string {
	if c, _, err := contextBranch(params, run); err == nil && c == Production {
		return "production"
	}
	return ""
}

// LockOn is the site's variables: values of one variable are shared by the
// scopes (and contexts) that set them, and creating a variable races with
// setting a value on it.
func (op *EnvOp) LockOn(_ map[string]any, p adapter.Provider) string {
	b, err := readBlock(p)
	if err != nil {
		return ""
	}
	return "netlify:" + b.site + ":env"
}

// account is the block's account, else the site's (GET /sites/{id}).
func (op *EnvOp) account(ctx context.Context, a httpclient.API, b block) (string, error) {
	if b.account != "" {
		return b.account, nil
	}
	var site struct {
		AccountID   string `json:"account_id"`
		AccountSlug string `json:"account_slug"`
	}
	if err := a.Get(ctx, "/sites/"+url.PathEscape(b.site), nil, &site); err != nil {
		return "", err
	}
	if site.AccountID != "" {
		return site.AccountID, nil
	}
	if site.AccountSlug != "" {
		return site.AccountSlug, nil
	}
	return "", errs.New(errs.PROVIDER_RESPONSE, "netlify: site %s names no account", b.site).
		WithHint("Set providers.netlify.account to the team's account id or slug.")
}

type envValue struct {
	ID               string  `json:"id"`
	Value            *string `json:"value"`
	Context          string  `json:"context"`
	ContextParameter string  `json:"context_parameter"`
}

type envVar struct {
	Key       string     `json:"key"`
	Values    []envValue `json:"values"`
	IsSecret  bool       `json:"is_secret"`
	UpdatedAt string     `json:"updated_at"`
}

// value is the variable's value for the context, or nil.
func (v *envVar) value(context, branch string) *envValue {
	for i := range v.Values {
		x := &v.Values[i]
		if x.Context == context && (context != Branch || x.ContextParameter == branch) {
			return x
		}
	}
	return nil
}

func (v *envVar) hasAll() bool {
	for _, x := range v.Values {
		if x.Context == "all" {
			return true
		}
	}
	return false
}

// session is one op call's view of the site's variables.
type session struct {
	a       httpclient.API
	account string
	b       block
	vars    map[string]*envVar
}

func (s *session) query() url.Values { return url.Values{"site_id": {s.b.site}} }

func (s *session) envPath(rest ...string) string {
	p := "/accounts/" + url.PathEscape(s.account) + "/env"
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

func (op *EnvOp) open(ctx context.Context, b block) (*session, error) {
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	acct, err := op.account(ctx, a, b)
	if err != nil {
		return nil, err
	}
	s := &session{a: a, account: acct, b: b}
	return s, s.reload(ctx)
}

func (s *session) reload(ctx context.Context) error {
	var list []envVar
	if err := s.a.Get(ctx, s.envPath(), s.query(), &list); err != nil {
		return err
	}
	s.vars = map[string]*envVar{}
	for i := range list {
		s.vars[list[i].Key] = &list[i]
	}
	return nil
}

// known is the value as the provider answers it: nil for a secret, or
// when there is none.
func known(v *envVar, x *envValue) any {
	if x == nil || x.Value == nil || v.IsSecret {
		return nil
	}
	return *x.Value
}

func resourceOf(key string, v *envVar, x *envValue) adapter.Resource {
	return adapter.Resource{Key: key, ID: x.ID, Value: known(v, x), Outputs: map[string]any{}}
}

// Read returns the line's values that exist. External outputs are
// AwaitExternal's.
func (op *EnvOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	s, err := op.open(ctx, r.block)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(r.values)) {
		if v := s.vars[name]; v != nil {
			if x := v.value(r.context, r.branch); x != nil {
				live.Resources = append(live.Resources, resourceOf(r.key(name), v, x))
			}
		}
	}
	return live, nil
}

// Diff compares each declared value with live. A known value is in the
// field diff, before and after (the engine hides both when it comes from a
// secret or a sensitive output); a pending or secret one is not.
func (op *EnvOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	return envdiff.Values("values", r.values, live, r.key, r.keepMissing)
}

// keepMissing refuses {keep: true} on a value that does not exist.
func (r envReq) keepMissing(name string) error {
	return param.Invalid(opName, "values."+name, "is {keep: true}, but %s has no %s value to keep", name, r.context)
}

func (r envReq) valueBody(v string) map[string]any {
	b := map[string]any{"context": r.context, "value": v}
	if r.context == Branch {
		b["context_parameter"] = r.branch
	}
	return b
}

// Apply creates missing values (intend first: new variables in one POST,
// values on existing variables by PATCH) and updates changed ones.
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
	s, err := op.open(ctx, r.block)
	if err != nil {
		return nil, err
	}
	w, err := r.plan(s)
	if err != nil {
		return nil, err
	}
	created := slices.Sorted(slices.Values(append(slices.Clone(w.newVars), w.newValues...)))
	if len(created) > 0 {
		if err := intend(r.keys(created)...); err != nil {
			return nil, err
		}
	}
	if err := r.write(ctx, s, w); err != nil {
		return nil, err
	}
	var redeployed map[string]any
	if len(created)+len(w.updates) > 0 {
		if err := s.reload(ctx); err != nil {
			return nil, err
		}
		if redeployed, err = op.redeploy(ctx, s, r, req.Run); err != nil {
			return nil, err
		}
	}
	res, err := r.result(s, redeployed)
	if err != nil {
		return nil, err
	}
	res.Created = r.keys(created)
	return res, nil
}

// writes are what Apply sends: variables to create with their value,
// values to add to existing variables, values to change.
type writes struct{ newVars, newValues, updates []string }

// plan sorts the line's values into writes by the env-value rule.
func (r envReq) plan(s *session) (writes, error) {
	var w writes
	for _, name := range slices.Sorted(maps.Keys(r.values)) {
		v := s.vars[name]
		var x *envValue
		if v != nil {
			x = v.value(r.context, r.branch)
		}
		verdict, err := envdiff.Write(r.values[name], x != nil, known(v, x), func() error { return r.keepMissing(name) })
		if err != nil {
			return w, err
		}
		switch {
		case verdict == envdiff.Keep:
		case v == nil:
			w.newVars = append(w.newVars, name)
		case v.hasAll():
			return w, errs.New(errs.PROVIDER_CONFLICT, "netlify: variable %s of site %s has one value for all deploy contexts; setting the %s value would change how it is stored for every context", name, r.site, r.context).
				WithHint("Give the variable per-context values in the Netlify UI, or adopt it unchanged with {keep: true}.")
		case verdict == envdiff.Create:
			w.newValues = append(w.newValues, name)
		case verdict == envdiff.Update:
			w.updates = append(w.updates, name)
		}
	}
	return w, nil
}

func (r envReq) keys(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, r.key(n))
	}
	return out
}

// write sends the values (setting one context's value is absolute: safe to
// repeat), then the new variables in one POST.
func (r envReq) write(ctx context.Context, s *session, w writes) error {
	for _, name := range append(slices.Clone(w.newValues), w.updates...) {
		if err := s.a.Send(ctx, http.MethodPatch, s.envPath(name), s.query(), r.valueBody(r.values[name].(string)), true, nil); err != nil {
			return err
		}
	}
	if len(w.newVars) == 0 {
		return nil
	}
	body := make([]any, len(w.newVars))
	for i, name := range w.newVars {
		body[i] = map[string]any{"key": name, "values": []any{r.valueBody(r.values[name].(string))}}
	}
	if err := s.a.Send(ctx, http.MethodPost, s.envPath(), s.query(), body, false, nil); err != nil {
		if !httpclient.IsAmbiguous(err) && errs.CodeOf(err) != errs.PROVIDER_RESPONSE {
			return adapter.NotCreated(err, r.keys(w.newVars)...)
		}
		return err // the intents are resolved by lookup
	}
	return nil
}

// result is every value of the line as the site now has it.
func (r envReq) result(s *session, redeployed map[string]any) (*adapter.Result, error) {
	res := &adapter.Result{Outputs: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(r.values)) {
		v := s.vars[name]
		var x *envValue
		if v != nil {
			x = v.value(r.context, r.branch)
		}
		if x == nil {
			return nil, errs.New(errs.PROVIDER_RESPONSE, "netlify: the %s value of %s is missing right after it was written", r.context, name)
		}
		rs := resourceOf(r.key(name), v, x)
		if v.IsSecret {
			rs.Value = r.values[name]
		}
		if redeployed != nil {
			rs.Outputs[RedeployOutput] = redeployed
		}
		res.Resources = append(res.Resources, rs)
	}
	return res, nil
}

func (op *EnvOp) lookup(ctx context.Context, p adapter.Provider, key string) (*session, string, *envVar, *envValue, error) {
	c, br, name, ok := ParseKey(key)
	if !ok {
		return nil, "", nil, nil, errs.New(errs.PARAM_INVALID, "%s: %q is not a netlify.env key (env:<context>[:<branch>]:<NAME>)", opName, key)
	}
	b, err := readBlock(p)
	if err != nil {
		return nil, "", nil, nil, err
	}
	s, err := op.open(ctx, b)
	if httpclient.IsNotFound(err) {
		return nil, name, nil, nil, nil // the site is gone, and its values with it
	}
	if err != nil {
		return nil, "", nil, nil, err
	}
	v := s.vars[name]
	if v == nil {
		return s, name, nil, nil, nil
	}
	return s, name, v, v.value(c, br), nil
}

// Lookup finds one context's value by key; nil, nil when it does not
// exist.
func (op *EnvOp) Lookup(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	_, _, v, x, err := op.lookup(ctx, p, key)
	if err != nil || x == nil {
		return nil, err
	}
	res := resourceOf(key, v, x)
	return &res, nil
}

// Destroy removes the context's value: the whole variable when it is the
// variable's only value, else just that value. Gone, the site gone (404),
// or a value with another id, is success and touches nothing.
func (op *EnvOp) Destroy(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, r adapter.Resource) error {
	s, name, v, x, err := op.lookup(ctx, p, r.Key)
	if err != nil || x == nil {
		return err
	}
	if r.ID != "" && x.ID != r.ID {
		return nil
	}
	path := s.envPath(name, "value", x.ID)
	if len(v.Values) == 1 {
		path = s.envPath(name)
	}
	err = s.a.Send(ctx, http.MethodDelete, path, s.query(), nil, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

// ListScope lists every variable's value in the line's context: what a
// line could adopt with {keep: true}.
func (op *EnvOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	b, err := readBlock(req.Provider)
	if err != nil {
		return nil, err
	}
	c, br, err := contextBranch(req.Params, req.Run)
	if err != nil {
		return nil, err
	}
	s, err := op.open(ctx, b)
	if err != nil {
		return nil, err
	}
	var out []adapter.Resource
	for name, v := range s.vars {
		if x := v.value(c, br); x != nil {
			out = append(out, resourceOf(Key(c, br, name), v, x))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// deploy is an entry of GET /sites/{id}/deploys.
type deploy struct {
	ID           string `json:"id"`
	State        string `json:"state"`
	Context      string `json:"context"`
	Branch       string `json:"branch"`
	CommitRef    string `json:"commit_ref"`
	CreatedAt    string `json:"created_at"`
	DeployURL    string `json:"deploy_url"`
	DeploySSLURL string `json:"deploy_ssl_url"`
	ErrorMessage string `json:"error_message"`
	Links        struct {
		Permalink string `json:"permalink"`
		Alias     string `json:"alias"`
	} `json:"links"`
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

const deployPage = 100

// AwaitExternal answers preview_url, deploy_id and deploy_preview_url once
// the newest deploy of the run's commit in the line's context that started
// after the line's values last changed is ready; nil while there is none
// or it is still building (a deploy preview started before the change is
// stale: the line waits for the next one); EXTERNAL_FAILED when it ended
// in error, or when none started since and the commit's deploy from before
// the change failed. Read-only.
func (op *EnvOp) AwaitExternal(ctx context.Context, req adapter.Request, _ *adapter.Live) (map[string]any, error) {
	r, err := op.parse(req.Params, req.Provider, req.Run)
	if err != nil {
		return nil, err
	}
	if r.context == Dev {
		return nil, param.Invalid(opName, "context", "is dev, which has no deploys to wait for")
	}
	if req.Run.SHA == "" {
		return nil, errs.New(errs.PARAM_INVALID, "%s: the run has no git commit, so the deploy of line %s cannot be identified", opName, req.Line).
			WithHint("Run inside a git checkout or pass the commit (SPONSON_CTX_SHA).")
	}
	s, err := op.open(ctx, r.block)
	if err != nil {
		return nil, err
	}
	since := s.written(slices.Sorted(maps.Keys(r.values)))
	var best, before *deploy
	err = httpclient.Numbered(ctx, "netlify", 1, deployPage, func(ctx context.Context, page int) (int, error) {
		var list []deploy
		q := url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(deployPage)}}
		if err := s.a.Get(ctx, "/sites/"+url.PathEscape(r.site)+"/deploys", q, &list); err != nil {
			return 0, err
		}
		older := false
		for i := range list {
			d := list[i]
			created := parseTime(d.CreatedAt)
			mine := d.CommitRef == req.Run.SHA && r.matches(d)
			if !since.IsZero() && !created.After(since) {
				older = true
				if mine && (before == nil || created.After(parseTime(before.CreatedAt))) {
					before = &d
				}
				continue
			}
			if !mine {
				continue
			}
			if best == nil || created.After(parseTime(best.CreatedAt)) {
				best = &d
			}
		}
		if older {
			return 0, nil // newest first: the rest started before the change
		}
		return len(list), nil
	})
	if err != nil {
		return nil, err
	}
	if best == nil && before != nil && before.failed() {
		best = before // the commit's build failed: no deploy of it reads the values
	}
	if best == nil {
		return nil, nil
	}
	switch best.State {
	case "ready":
		preview := cmp.Or(best.DeploySSLURL, best.Links.Permalink, best.DeployURL)
		return map[string]any{"preview_url": preview, "deploy_id": best.ID, "deploy_preview_url": cmp.Or(best.Links.Alias, preview)}, nil
	case "error", "rejected":
		return nil, errs.New(errs.EXTERNAL_FAILED, "netlify: deploy %s of commit %s (%s) ended %s", best.ID, short(req.Run.SHA), r.context, best.State).
			With("deploy_id", best.ID)
	}
	return nil, nil
}

// matches says whether a deploy is of the line's context.
func (r envReq) matches(d deploy) bool {
	switch r.context {
	case Branch:
		return d.Context == BranchDeploy && d.Branch == r.branch
	default:
		return d.Context == r.context
	}
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
