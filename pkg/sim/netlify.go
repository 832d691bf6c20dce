package sim

// Netlify API: the subset netlify.env uses (a site's environment variables
// and its deploys).
//
// Assumptions about the real API, and where each was checked:
//
// N1. Base https://api.netlify.com/api/v1, "Authorization: Bearer <personal
//     access token>". Errors are {"code": <status>, "message"}; a missing
//     or wrong token answers 401. Sources: Netlify API reference,
//     https://open-api.netlify.com; "Get started with the Netlify API",
//     https://docs.netlify.com/api/get-started/.
// N2. GET /sites/{site_id} answers the site with its account: account_id
//     (added in API 2.34) and account_slug. Sources: SferaDev/openapi-clients
//     netlify-api CHANGELOG ("Add account_id field to Site"); netlify CLI
//     env-set.js (uses siteInfo.account_slug as the accountId).
// N3. Environment variables live on the account: GET
//     /accounts/{account_id}/env?site_id=S lists a site's variables as an
//     array of {key, scopes, values:[{id, value, context,
//     context_parameter}], is_secret, updated_at} (GET of one variable is
//     not in Netlify's description, so the sim refuses it as every
//     undescribed route). The path's account is its id or its
//     slug. Sources: Netlify API reference, environmentVariables
//     (getEnvVars, getEnvVar); netlify CLI env utilities
//     (EnvVar/EnvVarValue types: context, context_parameter, id).
// N4. context is one of all, dev, branch-deploy, deploy-preview,
//     production, branch; context_parameter names the branch for context
//     branch. A variable has either one value for all, or values per
//     context (the sim refuses a per-context value beside an all value:
//     400; docs silent, the stricter choice). Sources: "Environment
//     variables overview" (contextual values),
//     https://docs.netlify.com/build/environment-variables/overview.md;
//     netlify-api CHANGELOG "Add context branch parameter".
// N5. POST /accounts/{account_id}/env?site_id=S takes an array of {key,
//     scopes?, values, is_secret?} and answers 201 with the created
//     variables; a key that exists answers 400 (status not checked).
//     PATCH /accounts/{account_id}/env/{key}?site_id=S {context,
//     context_parameter?, value} sets one context's value (setEnvVarValue)
//     and answers 201 with the variable. DELETE .../env/{key}/value/{id}
//     removes one value, DELETE .../env/{key} the variable; both 204.
//     Sources: netlify_py EnvVarsClient (delete, delete_value paths);
//     Infisical's Netlify sync (createEnvVars, setEnvVarValue,
//     deleteEnvVarValue, deleteEnvVar as the four writes).
// N6. Secret variables (is_secret) never answer their values (the sim
//     answers value ""). Source: "Get started with environment variables",
//     untrusted deploys and sensitive variables (secret values are
//     write-only).
// N7. GET /sites/{site_id}/deploys lists deploys newest first, paged by
//     page (from 1) and per_page (default 100 in the sim); a deploy is {id,
//     site_id, state (new, enqueued, building, uploading, processing,
//     ready, error, ...), context (production, deploy-preview,
//     branch-deploy), branch, commit_ref, created_at, deploy_url,
//     deploy_ssl_url, links {permalink, alias}, review_id}. Source: Netlify
//     API reference, listSiteDeploys and the Deploy model.
// N8. POST /sites/{site_id}/builds[?branch] (createSiteBuild) runs a build
//     of a branch: "If no branch is specified, it is treated as a
//     production deploy. If a branch IS specified and matches the main
//     branch, it is also production. If a branch is specified and doesn't
//     match the main branch, it is a branch deploy." It answers 200 with a
//     build {id, deploy_id, sha, done, created_at}; the deploy it makes
//     builds the branch's head and reads the variables as they are then.
//     There is no way to rebuild a deploy preview (a pull request's build)
//     through the API: no operation of the description takes a pull
//     request. A branch the sim has seen no commit of is 422. Source:
//     npm @netlify/open-api 2.60.0 dist/swagger.json, createSiteBuild.
//
// Git-triggered builds: Push (push.go) starts a deploy of a pushed commit
// on every site, the moment of the push, before any workflow has written
// a variable, as Netlify's continuous deployment does. Deploys started by
// Push or createSiteBuild are building on the first list that shows them
// and ready after; NetlifyDeploy's deploys keep the state they are given.
// Timestamps of deploys and variable writes strictly increase, so
// "started before the write" is never a tie.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// NetlifySite is a site with its variables and deploys.
type NetlifySite struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	AccountID   string          `json:"account_id"`
	AccountSlug string          `json:"account_slug"`
	Env         []NetlifyEnvVar `json:"env"`
	Deploys     []NetlifyDeploy `json:"deploys"`
	Origin      Origin          `json:"origin"`
	// RepoBranch is the production branch (default main).
	RepoBranch string `json:"repo_branch,omitempty"`
}

