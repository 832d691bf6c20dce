package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Label is a label of a repository.
type Label struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Color       string `json:"color"`
	Description string `json:"description,omitempty"`
	Default     bool   `json:"default,omitempty"`
}

// Reaction is a reaction to an issue comment.
type Reaction struct {
	ID      int64     `json:"id"`
	Comment int64     `json:"comment"`
	User    Identity  `json:"user"`
	Content string    `json:"content"` // +1, -1, laugh, confused, heart, hooray, rocket, eyes
	Created time.Time `json:"created_at"`
}

// AddLabel defines a label of full (GitHub creates a label that
// add-labels names and the repository lacks; this sets its colour and
// description beforehand).
func (is *Issues) AddLabel(full string, l Label) error {
	rs := is.f.Repos.repo(full)
	if rs == nil {
		return fmt.Errorf("githubtest: no repository %s", full)
	}
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	is.labelLocked(rs, l)
	return nil
}

// labelLocked returns the repository's label named l.Name, made from l
// when missing. f.mu is held.
func (is *Issues) labelLocked(rs *repoState, l Label) *Label {
	if rs.labels == nil {
		rs.labels = map[string]*Label{}
	}
	key := strings.ToLower(l.Name)
	if have := rs.labels[key]; have != nil {
		return have
	}
	if l.Color == "" {
		l.Color = "ededed"
	}
	if l.ID == 0 {
		l.ID = is.f.id()
	}
	c := l
	rs.labels[key] = &c
	return &c
}

// IssueLabels returns the names of the labels on an issue or pull
// request, sorted.
func (is *Issues) IssueLabels(full string, issue int) []string {
	rs := is.f.Repos.repo(full)
	if rs == nil {
		return nil
	}
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	return append([]string(nil), rs.onIssue[issue]...)
}

// issueLabelsLocked represents the labels on an issue. f.mu is held.
func (is *Issues) issueLabelsLocked(rs *repoState, issue int) []Label {
	var out []Label
	for _, n := range rs.onIssue[issue] {
		out = append(out, *rs.labels[strings.ToLower(n)])
	}
	return out
}

func (is *Issues) label(full string, l Label) map[string]any {
	m := is.f.spec.Synth("label")
	m["id"], m["node_id"], m["name"], m["color"], m["default"] = l.ID, fmt.Sprintf("LA_%d", l.ID), l.Name, l.Color, l.Default
	m["url"] = is.f.opts.api("/repos/" + full + "/labels/" + url.PathEscape(l.Name))
	m["description"] = nil
	if l.Description != "" {
		m["description"] = l.Description
	}
	return m
}

func (c *call) labelsAnswer(status int, rs *repoState, labels []Label) {
	out := []any{}
	for _, l := range labels {
		out = append(out, c.f.Issues.label(rs.FullName, l))
	}
	c.json(status, out)
}

func listIssueLabels(c *call) {
	n, _ := strconv.Atoi(c.params["issue_number"])
	if !c.issueExists(n) {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	rs := c.repo()
	c.f.mu.Lock()
	labels := c.f.Issues.issueLabelsLocked(rs, n)
	c.f.mu.Unlock()
	out := []any{}
	for _, l := range paginate(c, labels) {
		out = append(out, c.f.Issues.label(rs.FullName, l))
	}
	c.json(http.StatusOK, out)
}

// labelNames reads add-labels' body in any of its three shapes: an
// object {"labels": [...]}, a bare array of names, or a bare array of
// {"name": ...} objects (items of the first may be either).
func labelNames(body []byte) []string {
	var items []json.RawMessage
	var obj struct {
		Labels []json.RawMessage `json:"labels"`
	}
	if json.Unmarshal(body, &items) != nil {
		if json.Unmarshal(body, &obj) != nil {
			return nil
		}
		items = obj.Labels
	}
	var names []string
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			names = append(names, s)
			continue
		}
		var o struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(it, &o) == nil {
			names = append(names, o.Name)
		}
	}
	return names
}

