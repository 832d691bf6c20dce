package sim

// Cloudflare API v4: the subset cloudflare.pages_env uses (a Pages
// project's environment variables per deployment config).
//
// Assumptions about the real API, and where each was checked:
//
// F1. Base https://api.cloudflare.com/client/v4, "Authorization: Bearer
//     <API token>". Every answer is the envelope {"success", "errors":
//     [{code, message}], "messages", "result"}; a missing or wrong token
//     answers 401/403 with errors [{code: 10000, "Authentication error"}]
//     (the sim: 403 for a wrong token, 401 for none). Sources: "Update
//     project" (API Token security scheme),
//     https://developers.cloudflare.com/api/go/resources/pages/subresources/projects/methods/edit;
//     the purge_build_cache page (the envelope: errors, messages, result,
//     success).
// F2. GET /accounts/{account_id}/pages/projects/{project_name} answers the
//     project with deployment_configs.preview and .production, each with
//     env_vars: {NAME: {type: "plain_text"|"secret_text", value}}. A
//     secret's value is never answered (the sim leaves value out). An
//     unknown project is 404 with code 8000007. Sources: the pages_project
//     patch schema example (env_vars shapes), api-evangelist
//     pages_project-patch schema; terraform-provider-cloudflare
//     pages_project docs (deployment_configs preview/production).
// F3. PATCH the same path "Set new attributes for an existing project.
//     Modify environment variables. To delete an environment variable, set
//     the key to null." The body is merged into the project: only the named
//     variables change. Source: F1 page.
// F4. A variable entry without a known type, or a value that is not a
//     string, answers 400 (code 8000000, text the sim's).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// CloudflarePagesProject is a Pages project with its variables per target.
type CloudflarePagesProject struct {
	Account string                              `json:"account"`
	Name    string                              `json:"name"`
	Env     map[string]map[string]CloudflareVar `json:"env"` // target → name → var
	Origin  Origin                              `json:"origin"`
}

// CloudflareVar is one variable of a deployment config.
type CloudflareVar struct {
	Type  string `json:"type"` // plain_text or secret_text
	Value string `json:"value"`
}

// cloudflare is the Cloudflare provider: Pages projects with their variables.
type cloudflare struct {
	*core
	routes   *api
	projects []*CloudflarePagesProject
}

var cloudflareTargets = []string{"preview", "production"}

func cfErr(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"success": false, "errors": []any{map[string]any{"code": code, "message": msg}}, "messages": []any{}, "result": nil})
}

func cfOK(w http.ResponseWriter, result any) {
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "errors": []any{}, "messages": []any{}, "result": result})
}

func newCloudflare(c *core) provider {
	cf := &cloudflare{core: c}
	cf.routes = cf.newAPI()
	return cf
}

func (cf *cloudflare) api() *api { return cf.routes }

func (cf *cloudflare) reset() { cf.projects = nil }

func (cf *cloudflare) newAPI() *api {
	p := &api{name: ProviderCloudflare, mux: http.NewServeMux(), token: func() string { return cf.tokens.Cloudflare }}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) { cfErr(w, status, 8000000, msg) }
	p.deny = func(w http.ResponseWriter, missing bool) {
		status := http.StatusForbidden
		if missing {
			status = http.StatusUnauthorized
		}
		cfErr(w, status, 10000, "Authentication error")
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		cfErr(w, http.StatusTooManyRequests, 10429, "Rate limited")
	}
	p.handle("GET /accounts/{account}/pages/projects/{project}", cf.cfGet)
	p.handle("PATCH /accounts/{account}/pages/projects/{project}", cf.cfPatch)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
		cfErr(w, http.StatusNotFound, 7003, "No route for that URI")
	})
	p.env = func(url string) []string {
		return []string{"CLOUDFLARE_API_URL=" + url, "CLOUDFLARE_API_TOKEN=" + cf.tokens.Cloudflare}
	}
	p.described = describedAs{files: []string{"cloudflare"}}
	return p
}

// cfFind finds a project, answering 404 itself. Callers hold cf.mu.
func (cf *cloudflare) cfFind(w http.ResponseWriter, r *http.Request) *CloudflarePagesProject {
	for _, p := range cf.projects {
		if p.Account == r.PathValue("account") && p.Name == r.PathValue("project") {
			return p
		}
	}
	cfErr(w, http.StatusNotFound, 8000007, "Project not found. The specified project name does not match any of your existing projects.")
	return nil
}

