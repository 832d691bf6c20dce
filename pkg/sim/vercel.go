package sim

// Vercel REST API: the subset vercel.env uses (project env vars, deployments).
//
// Assumptions about the real API, and where each was checked:
//
// V1. Base https://api.vercel.com, bearer token; JSON in and out. Errors are
//     {"error":{"code","message",...}}. Source: Vercel REST API Errors,
//     https://www.vercel.com/docs/rest-api/errors.
// V2. A missing or wrong token answers 403 {"error":{"code":"forbidden",
//     "message":"Not authorized"}} ("usually happens due to missing an user
//     token"), not 401; the sim adds "invalidToken": true for a wrong one
//     (not in the docs). Source: same page. An adapter must treat 403 as an
//     auth failure.
// V3. GET /v10/projects/{idOrName}/env lists a project's variables as
//     {"envs":[...], "pagination":{"count","next","prev"}} (one of three
//     documented response shapes). Query: gitBranch, decrypt, source,
//     customEnvironmentId/Slug, teamId, slug. Sources: "Retrieve the
//     environment variables of a project by id or name",
//     https://vercel.com/docs/rest-api/projects/retrieve-the-environment-variables-of-a-project-by-id-or-name;
//     vercel/vercel packages/sdk/docs/models/operations/filterprojectenvsresponsebody.md.
// V4. `target` is NOT a documented query parameter of the env list: the sim
//     ignores it, so an adapter must filter targets itself.
// V5. gitBranch "filters the results (must have target=preview)"; the docs
//     do not say whether branch-less variables are included. The sim returns
//     the variables of that branch AND those with no branch (the effective
//     set), so an adapter must check each variable's gitBranch itself.
// V6. No paging parameter is documented for the env list; the sim returns
//     every variable with pagination {count, next:null, prev:null}.
// V7. Values of type encrypted/secret come back as an opaque string unless
//     decrypt=true (documented, deprecated); sensitive values never come
//     back (sim: ""); plain values always. Source: V3 page (decrypt) and
//     "Retrieve the decrypted value of an environment variable of a project
//     by id" (types system, encrypted, plain, sensitive, secret).
// V8. POST /v10/projects/{idOrName}/env takes one object or an array of
//     {key, value, type, target[], gitBranch?, comment?}; with upsert=true an
//     existing variable is updated instead of duplicated. 201
//     {"created": obj-or-array, "failed":[{"error":{...}}]}. Sources:
//     "Create one or more environment variables",
//     https://vercel.com/docs/rest-api/projects/create-one-or-more-environment-variables;
//     @vercel/sdk CreateProjectEnvResponseBody.
// V9. Creating a variable that exists (same key, same gitBranch, overlapping
//     targets) without upsert fails with error code ENV_ALREADY_EXISTS and
//     the existing envVarId. The docs do not give the status: public client
//     code reports 400 (older API) and 403 (newer). The sim answers 400.
//     Source: community code found by find_string "ENV_ALREADY_EXISTS"
//     (checks data.error.code and data.error.envVarId).
// V10. gitBranch is only valid with target exactly ["preview"]; otherwise
//     400 bad_request. Source: V3/V8 pages ("must have target=preview");
//     the exact error text is the sim's.
// V11. PATCH /v9/projects/{idOrName}/env/{id} edits key/target/gitBranch/
//     type/value/comment and answers 200 with the variable. Source: "Edit
//     an environment variable",
//     https://vercel.com/docs/rest-api/projects/edit-an-environment-variable.
// V12. DELETE /v9/projects/{idOrName}/env/{id} answers 200 with the removed
//     variable(s); the documented example is an array, which the sim sends.
//     An unknown id is 404 not_found (docs list 404; text is the sim's).
//     Source: "Remove an environment variable",
//     https://vercel.com/docs/rest-api/projects/remove-an-environment-variable.
// V13. teamId scopes every request: a team project is not found without its
//     teamId (sim: 404 not_found). `slug` is not modelled.
// V14. GET /v6/deployments lists deployments newest first, filtered by
//     projectId (id or name), target, state (comma list of BUILDING, ERROR,
//     INITIALIZING, QUEUED, READY, CANCELED), branch, sha, since, until,
//     limit; answers {"pagination":{"count","next","prev"},"deployments":[
//     {uid, name, url (host, no scheme), created, state, readyState, target,
//     meta{githubCommitSha, githubCommitRef}, ...}]}. Next page: until=next.
//     Sources: "List deployments",
//     https://vercel.com/docs/rest-api/deployments/list-deployments;
//     https://vercel-site.vercel.sh/docs/rest-api/reference/endpoints/deployments/list-deployments.
// V15. Preview deployments have target null; target=preview filters them in
//     the sim (the docs only say "based on the environment").
// V16. The default and maximum limit are not documented; the sim uses 20
//     (the example's count) and 100.
// V17. 429 is {"error":{"code":"rate_limited","message",
//     "limit":{"remaining","reset","resetMs","total"}}}; the sim adds
//     X-RateLimit-Limit/Remaining/Reset and Retry-After headers. Source: V1.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// VercelProject is a Vercel project with its variables and deployments.
type VercelProject struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	TeamID      string             `json:"teamId,omitempty"`
	Origin      Origin             `json:"origin"`
	Envs        []VercelEnv        `json:"envs"`
	Deployments []VercelDeployment `json:"deployments"`
	// Link is the project's git connection (vercel.deploy deploys through
	// it); nil when it has none.
	Link *VercelGitLink `json:"link,omitempty"`
}

