package httpop

import (
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"github.com/sponson/apply/pkg/errs"
)

// api is one providers.http.<name> block, resolved.
type api struct {
	name     string
	base     string // base URL without trailing slash; "" when it cannot be resolved (LockOn)
	baseFrom string // where base came from, for messages
	// The API's conventions, used by Lookup and Destroy too (they have
	// only the key and this block): where a single-object answer holds the
	// object (/result), and where an object holds its id (default /id).
	objectPath pointer
	idPath     pointer
	// listPatch is how http.list_item PATCHes a list of this API by
	// default (PatchMerge, or PatchField for APIs that replace a PATCHed
	// field whole).
	listPatch string
	// The request conventions of wire.go: how the credential is sent,
	// extra headers, the body's encoding, the idempotency key header, the
	// listings' paging, how http.list_item writes and matches entries.
	auth       authSpec
	headers    http.Header
	encoding   string // EncodingJSON or EncodingForm
	idemHeader string
	paging     paging
	listMethod string // "" (the line's, else PATCH) or PATCH, PUT, POST
	subset     bool   // list_entries: subset
	// listItems and listSuffix are how a key's listing is read (Lookup
	// and Destroy): the array's pointer, and the segment the listing adds
	// to the objects' collection (SendGrid's /all).
	listItems  pointer
	hasItems   bool
	listSuffix string
}