func cfView(p *CloudflarePagesProject) map[string]any {
	configs := map[string]any{}
	for _, t := range cloudflareTargets {
		vars := map[string]any{}
		for name, v := range p.Env[t] {
			if v.Type == "secret_text" {
				vars[name] = map[string]any{"type": v.Type}
			} else {
				vars[name] = map[string]any{"type": v.Type, "value": v.Value}
			}
		}
		configs[t] = map[string]any{"env_vars": vars, "compatibility_date": "2024-01-01", "compatibility_flags": []any{}}
	}
	return map[string]any{"id": p.Account + "-" + p.Name, "name": p.Name, "production_branch": "main", "subdomain": p.Name + ".pages.dev",
		"deployment_configs": configs}
}

func (cf *cloudflare) cfGet(w http.ResponseWriter, r *http.Request) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if p := cf.cfFind(w, r); p != nil {
		cfOK(w, cfView(p))
	}
}

func (cf *cloudflare) cfPatch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		DeploymentConfigs map[string]*struct {
			EnvVars map[string]*struct {
				Type  string          `json:"type"`
				Value json.RawMessage `json:"value"`
			} `json:"env_vars"`
		} `json:"deployment_configs"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil {
		cfErr(w, http.StatusBadRequest, 8000000, "Request body is not a valid project")
		return
	}
	cf.mu.Lock()
	defer cf.mu.Unlock()
	p := cf.cfFind(w, r)
	if p == nil {
		return
	}
	next := map[string]map[string]CloudflareVar{}
	for _, t := range cloudflareTargets {
		next[t] = map[string]CloudflareVar{}
		for k, v := range p.Env[t] {
			next[t][k] = v
		}
	}
	for t, cfg := range body.DeploymentConfigs {
		if _, ok := next[t]; !ok {
			cfErr(w, http.StatusBadRequest, 8000000, "deployment_configs has only preview and production")
			return
		}
		if cfg == nil {
			continue
		}
		for name, v := range cfg.EnvVars {
			if v == nil {
				delete(next[t], name)
				continue
			}
			var s string
			if (v.Type != "plain_text" && v.Type != "secret_text") || json.Unmarshal(v.Value, &s) != nil {
				cfErr(w, http.StatusBadRequest, 8000000, "env_vars."+name+" must be {type: plain_text|secret_text, value: string}")
				return
			}
			next[t][name] = CloudflareVar{Type: v.Type, Value: s}
		}
	}
	p.Env = next
	cfOK(w, cfView(p))
}

// SeedCloudflarePagesProject adds a project (marked seeded).
func (k Console) SeedCloudflarePagesProject(p CloudflarePagesProject) {
	c := k.c
	lookup[*cloudflare](c).seedCloudflarePagesProject(p)
}

func (cf *cloudflare) seedCloudflarePagesProject(p CloudflarePagesProject) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	x := p
	x.Origin = OriginSeed
	x.Env = map[string]map[string]CloudflareVar{}
	for _, t := range cloudflareTargets {
		x.Env[t] = map[string]CloudflareVar{}
		for k, v := range p.Env[t] {
			x.Env[t][k] = v
		}
	}
	cf.projects = append(cf.projects, &x)
}

func (cf *cloudflare) cloudflareSnapshot() []CloudflarePagesProject {
	out := []CloudflarePagesProject{}
	for _, p := range cf.projects {
		x := *p
		x.Env = map[string]map[string]CloudflareVar{}
		for t, m := range p.Env {
			x.Env[t] = map[string]CloudflareVar{}
			for k, v := range m {
				x.Env[t][k] = v
			}
		}
		out = append(out, x)
	}
	return out
}

func (cf *cloudflare) drift(d Drift) (string, error) {
	var p *CloudflarePagesProject
	for _, x := range cf.projects {
		if x.Account+"/"+x.Name == d.Project {
			p = x
		}
	}
	if p == nil {
		return "", fmt.Errorf("sim: drift: no cloudflare pages project %q (account/project)", d.Project)
	}
	vars := p.Env[d.Target]
	v, ok := vars[d.Key]
	if !ok {
		return "", fmt.Errorf("sim: drift: cloudflare %s config has no variable %q", d.Target, d.Key)
	}
	switch d.Action {
	case DriftDelete:
		delete(vars, d.Key)
		return p.Name, nil
	case DriftChange:
		v.Value = d.Value
		vars[d.Key] = v
		return p.Name, nil
	}
	return "", badAction(d)
}

// snapshot adds the Pages projects with their variables.
func (cf *cloudflare) snapshot(s *Snapshot, now time.Time) {
	s.Cloudflare = cf.cloudflareSnapshot()
}
