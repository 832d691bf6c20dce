package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

func (dp *Deploys) deployment(rs *repoState, d *Deployment) map[string]any {
	m := dp.f.spec.Synth("deployment")
	base := "/repos/" + rs.FullName + "/deployments/" + strconv.FormatInt(d.ID, 10)
	m["id"], m["node_id"], m["sha"], m["ref"], m["task"], m["environment"] = d.ID, fmt.Sprintf("DE_%d", d.ID), d.SHA, d.Ref, d.Task, d.Environment
	m["original_environment"] = d.Environment
	creator := d.Creator
	if creator.Login == "" {
		creator = ActionsBot
	}
	m["creator"] = dp.f.Repos.user(creator)
	var payload any = map[string]any{}
	if len(d.Payload) > 0 {
		json.Unmarshal(d.Payload, &payload) //nolint:errcheck // stored from a validated body
	}
	m["payload"] = payload
	m["description"] = nil
	if d.Description != "" {
		m["description"] = d.Description
	}
	m["transient_environment"], m["production_environment"] = d.Transient, d.Production
	m["url"], m["statuses_url"], m["repository_url"] = dp.f.opts.api(base), dp.f.opts.api(base+"/statuses"), dp.f.opts.api("/repos/"+rs.FullName)
	created := ts(dp.f.opts.now())
	if !d.Created.IsZero() {
		created = ts(d.Created)
	}
	m["created_at"], m["updated_at"] = created, created
	return m
}

func (dp *Deploys) deploymentStatus(rs *repoState, d *Deployment, st DeploymentStatus) map[string]any {
	m := dp.f.spec.Synth("deployment-status")
	m["id"], m["node_id"], m["state"], m["description"] = st.ID, fmt.Sprintf("DES_%d", st.ID), st.State, st.Description
	creator := st.Creator
	if creator.Login == "" {
		creator = ActionsBot
	}
	m["creator"] = dp.f.Repos.user(creator)
	m["deployment_url"] = dp.f.opts.api("/repos/" + rs.FullName + "/deployments/" + strconv.FormatInt(d.ID, 10))
	m["url"] = m["deployment_url"].(string) + "/statuses/" + strconv.FormatInt(st.ID, 10)
	m["repository_url"] = dp.f.opts.api("/repos/" + rs.FullName)
	m["target_url"], m["log_url"], m["environment_url"] = st.TargetURL, st.LogURL, st.URL
	if st.LogURL == "" {
		m["log_url"] = st.TargetURL
	}
	m["environment"] = st.Environment
	if st.Environment == "" {
		m["environment"] = d.Environment
	}
	created := ts(dp.f.opts.now())
	if !st.Created.IsZero() {
		created = ts(st.Created)
	}
	m["created_at"], m["updated_at"] = created, created
	return m
}

