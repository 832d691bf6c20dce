package httpop

// How requests of an API block go on the wire: the credential (bearer,
// whole Authorization value, basic, or a header of the API's own), extra
// headers, the body's encoding (JSON or a form), an idempotency key on
// creates, and how a collection is paged (next_cursor or has_more, a
// cursor at a pointer, a Link header, offsets). Each setting is checked
// when the line is planned: a wrong one is PARAM_INVALID naming the
// setting, before any request.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"github.com/sponson/apply/pkg/adapters/internal/param"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/errs"
)

// Body encodings.
const (
	EncodingJSON = "json"
	EncodingForm = "form" // application/x-www-form-urlencoded
)

// Paging kinds.
const (
	PagingAuto   = ""       // next_cursor (sent back as cursor), or has_more with after=<last id>
	PagingCursor = "cursor" // the next cursor at a pointer, sent back as a parameter
	PagingAfter  = "after"  // has_more, and after=<the last item's id> (Resend, Stripe)
	PagingLink   = "link"   // the Link header's rel="next" URL (RFC 8288; GitHub, Sentry)
	PagingOffset = "offset" // offset and a page size, until a short page (Postmark)
)

// authSpec is how the credential is sent.
type authSpec struct {
	kind   string // "", bearer, authorization, basic, header
	env    string // the token, the whole value, the user name, the header's value
	env2   string // basic: the password ("" for none)
	header string // header: the header's name
}

