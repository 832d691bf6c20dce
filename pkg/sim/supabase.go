package sim

// Supabase Management API: the subset supabase.auth_redirect uses (the
// project's auth config).
//
// Assumptions about the real API, and where each was checked:
//
// S1. Base https://api.supabase.com, "Authorization: Bearer <personal access
//     token>" (sbp_...); all requests authenticated. Rate limit 60 requests
//     a minute per user, then 429. Source: Management API introduction,
//     https://supabase.com/docs/reference/api/list-all-secrets.
// S2. A missing or wrong token answers 401 {"message":"Unauthorized"}.
//     Source: nitrictech/pulumi-supabase issue #8 (a live 401 body).
// S3. GET /v1/projects/{ref}/config/auth answers the project's auth config
//     (many fields; the sim models site_url, uri_allow_list, disable_signup,
//     jwt_exp, external_email_enabled, mailer_autoconfirm and sends a few
//     more as fixed values). PATCH the same path with any subset of fields
//     updates only those and answers 200 with the whole config. The ref is
//     20 characters. Source: "Update Project's Auth Config" (withone.ai
//     knowledge page for the Supabase Management API: PATCH
//     /projects/{ref}/config/auth, ref minLength/maxLength 20, body fields
//     including "uri_allow_list": "string", "site_url": "string").
// S4. uri_allow_list is ONE comma-separated string (GoTrue URI_ALLOW_LIST:
//     "A comma-separated list of URIs ... permitted as valid redirect_to
//     destinations"; globbing allowed). The sim keeps the string exactly as
//     sent and answers 400 to a non-string (an array). Sources: S3, and the
//     supabase/auth README change 90c081d5 (URI_ALLOW_LIST).
// S5. PATCH replaces the whole string with no precondition (no ETag, no
//     version): two concurrent read-modify-writes lose an entry. Docs
//     silent on concurrency; that is the point of the LockOn in the plan.
// S6. Unknown body fields: the docs do not say; the real config has well
//     over a hundred fields the sim does not model, so the sim ignores
//     unknown fields rather than reject them. A known field of the wrong
//     JSON type is 400 {"message": ...} (text is the sim's).
// S7. An unknown (well-formed) ref answers 404 {"message":"Project not
//     found"} (status and text not checked); a ref that is not 20
//     characters answers 400.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// SupabaseProject is a project and its auth config. Entries are the
// uri_allow_list entries with who put each there.
type SupabaseProject struct {
	Ref     string             `json:"ref"`
	Name    string             `json:"name"`
	Auth    SupabaseAuthConfig `json:"auth"`
	Entries []Entry            `json:"entries"`
	Origin  Origin             `json:"origin"`
}

// SupabaseAuthConfig is the modelled part of the auth config.
type SupabaseAuthConfig struct {
	SiteURL              string `json:"site_url"`
	URIAllowList         string `json:"uri_allow_list"`
	DisableSignup        bool   `json:"disable_signup"`
	JWTExp               int    `json:"jwt_exp"`
	ExternalEmailEnabled bool   `json:"external_email_enabled"`
	MailerAutoconfirm    bool   `json:"mailer_autoconfirm"`
}

// Entry is one entry of a list on a shared parent, with its origin.
type Entry struct {
	Value  string `json:"value"`
	Origin Origin `json:"origin"`
}

type supabaseState struct {
	projects []*supabaseProject
	branches []*SupabaseBranch
}

type supabaseProject struct {
	SupabaseProject
	origins map[string]Origin
}

// splitList splits a comma-separated list into trimmed, non-empty entries.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// track records the origin of entries new to the list and forgets removed
// ones.
func track(origins map[string]Origin, entries []string, origin Origin) map[string]Origin {
	next := map[string]Origin{}
	for _, e := range entries {
		if o, ok := origins[e]; ok {
			next[e] = o
		} else {
			next[e] = origin
		}
	}
	return next
}

func entriesOf(list []string, origins map[string]Origin) []Entry {
	out := []Entry{}
	for _, e := range list {
		out = append(out, Entry{Value: e, Origin: origins[e]})
	}
	return out
}

