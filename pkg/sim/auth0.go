package sim

// Auth0 Management API v2: the subset auth0.callback uses (one
// application's URL lists).
//
// Assumptions about the real API, and where each was checked:
//
// A1. Base https://{tenantDomain}/api/v2, "Authorization: Bearer
//     <management API token>". Sources: "Update a client",
//     https://auth0.com/docs/ja-jp/api/management/v2/clients/patch-clients-by-id.
// A2. Errors are {"statusCode","error","message"[,"errorCode"]}. A missing
//     token answers 401 "Missing authentication"; a bad one 401 "Invalid
//     token". Sources: auth0/auth0.net issue #123 ("Missing
//     authentication"), auth0/go-auth0 issue #22 ("401 Unauthorized:
//     Invalid token").
// A3. GET /api/v2/clients/{id}?fields=a,b&include_fields=true returns only
//     the listed fields (include_fields=false: all but them). PATCH
//     /api/v2/clients/{id} with callbacks, allowed_logout_urls, web_origins,
//     allowed_origins (arrays of strings) replaces each array whole and
//     answers 200 with the client. There is no ETag or precondition: two
//     concurrent GET-then-PATCH lose an entry. Sources: A1 page (response
//     shape), Auth0 Node.js SDK UpdateClientRequestContent,
//     https://auth0.github.io/node-auth0/interfaces/management.Management.UpdateClientRequestContent.html.
// A4. The PATCH body is validated against a schema that rejects properties
//     it does not know (client_id included: an adapter that echoes a GET
//     back fails) with 400 {"errorCode":"invalid_body", "message":
//     "Payload validation error: ..."}; the accepted set is the one in the
//     SDK's UpdateClientRequestContent (A3). Message text is the sim's.
// A5. List entries must be absolute URLs (wildcards allowed in the host);
//     otherwise 400 invalid_body. Exact rules not checked.
// A6. An unknown client id answers 404 {"errorCode":"inexistent_client",
//     "message":"The client does not exist"} (not checked).
// A7. Rate limits are per tenant and per plan; responses carry
//     x-ratelimit-limit, x-ratelimit-remaining and x-ratelimit-reset (Unix
//     seconds); over the limit, 429 "Too Many Requests" with errorCode
//     too_many_requests. The docs found do not promise Retry-After; the sim
//     sends it as well. Sources: "Why You're Getting 429s in Production
//     Using Auth0", https://auth0.com/blog/why-getting-429s-and-how-to-stop-them;
//     community thread "Global limit has been reached" (headers).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The Auth0 client URL lists.
const (
	Auth0Callbacks         = "callbacks"
	Auth0AllowedLogoutURLs = "allowed_logout_urls"
	Auth0WebOrigins        = "web_origins"
	Auth0AllowedOrigins    = "allowed_origins"
)

// Auth0Lists names the URL lists of an Auth0 client.
var Auth0Lists = []string{Auth0Callbacks, Auth0AllowedLogoutURLs, Auth0WebOrigins, Auth0AllowedOrigins}

// Auth0Client is an Auth0 application. Lists maps a list name to its
// entries; Entries gives each entry's origin.
type Auth0Client struct {
	ClientID string              `json:"client_id"`
	Name     string              `json:"name"`
	AppType  string              `json:"app_type"`
	Lists    map[string][]string `json:"lists"`
	Entries  map[string][]Entry  `json:"entries"`
	Origin   Origin              `json:"origin"`
}

// auth0 is the Auth0 provider: applications with their URL lists.
type auth0 struct {
	*core
	routes  *api
	clients []*auth0Client
}

type auth0Client struct {
	Auth0Client
	origins map[string]map[string]Origin
}

// auth0Known are the UpdateClientRequestContent properties (A4).
var auth0Known = []string{
	"name", "description", "client_secret", "logo_uri", "callbacks", "oidc_logout", "oidc_backchannel_logout",
	"session_transfer", "allowed_origins", "web_origins", "grant_types", "client_aliases", "allowed_clients",
	"allowed_logout_urls", "jwt_configuration", "encryption_key", "sso", "cross_origin_authentication",
	"cross_origin_loc", "sso_disabled", "custom_login_page_on", "token_endpoint_auth_method",
	"is_token_endpoint_ip_header_trusted", "app_type", "is_first_party", "oidc_conformant", "custom_login_page",
	"custom_login_page_preview", "token_quota", "form_template", "addons", "client_metadata", "mobile",
	"initiate_login_uri", "native_social_login", "refresh_token", "default_organization", "organization_usage",
	"organization_require_behavior", "client_authentication_methods", "require_pushed_authorization_requests",
	"require_proof_of_possession", "signed_request_object", "compliance_level", "par_request_expiry",
	"token_exchange", "express_configuration", "async_approval_notification_channels",
}