// VercelEnv is one environment variable. Value is the plain value.
type VercelEnv struct {
	ID        string   `json:"id"`
	Key       string   `json:"key"`
	Value     string   `json:"value"`
	Type      string   `json:"type"`
	Target    []string `json:"target"`
	GitBranch string   `json:"gitBranch,omitempty"`
	Comment   string   `json:"comment,omitempty"`
	CreatedAt int64    `json:"createdAt"`
	UpdatedAt int64    `json:"updatedAt"`
	Origin    Origin   `json:"origin"`
}

// VercelDeployment is a deployment as of the snapshot.
type VercelDeployment struct {
	UID      string `json:"uid"`
	URL      string `json:"url"`
	Target   string `json:"target,omitempty"` // "production", or "" for preview
	SHA      string `json:"sha"`
	Branch   string `json:"branch"`
	Created  int64  `json:"created"`
	State    string `json:"state"`
	Behavior string `json:"behavior"`
	Polls    int    `json:"polls"` // list requests that have seen it
	Origin   Origin `json:"origin"`
	// Env is what the build read: the value of every variable that
	// applied to the deployment's target and branch when it was created
	// (Vercel builds with the variables as they are when the build
	// starts; a variable written later reaches only a later deployment).
	Env map[string]string `json:"env"`
	// RedeployOf is the deployment this one rebuilt (POST /v13/deployments
	// with deploymentId), or "".
	RedeployOf string `json:"redeployOf,omitempty"`
}

// StaleVariables names the variables that apply to the deployment uid
// (its target, and its branch or every branch) and were written at or
// after it was created: the ones its build did not see as they are now.
// Empty when the deployment was built after every write; nil, false when
// the project has no such deployment.
func (p VercelProject) StaleVariables(uid string) ([]string, bool) {
	for _, d := range p.Deployments {
		if d.UID != uid {
			continue
		}
		out := []string{}
		for _, e := range p.Envs {
			if vercelEnvApplies(e, d.Target, d.Branch) && e.UpdatedAt >= d.Created {
				out = append(out, e.Key)
			}
		}
		sort.Strings(out)
		return out, true
	}
	return nil, false
}

// vercelEnvApplies says whether a variable reaches a build of target
// ("" is preview) and branch.
func vercelEnvApplies(e VercelEnv, target, branch string) bool {
	if target == "" {
		target = "preview"
	}
	return slices.Contains(e.Target, target) && (e.GitBranch == "" || e.GitBranch == branch)
}

// vercelBuildEnv is what a build of target and branch starts with: a
// branch's own value wins over the value for every branch. Callers hold
// vc.mu.
func (p *vercelProject) buildEnv(target, branch string) map[string]string {
	out := map[string]string{}
	own := map[string]bool{}
	for _, e := range p.envs {
		if !vercelEnvApplies(*e, target, branch) || (own[e.Key] && e.GitBranch == "") {
			continue
		}
		out[e.Key] = e.Value
		own[e.Key] = own[e.Key] || e.GitBranch != ""
	}
	return out
}

// Deployment behaviours (DeploySpec.Behavior).
const (
	DeployOK     = "ok"     // BUILDING on the first poll, READY after
	DeployNever  = "never"  // BUILDING forever
	DeployFail   = "fail"   // BUILDING, then ERROR
	DeployCancel = "cancel" // BUILDING, then CANCELED
	DeploySlow   = "slow"   // READY after Polls polls (default 3) or After
	DeployDouble = "double" // two deployments of the same commit: the older READY at once, the newer READY after one poll; the newest wins
)

