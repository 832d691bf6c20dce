package supabase

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapter/listentry"
	"github.com/sponson/apply/pkg/adapters/internal/base"
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
	base.Op
}

var (
	_ adapter.Op           = (*RedirectOp)(nil)
	_ adapter.Defaulter    = (*RedirectOp)(nil)
	_ adapter.ParentLocker = (*RedirectOp)(nil)
	_ adapter.ScopeLister  = (*RedirectOp)(nil)
)

// NewRedirect returns supabase.auth_redirect reading its credential and base
// URL from env at each call.
func NewRedirect(env httpclient.Env, client *httpclient.Client) *RedirectOp {
	return &RedirectOp{Op: base.New(redirectSpec, env, client, base.Endpoint{})}
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

func (op *RedirectOp) parse(params map[string]any, p adapter.Provider, allowPending bool) (redirectReq, error) {
	var r redirectReq
	if err := op.Known(params); err != nil {
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
	r, err := op.parse(params, p, true)
	if err != nil {
		return nil, err
	}
	out := param.Copy(params)
	out["project"] = r.project
	return out, nil
}

// LockOn names the project's allow-list.
func (op *RedirectOp) LockOn(params map[string]any, p adapter.Provider) string {
	r, err := op.parse(params, p, true)
	if err != nil {
		return ""
	}
	return LockID(r.project)
}

func configPath(project string) string {
	return "/v1/projects/" + url.PathEscape(project) + "/config/auth"
}

// parent is a project's allow-list: uri_allow_list, ONE comma-separated
// string on the auth config, read whole and written whole.
type parent struct {
	a       httpclient.API
	project string
}

// Load reads the allow-list as entries, trimmed, empty ones dropped.
func (p parent) Load(ctx context.Context) (listentry.List, error) {
	var cfg struct {
		URIAllowList *string `json:"uri_allow_list"`
	}
	if err := p.a.Get(ctx, configPath(p.project), nil, &cfg); err != nil {
		return nil, err
	}
	if cfg.URIAllowList == nil {
		return listentry.Strings(nil), nil
	}
	return listentry.Strings(split(*cfg.URIAllowList)), nil
}

func (p parent) Put(ctx context.Context, l listentry.List, item string, _ any) error {
	return p.write(ctx, l.(listentry.Strings).With(item))
}

func (p parent) Remove(ctx context.Context, l listentry.List, item string) error {
	return p.write(ctx, l.(listentry.Strings).Without(item))
}

// write PATCHes only uri_allow_list: an absolute value, so idempotent.
func (p parent) write(ctx context.Context, entries []string) error {
	return p.a.Send(ctx, http.MethodPatch, configPath(p.project), nil, map[string]any{"uri_allow_list": strings.Join(entries, ",")}, true, nil)
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

func entry(project, u string) listentry.Entry {
	return listentry.Entry{Op: opName, Key: Key(project, u), Item: u, Field: "uri_allow_list", Outputs: map[string]any{"url": u}}
}

func (op *RedirectOp) connect(params map[string]any, p adapter.Provider) (redirectReq, parent, error) {
	r, err := op.parse(params, p, false)
	if err != nil {
		return r, parent{}, err
	}
	a, err := op.API()
	return r, parent{a: a, project: r.project}, err
}

// Read returns the entry when the allow-list holds it.
func (op *RedirectOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, par, err := op.connect(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	return listentry.Read(ctx, par, entry(r.project, r.url))
}

// ListScope is the line's URL when the allow-list holds it, and the
// entries that are that URL in another scope (adapter.OtherScope: the
// scope in the URL replaced by another scope's name), for unmanaged drift.
// The rest of the allow-list (production URLs, a colleague's) is not
// listed. One GET, shared with Read through the run's read cache.
func (op *RedirectOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	r, par, err := op.connect(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	return listentry.ListScope(ctx, par, entry(r.project, r.url), req.Run.Scope, func(u string) listentry.Entry { return entry(r.project, u) })
}

// Diff: create when the entry is missing, unchanged when present.
func (op *RedirectOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	return []adapter.ResourceDiff{listentry.Diff(live, entry(r.project, r.url))}, nil
}

// Apply adds the URL to the allow-list (intend first) by read-modify-write
// of the whole string; nothing when it is there.
func (op *RedirectOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, par, err := op.connect(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	return listentry.Apply(ctx, par, entry(r.project, r.url), intend)
}

func (op *RedirectOp) fromKey(key string) (parent, listentry.Entry, error) {
	project, u, ok := ParseKey(key)
	if !ok {
		return parent{}, listentry.Entry{}, errs.New(errs.PARAM_INVALID, "%s: %q is not a supabase.auth_redirect key (redirect:<project>:<url>)", opName, key)
	}
	a, err := op.API()
	return parent{a: a, project: project}, entry(project, u), err
}

// Lookup reports whether the allow-list holds the key's URL.
func (op *RedirectOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	par, e, err := op.fromKey(key)
	if err != nil {
		return nil, err
	}
	return listentry.Lookup(ctx, par, e)
}

// Destroy removes the key's URL from the allow-list (every occurrence);
// absent is success and writes nothing.
func (op *RedirectOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	par, e, err := op.fromKey(r.Key)
	if err != nil {
		return err
	}
	return listentry.Destroy(ctx, par, e.Item)
}