func newAuth0(c *core) provider {
	a0 := &auth0{core: c}
	a0.routes = a0.newAPI()
	return a0
}

func (a0 *auth0) api() *api { return a0.routes }

func (a0 *auth0) reset() { a0.clients = nil }

func (a0 *auth0) newAPI() *api {
	p := &api{name: ProviderAuth0, mux: http.NewServeMux(), token: func() string { return a0.tokens.Auth0 }}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) {
		auth0Err(w, status, "", msg)
	}
	p.deny = func(w http.ResponseWriter, missing bool) {
		msg := "Invalid token"
		if missing {
			msg = "Missing authentication"
		}
		auth0Err(w, http.StatusUnauthorized, "", msg)
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		w.Header().Set("X-RateLimit-Limit", "50")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(after).Unix(), 10))
		auth0Err(w, http.StatusTooManyRequests, "too_many_requests", "Global limit has been reached")
	}
	p.handle("GET /api/v2/clients/{id}", a0.get)
	p.handle("PATCH /api/v2/clients/{id}", a0.patch)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
		auth0Err(w, http.StatusNotFound, "", "Not Found")
	})
	p.env = func(url string) []string {
		return []string{"AUTH0_API_URL=" + url, "AUTH0_MANAGEMENT_TOKEN=" + a0.tokens.Auth0}
	}
	p.described = describedAs{files: []string{"auth0"}, base: "/api/v2"}
	return p
}

func auth0Err(w http.ResponseWriter, status int, code, msg string) {
	v := map[string]any{"statusCode": status, "error": http.StatusText(status), "message": msg}
	if code != "" {
		v["errorCode"] = code
	}
	writeJSON(w, status, v)
}

func (a0 *auth0) find(id string) *auth0Client {
	for _, cl := range a0.clients {
		if cl.ClientID == id {
			return cl
		}
	}
	return nil
}

func auth0View(cl *auth0Client) map[string]any {
	v := map[string]any{
		"client_id": cl.ClientID, "tenant": "sim", "name": cl.Name, "description": "", "global": false,
		"app_type": cl.AppType, "is_first_party": true, "oidc_conformant": true, "sso_disabled": false,
		"cross_origin_authentication": false, "grant_types": []string{"authorization_code", "implicit", "refresh_token"},
		"token_endpoint_auth_method": "client_secret_post", "callback_url_template": false, "custom_login_page_on": true,
		"jwt_configuration": map[string]any{"alg": "RS256", "lifetime_in_seconds": 36000, "secret_encoded": false},
	}
	for _, l := range Auth0Lists {
		v[l] = append([]string{}, cl.Lists[l]...)
	}
	return v
}

func (a0 *auth0) get(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a0.mu.Lock()
	defer a0.mu.Unlock()
	cl := a0.find(r.PathValue("id"))
	if cl == nil {
		auth0Err(w, http.StatusNotFound, "inexistent_client", "The client does not exist")
		return
	}
	v := auth0View(cl)
	if f := q.Get("fields"); f != "" {
		fields := strings.Split(f, ",")
		include := q.Get("include_fields") != "false"
		for k := range v {
			if slices.Contains(fields, k) != include {
				delete(v, k)
			}
		}
	}
	writeJSON(w, http.StatusOK, v)
}