// blockOf returns the settings of api name: the provider block itself when
// it is one api's block (it has base_url or base_url_env), else its member
// name (the whole providers.http block, as the engine passes it).
func blockOf(p adapter.Provider, name string) (map[string]any, error) {
	if _, ok := p["base_url"]; ok {
		return p, nil
	}
	if _, ok := p["base_url_env"]; ok {
		return p, nil
	}
	if name == "" {
		return nil, param.Invalid("http", "api", "is required: the name of a block providers.http.<api>")
	}
	raw, ok := p[name]
	if !ok {
		names := make([]string, 0, len(p))
		for k := range p {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, errs.New(errs.PARAM_INVALID, "http parameter api names %q, but providers.http has no such block (it has: %s)", name, strings.Join(names, ", ")).With("param", "api").
			WithHint("Declare it: providers: {http: {%s: {base_url: https://..., auth: {bearer_env: TOKEN_VAR}}}}.", name)
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, errs.New(errs.PARAM_INVALID, "providers.http.%s must be a map with base_url or base_url_env", name).With("param", "providers.http."+name)
	}
	return m, nil
}

// resolveAPI reads a block. resolveBase false leaves an unset base_url_env
// unresolved instead of failing (LockOn is pure and must not fail).
func resolveAPI(p adapter.Provider, name string, env httpclient.Env, resolveBase bool) (api, error) {
	a := api{name: name}
	b, err := blockOf(p, name)
	if err != nil {
		return a, err
	}
	where := "providers.http." + name
	if name == "" {
		where = "providers.http"
	}
	if err := a.readBase(b, where, env, resolveBase); err != nil {
		return a, err
	}
	if err := a.readConventions(b, where); err != nil {
		return a, err
	}
	if err := a.readWire(b, where); err != nil {
		return a, err
	}
	return a, a.readAuth(b, where)
}

// readBase reads base_url and base_url_env.
func (a *api) readBase(b map[string]any, where string, env httpclient.Env, resolveBase bool) error {
	var err error
	// base_url_env, when set, overrides base_url (a recipe's default
	// endpoint, pointed at the fake cloud in tests).
	envBase := false
	if raw, ok := b["base_url_env"]; ok {
		v, isS := raw.(string)
		if !isS || v == "" {
			return errs.New(errs.PARAM_INVALID, "%s.base_url_env must name an environment variable", where).With("param", where+".base_url_env")
		}
		a.baseFrom = v
		s, set := "", false
		if env != nil {
			s, set = env(v)
		}
		_, hasBase := b["base_url"]
		switch {
		case set && strings.TrimSpace(s) != "":
			if a.base, err = httpclient.BaseURL(env, v, ""); err != nil {
				return err
			}
			envBase = true
		case hasBase:
		case resolveBase:
			return errs.New(errs.USAGE, "%s.base_url_env names %s, which is not set", where, v).With("variable", v).
				WithHint("Set %s to the API's base URL.", v)
		}
	}
	if raw, ok := b["base_url"]; ok && !envBase {
		s, isS := raw.(string)
		if !isS {
			return errs.New(errs.PARAM_INVALID, "%s.base_url must be a string", where).With("param", where+".base_url")
		}
		if a.base, err = httpclient.CheckBaseURL(strings.TrimSpace(s), where+".base_url"); err != nil {
			return errs.New(errs.PARAM_INVALID, "%s.base_url must be an absolute http(s) URL without user information, query or fragment", where).With("param", where+".base_url")
		}
		a.baseFrom = where + ".base_url"
	}
	if _, hasBase := b["base_url"]; !hasBase {
		if _, hasEnv := b["base_url_env"]; !hasEnv {
			return errs.New(errs.PARAM_INVALID, "%s needs base_url or base_url_env", where).With("param", where)
		}
	}
	return nil
}

// readConventions reads object_path, id_path and list_patch.
func (a *api) readConventions(b map[string]any, where string) error {
	for _, pp := range []struct {
		name string
		dst  *pointer
	}{{"object_path", &a.objectPath}, {"id_path", &a.idPath}} {
		raw, ok := b[pp.name]
		if !ok {
			continue
		}
		s, isS := raw.(string)
		ptr, okP := parsePointer(s)
		if !isS || !okP || (pp.name == "id_path" && len(ptr) == 0) {
			return errs.New(errs.PARAM_INVALID, "%s.%s must be a JSON pointer such as /result", where, pp.name).With("param", where+"."+pp.name)
		}
		*pp.dst = ptr
	}
	a.listPatch = PatchMerge
	if raw, ok := b["list_patch"]; ok {
		if v, _ := raw.(string); v == PatchMerge || v == PatchField {
			a.listPatch = v
		} else {
			return errs.New(errs.PARAM_INVALID, "%s.list_patch must be merge or field", where).With("param", where+".list_patch")
		}
	}
	return nil
}

func (a api) label() string {
	if a.name == "" {
		return "api"
	}
	return a.name
}

// lockBase is the base URL for a parent identity: the resolved URL, else
// the variable that names it.
func (a api) lockBase() string {
	if a.base != "" {
		return a.base
	}
	return "$" + a.baseFrom
}

// checkPath refuses a path that could leave the API: not starting with "/",
// holding a scheme, a query, "..", or a backslash.
func checkPath(op, name, p string) error {
	switch {
	case !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//"):
		return param.Invalid(op, name, "must be a path starting with /, got %q", clip(p))
	case strings.Contains(p, "://") || strings.ContainsAny(p, "?#\\") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
		return param.Invalid(op, name, "must be a plain path (no scheme, query, fragment or ..), got %q", clip(p))
	}
	return nil
}

// fill substitutes {id} in a path template.
func fill(tmpl, id string) string { return strings.ReplaceAll(tmpl, "{id}", url.PathEscape(id)) }

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// splitAPIKey splits "<api>:<rest>".
func splitAPIKey(key string) (apiName, rest string, ok bool) {
	apiName, rest, ok = strings.Cut(key, ":")
	if !ok || apiName == "" || !strings.HasPrefix(rest, "/") {
		return "", "", false
	}
	return apiName, rest, true
}

// request is a request template of a line: method and path.
type request struct {
	method, path string
	body         map[string]any // nil: the default body
}

// readRequest reads a request template parameter {method, path, body}.
func readRequest(op string, params map[string]any, name, defMethod, defPath string, methods ...string) (request, error) {
	r := request{method: defMethod, path: defPath}
	m, err := param.Map(op, params, name)
	if err != nil {
		return r, err
	}
	if m == nil {
		if r.path == "" {
			return r, param.Invalid(op, name, "is required: {path: /collection}")
		}
		return r, nil
	}
	for k := range m {
		if k != "method" && k != "path" && k != "body" {
			return r, param.Invalid(op, name+"."+k, "is not a request setting (method, path, body)")
		}
	}
	if v, ok := m["method"]; ok {
		s, isS := v.(string)
		s = strings.ToUpper(strings.TrimSpace(s))
		if !isS || !contains(methods, s) {
			return r, param.Invalid(op, name+".method", "must be one of %s", strings.Join(methods, ", "))
		}
		r.method = s
	}
	if v, ok := m["path"]; ok {
		s, isS := v.(string)
		if !isS {
			return r, param.Invalid(op, name+".path", "must be a string, got %s", param.Describe(v))
		}
		if err := checkPath(op, name+".path", s); err != nil {
			return r, err
		}
		r.path = s
	}
	if v, ok := m["body"]; ok {
		b, isM := v.(map[string]any)
		if !isM {
			return r, param.Invalid(op, name+".body", "must be a map, got %s", param.Describe(v))
		}
		r.body = b
	}
	if r.path == "" {
		return r, param.Invalid(op, name+".path", "is required")
	}
	return r, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