// vars are the environment variables the credential is read from.
func (s authSpec) vars() []string {
	var out []string
	for _, v := range []string{s.env, s.env2} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// authForms are the accepted shapes of auth, by their sorted keys.
var authForms = map[string]string{
	"bearer_env":                "bearer",
	"authorization_env":         "authorization",
	"username_env":              "basic",
	"password_env,username_env": "basic",
	"header,value_env":          "header",
}

// readAuth reads auth: {bearer_env}, {authorization_env}, {username_env,
// password_env} (basic; the password may be left out) or {header,
// value_env}.
func (a *api) readAuth(b map[string]any, where string) error {
	raw, ok := b["auth"]
	if !ok {
		return nil
	}
	bad := func(format string, args ...any) error {
		return errs.New(errs.PARAM_INVALID, "%s.auth "+format, append([]any{where}, args...)...).With("param", where+".auth").
			WithHint("auth is one of {bearer_env: NAME}, {authorization_env: NAME}, {username_env: NAME, password_env: NAME} (basic) or {header: X-Api-Key, value_env: NAME}.")
	}
	m, isM := raw.(map[string]any)
	if !isM {
		return bad("must be a map")
	}
	keys := make([]string, 0, len(m))
	for k, v := range m {
		s, isS := v.(string)
		if !isS || strings.TrimSpace(s) == "" {
			return bad(".%s must be a non-empty string", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kind, ok := authForms[strings.Join(keys, ",")]
	if !ok {
		return bad("has %s, which is none of its forms", strings.Join(keys, ", "))
	}
	s := func(k string) string { v, _ := m[k].(string); return v }
	a.auth = authSpec{kind: kind}
	switch kind {
	case "bearer":
		a.auth.env = s("bearer_env")
	case "authorization":
		a.auth.env = s("authorization_env")
	case "basic":
		a.auth.env, a.auth.env2 = s("username_env"), s("password_env")
	case "header":
		h := textproto.CanonicalMIMEHeaderKey(s("header"))
		if !validHeader(h) || reservedHeader(h) {
			return bad(".header must be a header name other than Authorization, Content-Type, Accept, got %q", clip(s("header")))
		}
		a.auth.env, a.auth.header = s("value_env"), h
	}
	return nil
}

func validHeader(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func reservedHeader(h string) bool {
	switch textproto.CanonicalMIMEHeaderKey(h) {
	case "Authorization", "Content-Type", "Accept", "Content-Length", "Host", "User-Agent":
		return true
	}
	return false
}

// readWire reads headers, encoding, idempotency_header, paging,
// list_method and list_entries.
func (a *api) readWire(b map[string]any, where string) error {
	a.encoding = EncodingJSON
	if err := a.readHeaders(b, where); err != nil {
		return err
	}
	if raw, ok := b["encoding"]; ok {
		s, _ := raw.(string)
		if s != EncodingJSON && s != EncodingForm {
			return errs.New(errs.PARAM_INVALID, "%s.encoding must be json or form (application/x-www-form-urlencoded)", where).With("param", where+".encoding")
		}
		a.encoding = s
	}
	if raw, ok := b["idempotency_header"]; ok {
		s, _ := raw.(string)
		if !validHeader(s) || reservedHeader(s) {
			return errs.New(errs.PARAM_INVALID, "%s.idempotency_header must be a header name such as Idempotency-Key", where).With("param", where+".idempotency_header")
		}
		a.idemHeader = textproto.CanonicalMIMEHeaderKey(s)
	}
	if raw, ok := b["paging"]; ok {
		pg, err := readPaging(raw, where+".paging")
		if err != nil {
			return err
		}
		a.paging = pg
	}
	if raw, ok := b["list_method"]; ok {
		s, _ := raw.(string)
		s = strings.ToUpper(s)
		if s != http.MethodPatch && s != http.MethodPut && s != http.MethodPost {
			return errs.New(errs.PARAM_INVALID, "%s.list_method must be PATCH, PUT or POST", where).With("param", where+".list_method")
		}
		a.listMethod = s
	}
	if raw, ok := b["list_items"]; ok {
		s, _ := raw.(string)
		ptr, okP := parsePointer(s)
		if !okP || len(ptr) == 0 {
			return errs.New(errs.PARAM_INVALID, "%s.list_items must be a JSON pointer to the array of a listing, such as /Servers", where).With("param", where+".list_items")
		}
		a.listItems, a.hasItems = ptr, true
	}
	if raw, ok := b["list_suffix"]; ok {
		s, _ := raw.(string)
		if err := checkPath("http", where+".list_suffix", s); err != nil {
			return err
		}
		a.listSuffix = s
	}
	if raw, ok := b["list_entries"]; ok {
		switch raw {
		case "exact":
		case "subset":
			a.subset = true
		default:
			return errs.New(errs.PARAM_INVALID, "%s.list_entries must be exact (an object entry equals the item) or subset (it holds the item's fields, and may hold more the API adds)", where).With("param", where+".list_entries")
		}
	}
	return nil
}

// readHeaders reads headers: name → a literal value sent with every
// request (an API version). Credentials go in auth, not here.
func (a *api) readHeaders(b map[string]any, where string) error {
	raw, ok := b["headers"]
	if !ok {
		return nil
	}
	m, isM := raw.(map[string]any)
	if !isM {
		return errs.New(errs.PARAM_INVALID, "%s.headers must be a map of header name → value", where).With("param", where+".headers")
	}
	a.headers = http.Header{}
	for k, v := range m {
		s, isS := v.(string)
		if !validHeader(k) || reservedHeader(k) || !isS || strings.ContainsAny(s, "\r\n") {
			return errs.New(errs.PARAM_INVALID, "%s.headers.%s must be a header name (not Authorization, Content-Type or Accept) with a one-line string value", where, k).
				With("param", where+".headers."+k).WithHint("Send credentials with auth (header: NAME, value_env: VARIABLE), never as a literal header.")
		}
		a.headers.Set(k, s)
	}
	return nil
}

// paging is how a collection is listed page by page.
type paging struct {
	kind      string
	next      pointer // cursor: where the answer holds the next cursor
	param     string  // cursor, after: the parameter it is sent back as; offset: the offset's
	sizeParam string  // offset: the page size's parameter
	size      int     // offset: the page size
}

// readPaging reads a paging setting: a kind alone (cursor, after, link,
// offset) or {type, next, param, size_param, size}.
func readPaging(raw any, where string) (paging, error) {
	bad := func(format string, args ...any) (paging, error) {
		return paging{}, errs.New(errs.PARAM_INVALID, "%s "+format, append([]any{where}, args...)...).With("param", where).
			WithHint("paging is cursor, after, link or offset, or a map {type, next: /pointer, param, size_param, size}.")
	}
	m, isM := raw.(map[string]any)
	if s, isS := raw.(string); isS {
		m, isM = map[string]any{"type": s}, true
	}
	if !isM {
		return bad("must be a string or a map")
	}
	pg := paging{}
	for k, v := range m {
		switch k {
		case "type", "next", "param", "size_param":
			if s, isS := v.(string); !isS || s == "" {
				return bad(".%s must be a non-empty string", k)
			}
		case "size":
			n, ok := param.Int(v)
			if !ok || n < 1 || n > 10000 {
				return bad(".size must be a whole number from 1 to 10000")
			}
			pg.size = n
		default:
			return bad(".%s is not a paging setting (type, next, param, size_param, size)", k)
		}
	}
	get := func(k, def string) string {
		if s, ok := m[k].(string); ok {
			return s
		}
		return def
	}
	pg.kind = get("type", "")
	switch pg.kind {
	case PagingCursor:
		p, ok := parsePointer(get("next", "/next_cursor"))
		if !ok || len(p) == 0 {
			return bad(".next must be a JSON pointer to the next cursor, such as /meta/next_cursor")
		}
		pg.next, pg.param = p, get("param", "cursor")
	case PagingAfter:
		pg.param = get("param", "after")
	case PagingLink:
	case PagingOffset:
		pg.param, pg.sizeParam = get("param", "offset"), get("size_param", "limit")
		if pg.size == 0 {
			pg.size = 100
		}
	default:
		return bad(".type must be cursor, after, link or offset, got %q", clip(pg.kind))
	}
	for _, k := range []string{"next", "param", "size_param", "size"} {
		if _, ok := m[k]; ok && !pagingTakes(pg.kind, k) {
			return bad(".%s is not a setting of %s paging", k, pg.kind)
		}
	}
	return pg, nil
}

func pagingTakes(kind, setting string) bool {
	switch kind {
	case PagingCursor:
		return setting == "next" || setting == "param"
	case PagingAfter:
		return setting == "param"
	case PagingOffset:
		return setting == "param" || setting == "size_param" || setting == "size"
	}
	return false
}

// client returns the endpoint with its credential (PROVIDER_AUTH naming
// the variable when it is unset) and the block's headers.
func (a api) client(env httpclient.Env, c *httpclient.Client) (httpclient.API, error) {
	out := httpclient.API{Client: c, Provider: "http " + a.label(), BaseURL: a.base, Header: a.headers.Clone()}
	if a.auth.kind == "" {
		return out, nil
	}
	tok, err := httpclient.Token(env, a.auth.env, "http "+a.label())
	if err != nil {
		return out, err
	}
	out.TokenVar = a.auth.env
	if out.Header == nil {
		out.Header = http.Header{}
	}
	// Errors never quote request headers, and the run's redactor masks
	// the variables' values.
	switch a.auth.kind {
	case "bearer":
		out.Token = tok
	case "authorization":
		// The whole Authorization value (Unleash's API tokens).
		out.Header.Set("Authorization", tok)
	case "basic":
		pw := ""
		if a.auth.env2 != "" {
			if pw, err = httpclient.Token(env, a.auth.env2, "http "+a.label()); err != nil {
				return out, err
			}
		}
		out.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(tok+":"+pw)))
	case "header":
		out.Header.Set(a.auth.header, tok)
	}
	return out, nil
}

// send writes body with the block's encoding. idemKey adds the
// idempotency header with a new key, which makes the request safe to
// repeat (the provider answers a repeat with the first answer).
func (a api) send(ctx context.Context, h httpclient.API, method, path string, body any, idempotent, idemKey bool, out any) error {
	if a.encoding == EncodingForm && body != nil {
		m, _ := body.(map[string]any)
		enc, err := formBody(m)
		if err != nil {
			return err
		}
		h.Header = h.Header.Clone()
		if h.Header == nil {
			h.Header = http.Header{}
		}
		h.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		body = []byte(enc)
	}
	if idemKey && a.idemHeader != "" {
		h.Header = h.Header.Clone()
		if h.Header == nil {
			h.Header = http.Header{}
		}
		h.Header.Set(a.idemHeader, newIdempotencyKey())
		idempotent = true
	}
	return h.Send(ctx, method, path, nil, body, idempotent, out)
}

// newIdempotencyKey is a random key for one create: the client's retries
// of that request repeat it; a later create gets another.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "sponson-" + hex.EncodeToString(b[:])
}

// formBody encodes a body as application/x-www-form-urlencoded, nested
// values in the bracket notation Stripe and Rails read: a[b]=v for maps,
// a[0]=v for arrays. Keys are sorted, so the body is stable.
func formBody(m map[string]any) (string, error) {
	var parts []string
	var walk func(prefix string, v any) error
	walk = func(prefix string, v any) error {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if err := walk(prefix+"["+k+"]", t[k]); err != nil {
					return err
				}
			}
		case []any:
			for i, x := range t {
				if err := walk(prefix+"["+strconv.Itoa(i)+"]", x); err != nil {
					return err
				}
			}
		default:
			s, ok := scalar(v)
			if !ok {
				return errs.New(errs.PARAM_INVALID, "a form body cannot hold %T at %s", v, prefix).With("param", "encoding")
			}
			if v == nil {
				s = ""
			}
			parts = append(parts, url.QueryEscape(prefix)+"="+url.QueryEscape(s))
		}
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := walk(k, m[k]); err != nil {
			return "", err
		}
	}
	return strings.Join(parts, "&"), nil
}

