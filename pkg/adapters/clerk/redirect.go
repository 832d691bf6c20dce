package clerk

import (
	"context"
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
	TokenVar   = "CLERK_SECRET_KEY"
	URLVar     = "CLERK_API_URL"
	DefaultURL = "https://api.clerk.com"
	version    = "/v1"
	pageLimit  = 100
)

const opName = "clerk.redirect_allow"

// RedirectOp is clerk.redirect_allow.
type RedirectOp struct {
	base.Op
}

var (
	_ adapter.Op          = (*RedirectOp)(nil)
	_ adapter.Defaulter   = (*RedirectOp)(nil)
	_ adapter.ScopeLister = (*RedirectOp)(nil)
)

// NewRedirect returns clerk.redirect_allow reading its credential and base
// URL from env at each call.
func NewRedirect(env httpclient.Env, client *httpclient.Client) *RedirectOp {
	return &RedirectOp{Op: base.New(redirectSpec, env, client, base.Endpoint{Root: base.Suffix(version)})}
}

// Key is the ledger key of a redirect URL.
func Key(u string) string { return "redirect_url:" + u }

func parseKey(key string) (string, error) {
	u, ok := strings.CutPrefix(key, "redirect_url:")
	if !ok || u == "" {
		return "", errs.New(errs.PARAM_INVALID, "%s: %q is not a clerk.redirect_allow key (redirect_url:<url>)", opName, key)
	}
	return u, nil
}

// parse reads the url; known is false while it is pending.
func (op *RedirectOp) parse(params map[string]any, allowPending bool) (string, bool, error) {
	if err := op.Known(params); err != nil {
		return "", false, err
	}
	u, known, err := param.Required(opName, params, "url", allowPending)
	if err != nil || !known {
		return "", known, err
	}
	scheme, rest, ok := strings.Cut(u, "://")
	switch {
	case !ok || scheme == "" || rest == "":
		return "", false, param.Invalid(opName, "url", "must be an absolute URL (https://... or a custom scheme such as my-app://callback)")
	case strings.ContainsAny(u, " \t\r\n"):
		return "", false, param.Invalid(opName, "url", "must not contain white space")
	case strings.EqualFold(scheme, "http") && !localHost(rest):
		return "", false, param.Invalid(opName, "url", "must use https:// (Clerk accepts http only for development hosts)")
	}
	return u, true, nil
}

func localHost(rest string) bool {
	h := rest
	if i := strings.IndexAny(h, "/?#"); i >= 0 {
		h = h[:i]
	}
	if i := strings.LastIndex(h, ":"); i >= 0 {
		h = h[:i]
	}
	return h == "localhost" || h == "127.0.0.1"
}

// Defaults validates the url (a pending one is accepted).
func (op *RedirectOp) Defaults(params map[string]any, _ adapter.Provider, _ adapter.RunCtx) (map[string]any, error) {
	if _, _, err := op.parse(params, true); err != nil {
		return nil, err
	}
	return param.Copy(params), nil
}

// redirectURL is a redirect URL as the API answers it.
type redirectURL struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

func resourceOf(r redirectURL) adapter.Resource {
	return adapter.Resource{Key: Key(r.URL), ID: r.ID, Value: r.URL, Outputs: map[string]any{"url": r.URL}}
}

// list reads every redirect URL of the instance, page by page.
func (op *RedirectOp) list(ctx context.Context, a httpclient.API) ([]redirectURL, error) {
	var all []redirectURL
	offset := 0
	err := httpclient.Numbered(ctx, "clerk", 0, 0, func(ctx context.Context, _ int) (int, error) {
		q := url.Values{"paginated": {"true"}, "limit": {strconv.Itoa(pageLimit)}, "offset": {strconv.Itoa(offset)}}
		resp, err := a.Do(ctx, http.MethodGet, "/redirect_urls", q, nil, true)
		if err != nil {
			return 0, err
		}
		var page struct {
			Data       []redirectURL `json:"data"`
			TotalCount *int          `json:"total_count"`
		}
		if b := strings.TrimSpace(string(resp.Body)); strings.HasPrefix(b, "[") {
			// The unpaginated form: everything at once.
			if err := resp.Decode(&page.Data); err != nil {
				return 0, err
			}
			all = append(all, page.Data...)
			return 0, nil
		}
		if err := resp.Decode(&page); err != nil {
			return 0, err
		}
		all = append(all, page.Data...)
		offset += len(page.Data)
		if page.TotalCount != nil && offset >= *page.TotalCount {
			return 0, nil
		}
		if len(page.Data) < pageLimit && page.TotalCount == nil {
			return 0, nil
		}
		return len(page.Data), nil
	})
	return all, err
}

