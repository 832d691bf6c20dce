package supabase

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

// The environment the adapter reads.
const (
	TokenVar   = "SUPABASE_ACCESS_TOKEN"
	URLVar     = "SUPABASE_API_URL"
	DefaultURL = "https://api.supabase.com"
)

const opName = "supabase.auth_redirect"

// RedirectOp is supabase.auth_redirect.
type RedirectOp struct {
	env    httpclient.Env
	client *httpclient.Client
}

var (
	_ adapter.Op           = (*RedirectOp)(nil)
	_ adapter.Defaulter    = (*RedirectOp)(nil)
	_ adapter.ParentLocker = (*RedirectOp)(nil)
)

// NewRedirect returns supabase.auth_redirect reading its credential and base
// URL from env at each call.
func NewRedirect(env httpclient.Env, client *httpclient.Client) *RedirectOp {
	return &RedirectOp{env: env, client: client}
}

// Spec declares supabase.auth_redirect as the built-in catalogue does.
func (op *RedirectOp) Spec() adapter.Spec {
	s, _ := adapter.Builtin().Lookup("supabase", "auth_redirect")
	return s
}

// Key is the ledger key of one allow-list entry.
func Key(project, u string) string { return "redirect:" + project + ":" + u }

// ParseKey splits a key made by Key (a project ref holds no ':').
func ParseKey(key string) (project, u string, ok bool) {
	rest, found := strings.CutPrefix(key, "redirect:")
	if !found {
		return "", "", false
	}
	project, u, ok = strings.Cut(rest, ":")
	return project, u, ok && project != "" && u != ""
}

// LockID is the identity of the parent object: the project's allow-list.
func LockID(project string) string { return "supabase:" + project + ":auth-uri-allow-list" }

type redirectReq struct {
	project, url string
	known        bool // url is concrete
}

func parse(params map[string]any, p adapter.Provider, allowPending bool) (redirectReq, error) {
	var r redirectReq
	if err := param.Known(opName, params, "url", "project"); err != nil {
		return r, err
	}
	u, known, err := param.Required(opName, params, "url", allowPending)
	if err != nil {
		return r, err
	}
	if known {
		if err := checkURL(u); err != nil {
			return r, err
		}
	}
	r.url, r.known = strings.TrimSpace(u), known
	project, present, _, err := param.Str(opName, params, "project", false)
	if err != nil {
		return r, err
	}
	if !present || strings.TrimSpace(project) == "" {
		if project, err = param.Setting("supabase", p, "project"); err != nil {
			return r, err
		}
	}
	project = strings.TrimSpace(project)
	switch {
	case project == "":
		return r, param.Invalid(opName, "project", "is required: set it on the line or as providers.supabase.project")
	case strings.ContainsAny(project, ":/ "):
		return r, param.Invalid(opName, "project", "must be a project ref (letters and digits), got %q", project)
	}
	r.project = project
	return r, nil
}

func checkURL(u string) error {
	switch {
	case strings.TrimSpace(u) == "":
		return param.Invalid(opName, "url", "must not be empty")
	case strings.Contains(u, ","):
		return param.Invalid(opName, "url", "must not contain a comma: uri_allow_list is one comma-separated string, so a comma would split it into two entries")
	}
	return nil
}

// Defaults fills project from the provider block and validates url.
func (op *RedirectOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	r, err := parse(params, p, true)
	if err != nil {
		return nil, err
	}
	out := param.Copy(params)
	out["project"] = r.project
	return out, nil
}

// LockOn names the project's allow-list.
func (op *RedirectOp) LockOn(params map[string]any, p adapter.Provider) string {
	r, err := parse(params, p, true)
	if err != nil {
		return ""
	}
	return LockID(r.project)
}

func (op *RedirectOp) api() (httpclient.API, error) {
	tok, err := httpclient.Token(op.env, TokenVar, "supabase")
	if err != nil {
		return httpclient.API{}, err
	}
	base, err := httpclient.BaseURL(op.env, URLVar, DefaultURL)
	if err != nil {
		return httpclient.API{}, err
	}
	return httpclient.API{Client: op.client, Provider: "supabase", BaseURL: base, Token: tok, TokenVar: TokenVar}, nil
}

