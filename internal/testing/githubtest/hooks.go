package githubtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Hook is a repository webhook.
type Hook struct {
	Repo   string   `json:"repo"`
	ID     int64    `json:"id"`
	Name   string   `json:"name"`
	Active bool     `json:"active"`
	Events []string `json:"events"`
	// Config is the hook's config: url, content_type, secret,
	// insecure_ssl (a string or a number, as sent).
	Config  map[string]any `json:"config"`
	Created time.Time      `json:"created_at"`
	Updated time.Time      `json:"updated_at"`
}

// Hooks returns the webhooks of full, oldest first.
func (rp *Repos) Hooks(full string) []Hook {
	rp.f.mu.Lock()
	defer rp.f.mu.Unlock()
	var out []Hook
	for _, h := range rp.f.hooks[strings.ToLower(full)] {
		out = append(out, h.copy())
	}
	return out
}

func (h *Hook) copy() Hook {
	c := *h
	c.Events = append([]string(nil), h.Events...)
	c.Config = map[string]any{}
	maps.Copy(c.Config, h.Config)
	return c
}

func (rp *Repos) hook(h Hook) map[string]any {
	m := rp.f.spec.Synth("hook")
	base := "/repos/" + h.Repo + "/hooks/" + strconv.FormatInt(h.ID, 10)
	m["id"], m["type"], m["name"], m["active"] = h.ID, "Repository", h.Name, h.Active
	m["events"] = h.Events
	cfg := map[string]any{}
	maps.Copy(cfg, h.Config)
	if _, ok := cfg["secret"]; ok {
		cfg["secret"] = "********" // GitHub never shows a secret back
	}
	m["config"] = cfg
	m["url"], m["test_url"], m["ping_url"], m["deliveries_url"] = rp.f.opts.api(base), rp.f.opts.api(base+"/test"), rp.f.opts.api(base+"/pings"), rp.f.opts.api(base+"/deliveries")
	m["last_response"] = map[string]any{"code": nil, "status": "unused", "message": nil}
	m["created_at"], m["updated_at"] = ts(h.Created), ts(h.Updated)
	return m
}

// findHookLocked returns the hook of the path, or nil. f.mu is held.
func (c *call) findHookLocked() *Hook {
	id, _ := strconv.ParseInt(c.params["hook_id"], 10, 64)
	for _, h := range c.f.hooks[strings.ToLower(c.full())] {
		if h.ID == id {
			return h
		}
	}
	return nil
}

func listHooks(c *call) {
	hooks := c.f.Repos.Hooks(c.full())
	out := []any{}
	for _, h := range paginate(c, hooks) {
		out = append(out, c.f.Repos.hook(h))
	}
	c.json(http.StatusOK, out)
}

func getHook(c *call) {
	var snap Hook
	if !found(c, c.findHookLocked, func(h *Hook) { snap = h.copy() }) {
		return
	}
	c.json(http.StatusOK, c.f.Repos.hook(snap))
}

// hookConfigError checks a config as GitHub does: a url is required,
// http or https; content_type json or form.
func hookConfigError(cfg map[string]any) string {
	u, _ := cfg["url"].(string)
	if u == "" {
		return "Config must contain URL."
	}
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return "Config url is not a valid URL: " + u
	}
	if ct, ok := cfg["content_type"].(string); ok && ct != "json" && ct != "form" {
		return "Config content_type must be json or form."
	}
	return ""
}