// DeploySpec starts a deployment of a commit, as a git push would.
type DeploySpec struct {
	Project  string   `json:"project"` // id or name
	SHA      string   `json:"sha"`
	Branch   string   `json:"branch"`
	Target   string   `json:"target,omitempty"`   // "preview" (default) or "production"
	Behavior string   `json:"behavior,omitempty"` // default "ok"
	Polls    int      `json:"polls,omitempty"`    // slow: BUILDING for this many polls
	After    Duration `json:"after,omitempty"`    // slow: READY once this has passed
}

// vercel is the Vercel provider: projects with their variables and
// deployments.
type vercel struct {
	*core
	routes      *api
	projects    []*vercelProject
	lastCreated int64
}

func newVercel(c *core) provider {
	vc := &vercel{core: c}
	vc.routes = vc.newAPI()
	return vc
}

func (vc *vercel) api() *api { return vc.routes }

func (vc *vercel) reset() { vc.projects, vc.lastCreated = nil, 0 }

type vercelProject struct {
	VercelProject
	envs []*VercelEnv
	deps []*vercelDeployment
}

type vercelDeployment struct {
	VercelDeployment
	buildPolls int       // polls that see BUILDING before the final state
	readyAt    time.Time // when set, the final state is reached at this time too
	final      string    // READY, ERROR, CANCELED, or "" (never)
	readyMs    int64
}

func (d *vercelDeployment) state(now time.Time) string {
	if d.final == "" {
		return "BUILDING"
	}
	if d.Polls > d.buildPolls || (!d.readyAt.IsZero() && !now.Before(d.readyAt)) {
		return d.final
	}
	if d.Polls == 0 {
		return "QUEUED"
	}
	return "BUILDING"
}

func (vc *vercel) newAPI() *api {
	p := &api{
		name:  ProviderVercel,
		mux:   http.NewServeMux(),
		token: func() string { return vc.tokens.Vercel },
		env: func(url string) []string {
			return []string{"VERCEL_API_URL=" + url, "VERCEL_TOKEN=" + vc.tokens.Vercel}
		},
		described: describedAs{files: []string{"vercel"}},
	}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) {
		if code == "sim_injected_failure" {
			code = vercelCodeFor(status)
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg}})
	}
	p.deny = func(w http.ResponseWriter, missing bool) {
		e := map[string]any{"code": "forbidden", "message": "Not authorized"}
		if missing {
			e["missingToken"] = true
		} else {
			e["invalidToken"] = true
		}
		writeJSON(w, http.StatusForbidden, map[string]any{"error": e})
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		reset := now.Add(after)
		setRetryAfter(w, after)
		w.Header().Set("X-RateLimit-Limit", "100")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
			"code": "rate_limited", "message": "Rate limit exceeded",
			"limit": map[string]any{"remaining": 0, "reset": reset.Unix(), "resetMs": reset.UnixMilli(), "total": 100},
		}})
	}
	p.handle("GET /v10/projects/{idOrName}/env", vc.listEnv)
	p.handle("POST /v10/projects/{idOrName}/env", vc.createEnv)
	p.handle("PATCH /v9/projects/{idOrName}/env/{id}", vc.editEnv)
	p.handle("DELETE /v9/projects/{idOrName}/env/{id}", vc.deleteEnv)
	p.handle("GET /v6/deployments", vc.listDeployments)
	p.handle("GET /v1/projects/{idOrName}/env/{id}", vc.getEnv)
	vc.deployRoutes(p)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
		vercelErr(w, http.StatusNotFound, "not_found", "The requested API endpoint was not found.")
	})
	return p
}

func vercelCodeFor(status int) string {
	switch {
	case status == http.StatusNotFound:
		return "not_found"
	case status == http.StatusConflict:
		return "conflict"
	case status >= 500:
		return "internal_server_error"
	default:
		return "bad_request"
	}
}