// NetlifyEnvVar is a site variable with its values per context.
type NetlifyEnvVar struct {
	Key       string            `json:"key"`
	Values    []NetlifyEnvValue `json:"values"`
	IsSecret  bool              `json:"is_secret"`
	UpdatedAt time.Time         `json:"updated_at"`
	Origin    Origin            `json:"origin"`
	Scopes    []string          `json:"scopes"`
}

// NetlifyEnvValue is one context's value.
type NetlifyEnvValue struct {
	ID               string `json:"id"`
	Value            string `json:"value"`
	Context          string `json:"context"`
	ContextParameter string `json:"context_parameter,omitempty"`
	Origin           Origin `json:"origin"`
}

// NetlifyDeploy is a deploy of a site.
type NetlifyDeploy struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Context   string    `json:"context"`
	Branch    string    `json:"branch"`
	CommitRef string    `json:"commit_ref"`
	ReviewID  int       `json:"review_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Title     string    `json:"title,omitempty"`
	// Env is what the build read: the value of every variable for the
	// deploy's context when it started.
	Env map[string]string `json:"env"`
	// buildLists is how many more list requests show it building before
	// it is ready (0: it keeps its state).
	buildLists int
}

// StaleVariables names the variables with a value for the deploy's
// context that were written at or after the deploy started: the ones its
// build did not see as they are now. nil, false when the site has no such
// deploy.
func (s NetlifySite) StaleVariables(deployID string) ([]string, bool) {
	for _, d := range s.Deploys {
		if d.ID != deployID {
			continue
		}
		out := []string{}
		for _, v := range s.Env {
			if _, ok := netlifyValueFor(v, d.Context, d.Branch); ok && !v.UpdatedAt.Before(d.CreatedAt) {
				out = append(out, v.Key)
			}
		}
		slices.Sort(out)
		return out, true
	}
	return nil, false
}

// netlifyValueFor is a variable's value in a build of context (and branch):
// the branch's own value, else the context's, else the value for all.
func netlifyValueFor(v NetlifyEnvVar, context, branch string) (string, bool) {
	var ctxVal, allVal *NetlifyEnvValue
	for i := range v.Values {
		x := &v.Values[i]
		switch {
		case x.Context == "branch" && x.ContextParameter == branch && branch != "" && context != "production":
			return x.Value, true
		case x.Context == context:
			ctxVal = x
		case x.Context == "all":
			allVal = x
		}
	}
	if ctxVal != nil {
		return ctxVal.Value, true
	}
	if allVal != nil {
		return allVal.Value, true
	}
	return "", false
}

// buildEnv is what a build of context and branch starts with.
func (s *NetlifySite) buildEnv(context, branch string) map[string]string {
	out := map[string]string{}
	for _, v := range s.Env {
		if x, ok := netlifyValueFor(v, context, branch); ok {
			out[v.Key] = x
		}
	}
	return out
}

// netlify is the Netlify provider: sites with their variables and deploys.
type netlify struct {
	*core
	routes *api
	sites  []*NetlifySite
	last   time.Time
	// heads is the newest commit pushed to each branch of each site
	// (site id → branch → sha), what createSiteBuild builds.
	heads map[string]map[string]string
}

// netlifyNow is the clock, strictly increasing across the Netlify
// timestamps it hands out. Callers hold nl.mu.
func (nl *netlify) netlifyNow() time.Time {
	t := nl.now()
	if !t.After(nl.last) {
		t = nl.last.Add(time.Millisecond)
	}
	nl.last = t
	return t
}

var netlifyContexts = map[string]bool{"all": true, "dev": true, "branch-deploy": true, "deploy-preview": true, "production": true, "branch": true}

func netlifyErr(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"code": status, "message": msg})
}

func newNetlify(c *core) provider {
	nl := &netlify{core: c}
	nl.routes = nl.newAPI()
	return nl
}

func (nl *netlify) api() *api { return nl.routes }

func (nl *netlify) reset() { nl.sites, nl.last, nl.heads = nil, time.Time{}, nil }

func (nl *netlify) newAPI() *api {
	p := &api{name: ProviderNetlify, mux: http.NewServeMux(), token: func() string { return nl.tokens.Netlify }}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) { netlifyErr(w, status, msg) }
	p.deny = func(w http.ResponseWriter, missing bool) {
		netlifyErr(w, http.StatusUnauthorized, "Access Denied: Origin returned bad status 401")
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(after).Unix(), 10))
		netlifyErr(w, http.StatusTooManyRequests, "Rate limit exceeded")
	}
	p.handle("GET /sites/{site}", nl.site)
	p.handle("GET /sites/{site}/deploys", nl.deploys)
	p.handle("POST /sites/{site}/builds", nl.createBuild)
	p.handle("GET /accounts/{account}/env", nl.listEnv)
	p.handle("POST /accounts/{account}/env", nl.createEnv)
	p.handle("PATCH /accounts/{account}/env/{key}", nl.setValue)
	p.handle("DELETE /accounts/{account}/env/{key}", nl.deleteEnv)
	p.handle("DELETE /accounts/{account}/env/{key}/value/{id}", nl.deleteValue)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) { netlifyErr(w, http.StatusNotFound, "Not Found") })
	p.env = func(url string) []string {
		return []string{"NETLIFY_API_URL=" + url, "NETLIFY_AUTH_TOKEN=" + nl.tokens.Netlify}
	}
	p.described = describedAs{files: []string{"netlify"}}
	return p
}

// netlifySiteByID finds a site. Callers hold nl.mu.
func (nl *netlify) siteByID(id string) *NetlifySite {
	for _, s := range nl.sites {
		if s.ID == id || s.Name == id {
			return s
		}
	}
	return nil
}

// netlifyEnvSite is the site of an env request (site_id query, under its
// own account). Callers hold nl.mu.
func (nl *netlify) envSite(w http.ResponseWriter, r *http.Request) *NetlifySite {
	id := r.URL.Query().Get("site_id")
	if id == "" {
		netlifyErr(w, http.StatusBadRequest, "the sim models site variables only: site_id is required")
		return nil
	}
	s := nl.siteByID(id)
	acct := r.PathValue("account")
	if s == nil || (acct != s.AccountID && acct != s.AccountSlug) {
		netlifyErr(w, http.StatusNotFound, "Not Found")
		return nil
	}
	return s
}

// netlifyEnvVar finds the site (as netlifyEnvSite) and its variable named
// by the path's key; it answers 404 and returns nil when either is missing.
// The caller holds nl.mu.
func (nl *netlify) envVar(w http.ResponseWriter, r *http.Request) (*NetlifySite, int) {
	s := nl.envSite(w, r)
	if s == nil {
		return nil, -1
	}
	i := s.env(r.PathValue("key"))
	if i < 0 {
		netlifyErr(w, http.StatusNotFound, "Environment variable not found")
		return nil, -1
	}
	return s, i
}

func netlifySiteView(s *NetlifySite) map[string]any {
	return map[string]any{"id": s.ID, "site_id": s.ID, "name": s.Name, "account_id": s.AccountID, "account_slug": s.AccountSlug,
		"ssl_url": "https://" + s.Name + ".netlify.app", "url": "http://" + s.Name + ".netlify.app"}
}

func (nl *netlify) site(w http.ResponseWriter, r *http.Request) {
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s := nl.siteByID(r.PathValue("site"))
	if s == nil {
		netlifyErr(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, netlifySiteView(s))
}

func netlifyEnvView(v *NetlifyEnvVar) map[string]any {
	vals := []any{}
	for _, x := range v.Values {
		m := map[string]any{"id": x.ID, "value": x.Value, "context": x.Context}
		if v.IsSecret {
			m["value"] = ""
		}
		if x.ContextParameter != "" {
			m["context_parameter"] = x.ContextParameter
		}
		vals = append(vals, m)
	}
	scopes := v.Scopes
	if len(scopes) == 0 {
		scopes = []string{"builds", "functions", "runtime", "post-processing"}
	}
	return map[string]any{"key": v.Key, "scopes": scopes, "values": vals, "is_secret": v.IsSecret,
		"updated_at": v.UpdatedAt.UTC().Format(time.RFC3339Nano)}
}

func (nl *netlify) listEnv(w http.ResponseWriter, r *http.Request) {
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s := nl.envSite(w, r)
	if s == nil {
		return
	}
	out := []any{}
	for i := range s.Env {
		out = append(out, netlifyEnvView(&s.Env[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *NetlifySite) env(key string) int {
	return slices.IndexFunc(s.Env, func(v NetlifyEnvVar) bool { return v.Key == key })
}

type netlifyValueIn struct {
	Value            *string `json:"value"`
	Context          string  `json:"context"`
	ContextParameter string  `json:"context_parameter"`
}

// check validates a value of a request (N4).
func (v netlifyValueIn) check() error {
	switch {
	case v.Value == nil:
		return fmt.Errorf("value is required")
	case !netlifyContexts[v.Context]:
		return fmt.Errorf("context %q is not one of all, dev, branch-deploy, deploy-preview, production, branch", v.Context)
	case v.Context == "branch" && v.ContextParameter == "":
		return fmt.Errorf("context branch needs context_parameter (the branch)")
	}
	return nil
}

// netlifySet sets one context's value of a variable. Callers hold nl.mu.
func (nl *netlify) set(v *NetlifyEnvVar, in netlifyValueIn, origin Origin) error {
	param := ""
	if in.Context == "branch" {
		param = in.ContextParameter
	}
	for _, x := range v.Values {
		if (x.Context == "all") != (in.Context == "all") {
			return fmt.Errorf("variable %s has a value for all contexts and per-context values cannot be mixed with it", v.Key)
		}
	}
	v.UpdatedAt = nl.netlifyNow()
	for i := range v.Values {
		if v.Values[i].Context == in.Context && v.Values[i].ContextParameter == param {
			v.Values[i].Value = *in.Value
			return nil
		}
	}
	v.Values = append(v.Values, NetlifyEnvValue{ID: nl.uuid(), Value: *in.Value, Context: in.Context, ContextParameter: param, Origin: origin})
	return nil
}

func (nl *netlify) createEnv(w http.ResponseWriter, r *http.Request) {
	var body []struct {
		Key      string           `json:"key"`
		Scopes   []string         `json:"scopes"`
		Values   []netlifyValueIn `json:"values"`
		IsSecret bool             `json:"is_secret"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil || len(body) == 0 {
		netlifyErr(w, http.StatusBadRequest, "the body must be a non-empty array of variables")
		return
	}
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s := nl.envSite(w, r)
	if s == nil {
		return
	}
	made := []NetlifyEnvVar{}
	for _, in := range body {
		if in.Key == "" || s.env(in.Key) >= 0 || slices.ContainsFunc(made, func(v NetlifyEnvVar) bool { return v.Key == in.Key }) {
			netlifyErr(w, http.StatusBadRequest, fmt.Sprintf("Environment variable %q already exists or has no key", in.Key))
			return
		}
		v := NetlifyEnvVar{Key: in.Key, Scopes: in.Scopes, IsSecret: in.IsSecret, Origin: OriginAPI}
		for _, x := range in.Values {
			if err := x.check(); err != nil {
				netlifyErr(w, http.StatusBadRequest, err.Error())
				return
			}
			if err := nl.set(&v, x, OriginAPI); err != nil {
				netlifyErr(w, http.StatusBadRequest, err.Error())
				return
			}
		}
		v.UpdatedAt = nl.netlifyNow()
		made = append(made, v)
	}
	s.Env = append(s.Env, made...)
	out := []any{}
	for i := range made {
		out = append(out, netlifyEnvView(&made[i]))
	}
	writeJSON(w, http.StatusCreated, out)
}

