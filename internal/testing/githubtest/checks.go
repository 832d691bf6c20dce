package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// CheckRun is a check run an App (or workflow) created.
type CheckRun struct {
	Repo       string `json:"repo"`
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion,omitempty"`
	Title      string `json:"title,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Author     string `json:"author"`
	Updates    int    `json:"updates"`
}

// CommitStatus is a commit status.
type CommitStatus struct {
	Repo        string `json:"repo"`
	ID          int64  `json:"id"`
	SHA         string `json:"sha"`
	State       string `json:"state"`
	Context     string `json:"context"`
	Description string `json:"description,omitempty"`
	TargetURL   string `json:"target_url,omitempty"`
	Author      string `json:"author"`
}

// CheckRuns returns the check runs of full, oldest first.
func (dp *Deploys) CheckRuns(full string) []CheckRun {
	dp.f.mu.Lock()
	defer dp.f.mu.Unlock()
	var out []CheckRun
	for _, c := range dp.f.checks {
		if strings.EqualFold(c.Repo, full) {
			out = append(out, *c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Statuses returns the commit statuses of full, oldest first.
func (dp *Deploys) Statuses(full string) []CommitStatus {
	dp.f.mu.Lock()
	defer dp.f.mu.Unlock()
	var out []CommitStatus
	for _, s := range dp.f.statuses {
		if strings.EqualFold(s.Repo, full) {
			out = append(out, *s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

type checkBody struct {
	Name       *string `json:"name"`
	HeadSHA    *string `json:"head_sha"`
	Status     *string `json:"status"`
	Conclusion *string `json:"conclusion"`
	Output     *struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
	} `json:"output"`
}

func (b checkBody) apply(c *CheckRun) {
	if b.Name != nil {
		c.Name = *b.Name
	}
	if b.Status != nil {
		c.Status = *b.Status
	}
	if b.Conclusion != nil {
		c.Conclusion = *b.Conclusion
		if b.Status == nil {
			c.Status = "completed"
		}
	}
	if b.Output != nil {
		c.Title, c.Summary = b.Output.Title, b.Output.Summary
	}
}

func (dp *Deploys) checkRun(c *CheckRun) map[string]any {
	m := dp.f.spec.Synth("check-run")
	m["id"], m["node_id"], m["head_sha"], m["name"] = c.ID, fmt.Sprintf("CR_%d", c.ID), c.HeadSHA, c.Name
	m["url"] = dp.f.opts.api("/repos/" + c.Repo + "/check-runs/" + strconv.FormatInt(c.ID, 10))
	m["html_url"] = dp.f.opts.web("/" + c.Repo + "/runs/" + strconv.FormatInt(c.ID, 10))
	m["status"], m["conclusion"] = c.Status, nil
	if c.Conclusion != "" {
		m["conclusion"] = c.Conclusion
	}
	m["details_url"], m["external_id"], m["started_at"], m["completed_at"] = nil, nil, ts(dp.f.opts.now()), nil
	m["check_suite"], m["app"] = nil, nil
	m["pull_requests"] = []any{}
	if out, ok := m["output"].(map[string]any); ok {
		out["title"], out["summary"], out["text"] = nil, nil, nil
		if c.Title != "" {
			out["title"] = c.Title
		}
		if c.Summary != "" {
			out["summary"] = c.Summary
		}
		out["annotations_count"], out["annotations_url"] = 0, dp.f.opts.api("/repos/"+c.Repo+"/check-runs/"+strconv.FormatInt(c.ID, 10)+"/annotations")
	}
	return m
}

func createCheckRun(c *call) {
	var b checkBody
	json.Unmarshal(c.body, &b) //nolint:errcheck // validated against the description
	run := &CheckRun{Repo: c.repo().FullName, Status: "queued", Author: c.token.Identity.Login}
	if b.HeadSHA != nil {
		run.HeadSHA = *b.HeadSHA
	}
	b.apply(run)
	c.f.mu.Lock()
	run.ID = c.f.id()
	c.f.checks = append(c.f.checks, run)
	snap := *run
	c.f.mu.Unlock()
	c.json(http.StatusCreated, c.f.Deploys.checkRun(&snap))
}

func updateCheckRun(c *call) {
	id, _ := strconv.ParseInt(c.params["check_run_id"], 10, 64)
	var b checkBody
	json.Unmarshal(c.body, &b) //nolint:errcheck // validated against the description
	c.f.mu.Lock()
	var run *CheckRun
	for _, x := range c.f.checks {
		if x.ID == id && strings.EqualFold(x.Repo, c.full()) {
			run = x
		}
	}
	if run == nil {
		c.f.mu.Unlock()
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	b.apply(run)
	run.Updates++
	snap := *run
	c.f.mu.Unlock()
	c.json(http.StatusOK, c.f.Deploys.checkRun(&snap))
}

func createStatus(c *call) {
	var b struct {
		State       string  `json:"state"`
		TargetURL   *string `json:"target_url"`
		Description *string `json:"description"`
		Context     string  `json:"context"`
	}
	json.Unmarshal(c.body, &b) //nolint:errcheck // validated against the description
	if b.Context == "" {
		b.Context = "default"
	}
	st := &CommitStatus{Repo: c.repo().FullName, SHA: c.params["sha"], State: b.State, Context: b.Context, Author: c.token.Identity.Login}
	if b.TargetURL != nil {
		st.TargetURL = *b.TargetURL
	}
	if b.Description != nil {
		st.Description = *b.Description
	}
	c.f.mu.Lock()
	st.ID = c.f.id()
	c.f.statuses = append(c.f.statuses, st)
	c.f.mu.Unlock()
	m := c.f.spec.Synth("status")
	m["id"], m["node_id"], m["state"], m["context"] = st.ID, fmt.Sprintf("SC_%d", st.ID), st.State, st.Context
	m["url"] = c.f.opts.api("/repos/" + st.Repo + "/statuses/" + st.SHA)
	m["avatar_url"] = nil
	m["description"], m["target_url"] = nil, nil
	if st.Description != "" {
		m["description"] = st.Description
	}
	if st.TargetURL != "" {
		m["target_url"] = st.TargetURL
	}
	m["creator"] = c.f.Repos.user(c.token.Identity)
	now := ts(c.f.opts.now())
	m["created_at"], m["updated_at"] = now, now
	c.json(http.StatusCreated, m)
}
