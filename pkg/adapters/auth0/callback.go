package auth0

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
	TokenVar = "AUTH0_MANAGEMENT_TOKEN"
	URLVar   = "AUTH0_API_URL"
)

// Lists is every list auth0.callback can write, the default first.
var Lists = []string{"callbacks", "allowed_logout_urls", "web_origins", "allowed_origins"}

const opName = "auth0.callback"

// CallbackOp is auth0.callback.
type CallbackOp struct {
	base.Op
}

var (
	_ adapter.Op           = (*CallbackOp)(nil)
	_ adapter.Defaulter    = (*CallbackOp)(nil)
	_ adapter.ParentLocker = (*CallbackOp)(nil)
	_ adapter.ScopeLister  = (*CallbackOp)(nil)
)

// NewCallback returns auth0.callback reading its credential and base URL
// from env at each call.
func NewCallback(env httpclient.Env, client *httpclient.Client) *CallbackOp {
	return &CallbackOp{Op: base.New(callbackSpec, env, client, base.Endpoint{Root: func(b string) string { return b + "/api/v2" }})}
}

// Key is the ledger key of one entry.
func Key(list, u string) string { return list + ":" + u }

// ParseKey splits a key made by Key (a list name holds no ':').
func ParseKey(key string) (list, u string, ok bool) {
	list, u, ok = strings.Cut(key, ":")
	if !ok || u == "" || !validList(list) {
		return "", "", false
	}
	return list, u, true
}

// LockID is the identity of the parent object: the application.
func LockID(domain, client string) string { return "auth0:" + domain + ":client:" + client }

func validList(l string) bool {
	for _, x := range Lists {
		if x == l {
			return true
		}
	}
	return false
}

type block struct{ domain, client string }

func readBlock(p adapter.Provider) (block, error) {
	var b block
	var err error
	if b.domain, err = param.RequiredSetting("auth0", p, "domain"); err != nil {
		return b, err
	}
	b.domain = strings.TrimRight(strings.TrimPrefix(strings.TrimPrefix(b.domain, "https://"), "http://"), "/")
	if b.domain == "" || strings.ContainsAny(b.domain, "/:?# ") {
		return b, errs.New(errs.PARAM_INVALID, "providers.auth0.domain must be a host name such as example.eu.auth0.com").With("param", "providers.auth0.domain")
	}
	if b.client, err = param.RequiredSetting("auth0", p, "client"); err != nil {
		return b, err
	}
	if strings.ContainsAny(b.client, "/:?# ") {
		return b, errs.New(errs.PARAM_INVALID, "providers.auth0.client must be an application's client id").With("param", "providers.auth0.client")
	}
	return b, nil
}

type callbackReq struct {
	block
	list, url string
}

func (op *CallbackOp) parse(params map[string]any, p adapter.Provider, allowPending bool) (callbackReq, error) {
	var r callbackReq
	var err error
	if err = op.Known(params); err != nil {
		return r, err
	}
	if r.block, err = readBlock(p); err != nil {
		return r, err
	}
	u, known, err := param.Required(opName, params, "url", allowPending)
	if err != nil {
		return r, err
	}
	if known {
		r.url = strings.TrimSpace(u)
	}
	list, present, _, err := param.Str(opName, params, "list", false)
	if err != nil {
		return r, err
	}
	if !present {
		list = Lists[0]
	}
	if !validList(list) {
		return r, param.Invalid(opName, "list", "must be one of %s, got %q", strings.Join(Lists, ", "), list)
	}
	r.list = list
	return r, nil
}

// Defaults fills list (callbacks) and validates the parameters and block.
func (op *CallbackOp) Defaults(params map[string]any, p adapter.Provider, run adapter.RunCtx) (map[string]any, error) {
	r, err := op.parse(params, p, true)
	if err != nil {
		return nil, err
	}
	out := param.Copy(params)
	out["list"] = r.list
	return out, nil
}

// LockOn names the application.
func (op *CallbackOp) LockOn(params map[string]any, p adapter.Provider) string {
	b, err := readBlock(p)
	if err != nil {
		return ""
	}
	return LockID(b.domain, b.client)
}

// api is the Management API of the block's tenant (its domain the default
// base URL).
func (op *CallbackOp) api(b block) (httpclient.API, error) { return op.APIAt("https://" + b.domain) }

func clientPath(client string) string { return "/clients/" + url.PathEscape(client) }

// parent is one list of one application: GET of the application (the four
// lists only), PATCH of the one array.
type parent struct {
	a            httpclient.API
	client, list string
}