// findDeploymentLocked returns the deployment of full with id idStr, or
// nil. f.mu is held.
func (dp *Deploys) findDeploymentLocked(full, idStr string) *Deployment {
	id, _ := strconv.ParseInt(idStr, 10, 64)
	for _, d := range dp.f.deployments[strings.ToLower(full)] {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// lastState is the state of a deployment's latest status ("" none).
func (d *Deployment) lastState() string {
	if len(d.Statuses) == 0 {
		return ""
	}
	return d.Statuses[len(d.Statuses)-1].State
}

// createDeployment deploys ref as GitHub does: the ref must resolve to a
// commit; unless required_contexts is given, every commit status context
// and check run on the commit must have succeeded (409 otherwise; an
// empty list skips the check); with auto_merge (the default) a branch
// behind the default branch has the default branch merged into it
// first, answered 202 instead of a deployment.
func createDeployment(c *call) {
	rs := c.repo()
	var in struct {
		Ref              string          `json:"ref"`
		Task             *string         `json:"task"`
		AutoMerge        *bool           `json:"auto_merge"`
		RequiredContexts *[]string       `json:"required_contexts"`
		Payload          json.RawMessage `json:"payload"`
		Environment      *string         `json:"environment"`
		Description      *string         `json:"description"`
		Transient        bool            `json:"transient_environment"`
		Production       *bool           `json:"production_environment"`
	}
	json.Unmarshal(c.body, &in) //nolint:errcheck // validated against the description
	full := rs.FullName
	sha := c.f.Git.resolve(full, in.Ref)
	if sha == "" {
		c.validationFailed("Deployment", "ref", "invalid", "No ref found for: "+in.Ref)
		return
	}
	isBranch := c.f.Git.resolve(full, "refs/heads/"+in.Ref) != ""
	if (in.AutoMerge == nil || *in.AutoMerge) && isBranch && in.Ref != rs.DefaultBranch {
		def := c.f.Git.resolve(full, "refs/heads/"+rs.DefaultBranch)
		if def != "" {
			if _, err := c.f.Git.git(c.f.Git.gitDir(full), nil, "merge-base", "--is-ancestor", def, sha); err != nil {
				c.autoMerge(rs, in.Ref, sha, def)
				return
			}
		}
	}
	if failed := c.f.Deploys.failedContexts(full, sha, in.RequiredContexts); failed != "" {
		c.error(http.StatusConflict, "Conflict: Commit status checks failed for "+in.Ref+". "+failed)
		return
	}
	d := Deployment{Repo: full, SHA: sha, Ref: in.Ref, Creator: c.token.Identity, Transient: in.Transient}
	if in.Task != nil {
		d.Task = *in.Task
	}
	if in.Environment != nil {
		d.Environment = *in.Environment
	} else {
		d.Environment = "production"
	}
	if in.Description != nil {
		d.Description = *in.Description
	}
	if s := strings.TrimSpace(string(in.Payload)); s != "" && s != "null" {
		d.Payload = append(json.RawMessage(nil), in.Payload...)
	}
	d.Production = d.Environment == "production"
	if in.Production != nil {
		d.Production = *in.Production
	}
	d.ID = c.f.Deploys.AddDeployment(d)
	c.f.mu.Lock()
	snap := *c.f.Deploys.findDeploymentLocked(full, strconv.FormatInt(d.ID, 10))
	c.f.mu.Unlock()
	c.json(http.StatusCreated, c.f.Deploys.deployment(rs, &snap))
}

// autoMerge merges the default branch (def) into branch (at sha) with a
// real merge commit and answers 202, or 409 on a conflict.
func (c *call) autoMerge(rs *repoState, branch, sha, def string) {
	dir := c.f.Git.gitDir(rs.FullName)
	tree, err := c.f.Git.git(dir, nil, "merge-tree", "--write-tree", sha, def)
	if err != nil {
		c.error(http.StatusConflict, "Merge conflict attempting to merge "+rs.DefaultBranch+" into "+branch+".")
		return
	}
	tree = strings.Fields(tree)[0]
	msg := "Merge " + rs.DefaultBranch + " into " + branch
	merge, err := c.f.Git.git(dir, nil, "commit-tree", tree, "-p", sha, "-p", def, "-m", msg)
	if err == nil {
		_, err = c.f.Git.git(dir, nil, "update-ref", "refs/heads/"+branch, merge, sha)
	}
	if err != nil {
		c.error(http.StatusConflict, "Merge conflict attempting to merge "+rs.DefaultBranch+" into "+branch+": "+err.Error())
		return
	}
	c.json(http.StatusAccepted, map[string]any{"message": "Auto-merged " + rs.DefaultBranch + " into " + branch + " on deployment."})
}

// failedContexts names the required contexts on sha that did not
// succeed ("" when all did): required nil means every commit status
// context and check run on the commit, an empty list none.
func (dp *Deploys) failedContexts(full, sha string, required *[]string) string {
	dp.f.mu.Lock()
	defer dp.f.mu.Unlock()
	latest := map[string]string{} // context → state, latest last
	var order []string
	for _, s := range dp.f.statuses {
		if strings.EqualFold(s.Repo, full) && s.SHA == sha {
			if _, seen := latest[s.Context]; !seen {
				order = append(order, s.Context)
			}
			latest[s.Context] = s.State
		}
	}
	for _, r := range dp.f.checks {
		if strings.EqualFold(r.Repo, full) && r.HeadSHA == sha {
			if _, seen := latest[r.Name]; !seen {
				order = append(order, r.Name)
			}
			state := r.Conclusion
			if r.Status != "completed" {
				state = "pending"
			}
			if state == "neutral" || state == "skipped" {
				state = "success"
			}
			latest[r.Name] = state
		}
	}
	want := order
	if required != nil {
		want = *required
	}
	var bad []string
	for _, ctx := range want {
		if latest[ctx] != "success" {
			st := latest[ctx]
			if st == "" {
				st = "missing"
			}
			bad = append(bad, ctx+" ("+st+")")
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "Not successful: " + strings.Join(bad, ", ") + "."
}

func getDeployment(c *call) {
	rs := c.repo()
	var snap Deployment
	if !found(c, func() *Deployment { return c.f.Deploys.findDeploymentLocked(rs.FullName, c.params["deployment_id"]) }, func(d *Deployment) {
		snap = *d
	}) {
		return
	}
	c.json(http.StatusOK, c.f.Deploys.deployment(rs, &snap))
}

// deleteDeployment deletes a deployment as GitHub does: the only one of
// the repository whatever its state, otherwise only an inactive one: its
// latest status is not success (GitHub: "mark the active deployment as
// inactive by adding any non-successful deployment status").
func deleteDeployment(c *call) {
	rs := c.repo()
	key := strings.ToLower(rs.FullName)
	c.f.mu.Lock()
	d := c.f.Deploys.findDeploymentLocked(rs.FullName, c.params["deployment_id"])
	if d == nil {
		c.f.mu.Unlock()
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	all := c.f.deployments[key]
	if len(all) > 1 && d.lastState() == "success" {
		c.f.mu.Unlock()
		c.json(http.StatusUnprocessableEntity, map[string]any{
			"message":           "We cannot delete an active deployment unless it is the only deployment in a given environment.",
			"documentation_url": "https://docs.github.com/rest/deployments/deployments#delete-a-deployment",
			"errors":            []any{"Deployment " + strconv.FormatInt(d.ID, 10) + " is active: mark it inactive first."},
		})
		return
	}
	keep := all[:0:0]
	for _, x := range all {
		if x != d {
			keep = append(keep, x)
		}
	}
	c.f.deployments[key] = keep
	c.f.mu.Unlock()
	c.noContent()
}

func listDeploymentStatuses(c *call) {
	rs := c.repo()
	var snap Deployment
	if !found(c, func() *Deployment { return c.f.Deploys.findDeploymentLocked(rs.FullName, c.params["deployment_id"]) }, func(d *Deployment) {
		snap = *d
		snap.Statuses = append([]DeploymentStatus(nil), d.Statuses...)
	}) {
		return
	}
	// Newest first, as GitHub lists them.
	sts := make([]DeploymentStatus, 0, len(snap.Statuses))
	for i := len(snap.Statuses) - 1; i >= 0; i-- {
		sts = append(sts, snap.Statuses[i])
	}
	out := []any{}
	for _, st := range paginate(c, sts) {
		out = append(out, c.f.Deploys.deploymentStatus(rs, &snap, st))
	}
	c.json(http.StatusOK, out)
}

// createDeploymentStatus posts a status. With auto_inactive (the
// default), a success status marks inactive every earlier deployment of
// the same environment whose latest status is success and that is
// neither transient nor production, as GitHub does.
func createDeploymentStatus(c *call) {
	rs := c.repo()
	var in struct {
		State          string `json:"state"`
		EnvironmentURL string `json:"environment_url"`
		Description    string `json:"description"`
		Environment    string `json:"environment"`
		TargetURL      string `json:"target_url"`
		LogURL         string `json:"log_url"`
		AutoInactive   *bool  `json:"auto_inactive"`
	}
	json.Unmarshal(c.body, &in) //nolint:errcheck // validated against the description
	var snap Deployment
	var st DeploymentStatus
	if !found(c, func() *Deployment { return c.f.Deploys.findDeploymentLocked(rs.FullName, c.params["deployment_id"]) }, func(d *Deployment) {
		now := c.f.opts.now()
		st = DeploymentStatus{ID: c.f.id(), State: in.State, Environment: in.Environment, URL: in.EnvironmentURL, Description: in.Description,
			TargetURL: in.TargetURL, LogURL: in.LogURL, Creator: c.token.Identity, Created: now}
		if in.Environment != "" {
			d.Environment = in.Environment
		}
		d.Statuses = append(d.Statuses, st)
		if in.State == "success" && (in.AutoInactive == nil || *in.AutoInactive) {
			for _, x := range c.f.deployments[strings.ToLower(rs.FullName)] {
				if x != d && x.ID < d.ID && x.Environment == d.Environment && !x.Transient && !x.Production && x.lastState() == "success" {
					x.Statuses = append(x.Statuses, DeploymentStatus{ID: c.f.id(), State: "inactive", Environment: x.Environment, Creator: c.token.Identity, Created: now})
				}
			}
		}
		snap = *d
	}) {
		return
	}
	c.json(http.StatusCreated, c.f.Deploys.deploymentStatus(rs, &snap, st))
}

// validationFailed answers GitHub's 422 validation-error.
func (c *call) validationFailed(resource, field, code, msg string) {
	c.json(http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest",
		"errors": []any{map[string]any{"resource": resource, "field": field, "code": code, "message": msg}},
	})
}
