package sim

import "net/http"

// vercelGetEnv is "Retrieve the decrypted value of an environment variable
// of a project" (GET /v1/projects/{idOrName}/env/{id}, getProjectEnv in
// Vercel's description): one variable, its value decrypted (a sensitive
// one's stays "").
func (c *Cloud) vercelGetEnv(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.vercelFind(r.PathValue("idOrName"), q.Get("teamId"))
	if p == nil {
		vercelErr(w, http.StatusNotFound, "not_found", "Project not found")
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