// walkPages lists path page by page with the paging pg, calling visit
// with each page's items until it reports done. A collection that answers
// 404 on its first page holds nothing.
func walkPages(ctx context.Context, a httpclient.API, path string, q url.Values, pg paging, items pointer, hasItems bool, idPath pointer,
	visit func(list []any) (done bool)) error {
	return httpclient.Pages(ctx, a.Provider, func(ctx context.Context, cursor string) (string, error) {
		p, qq, err := pg.request(a, path, q, cursor)
		if err != nil {
			return "", err
		}
		resp, err := a.Do(ctx, http.MethodGet, p, qq, nil, true)
		if httpclient.IsNotFound(err) && cursor == "" {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		var doc any
		if err := resp.Decode(&doc); err != nil {
			return "", err
		}
		list, err := itemsOf(doc, items, hasItems)
		if err != nil {
			return "", errs.Wrap(err, errs.PROVIDER_RESPONSE, "%s: GET %s", a.Provider, path)
		}
		if visit(list) {
			return "", nil
		}
		return pg.nextCursor(a, doc, resp.Header, list, idPath, cursor)
	})
}

// request is the path and query of the page cursor names.
func (pg paging) request(a httpclient.API, path string, q url.Values, cursor string) (string, url.Values, error) {
	qq := url.Values{}
	for k, v := range q {
		qq[k] = v
	}
	switch pg.kind {
	case PagingLink:
		if cursor == "" {
			return path, qq, nil
		}
		p, raw, _ := strings.Cut(cursor, "?")
		lq, err := url.ParseQuery(raw)
		if err != nil {
			return "", nil, errs.New(errs.PROVIDER_RESPONSE, "%s: the Link header's next URL has a query Sponson cannot read", a.Provider)
		}
		return p, lq, nil
	case PagingOffset:
		off := "0"
		if cursor != "" {
			off = cursor
		}
		qq.Set(pg.param, off)
		qq.Set(pg.sizeParam, strconv.Itoa(pg.size))
	case PagingAuto:
		if after, ok := strings.CutPrefix(cursor, afterCursor); ok {
			qq.Set("after", after)
		} else if cursor != "" {
			qq.Set("cursor", cursor)
		}
	default:
		if cursor != "" {
			qq.Set(pg.param, cursor)
		}
	}
	return path, qq, nil
}

// nextCursor is the cursor of the page after this one, "" at the end.
func (pg paging) nextCursor(a httpclient.API, doc any, h http.Header, list []any, idPath pointer, cursor string) (string, error) {
	obj, _ := doc.(map[string]any)
	lastID := func() string {
		if len(list) == 0 {
			return ""
		}
		return idOf(list[len(list)-1], idPath)
	}
	switch pg.kind {
	case PagingAuto:
		if next, ok := obj["next_cursor"].(string); ok {
			return next, nil
		}
		if more, _ := obj["has_more"].(bool); more {
			if id := lastID(); id != "" {
				return afterCursor + id, nil
			}
		}
	case PagingCursor:
		v, _ := pg.next.get(doc)
		s, _ := scalar(v)
		if s != "null" {
			return s, nil
		}
	case PagingAfter:
		if more, _ := obj["has_more"].(bool); more {
			return lastID(), nil
		}
	case PagingOffset:
		if len(list) >= pg.size {
			n, _ := strconv.Atoi(cursor)
			return strconv.Itoa(n + len(list)), nil
		}
	case PagingLink:
		return linkNext(a, h)
	}
	return "", nil
}

// linkNext is the rel="next" target of the Link header (RFC 8288) as a
// path and query beneath the base URL; a target elsewhere is
// PROVIDER_RESPONSE (Sponson sends its credential to the API's host only).
// Sentry marks its last page's next link results="false".
func linkNext(a httpclient.API, h http.Header) (string, error) {
	for _, line := range h.Values("Link") {
		for _, part := range strings.Split(line, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			rel, results := "", ""
			for _, p := range strings.Split(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				v = strings.Trim(v, `"`)
				switch strings.ToLower(k) {
				case "rel":
					rel = v
				case "results":
					results = v
				}
			}
			if !containsStr(strings.Fields(rel), "next") || results == "false" {
				continue
			}
			u := target[1 : len(target)-1]
			base, err := url.Parse(a.BaseURL)
			if err != nil {
				return "", err
			}
			ref, err := base.Parse(u)
			if err != nil || ref.Host != base.Host || ref.Scheme != base.Scheme || !strings.HasPrefix(ref.Path, strings.TrimRight(base.Path, "/")+"/") {
				return "", errs.New(errs.PROVIDER_RESPONSE, "%s: the Link header's next page %s is not beneath the API's base URL", a.Provider, clip(u))
			}
			p := strings.TrimPrefix(ref.Path, strings.TrimRight(base.Path, "/"))
			if ref.RawQuery != "" {
				p += "?" + ref.RawQuery
			}
			return p, nil
		}
	}
	return "", nil
}

// label describes an auth form for messages.
func (s authSpec) String() string {
	if s.kind == "header" {
		return fmt.Sprintf("%s header from %s", s.header, s.env)
	}
	return s.kind + " from " + strings.Join(s.vars(), ", ")
}