func configPath(project string) string {
	return "/v1/projects/" + url.PathEscape(project) + "/config/auth"
}

// list reads the allow-list as entries, trimmed, empty ones dropped.
func (op *RedirectOp) list(ctx context.Context, a httpclient.API, project string) ([]string, error) {
	var cfg struct {
		URIAllowList *string `json:"uri_allow_list"`
	}
	if err := a.Get(ctx, configPath(project), nil, &cfg); err != nil {
		return nil, err
	}
	if cfg.URIAllowList == nil {
		return nil, nil
	}
	return split(*cfg.URIAllowList), nil
}

func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func (op *RedirectOp) write(ctx context.Context, a httpclient.API, project string, entries []string) error {
	return a.Send(ctx, http.MethodPatch, configPath(project), nil, map[string]any{"uri_allow_list": strings.Join(entries, ",")}, true, nil)
}

func contains(list []string, u string) bool {
	for _, x := range list {
		if x == u {
			return true
		}
	}
	return false
}

func resource(project, u string) adapter.Resource {
	return adapter.Resource{Key: Key(project, u), Value: u, Outputs: map[string]any{"url": u}}
}

// Read returns the entry when the allow-list holds it.
func (op *RedirectOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.api()
	if err != nil {
		return nil, err
	}
	list, err := op.list(ctx, a, r.project)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if contains(list, r.url) {
		res := resource(r.project, r.url)
		live.Resources = append(live.Resources, res)
		live.Outputs = map[string]any{"url": r.url}
	}
	return live, nil
}

// Diff: create when the entry is missing, unchanged when present.
func (op *RedirectOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	d := adapter.ResourceDiff{Key: Key(r.project, r.url), Desired: r.url, Action: adapter.Unchanged}
	if live.Resource(d.Key) == nil {
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: "uri_allow_list", After: r.url}}
	}
	return []adapter.ResourceDiff{d}, nil
}

// Apply adds the URL to the allow-list (intend first) by read-modify-write
// of the whole string; nothing when it is there.
func (op *RedirectOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	a, err := op.api()
	if err != nil {
		return nil, err
	}
	list, err := op.list(ctx, a, r.project)
	if err != nil {
		return nil, err
	}
	res := &adapter.Result{Resources: []adapter.Resource{resource(r.project, r.url)}, Outputs: map[string]any{"url": r.url}}
	if contains(list, r.url) {
		return res, nil
	}
	key := Key(r.project, r.url)
	if err := intend(key); err != nil {
		return nil, err
	}
	if err := op.write(ctx, a, r.project, append(list, r.url)); err != nil {
		return nil, err
	}
	res.Created = []string{key}
	return res, nil
}

// Lookup reports whether the allow-list holds the key's URL.
func (op *RedirectOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	project, u, ok := ParseKey(key)
	if !ok {
		return nil, errs.New(errs.PARAM_INVALID, "%s: %q is not a supabase.auth_redirect key (redirect:<project>:<url>)", opName, key)
	}
	a, err := op.api()
	if err != nil {
		return nil, err
	}
	list, err := op.list(ctx, a, project)
	if err != nil || !contains(list, u) {
		return nil, err
	}
	res := resource(project, u)
	return &res, nil
}

// Destroy removes the key's URL from the allow-list (every occurrence);
// absent is success and writes nothing.
func (op *RedirectOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	project, u, ok := ParseKey(r.Key)
	if !ok {
		return errs.New(errs.PARAM_INVALID, "%s: %q is not a supabase.auth_redirect key (redirect:<project>:<url>)", opName, r.Key)
	}
	a, err := op.api()
	if err != nil {
		return err
	}
	list, err := op.list(ctx, a, project)
	if err != nil || !contains(list, u) {
		return err
	}
	kept := make([]string, 0, len(list))
	for _, x := range list {
		if x != u {
			kept = append(kept, x)
		}
	}
	return op.write(ctx, a, project, kept)
}