func (nl *netlify) setValue(w http.ResponseWriter, r *http.Request) {
	var in netlifyValueIn
	if err := json.Unmarshal(readBody(r), &in); err != nil {
		netlifyErr(w, http.StatusBadRequest, "the body must be {context, context_parameter, value}")
		return
	}
	if err := in.check(); err != nil {
		netlifyErr(w, http.StatusBadRequest, err.Error())
		return
	}
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s, i := nl.envVar(w, r)
	if s == nil {
		return
	}
	if err := nl.set(&s.Env[i], in, OriginAPI); err != nil {
		netlifyErr(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, netlifyEnvView(&s.Env[i]))
}

func (nl *netlify) deleteEnv(w http.ResponseWriter, r *http.Request) {
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s, i := nl.envVar(w, r)
	if s == nil {
		return
	}
	s.Env = slices.Delete(s.Env, i, i+1)
	w.WriteHeader(http.StatusNoContent)
}

func (nl *netlify) deleteValue(w http.ResponseWriter, r *http.Request) {
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s, i := nl.envVar(w, r)
	if s == nil {
		return
	}
	v := &s.Env[i]
	j := slices.IndexFunc(v.Values, func(x NetlifyEnvValue) bool { return x.ID == r.PathValue("id") })
	if j < 0 {
		netlifyErr(w, http.StatusNotFound, "Environment variable value not found")
		return
	}
	v.Values = slices.Delete(v.Values, j, j+1)
	v.UpdatedAt = nl.netlifyNow()
	w.WriteHeader(http.StatusNoContent)
}

func (nl *netlify) deploys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, per := 1, 100
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			netlifyErr(w, http.StatusBadRequest, "page must be 1 or more")
			return
		}
		page = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			netlifyErr(w, http.StatusBadRequest, "per_page must be 1 or more")
			return
		}
		per = n
	}
	if ps := pageSizeOf(r); ps > 0 && ps < per {
		per = ps
	}
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s := nl.siteByID(r.PathValue("site"))
	if s == nil {
		netlifyErr(w, http.StatusNotFound, "Not Found")
		return
	}
	// Newest first.
	all := slices.Clone(s.Deploys)
	for i := range s.Deploys {
		if d := &s.Deploys[i]; d.buildLists > 0 {
			if d.buildLists--; d.buildLists == 0 {
				d.State = "ready"
			}
		}
	}
	slices.SortStableFunc(all, func(a, b NetlifyDeploy) int { return b.CreatedAt.Compare(a.CreatedAt) })
	out := []any{}
	start := (page - 1) * per
	for i := start; i < len(all) && i < start+per; i++ {
		d := all[i]
		permalink := "https://" + d.ID + "--" + s.Name + ".netlify.app"
		alias := permalink
		switch {
		case d.Context == "deploy-preview" && d.ReviewID > 0:
			alias = fmt.Sprintf("https://deploy-preview-%d--%s.netlify.app", d.ReviewID, s.Name)
		case d.Context == "branch-deploy":
			alias = "https://" + d.Branch + "--" + s.Name + ".netlify.app"
		case d.Context == "production":
			alias = "https://" + s.Name + ".netlify.app"
		}
		m := map[string]any{"id": d.ID, "site_id": s.ID, "state": d.State, "context": d.Context, "branch": d.Branch,
			"commit_ref": d.CommitRef, "created_at": d.CreatedAt.UTC().Format(time.RFC3339Nano),
			"deploy_url": "http://" + d.ID + "--" + s.Name + ".netlify.app", "deploy_ssl_url": permalink,
			"links": map[string]any{"permalink": permalink, "alias": alias}}
		if d.ReviewID > 0 {
			m["review_id"] = d.ReviewID
		}
		if d.Title != "" {
			m["title"] = d.Title
		}
		out = append(out, m)
	}
	writeJSON(w, http.StatusOK, out)
}