func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	secs := int64((d + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
}

func vercelErr(w http.ResponseWriter, status int, code, msg string, extra ...map[string]any) {
	e := map[string]any{"code": code, "message": msg}
	for _, x := range extra {
		for k, v := range x {
			e[k] = v
		}
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// vercelFind finds a project by id or name in the team scope. Callers hold vc.mu.
// project is the request's project ({idOrName} under ?teamId), or nil
// after answering Vercel's 404. The caller holds vc.mu.
func (vc *vercel) project(w http.ResponseWriter, r *http.Request, q url.Values) *vercelProject {
	p := vc.find(r.PathValue("idOrName"), q.Get("teamId"))
	if p == nil {
		vercelErr(w, http.StatusNotFound, "not_found", "Project not found")
	}
	return p
}

func (vc *vercel) find(idOrName, teamID string) *vercelProject {
	for _, p := range vc.projects {
		if (p.ID == idOrName || p.Name == idOrName) && p.TeamID == teamID {
			return p
		}
	}
	return nil
}

func (vc *vercel) nowMs() int64 {
	ms := vc.now().UnixMilli()
	if ms <= vc.lastCreated {
		ms = vc.lastCreated + 1
	}
	vc.lastCreated = ms
	return ms
}

// envView renders a variable the way the API returns it.
func envView(e *VercelEnv, decrypt bool) map[string]any {
	v := map[string]any{
		"id": e.ID, "key": e.Key, "type": e.Type, "target": append([]string{}, e.Target...),
		"configurationId": nil, "createdAt": e.CreatedAt, "updatedAt": e.UpdatedAt,
		"createdBy": "sim-user", "updatedBy": "sim-user", "decrypted": false,
	}
	if e.GitBranch != "" {
		v["gitBranch"] = e.GitBranch
	}
	if e.Comment != "" {
		v["comment"] = e.Comment
	}
	switch e.Type {
	case "plain", "system":
		v["value"] = e.Value
	case "sensitive":
		v["value"] = ""
	default:
		if decrypt {
			v["value"], v["decrypted"] = e.Value, true
		} else {
			sum := sha256.Sum256([]byte(e.ID + "\x00" + e.Value))
			v["value"] = "eyJ2IjoiMSJ9." + base64.RawURLEncoding.EncodeToString(sum[:])
		}
	}
	return v
}

func (vc *vercel) listEnv(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.project(w, r, q)
	if p == nil {
		return
	}
	decrypt, branch := q.Get("decrypt") == "true", q.Get("gitBranch")
	envs := []any{}
	for _, e := range p.envs {
		if branch != "" && e.GitBranch != branch && e.GitBranch != "" {
			continue
		}
		envs = append(envs, envView(e, decrypt))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"envs":       envs,
		"pagination": map[string]any{"count": len(envs), "next": nil, "prev": nil},
	})
}

type vercelEnvInput struct {
	Key       *string          `json:"key"`
	Value     *string          `json:"value"`
	Type      *string          `json:"type"`
	Target    *json.RawMessage `json:"target"`
	GitBranch *string          `json:"gitBranch"`
	Comment   *string          `json:"comment"`
}

// setScalars copies the key, type, git branch and comment the request
// gives onto e (value and target are checked by the caller: create requires
// them, edit does not).
func (in vercelEnvInput) setScalars(e *VercelEnv) {
	for _, f := range []struct {
		from *string
		to   *string
	}{{in.Key, &e.Key}, {in.Type, &e.Type}, {in.GitBranch, &e.GitBranch}, {in.Comment, &e.Comment}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
}

var vercelTargets = []string{"production", "preview", "development"}
var vercelTypes = []string{"system", "secret", "encrypted", "plain", "sensitive"}

// parseTarget reads a target array.
func parseTarget(raw json.RawMessage) ([]string, error) {
	var t []string
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("`target` must be an array of strings")
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("`target` must not be empty")
	}
	for _, x := range t {
		if !slices.Contains(vercelTargets, x) {
			return nil, fmt.Errorf("`target` must be one of production, preview, development; got %q", x)
		}
	}
	return t, nil
}

func checkEnv(e *VercelEnv) error {
	if e.Key == "" {
		return fmt.Errorf("`key` is required")
	}
	if !slices.Contains(vercelTypes, e.Type) {
		return fmt.Errorf("`type` must be one of %s", strings.Join(vercelTypes, ", "))
	}
	if e.GitBranch != "" && !(len(e.Target) == 1 && e.Target[0] == "preview") {
		return fmt.Errorf("`gitBranch` can only be set when `target` is [\"preview\"]")
	}
	return nil
}

// conflict finds a variable that clashes with e (same key and branch,
// overlapping targets), other than e itself. Callers hold vc.mu.
func (p *vercelProject) conflict(e *VercelEnv) *VercelEnv {
	for _, x := range p.envs {
		if x.ID == e.ID || x.Key != e.Key || x.GitBranch != e.GitBranch {
			continue
		}
		for _, t := range e.Target {
			if slices.Contains(x.Target, t) {
				return x
			}
		}
	}
	return nil
}

func alreadyExists(x *VercelEnv) map[string]any {
	return map[string]any{
		"code":      "ENV_ALREADY_EXISTS",
		"message":   fmt.Sprintf("A variable with the name `%s` already exists for the target %s on branch %s", x.Key, strings.Join(x.Target, ","), orDash(x.GitBranch)),
		"key":       x.Key,
		"envVarId":  x.ID,
		"envVarKey": x.Key,
		"target":    x.Target,
		"gitBranch": x.GitBranch,
		"action":    "Edit",
	}
}

func orDash(s string) string {
	if s == "" {
		return "(all)"
	}
	return s
}

func (vc *vercel) createEnv(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	body := readBody(r)
	var items []json.RawMessage
	trimmed := strings.TrimSpace(string(body))
	single := !strings.HasPrefix(trimmed, "[")
	if single {
		items = []json.RawMessage{json.RawMessage(body)}
	} else if err := json.Unmarshal(body, &items); err != nil {
		vercelErr(w, http.StatusBadRequest, "bad_request", "Invalid request body: "+err.Error())
		return
	}
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.project(w, r, q)
	if p == nil {
		return
	}
	upsert := q.Get("upsert") == "true"
	var created []any
	var failed []map[string]any
	failStatus := 0
	for _, raw := range items {
		var in vercelEnvInput
		if err := json.Unmarshal(raw, &in); err != nil {
			failed = append(failed, map[string]any{"code": "bad_request", "message": "Invalid request body: " + err.Error()})
			failStatus = http.StatusBadRequest
			continue
		}
		e := &VercelEnv{}
		in.setScalars(e)
		var err error
		switch {
		case in.Value == nil:
			err = fmt.Errorf("`value` is required")
		case in.Target == nil:
			err = fmt.Errorf("`target` is required")
		default:
			e.Value = *in.Value
			e.Target, err = parseTarget(*in.Target)
		}
		if err == nil {
			err = checkEnv(e)
		}
		if err != nil {
			failed = append(failed, map[string]any{"code": "bad_request", "message": err.Error(), "key": e.Key})
			failStatus = http.StatusBadRequest
			continue
		}
		if x := p.conflict(e); x != nil {
			if !upsert {
				failed = append(failed, alreadyExists(x))
				if failStatus == 0 {
					failStatus = http.StatusBadRequest
				}
				continue
			}
			x.Value, x.Type, x.Comment = e.Value, e.Type, e.Comment
			x.UpdatedAt = vc.nowMs()
			created = append(created, envView(x, false))
			continue
		}
		e.ID = vc.randString(16, alnum)
		e.CreatedAt = vc.nowMs()
		e.UpdatedAt = e.CreatedAt
		e.Origin = OriginAPI
		p.envs = append(p.envs, e)
		created = append(created, envView(e, false))
	}
	if len(created) == 0 {
		writeJSON(w, failStatus, map[string]any{"error": failed[0]})
		return
	}
	out := map[string]any{"failed": wrapFailed(failed)}
	if single {
		out["created"] = created[0]
	} else {
		out["created"] = created
	}
	writeJSON(w, http.StatusCreated, out)
}

func wrapFailed(failed []map[string]any) []any {
	out := []any{}
	for _, f := range failed {
		out = append(out, map[string]any{"error": f})
	}
	return out
}

func (vc *vercel) editEnv(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var in vercelEnvInput
	if err := json.Unmarshal(readBody(r), &in); err != nil {
		vercelErr(w, http.StatusBadRequest, "bad_request", "Invalid request body: "+err.Error())
		return
	}
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.project(w, r, q)
	if p == nil {
		return
	}
	var e *VercelEnv
	for _, x := range p.envs {
		if x.ID == r.PathValue("id") {
			e = x
		}
	}
	if e == nil {
		vercelErr(w, http.StatusNotFound, "not_found", "Environment Variable not found")
		return
	}
	next := *e
	next.Target = append([]string(nil), e.Target...)
	in.setScalars(&next)
	if in.Value != nil {
		next.Value = *in.Value
	}
	if in.Target != nil {
		t, err := parseTarget(*in.Target)
		if err != nil {
			vercelErr(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		next.Target = t
	}
	if err := checkEnv(&next); err != nil {
		vercelErr(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if x := p.conflict(&next); x != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": alreadyExists(x)})
		return
	}
	next.UpdatedAt = vc.nowMs()
	*e = next
	writeJSON(w, http.StatusOK, envView(e, false))
}

func (vc *vercel) deleteEnv(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.project(w, r, q)
	if p == nil {
		return
	}
	for i, x := range p.envs {
		if x.ID == r.PathValue("id") {
			p.envs = slices.Delete(p.envs, i, i+1)
			writeJSON(w, http.StatusOK, []any{envView(x, false)})
			return
		}
	}
	vercelErr(w, http.StatusNotFound, "not_found", "Environment Variable not found")
}

func (vc *vercel) listDeployments(w http.ResponseWriter, r *http.Request) {
	f, bad := parseDeploymentQuery(r)
	if bad != "" {
		vercelErr(w, http.StatusBadRequest, "bad_request", "Invalid query parameter `"+bad+"`")
		return
	}
	vc.mu.Lock()
	defer vc.mu.Unlock()
	projects, ok := vc.projectsOf(r.URL.Query())
	if !ok {
		vercelErr(w, http.StatusNotFound, "not_found", "Project not found")
		return
	}
	now := vc.now()
	type row struct {
		d *vercelDeployment
		p *vercelProject
	}
	var rows []row
	for _, p := range projects {
		for _, d := range p.deps {
			if f.lists(d, now) {
				rows = append(rows, row{d, p})
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].d.Created > rows[j].d.Created })
	more := len(rows) > f.limit
	if more {
		rows = rows[:f.limit]
	}
	deps := []any{}
	for _, x := range rows {
		deps = append(deps, deploymentView(x.d, x.p, now))
	}
	pag := map[string]any{"count": len(rows), "next": nil, "prev": nil}
	if len(rows) > 0 {
		pag["prev"] = rows[0].d.Created
		if more {
			pag["next"] = rows[len(rows)-1].d.Created
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"pagination": pag, "deployments": deps})
}

// deploymentQuery is what a list of deployments asks for.
type deploymentQuery struct {
	limit               int
	since, until        int64
	states              []string
	target, sha, branch string
}

// parseDeploymentQuery reads the query of a list of deployments; bad names
// the parameter that is not valid.
func parseDeploymentQuery(r *http.Request) (f deploymentQuery, bad string) {
	q := r.URL.Query()
	f.limit = 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return f, "limit"
		}
		f.limit = min(n, 100)
	}
	if ps := pageSizeOf(r); ps > 0 {
		f.limit = min(f.limit, ps)
	}
	for name, dst := range map[string]*int64{"since": &f.since, "until": &f.until} {
		if s := q.Get(name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return f, name
			}
			*dst = n
		}
	}
	if s := q.Get("state"); s != "" {
		for _, x := range strings.Split(s, ",") {
			f.states = append(f.states, strings.ToUpper(strings.TrimSpace(x)))
		}
	}
	f.target, f.sha, f.branch = q.Get("target"), q.Get("sha"), q.Get("branch")
	return f, ""
}

// lists says whether the deployment is in the list. A deployment of the
// target, commit and branch asked for is polled, whether its state and
// time then keep it or not.
func (f deploymentQuery) lists(d *vercelDeployment, now time.Time) bool {
	if t := f.target; t != "" && !(t == d.Target || (t == "preview" && d.Target == "")) {
		return false
	}
	if (f.sha != "" && f.sha != d.SHA) || (f.branch != "" && f.branch != d.Branch) {
		return false
	}
	d.Polls++
	if len(f.states) > 0 && !slices.Contains(f.states, d.state(now)) {
		return false
	}
	return !((f.since != 0 && d.Created <= f.since) || (f.until != 0 && d.Created >= f.until))
}

// projectsOf is the project the query names by projectId, or every
// project of its team; ok is false when the named one does not exist.
func (vc *vercel) projectsOf(q url.Values) (projects []*vercelProject, ok bool) {
	teamID := q.Get("teamId")
	if id := q.Get("projectId"); id != "" {
		p := vc.find(id, teamID)
		return []*vercelProject{p}, p != nil
	}
	for _, p := range vc.projects {
		if p.TeamID == teamID {
			projects = append(projects, p)
		}
	}
	return projects, true
}

func deploymentView(d *vercelDeployment, p *vercelProject, now time.Time) map[string]any {
	st := d.state(now)
	v := map[string]any{
		"uid": d.UID, "name": p.Name, "url": d.URL, "created": d.Created, "createdAt": d.Created,
		"buildingAt": d.Created, "source": "git", "state": st, "readyState": st, "type": "LAMBDAS",
		"creator":      map[string]any{"uid": "sim-user", "username": "sim"},
		"meta":         map[string]any{"githubCommitSha": d.SHA, "githubCommitRef": d.Branch, "githubDeployment": "1"},
		"target":       nil,
		"projectId":    p.ID,
		"inspectorUrl": "https://vercel.com/sim/" + p.Name + "/" + strings.TrimPrefix(d.UID, "dpl_"),
	}
	if d.Target != "" {
		v["target"] = d.Target
	}
	if st == "READY" {
		if d.readyMs == 0 {
			d.readyMs = now.UnixMilli()
		}
		v["ready"] = d.readyMs
	}
	return v
}

// SeedVercelProject adds a project (with any Envs given, marked seeded) and
// returns its id. An empty ID is generated ("prj_..."); Name defaults to
// the id.
func (k Console) SeedVercelProject(p VercelProject) string {
	c := k.c
	return lookup[*vercel](c).seedProject(p)
}

func (vc *vercel) seedProject(p VercelProject) string {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if p.ID == "" {
		p.ID = "prj_" + vc.randString(28, alnum)
	}
	if p.Name == "" {
		p.Name = p.ID
	}
	vp := &vercelProject{VercelProject: VercelProject{ID: p.ID, Name: p.Name, TeamID: p.TeamID, Origin: OriginSeed, Link: p.Link}}
	vc.projects = append(vc.projects, vp)
	for _, e := range p.Envs {
		vc.seedVercelEnvLocked(vp, e, OriginSeed)
	}
	return p.ID
}

// SeedVercelEnv adds a variable to a project (id or name, any team), marked
// seeded, and returns its id. Type defaults to "encrypted", Target to
// ["production","preview","development"].
func (k Console) SeedVercelEnv(project string, e VercelEnv) (string, error) {
	c := k.c
	return lookup[*vercel](c).seedEnv(project, e)
}

func (vc *vercel) seedEnv(project string, e VercelEnv) (string, error) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.anyTeam(project)
	if p == nil {
		return "", fmt.Errorf("sim: no vercel project %q", project)
	}
	return vc.seedVercelEnvLocked(p, e, OriginSeed), nil
}

func (vc *vercel) anyTeam(idOrName string) *vercelProject {
	for _, p := range vc.projects {
		if p.ID == idOrName || p.Name == idOrName {
			return p
		}
	}
	return nil
}

func (vc *vercel) seedVercelEnvLocked(p *vercelProject, e VercelEnv, origin Origin) string {
	if e.ID == "" {
		e.ID = vc.randString(16, alnum)
	}
	if e.Type == "" {
		e.Type = "encrypted"
	}
	if len(e.Target) == 0 {
		e.Target = []string{"production", "preview", "development"}
	}
	e.Target = append([]string(nil), e.Target...)
	now := vc.nowMs()
	if e.CreatedAt == 0 {
		e.CreatedAt = now
	}
	e.UpdatedAt = now
	e.Origin = origin
	p.envs = append(p.envs, &e)
	return e.ID
}

// Deploy starts deployments of a commit with the given lifecycle and
// returns their uids (two for "double", older first). Each list request
// that matches a deployment counts as one poll of it.
func (k Console) Deploy(s DeploySpec) ([]string, error) {
	c := k.c
	return lookup[*vercel](c).deploy(s)
}

func (vc *vercel) deploy(s DeploySpec) ([]string, error) {
	if s.Behavior == "" {
		s.Behavior = DeployOK
	}
	switch s.Target {
	case "", "preview":
		s.Target = ""
	case "production":
	default:
		return nil, fmt.Errorf("sim: deploy target must be preview or production, not %q", s.Target)
	}
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.anyTeam(s.Project)
	if p == nil {
		return nil, fmt.Errorf("sim: no vercel project %q", s.Project)
	}
	mk := func(final string, buildPolls int, readyAt time.Time) string {
		d := &vercelDeployment{
			VercelDeployment: VercelDeployment{
				UID: "dpl_" + vc.randString(28, alnum), Target: s.Target, SHA: s.SHA, Branch: s.Branch,
				Created: vc.nowMs(), Behavior: s.Behavior, Origin: OriginSeed,
				Env: p.buildEnv(s.Target, s.Branch),
			},
			final: final, buildPolls: buildPolls, readyAt: readyAt,
		}
		d.URL = p.Name + "-" + vc.randString(9, lowerDigits) + "-sim.vercel.app"
		p.deps = append(p.deps, d)
		return d.UID
	}
	switch s.Behavior {
	case DeployOK:
		return []string{mk("READY", 1, time.Time{})}, nil
	case DeployNever:
		return []string{mk("", 0, time.Time{})}, nil
	case DeployFail:
		return []string{mk("ERROR", 1, time.Time{})}, nil
	case DeployCancel:
		return []string{mk("CANCELED", 1, time.Time{})}, nil
	case DeploySlow:
		polls := s.Polls
		var at time.Time
		if s.After > 0 {
			at = vc.now().Add(s.After.D())
			if polls == 0 {
				polls = int(^uint(0) >> 1)
			}
		} else if polls == 0 {
			polls = 3
		}
		return []string{mk("READY", polls, at)}, nil
	case DeployDouble:
		return []string{mk("READY", 0, time.Time{}), mk("READY", 1, time.Time{})}, nil
	}
	return nil, fmt.Errorf("sim: unknown deploy behavior %q", s.Behavior)
}

// snapshot adds the projects with their variables and deployments.
func (vc *vercel) snapshot(s *Snapshot, now time.Time) {
	s.Vercel = []VercelProject{}
	for _, p := range vc.projects {
		vp := p.VercelProject
		vp.Envs, vp.Deployments = []VercelEnv{}, []VercelDeployment{}
		for _, e := range p.envs {
			x := *e
			x.Target = slices.Clone(e.Target)
			vp.Envs = append(vp.Envs, x)
		}
		for _, d := range p.deps {
			x := d.VercelDeployment
			x.State = d.state(now)
			x.Env = maps.Clone(d.Env)
			vp.Deployments = append(vp.Deployments, x)
		}
		s.Vercel = append(s.Vercel, vp)
	}
}

// push deploys every project linked to a repository: production for the
// link's production branch, preview otherwise.
func (vc *vercel) push(p Push, out *PushResult) {
	for _, vp := range vc.projects {
		if vp.Link == nil {
			continue
		}
		target := ""
		if p.Branch == vp.Link.ProductionBranch {
			target = "production"
		}
		d := &vercelDeployment{
			VercelDeployment: VercelDeployment{
				UID: "dpl_" + vc.randString(28, alnum), Target: target, SHA: p.SHA, Branch: p.Branch,
				Created: vc.nowMs(), Behavior: DeployOK, Origin: OriginSeed, Env: vp.buildEnv(target, p.Branch),
			},
			final: "READY", buildPolls: 1,
		}
		d.URL = vp.Name + "-" + vc.randString(9, lowerDigits) + "-sim.vercel.app"
		vp.deps = append(vp.deps, d)
		out.Vercel = append(out.Vercel, d.UID)
	}
}

func (vc *vercel) drift(d Drift) (string, error) {
	p := vc.anyTeam(d.Project)
	if p == nil {
		return "", fmt.Errorf("sim: drift: no vercel project %q", d.Project)
	}
	if d.Action == DriftAdd {
		e := VercelEnv{Key: d.Key, Value: d.Value, GitBranch: d.GitBranch}
		if d.Target != "" {
			e.Target = []string{d.Target}
		}
		return vc.seedVercelEnvLocked(p, e, OriginConsole), nil
	}
	var e *VercelEnv
	for _, x := range p.envs {
		if (d.ID != "" && x.ID == d.ID) || (d.ID == "" && x.Key == d.Key &&
			(d.Target == "" || slices.Contains(x.Target, d.Target)) && (d.GitBranch == "" || x.GitBranch == d.GitBranch)) {
			e = x
			break
		}
	}
	if e == nil {
		return "", fmt.Errorf("sim: drift: no vercel variable id=%q key=%q in %q", d.ID, d.Key, d.Project)
	}
	switch d.Action {
	case DriftChange:
		switch d.Field {
		case "", "value":
			e.Value = d.Value
		case "type":
			e.Type = d.Value
		case "comment":
			e.Comment = d.Value
		default:
			return "", fmt.Errorf("sim: drift: vercel field %q cannot be changed", d.Field)
		}
		e.UpdatedAt = vc.nowMs()
		return e.ID, nil
	case DriftDelete:
		p.envs = slices.DeleteFunc(p.envs, func(x *VercelEnv) bool { return x == e })
		return e.ID, nil
	case DriftRecreate:
		p.envs = slices.DeleteFunc(p.envs, func(x *VercelEnv) bool { return x == e })
		n := *e
		n.ID, n.CreatedAt = "", 0
		if d.Value != "" {
			n.Value = d.Value
		}
		return vc.seedVercelEnvLocked(p, n, OriginConsole), nil
	}
	return "", badAction(d)
}

// getEnv is "Retrieve the decrypted value of an environment variable
// of a project" (GET /v1/projects/{idOrName}/env/{id}, getProjectEnv in
// Vercel's description): one variable, its value decrypted (a sensitive
// one's stays "").
func (vc *vercel) getEnv(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.project(w, r, q)
	if p == nil {
		return
	}
	for _, e := range p.envs {
		if e.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, envView(e, true))
			return
		}
	}
	vercelErr(w, http.StatusNotFound, "not_found", "Environment Variable not found")
}
