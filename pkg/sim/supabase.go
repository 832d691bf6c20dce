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

// supabase is the Supabase provider: projects with their auth settings,
// and branches.
type supabase struct {
	*core
	routes   *api
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

func newSupabase(c *core) provider {
	sb := &supabase{core: c}
	sb.routes = sb.newAPI()
	return sb
}

func (sb *supabase) api() *api { return sb.routes }

func (sb *supabase) reset() { sb.projects, sb.branches = nil, nil }

func (sb *supabase) newAPI() *api {
	p := &api{name: ProviderSupabase, mux: http.NewServeMux(), token: func() string { return sb.tokens.Supabase },
		drifts: []string{"supabase_branch"},
		env: func(url string) []string {
			return []string{"SUPABASE_API_URL=" + url, "SUPABASE_ACCESS_TOKEN=" + sb.tokens.Supabase}
		}}
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
	p.handle("GET /v1/projects/{ref}/config/auth", sb.get)
	p.handle("PATCH /v1/projects/{ref}/config/auth", sb.patch)
	sb.branchRoutes(p)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
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

// supabaseFind finds a project, answering the error itself. Callers hold sb.mu.
func (sb *supabase) find(w http.ResponseWriter, ref string) *supabaseProject {
	if len(ref) != 20 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "ref must be a 20-character project reference"})
		return nil
	}
	for _, p := range sb.projects {
		if p.Ref == ref {
			return p
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Project not found"})
	return nil
}

func (sb *supabase) get(w http.ResponseWriter, r *http.Request) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if p := sb.find(w, r.PathValue("ref")); p != nil {
		writeJSON(w, http.StatusOK, supabaseView(p.Auth))
	}
}

func (sb *supabase) patch(w http.ResponseWriter, r *http.Request) {
	m, ok := decodeObject(readBody(r))
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Request body must be a JSON object"})
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	p := sb.find(w, r.PathValue("ref"))
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
func (k Console) SeedSupabaseProject(p SupabaseProject) (string, error) {
	c := k.c
	return lookup[*supabase](c).seedSupabaseProject(p)
}

func (sb *supabase) seedSupabaseProject(p SupabaseProject) (string, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if p.Ref == "" {
		p.Ref = sb.randString(20, "abcdefghijklmnopqrstuvwxyz")
	}
	if len(p.Ref) != 20 {
		return "", fmt.Errorf("sim: supabase ref %q is not 20 characters", p.Ref)
	}
	if p.Auth.JWTExp == 0 {
		p.Auth.JWTExp = 3600
	}
	sp := &supabaseProject{SupabaseProject: SupabaseProject{Ref: p.Ref, Name: p.Name, Auth: p.Auth, Origin: OriginSeed}}
	sp.origins = track(nil, splitList(p.Auth.URIAllowList), OriginSeed)
	sb.projects = append(sb.projects, sp)
	return p.Ref, nil
}

func (sb *supabase) driftProject(d Drift) (string, error) {
	var p *supabaseProject
	for _, x := range sb.projects {
		if x.Ref == d.Project {
			p = x
		}
	}
	if p == nil {
		return "", fmt.Errorf("sim: drift: no supabase project %q", d.Project)
	}
	switch d.Action {
	case DriftAdd, DriftRemove:
		list, origins, _ := editList(splitList(p.Auth.URIAllowList), p.origins, d.Action, d.Value)
		p.Auth.URIAllowList, p.origins = strings.Join(list, ","), origins
		return p.Ref, nil
	case DriftChange:
		switch d.Field {
		case "", "uri_allow_list":
			p.Auth.URIAllowList = d.Value
			p.origins = track(p.origins, splitList(d.Value), OriginConsole)
		case "site_url":
			p.Auth.SiteURL = d.Value
		default:
			return "", fmt.Errorf("sim: drift: supabase field %q cannot be changed", d.Field)
		}
		return p.Ref, nil
	}
	return "", badAction(d)
}

// snapshot adds the projects with their allow-lists, and the branches.
func (sb *supabase) snapshot(s *Snapshot, now time.Time) {
	s.Supabase = []SupabaseProject{}
	for _, p := range sb.projects {
		sp := p.SupabaseProject
		sp.Entries = entriesOf(splitList(p.Auth.URIAllowList), p.origins)
		s.Supabase = append(s.Supabase, sp)
	}
	s.SupabaseBranches = sb.branchesSnapshot()
}

// drift edits a project's allow-list or settings ("supabase") or a branch
// ("supabase_branch").
func (sb *supabase) drift(d Drift) (string, error) {
	if d.Provider == "supabase_branch" {
		return sb.driftBranch(d)
	}
	return sb.driftProject(d)
}