// SeedNetlifySite adds a site (marked seeded) with its variables; id,
// account id and slug are generated when empty. It returns the site id.
func (k Console) SeedNetlifySite(s NetlifySite) string {
	c := k.c
	return lookup[*netlify](c).seedNetlifySite(s)
}

func (nl *netlify) seedNetlifySite(s NetlifySite) string {
	nl.mu.Lock()
	defer nl.mu.Unlock()
	x := s
	if x.ID == "" {
		x.ID = nl.uuid()
	}
	if x.AccountID == "" {
		x.AccountID = nl.randString(24, lowerDigits)
	}
	if x.AccountSlug == "" {
		x.AccountSlug = "team-" + nl.randString(6, lowerDigits)
	}
	x.Origin = OriginSeed
	x.Env = nil
	for _, v := range s.Env {
		v.Origin = OriginSeed
		v.UpdatedAt = nl.netlifyNow()
		v.Values = slices.Clone(v.Values)
		for i := range v.Values {
			v.Values[i].ID = nl.uuid()
			v.Values[i].Origin = OriginSeed
		}
		x.Env = append(x.Env, v)
	}
	x.Deploys = slices.Clone(s.Deploys)
	nl.sites = append(nl.sites, &x)
	return x.ID
}

// NetlifyDeploySpec starts a deploy of a site.
type NetlifyDeploySpec struct {
	Site      string `json:"site"`
	State     string `json:"state"` // default "building"
	Context   string `json:"context"`
	Branch    string `json:"branch"`
	CommitRef string `json:"commit_ref"`
	ReviewID  int    `json:"review_id"`
}