func (op *RedirectOp) find(ctx context.Context, a httpclient.API, u string) (*redirectURL, error) {
	all, err := op.list(ctx, a)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].URL == u {
			return &all[i], nil
		}
	}
	return nil, nil
}

// Read returns the URL's object when it is allowed.
func (op *RedirectOp) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	u, _, err := op.parse(req.Params, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	found, err := op.find(ctx, a, u)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}, Outputs: map[string]any{}}
	if found != nil {
		live.Resources = append(live.Resources, resourceOf(*found))
		live.Outputs["url"] = found.URL
	}
	return live, nil
}

// Diff: create when the URL is not allowed, unchanged when it is.
func (op *RedirectOp) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	u, _, err := op.parse(req.Params, false)
	if err != nil {
		return nil, err
	}
	d := adapter.ResourceDiff{Key: Key(u), Action: adapter.Unchanged, Desired: u}
	if live.Resource(Key(u)) == nil {
		d.Action = adapter.Create
		d.Fields = []adapter.FieldDiff{{Path: "url", After: u}}
	}
	return []adapter.ResourceDiff{d}, nil
}

// Apply allows the URL: nothing when it already is (taken over), else
// intend and create. A refused or lost create is resolved by re-reading.
func (op *RedirectOp) Apply(ctx context.Context, req adapter.Request, _ *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	u, _, err := op.parse(req.Params, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	found, err := op.find(ctx, a, u)
	if err != nil {
		return nil, err
	}
	if found != nil {
		return result(*found, false), nil
	}
	key := Key(u)
	if err := intend(key); err != nil {
		return nil, err
	}
	var made redirectURL
	err = a.Send(ctx, http.MethodPost, "/redirect_urls", nil, map[string]any{"url": u}, false, &made)
	if err == nil {
		return result(made, true), nil
	}
	ambiguous := httpclient.IsAmbiguous(err) || errs.CodeOf(err) == errs.PROVIDER_RESPONSE
	again, rerr := op.find(ctx, a, u)
	switch {
	case rerr != nil:
		return nil, err
	case again != nil && ambiguous:
		// The create happened and its answer was lost.
		return result(*again, true), nil
	case again != nil:
		// Refused because someone else allowed it meanwhile: take it
		// over, as if it had been there when the line was read (not
		// created, so never destroyed by this scope).
		return result(*again, false), nil
	case ambiguous:
		return nil, err
	}
	return nil, adapter.NotCreated(err, key)
}

func result(r redirectURL, created bool) *adapter.Result {
	res := &adapter.Result{Resources: []adapter.Resource{resourceOf(r)}, Outputs: map[string]any{"url": r.URL}}
	if created {
		res.Created = []string{Key(r.URL)}
	}
	return res
}

// Lookup finds the object of a key; nil, nil when the URL is not allowed.
func (op *RedirectOp) Lookup(ctx context.Context, _ adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	u, err := parseKey(key)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	found, err := op.find(ctx, a, u)
	if err != nil || found == nil {
		return nil, err
	}
	res := resourceOf(*found)
	return &res, nil
}

// Destroy deletes the object of r. Gone, or an object with another id (the
// URL was removed and added again by someone else), is success and
// touches nothing.
func (op *RedirectOp) Destroy(ctx context.Context, _ adapter.Provider, _ adapter.RunCtx, r adapter.Resource) error {
	u, err := parseKey(r.Key)
	if err != nil {
		return err
	}
	a, err := op.API()
	if err != nil {
		return err
	}
	found, err := op.find(ctx, a, u)
	if err != nil || found == nil {
		return err
	}
	if r.ID != "" && found.ID != r.ID {
		return nil
	}
	err = a.Send(ctx, http.MethodDelete, "/redirect_urls/"+url.PathEscape(found.ID), nil, nil, true, nil)
	if httpclient.IsNotFound(err) {
		return nil
	}
	return err
}

// ListScope lists, for unmanaged drift, the line's URL when it is allowed
// and the instance's redirect URLs that are that URL in another scope
// (adapter.OtherScope: the scope in the URL replaced by another scope's
// name); the instance's other URLs are never listed. One listing.
func (op *RedirectOp) ListScope(ctx context.Context, req adapter.Request) ([]adapter.Resource, error) {
	u, _, err := op.parse(req.Params, false)
	if err != nil {
		return nil, err
	}
	a, err := op.API()
	if err != nil {
		return nil, err
	}
	all, err := op.list(ctx, a)
	if err != nil {
		return nil, err
	}
	var out []adapter.Resource
	for _, r := range all {
		if r.URL == u || adapter.OtherScope(u, req.Run.Scope, r.URL) != "" {
			out = append(out, resourceOf(r))
		}
	}
	return out, nil
}