func (c *Cloud) supabaseProvider() *api {
	p := &api{name: ProviderSupabase, mux: http.NewServeMux(), token: func() string { return c.tokens.Supabase }}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) {
		writeJSON(w, status, map[string]any{"message": msg})
	}
	p.deny = func(w http.ResponseWriter, missing bool) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Unauthorized"})
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"message": "Too many requests"})
	}
	p.mux.HandleFunc("GET /v1/projects/{ref}/config/auth", c.supabaseGet)
	p.mux.HandleFunc("PATCH /v1/projects/{ref}/config/auth", c.supabasePatch)
	c.supabaseBranchRoutes(p)
	p.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Cannot " + r.Method + " " + r.URL.Path})
	})
	return p
}

func supabaseView(a SupabaseAuthConfig) map[string]any {
	return map[string]any{
		"site_url": a.SiteURL, "uri_allow_list": a.URIAllowList, "disable_signup": a.DisableSignup,
		"jwt_exp": a.JWTExp, "external_email_enabled": a.ExternalEmailEnabled,
		"mailer_autoconfirm": a.MailerAutoconfirm, "external_phone_enabled": false,
		"external_anonymous_users_enabled": false, "password_min_length": 6,
		"mfa_max_enrolled_factors": 10, "security_refresh_token_reuse_interval": 10,
		"smtp_admin_email": nil, "smtp_host": nil, "rate_limit_email_sent": 2,
	}
}

// supabaseFind finds a project, answering the error itself. Callers hold c.mu.
func (c *Cloud) supabaseFind(w http.ResponseWriter, ref string) *supabaseProject {
	if len(ref) != 20 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "ref must be a 20-character project reference"})
		return nil
	}
	for _, p := range c.supabase.projects {
		if p.Ref == ref {
			return p
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Project not found"})
	return nil
}

func (c *Cloud) supabaseGet(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.supabaseFind(w, r.PathValue("ref")); p != nil {
		writeJSON(w, http.StatusOK, supabaseView(p.Auth))
	}
}

func (c *Cloud) supabasePatch(w http.ResponseWriter, r *http.Request) {
	m, ok := decodeObject(readBody(r))
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Request body must be a JSON object"})
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.supabaseFind(w, r.PathValue("ref"))
	if p == nil {
		return
	}
	next := p.Auth
	fields := []struct {
		name string
		dst  any
	}{
		{"site_url", &next.SiteURL}, {"uri_allow_list", &next.URIAllowList},
		{"disable_signup", &next.DisableSignup}, {"jwt_exp", &next.JWTExp},
		{"external_email_enabled", &next.ExternalEmailEnabled}, {"mailer_autoconfirm", &next.MailerAutoconfirm},
	}
	for _, f := range fields {
		raw, ok := m[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil || string(raw) == "null" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": fmt.Sprintf("%s has the wrong type: %s", f.name, typeName(raw))})
			return
		}
	}
	p.Auth = next
	p.origins = track(p.origins, splitList(next.URIAllowList), OriginAPI)
	writeJSON(w, http.StatusOK, supabaseView(p.Auth))
}

func typeName(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "null":
		return "null"
	case strings.HasPrefix(s, "["):
		return "array"
	case strings.HasPrefix(s, "{"):
		return "object"
	case strings.HasPrefix(s, "\""):
		return "string"
	case s == "true" || s == "false":
		return "boolean"
	}
	return "number"
}

// SeedSupabaseProject adds a project with an auth config, marked seeded,
// and returns its ref (generated, 20 lowercase letters, when empty).
func (c *Cloud) SeedSupabaseProject(p SupabaseProject) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.Ref == "" {
		p.Ref = c.randString(20, "abcdefghijklmnopqrstuvwxyz")
	}
	if len(p.Ref) != 20 {
		return "", fmt.Errorf("sim: supabase ref %q is not 20 characters", p.Ref)
	}
	if p.Auth.JWTExp == 0 {
		p.Auth.JWTExp = 3600
	}
	sp := &supabaseProject{SupabaseProject: SupabaseProject{Ref: p.Ref, Name: p.Name, Auth: p.Auth, Origin: OriginSeed}}
	sp.origins = track(nil, splitList(p.Auth.URIAllowList), OriginSeed)
	c.supabase.projects = append(c.supabase.projects, sp)
	return p.Ref, nil
}