// NetlifyDeploy starts a deploy (as a git push would) and returns its id.
func (k Console) NetlifyDeploy(d NetlifyDeploySpec) (string, error) {
	c := k.c
	return lookup[*netlify](c).netlifyDeploy(d)
}

func (nl *netlify) netlifyDeploy(d NetlifyDeploySpec) (string, error) {
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s := nl.siteByID(d.Site)
	if s == nil {
		return "", fmt.Errorf("sim: no netlify site %q", d.Site)
	}
	if d.State == "" {
		d.State = "building"
	}
	id := nl.randString(24, "0123456789abcdef")
	s.Deploys = append(s.Deploys, NetlifyDeploy{ID: id, State: d.State, Context: d.Context, Branch: d.Branch, CommitRef: d.CommitRef, ReviewID: d.ReviewID,
		CreatedAt: nl.netlifyNow(), Env: s.buildEnv(d.Context, d.Branch)})
	return id, nil
}

// SetNetlifyDeployState moves a deploy to a state (ready, error, ...).
func (k Console) SetNetlifyDeployState(site, id, state string) error {
	c := k.c
	return lookup[*netlify](c).setNetlifyDeployState(site, id, state)
}

func (nl *netlify) setNetlifyDeployState(site, id, state string) error {
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s := nl.siteByID(site)
	if s == nil {
		return fmt.Errorf("sim: no netlify site %q", site)
	}
	for i := range s.Deploys {
		if s.Deploys[i].ID == id {
			s.Deploys[i].State = state
			return nil
		}
	}
	return fmt.Errorf("sim: site %s has no deploy %s", site, id)
}