func (a0 *auth0) patch(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	m, ok := decodeObject(body)
	if !ok {
		auth0Err(w, http.StatusBadRequest, "invalid_body", "Payload validation error: 'Expected type object but found type "+typeName(body)+"'.")
		return
	}
	var extra []string
	for k := range m {
		if !slices.Contains(auth0Known, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		auth0Err(w, http.StatusBadRequest, "invalid_body", "Payload validation error: 'Additional properties not allowed: "+strings.Join(extra, ",")+"'.")
		return
	}
	lists := map[string][]string{}
	for _, l := range Auth0Lists {
		raw, ok := m[l]
		if !ok {
			continue
		}
		var xs []string
		if err := json.Unmarshal(raw, &xs); err != nil || xs == nil {
			auth0Err(w, http.StatusBadRequest, "invalid_body", fmt.Sprintf("Payload validation error: 'Expected type array but found type %s' on property %s.", typeName(raw), l))
			return
		}
		for i, x := range xs {
			if !absoluteURL(x) {
				auth0Err(w, http.StatusBadRequest, "invalid_body", fmt.Sprintf("Payload validation error: 'Object didn't pass validation for format absolute-uri-or-empty: %s' on property %s[%d].", x, l, i))
				return
			}
		}
		lists[l] = xs
	}
	var name *string
	if raw, ok := m["name"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s == "" {
			auth0Err(w, http.StatusBadRequest, "invalid_body", "Payload validation error: 'Expected a non-empty string' on property name.")
			return
		}
		name = &s
	}
	a0.mu.Lock()
	defer a0.mu.Unlock()
	cl := a0.find(r.PathValue("id"))
	if cl == nil {
		auth0Err(w, http.StatusNotFound, "inexistent_client", "The client does not exist")
		return
	}
	for l, xs := range lists {
		cl.Lists[l] = xs
		cl.origins[l] = track(cl.origins[l], xs, OriginAPI)
	}
	if name != nil {
		cl.Name = *name
	}
	writeJSON(w, http.StatusOK, auth0View(cl))
}

// absoluteURL accepts absolute URLs with a host, allowing "*" wildcards.
func absoluteURL(s string) bool {
	u, err := url.Parse(strings.ReplaceAll(s, "*", "wildcard"))
	return err == nil && u.Scheme != "" && u.Host != ""
}

// SeedAuth0Client adds an application, marked seeded, and returns its
// client id (32 characters, generated when empty).
func (k Console) SeedAuth0Client(cl Auth0Client) string {
	c := k.c
	return lookup[*auth0](c).seedAuth0Client(cl)
}

func (a0 *auth0) seedAuth0Client(cl Auth0Client) string {
	a0.mu.Lock()
	defer a0.mu.Unlock()
	if cl.ClientID == "" {
		cl.ClientID = a0.randString(32, alnum)
	}
	if cl.Name == "" {
		cl.Name = "Sim Application"
	}
	if cl.AppType == "" {
		cl.AppType = "regular_web"
	}
	ac := &auth0Client{Auth0Client: Auth0Client{ClientID: cl.ClientID, Name: cl.Name, AppType: cl.AppType, Origin: OriginSeed, Lists: map[string][]string{}}, origins: map[string]map[string]Origin{}}
	for _, l := range Auth0Lists {
		xs := append([]string{}, cl.Lists[l]...)
		ac.Lists[l] = xs
		ac.origins[l] = track(nil, xs, OriginSeed)
	}
	a0.clients = append(a0.clients, ac)
	return cl.ClientID
}

func (a0 *auth0) drift(d Drift) (string, error) {
	cl := a0.find(d.Project)
	if cl == nil {
		return "", fmt.Errorf("sim: drift: no auth0 client %q", d.Project)
	}
	l := d.List
	if l == "" {
		l = Auth0Callbacks
	}
	if !slices.Contains(Auth0Lists, l) {
		return "", fmt.Errorf("sim: drift: auth0 has no list %q", l)
	}
	switch d.Action {
	case DriftAdd, DriftRemove:
		list, origins, _ := editList(cl.Lists[l], cl.origins[l], d.Action, d.Value)
		cl.Lists[l], cl.origins[l] = list, origins
		return cl.ClientID, nil
	case DriftChange:
		xs := splitList(d.Value)
		cl.Lists[l] = xs
		cl.origins[l] = track(cl.origins[l], xs, OriginConsole)
		return cl.ClientID, nil
	}
	return "", badAction(d)
}

// snapshot adds the applications with their lists.
func (a0 *auth0) snapshot(s *Snapshot, now time.Time) {
	s.Auth0 = []Auth0Client{}
	for _, cl := range a0.clients {
		ac := cl.Auth0Client
		ac.Lists, ac.Entries = map[string][]string{}, map[string][]Entry{}
		for _, l := range Auth0Lists {
			ac.Lists[l] = slices.Clone(cl.Lists[l])
			if ac.Lists[l] == nil {
				ac.Lists[l] = []string{}
			}
			ac.Entries[l] = entriesOf(cl.Lists[l], cl.origins[l])
		}
		s.Auth0 = append(s.Auth0, ac)
	}
}
