package sim

// Clerk Backend API: the subset clerk.redirect_allow uses (an instance's
// allowed redirect URLs).
//
// Assumptions about the real API, and where each was checked:
//
// C1. Base https://api.clerk.com/v1, "Authorization: Bearer <secret key>"
//     (sk_test_..., sk_live_...); the key selects the instance. Source:
//     Clerk Backend API reference, https://clerk.com/docs/reference/backend-api.
// C2. GET /redirect_urls lists the instance's redirect URLs. With
//     paginated=true it answers {"data":[...], "total_count": n} and honours
//     limit (default 10, at most 500) and offset; without it, a bare array.
//     The sim does both. Sources: "getRedirectUrlList()" (a
//     PaginatedResourceResponse with data and totalCount),
//     https://clerk.com/docs/reference/backend/redirect-urls/get-redirect-url-list.md;
//     the limit/offset convention of the other BAPI list endpoints
//     (assumed for this one, the docs page does not list them).
// C3. A redirect URL is {"object":"redirect_url","id":"ru_...","url",
//     "created_at","updated_at"} (Unix milliseconds). Sources:
//     clerk-sdk-rust-community models/redirect_url.rs (generated from the
//     BAPI OpenAPI); createRedirectUrl() example (ru_ ids).
// C4. POST /redirect_urls {"url"} creates one and answers 200 with it. The
//     url must be https:// or a custom scheme (my-app://...). A url that is
//     already allowed answers 400 {"errors":[{"code":"duplicate_record"}]}
//     (docs silent on duplicates; the sim refuses them, the stricter
//     choice: an adapter must take an existing entry over, never repeat it).
//     Source: "createRedirectUrl()",
//     https://clerk.com/docs/reference/backend/redirect-urls/create-redirect-url.md.
// C5. DELETE /redirect_urls/{id} (GET of one is not in Clerk's description,
//     so the sim refuses it as every undescribed route)
//     answers 200 {"object":"redirect_url","id","deleted":true}; an unknown
//     id is 404 {"errors":[{"code":"resource_not_found"}]}. Sources:
//     hex.pm clerk lib/redirect_url.ex (GET, DELETE by id); the deleted
//     object shape of the other BAPI deletes (not checked for this one).
// C6. Errors are {"errors":[{"message","long_message","code"}],
//     "clerk_trace_id"}; a missing or wrong key answers 401 with code
//     authentication_invalid (text is the sim's). 429 carries Retry-After.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClerkRedirectURL is one allowed redirect URL.
type ClerkRedirectURL struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	CreatedAt int64  `json:"created_at"`
	Origin    Origin `json:"origin"`
}

// clerk is the Clerk provider: redirect URLs.
type clerk struct {
	*core
	routes *api
	urls   []*ClerkRedirectURL
}

func clerkErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{
		"errors":         []any{map[string]any{"message": msg, "long_message": msg, "code": code}},
		"clerk_trace_id": "sim-trace",
	})
}

func newClerk(c *core) provider {
	ck := &clerk{core: c}
	ck.routes = ck.newAPI()
	return ck
}

func (ck *clerk) api() *api { return ck.routes }

func (ck *clerk) reset() { ck.urls = nil }

func (ck *clerk) newAPI() *api {
	p := &api{name: ProviderClerk, mux: http.NewServeMux(), token: func() string { return ck.tokens.Clerk }}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) { clerkErr(w, status, code, msg) }
	p.deny = func(w http.ResponseWriter, missing bool) {
		clerkErr(w, http.StatusUnauthorized, "authentication_invalid", "Invalid authentication")
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		clerkErr(w, http.StatusTooManyRequests, "too_many_requests", "Too many requests")
	}
	p.handle("GET /v1/redirect_urls", ck.list)
	p.handle("POST /v1/redirect_urls", ck.create)
	p.handle("DELETE /v1/redirect_urls/{id}", ck.delete)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
		clerkErr(w, http.StatusNotFound, "resource_not_found", "not found")
	})
	p.env = func(url string) []string {
		return []string{"CLERK_API_URL=" + url, "CLERK_SECRET_KEY=" + ck.tokens.Clerk}
	}
	p.described = describedAs{files: []string{"clerk"}, base: "/v1"}
	return p
}

func clerkView(u *ClerkRedirectURL) map[string]any {
	return map[string]any{"object": "redirect_url", "id": u.ID, "url": u.URL, "created_at": u.CreatedAt, "updated_at": u.CreatedAt}
}