func (nl *netlify) netlifySnapshot() []NetlifySite {
	out := []NetlifySite{}
	for _, s := range nl.sites {
		x := *s
		x.Env = []NetlifyEnvVar{}
		for _, v := range s.Env {
			v.Values = slices.Clone(v.Values)
			x.Env = append(x.Env, v)
		}
		x.Deploys = slices.Clone(s.Deploys)
		for i := range x.Deploys {
			x.Deploys[i].Env = maps.Clone(x.Deploys[i].Env)
		}
		if x.Deploys == nil {
			x.Deploys = []NetlifyDeploy{}
		}
		out = append(out, x)
	}
	return out
}

// netlifyProductionBranch is the site's production branch.
func (s *NetlifySite) productionBranch() string {
	if s.RepoBranch != "" {
		return s.RepoBranch
	}
	return "main"
}

// netlifyCreateBuild is createSiteBuild (N8).
func (nl *netlify) createBuild(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	nl.mu.Lock()
	defer nl.mu.Unlock()
	s := nl.siteByID(r.PathValue("site"))
	if s == nil {
		netlifyErr(w, http.StatusNotFound, "Not Found")
		return
	}
	branch, context := q.Get("branch"), "branch-deploy"
	if branch == "" || branch == s.productionBranch() {
		branch, context = s.productionBranch(), "production"
	}
	sha := nl.heads[s.ID][branch]
	if sha == "" {
		netlifyErr(w, http.StatusUnprocessableEntity, "no commit of branch "+branch+" to build")
		return
	}
	d := nl.startLocked(s, context, branch, sha, 0)
	d.Title = q.Get("title")
	writeJSON(w, http.StatusOK, map[string]any{"id": nl.randString(24, "0123456789abcdef"), "deploy_id": d.ID, "sha": sha, "done": false,
		"created_at": d.CreatedAt.UTC().Format(time.RFC3339Nano)})
}

