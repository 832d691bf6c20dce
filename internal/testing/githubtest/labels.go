package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
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
func (f *Fake) AddLabel(full string, l Label) error {
	rs := f.repo(full)
	if rs == nil {
		return fmt.Errorf("githubtest: no repository %s", full)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.labelLocked(rs, l)
	return nil
}

// labelLocked returns the repository's label named l.Name, made from l
// when missing. f.mu is held.
func (f *Fake) labelLocked(rs *repoState, l Label) *Label {
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
		l.ID = f.id()
	}
	c := l
	rs.labels[key] = &c
	return &c
}

// IssueLabels returns the names of the labels on an issue or pull
// request, sorted.
func (f *Fake) IssueLabels(full string, issue int) []string {
	rs := f.repo(full)
	if rs == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), rs.onIssue[issue]...)
}

// issueLabelsLocked represents the labels on an issue. f.mu is held.
func (f *Fake) issueLabelsLocked(rs *repoState, issue int) []Label {
	var out []Label
	for _, n := range rs.onIssue[issue] {
		out = append(out, *rs.labels[strings.ToLower(n)])
	}
	return out
}

func (f *Fake) label(full string, l Label) map[string]any {
	m := f.spec.Synth("label")
	m["id"], m["node_id"], m["name"], m["color"], m["default"] = l.ID, fmt.Sprintf("LA_%d", l.ID), l.Name, l.Color, l.Default
	m["url"] = f.api("/repos/" + full + "/labels/" + url.PathEscape(l.Name))
	m["description"] = nil
	if l.Description != "" {
		m["description"] = l.Description
	}
	return m
}

func (c *call) labelsAnswer(status int, rs *repoState, labels []Label) {
	out := []any{}
	for _, l := range labels {
		out = append(out, c.f.label(rs.FullName, l))
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
	labels := c.f.issueLabelsLocked(rs, n)
	c.f.mu.Unlock()
	out := []any{}
	for _, l := range paginate(c, labels) {
		out = append(out, c.f.label(rs.FullName, l))
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
		l := c.f.labelLocked(rs, Label{Name: name})
		if !containsFold(rs.onIssue[n], l.Name) {
			rs.onIssue[n] = append(rs.onIssue[n], l.Name)
		}
	}
	sort.Slice(rs.onIssue[n], func(i, j int) bool {
		return strings.ToLower(rs.onIssue[n][i]) < strings.ToLower(rs.onIssue[n][j])
	})
	labels := c.f.issueLabelsLocked(rs, n)
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
	labels := c.f.issueLabelsLocked(rs, n)
	c.f.mu.Unlock()
	c.labelsAnswer(http.StatusOK, rs, labels)
}

func containsFold(xs []string, s string) bool {
	for _, x := range xs {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// --- reactions ---------------------------------------------------------------

// Reactions returns the reactions to a comment, oldest first.
func (f *Fake) Reactions(comment int64) []Reaction {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Reaction
	for _, r := range f.reactions[comment] {
		out = append(out, *r)
	}
	return out
}

func (f *Fake) reaction(r Reaction) map[string]any {
	m := f.spec.Synth("reaction")
	m["id"], m["node_id"], m["content"] = r.ID, fmt.Sprintf("REA_%d", r.ID), r.Content
	m["user"] = f.user(r.User)
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
	for _, r := range c.f.Reactions(cm.ID) {
		if content == "" || r.Content == content {
			sel = append(sel, r)
		}
	}
	out := []any{}
	for _, r := range paginate(c, sel) {
		out = append(out, c.f.reaction(r))
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
			c.json(http.StatusOK, c.f.reaction(snap))
			return
		}
	}
	r := &Reaction{ID: c.f.id(), Comment: cm.ID, User: who, Content: in.Content, Created: c.f.now()}
	c.f.reactions[cm.ID] = append(c.f.reactions[cm.ID], r)
	snap := *r
	c.f.mu.Unlock()
	c.json(http.StatusCreated, c.f.reaction(snap))
}