func (ck *clerk) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ck.mu.Lock()
	defer ck.mu.Unlock()
	all := make([]any, 0, len(ck.urls))
	for _, u := range ck.urls {
		all = append(all, clerkView(u))
	}
	if q.Get("paginated") != "true" {
		writeJSON(w, http.StatusOK, all)
		return
	}
	limit, offset := 10, 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			clerkErr(w, http.StatusUnprocessableEntity, "form_param_value_invalid", "limit must be between 1 and 500")
			return
		}
		limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			clerkErr(w, http.StatusUnprocessableEntity, "form_param_value_invalid", "offset must be 0 or more")
			return
		}
		offset = n
	}
	if ps := pageSizeOf(r); ps > 0 && ps < limit {
		limit = ps
	}
	page := []any{}
	if offset < len(all) {
		page = all[offset:min(len(all), offset+limit)]
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": page, "total_count": len(all)})
}

// clerkFind finds a URL by id. Callers hold ck.mu.
func (ck *clerk) find(id string) int {
	for i, u := range ck.urls {
		if u.ID == id {
			return i
		}
	}
	return -1
}

func clerkURLValid(s string) bool {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || rest == "" || scheme == "" || scheme == "http" {
		return false
	}
	return !strings.ContainsAny(s, " \t\n")
}

func (ck *clerk) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		URL *string `json:"url"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil || body.URL == nil {
		clerkErr(w, http.StatusUnprocessableEntity, "form_param_missing", "url is missing")
		return
	}
	if !clerkURLValid(*body.URL) {
		clerkErr(w, http.StatusUnprocessableEntity, "form_param_format_invalid", "url must start with https:// or a custom scheme")
		return
	}
	ck.mu.Lock()
	defer ck.mu.Unlock()
	for _, u := range ck.urls {
		if u.URL == *body.URL {
			clerkErr(w, http.StatusBadRequest, "duplicate_record", "this redirect url already exists")
			return
		}
	}
	u := &ClerkRedirectURL{ID: "ru_" + ck.randString(27, alnum), URL: *body.URL, CreatedAt: ck.now().UnixMilli(), Origin: OriginAPI}
	ck.urls = append(ck.urls, u)
	writeJSON(w, http.StatusOK, clerkView(u))
}

func (ck *clerk) delete(w http.ResponseWriter, r *http.Request) {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	id := r.PathValue("id")
	i := ck.find(id)
	if i < 0 {
		clerkErr(w, http.StatusNotFound, "resource_not_found", "redirect url not found")
		return
	}
	ck.urls = append(ck.urls[:i], ck.urls[i+1:]...)
	writeJSON(w, http.StatusOK, map[string]any{"object": "redirect_url", "id": id, "deleted": true})
}

// SeedClerkRedirectURL adds an allowed redirect URL, marked seeded, and
// returns its id.
func (k Console) SeedClerkRedirectURL(url string) string {
	c := k.c
	return lookup[*clerk](c).seedClerkRedirectURL(url)
}

func (ck *clerk) seedClerkRedirectURL(url string) string {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	u := &ClerkRedirectURL{ID: "ru_" + ck.randString(27, alnum), URL: url, CreatedAt: ck.now().UnixMilli(), Origin: OriginSeed}
	ck.urls = append(ck.urls, u)
	return u.ID
}

func (ck *clerk) clerkSnapshot() []ClerkRedirectURL {
	out := []ClerkRedirectURL{}
	for _, u := range ck.urls {
		out = append(out, *u)
	}
	return out
}

func (ck *clerk) drift(d Drift) (string, error) {
	if d.Action == DriftAdd {
		u := &ClerkRedirectURL{ID: "ru_" + ck.randString(27, alnum), URL: d.Value, CreatedAt: ck.now().UnixMilli(), Origin: OriginConsole}
		ck.urls = append(ck.urls, u)
		return u.ID, nil
	}
	i := slices.IndexFunc(ck.urls, func(u *ClerkRedirectURL) bool { return u.ID == d.ID || (d.ID == "" && u.URL == d.Value) })
	if i < 0 {
		return "", fmt.Errorf("sim: drift: no clerk redirect url id=%q url=%q", d.ID, d.Value)
	}
	u := ck.urls[i]
	switch d.Action {
	case DriftDelete:
		ck.urls = slices.Delete(ck.urls, i, i+1)
		return u.ID, nil
	case DriftRecreate:
		n := &ClerkRedirectURL{ID: "ru_" + ck.randString(27, alnum), URL: u.URL, CreatedAt: ck.now().UnixMilli(), Origin: OriginConsole}
		ck.urls[i] = n
		return n.ID, nil
	}
	return "", badAction(d)
}

// snapshot adds the redirect URLs.
func (ck *clerk) snapshot(s *Snapshot, now time.Time) {
	s.Clerk = ck.clerkSnapshot()
}