// createHook makes a repository webhook: name must be "web", config.url
// is required, and a hook with the same URL exists only once (422
// otherwise, as on GitHub).
func createHook(c *call) {
	var in struct {
		Name   *string        `json:"name"`
		Config map[string]any `json:"config"`
		Events []string       `json:"events"`
		Active *bool          `json:"active"`
	}
	json.Unmarshal(c.body, &in) //nolint:errcheck // validated against the description
	if in.Name != nil && *in.Name != "web" {
		c.validationFailed("Hook", "name", "invalid", "Name must be web.")
		return
	}
	if in.Config == nil {
		in.Config = map[string]any{}
	}
	if msg := hookConfigError(in.Config); msg != "" {
		c.validationFailed("Hook", "config", "custom", msg)
		return
	}
	if _, ok := in.Config["content_type"]; !ok {
		in.Config["content_type"] = "form"
	}
	if _, ok := in.Config["insecure_ssl"]; !ok {
		in.Config["insecure_ssl"] = "0"
	}
	if in.Events == nil {
		in.Events = []string{"push"}
	}
	now := c.f.opts.now()
	h := &Hook{Repo: c.repo().FullName, Name: "web", Active: in.Active == nil || *in.Active, Events: in.Events, Config: in.Config, Created: now, Updated: now}
	key := strings.ToLower(h.Repo)
	c.f.mu.Lock()
	for _, x := range c.f.hooks[key] {
		if x.Config["url"] == in.Config["url"] {
			c.f.mu.Unlock()
			c.validationFailed("Hook", "", "custom", "Hook already exists on this repository")
			return
		}
	}
	h.ID = c.f.id()
	c.f.hooks[key] = append(c.f.hooks[key], h)
	snap := h.copy()
	c.f.mu.Unlock()
	c.resp.header.Set("Location", c.f.opts.api(fmt.Sprintf("/repos/%s/hooks/%d", h.Repo, h.ID)))
	c.json(http.StatusCreated, c.f.Repos.hook(snap))
}

// updateHook changes a hook: config replaces the config (a secret left
// out is kept, as GitHub keeps it), events replaces the events,
// add_events/remove_events edit them, active switches it.
func updateHook(c *call) {
	var in struct {
		Config       map[string]any `json:"config"`
		Events       []string       `json:"events"`
		AddEvents    []string       `json:"add_events"`
		RemoveEvents []string       `json:"remove_events"`
		Active       *bool          `json:"active"`
	}
	json.Unmarshal(c.body, &in) //nolint:errcheck // validated against the description
	if in.Config != nil {
		if msg := hookConfigError(in.Config); msg != "" {
			c.validationFailed("Hook", "config", "custom", msg)
			return
		}
	}
	var snap Hook
	if !found(c, c.findHookLocked, func(h *Hook) {
		if in.Config != nil {
			if _, ok := in.Config["secret"]; !ok {
				if s, had := h.Config["secret"]; had {
					in.Config["secret"] = s
				}
			}
			if _, ok := in.Config["content_type"]; !ok {
				in.Config["content_type"] = "form"
			}
			if _, ok := in.Config["insecure_ssl"]; !ok {
				in.Config["insecure_ssl"] = "0"
			}
			h.Config = in.Config
		}
		if in.Events != nil {
			h.Events = append([]string(nil), in.Events...)
		}
		for _, e := range in.AddEvents {
			if !slices.Contains(h.Events, e) {
				h.Events = append(h.Events, e)
			}
		}
		if len(in.RemoveEvents) > 0 {
			keep := []string{}
			for _, e := range h.Events {
				if !slices.Contains(in.RemoveEvents, e) {
					keep = append(keep, e)
				}
			}
			h.Events = keep
		}
		if in.Active != nil {
			h.Active = *in.Active
		}
		h.Updated = c.f.opts.now()
		snap = h.copy()
	}) {
		return
	}
	c.json(http.StatusOK, c.f.Repos.hook(snap))
}

func deleteHook(c *call) {
	key := strings.ToLower(c.full())
	if !found(c, func() *Hook { return c.findHookLocked() }, func(h *Hook) {
		keep := c.f.hooks[key][:0:0]
		for _, x := range c.f.hooks[key] {
			if x != h {
				keep = append(keep, x)
			}
		}
		c.f.hooks[key] = keep
	}) {
		return
	}
	c.noContent()
}