// netlifyStartLocked starts a deploy that is building on the first list
// that shows it and ready after. Callers hold nl.mu.
func (nl *netlify) startLocked(s *NetlifySite, context, branch, sha string, review int) *NetlifyDeploy {
	s.Deploys = append(s.Deploys, NetlifyDeploy{ID: nl.randString(24, "0123456789abcdef"), State: "building", Context: context, Branch: branch,
		CommitRef: sha, ReviewID: review, CreatedAt: nl.netlifyNow(), Env: s.buildEnv(context, branch), buildLists: 1})
	return &s.Deploys[len(s.Deploys)-1]
}

// push builds every site: a deploy preview for a pull request, production
// for the site's production branch, a branch deploy otherwise.
func (nl *netlify) push(p Push, out *PushResult) {
	for _, s := range nl.sites {
		if nl.heads == nil {
			nl.heads = map[string]map[string]string{}
		}
		if nl.heads[s.ID] == nil {
			nl.heads[s.ID] = map[string]string{}
		}
		nl.heads[s.ID][p.Branch] = p.SHA
		context := "branch-deploy"
		switch {
		case p.PullRequest > 0:
			context = "deploy-preview"
		case p.Branch == s.productionBranch():
			context = "production"
		}
		out.Netlify = append(out.Netlify, nl.startLocked(s, context, p.Branch, p.SHA, p.PullRequest).ID)
	}
}

func (nl *netlify) drift(d Drift) (string, error) {
	s := nl.siteByID(d.Project)
	if s == nil {
		return "", fmt.Errorf("sim: drift: no netlify site %q", d.Project)
	}
	i := s.env(d.Key)
	if i < 0 {
		return "", fmt.Errorf("sim: drift: netlify site %s has no variable %q", d.Project, d.Key)
	}
	switch d.Action {
	case DriftDelete:
		s.Env = slices.Delete(s.Env, i, i+1)
		return s.ID, nil
	case DriftChange:
		v := &s.Env[i]
		for j := range v.Values {
			x := &v.Values[j]
			if x.Context == d.Target && (d.Target != "branch" || x.ContextParameter == d.GitBranch) {
				x.Value = d.Value
				v.UpdatedAt = nl.netlifyNow()
				return x.ID, nil
			}
		}
		return "", fmt.Errorf("sim: drift: netlify variable %s has no %s value", d.Key, d.Target)
	}
	return "", badAction(d)
}

// snapshot adds the sites with their variables and deploys.
func (nl *netlify) snapshot(s *Snapshot, now time.Time) {
	s.Netlify = nl.netlifySnapshot()
}