// addIssueLabels adds labels to an issue (creating repository labels it
// lacks) and answers every label now on it.
func addIssueLabels(c *call) {
	n, _ := strconv.Atoi(c.params["issue_number"])
	if !c.issueExists(n) {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	names := labelNames(c.body)
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			c.validationFailed("Label", "name", "missing_field", "A label name cannot be blank.")
			return
		}
	}
	rs := c.repo()
	c.f.mu.Lock()
	if rs.onIssue == nil {
		rs.onIssue = map[int][]string{}
	}
	for _, name := range names {
		l := c.f.Issues.labelLocked(rs, Label{Name: name})
		if !slices.ContainsFunc(rs.onIssue[n], func(x string) bool { return strings.EqualFold(x, l.Name) }) {
			rs.onIssue[n] = append(rs.onIssue[n], l.Name)
		}
	}
	sort.Slice(rs.onIssue[n], func(i, j int) bool {
		return strings.ToLower(rs.onIssue[n][i]) < strings.ToLower(rs.onIssue[n][j])
	})
	labels := c.f.Issues.issueLabelsLocked(rs, n)
	c.f.mu.Unlock()
	c.labelsAnswer(http.StatusOK, rs, labels)
}

// removeIssueLabel takes a label off an issue and answers the labels
// left; 404 when the issue does not carry it.
func removeIssueLabel(c *call) {
	n, _ := strconv.Atoi(c.params["issue_number"])
	if !c.issueExists(n) {
		c.error(http.StatusNotFound, "Not Found")
		return
	}
	name, err := url.PathUnescape(c.params["name"])
	if err != nil {
		name = c.params["name"]
	}
	rs := c.repo()
	c.f.mu.Lock()
	var keep []string
	found := false
	for _, x := range rs.onIssue[n] {
		if strings.EqualFold(x, name) {
			found = true
			continue
		}
		keep = append(keep, x)
	}
	if !found {
		c.f.mu.Unlock()
		c.error(http.StatusNotFound, "Label does not exist")
		return
	}
	rs.onIssue[n] = keep
	labels := c.f.Issues.issueLabelsLocked(rs, n)
	c.f.mu.Unlock()
	c.labelsAnswer(http.StatusOK, rs, labels)
}

// --- reactions ---------------------------------------------------------------

// Reactions returns the reactions to a comment, oldest first.
func (is *Issues) Reactions(comment int64) []Reaction {
	is.f.mu.Lock()
	defer is.f.mu.Unlock()
	var out []Reaction
	for _, r := range is.f.reactions[comment] {
		out = append(out, *r)
	}
	return out
}

func (is *Issues) reaction(r Reaction) map[string]any {
	m := is.f.spec.Synth("reaction")
	m["id"], m["node_id"], m["content"] = r.ID, fmt.Sprintf("REA_%d", r.ID), r.Content
	m["user"] = is.f.Repos.user(r.User)
	m["created_at"] = ts(r.Created)
	return m
}

func listReactions(c *call) {
	cm := c.findComment()
	if cm == nil {
		return
	}
	content := c.query("content")
	var sel []Reaction
	for _, r := range c.f.Issues.Reactions(cm.ID) {
		if content == "" || r.Content == content {
			sel = append(sel, r)
		}
	}
	out := []any{}
	for _, r := range paginate(c, sel) {
		out = append(out, c.f.Issues.reaction(r))
	}
	c.json(http.StatusOK, out)
}

// createReaction reacts to a comment as the token's identity: 201 for a
// new reaction, 200 with the existing one when that identity already
// left the same reaction.
func createReaction(c *call) {
	cm := c.findComment()
	if cm == nil {
		return
	}
	var in struct {
		Content string `json:"content"`
	}
	json.Unmarshal(c.body, &in) //nolint:errcheck // validated against the description
	who := c.token.Identity
	c.f.mu.Lock()
	for _, r := range c.f.reactions[cm.ID] {
		if r.Content == in.Content && strings.EqualFold(r.User.Login, who.Login) {
			snap := *r
			c.f.mu.Unlock()
			c.json(http.StatusOK, c.f.Issues.reaction(snap))
			return
		}
	}
	r := &Reaction{ID: c.f.id(), Comment: cm.ID, User: who, Content: in.Content, Created: c.f.opts.now()}
	c.f.reactions[cm.ID] = append(c.f.reactions[cm.ID], r)
	snap := *r
	c.f.mu.Unlock()
	c.json(http.StatusCreated, c.f.Issues.reaction(snap))
}