func (p parent) Load(ctx context.Context) (listentry.List, error) {
	q := url.Values{"fields": {strings.Join(Lists, ",")}, "include_fields": {"true"}}
	var app map[string]any
	if err := p.a.Get(ctx, clientPath(p.client), q, &app); err != nil {
		return nil, err
	}
	raw, ok := app[p.list]
	if !ok || raw == nil {
		return listentry.Strings(nil), nil
	}
	items, ok := raw.([]any)
	if !ok {
		return nil, errs.New(errs.PROVIDER_RESPONSE, "auth0: %s of application %s is not a list", p.list, p.client)
	}
	out := make(listentry.Strings, 0, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, errs.New(errs.PROVIDER_RESPONSE, "auth0: %s of application %s holds a non-string entry", p.list, p.client)
		}
		out = append(out, s)
	}
	return out, nil
}

func (p parent) Put(ctx context.Context, l listentry.List, item string, _ any) error {
	return p.write(ctx, l.(listentry.Strings).With(item))
}

func (p parent) Remove(ctx context.Context, l listentry.List, item string) error {
	return p.write(ctx, l.(listentry.Strings).Without(item))
}

// write PATCHes the whole array: an absolute value, so idempotent.
func (p parent) write(ctx context.Context, entries []string) error {
	return p.a.Send(ctx, http.MethodPatch, clientPath(p.client), nil, map[string]any{p.list: entries}, true, nil)
}

func entry(list, u string) listentry.Entry {
	return listentry.Entry{Op: opName, Key: Key(list, u), Item: u, Field: list, Outputs: map[string]any{"url": u}}
}

func (op *CallbackOp) known(params map[string]any, p adapter.Provider) (callbackReq, parent, error) {
	r, err := op.parse(params, p, false)
	if err != nil {
		return r, parent{}, err
	}
	a, err := op.api(r.block)
	return r, parent{a: a, client: r.client, list: r.list}, err
}

// Read returns the entry when the list holds it.
func (op *CallbackOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, par, err := op.known(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	return listentry.Read(ctx, par, entry(r.list, r.url))
}

// ListScope is the line's URL when its list holds it, and the entries of
// that list that are the URL in another scope (adapter.OtherScope: the
// scope in the URL replaced by another scope's name), for unmanaged drift.
// The rest of the list (production callbacks, a colleague's) is not
// listed. One GET, shared with Read through the run's read cache.
func (op *CallbackOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	r, par, err := op.known(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	return listentry.ListScope(ctx, par, entry(r.list, r.url), req.Run.Scope, func(u string) listentry.Entry { return entry(r.list, u) })
}

// Diff: create when the entry is missing, unchanged when present.
func (op *CallbackOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := op.parse(req.Params, req.Provider, false)
	if err != nil {
		return nil, err
	}
	return []adapter.ResourceDiff{listentry.Diff(live, entry(r.list, r.url))}, nil
}

// Apply adds the URL to the list (intend first): GET, then PATCH of the
// whole array; nothing when it is there.
func (op *CallbackOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, par, err := op.known(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	return listentry.Apply(ctx, par, entry(r.list, r.url), intend)
}

func (op *CallbackOp) fromKey(p adapter.Provider, key string) (parent, listentry.Entry, error) {
	list, u, ok := ParseKey(key)
	if !ok {
		return parent{}, listentry.Entry{}, errs.New(errs.PARAM_INVALID, "%s: %q is not an auth0.callback key (<list>:<url>)", opName, key)
	}
	b, err := readBlock(p)
	if err != nil {
		return parent{}, listentry.Entry{}, err
	}
	a, err := op.api(b)
	return parent{a: a, client: b.client, list: list}, entry(list, u), err
}

// Lookup reports whether the application's list holds the key's URL.
func (op *CallbackOp) Lookup(ctx context.Context, p adapter.Provider, run adapter.RunCtx, key string) (*adapter.Resource, error) {
	par, e, err := op.fromKey(p, key)
	if err != nil {
		return nil, err
	}
	return listentry.Lookup(ctx, par, e)
}

// Destroy removes the key's URL from the list (every occurrence); absent is
// success and writes nothing.
func (op *CallbackOp) Destroy(ctx context.Context, p adapter.Provider, run adapter.RunCtx, r adapter.Resource) error {
	par, e, err := op.fromKey(p, r.Key)
	if err != nil {
		return err
	}
	return listentry.Destroy(ctx, par, e.Item)
}
