package githubtest

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
)

// Collaborator gives a user a role on a repository (a seed).
type Collaborator struct {
	Repo  string `json:"repo"`
	Login string `json:"login"`
	// Role is admin, maintain, write, triage or read (or a custom role's
	// name, reported as read).
	Role string `json:"role"`
}

// Member puts a user on an organisation's team (a seed).
type Member struct {
	Org   string `json:"org"`
	Team  string `json:"team"` // the team's slug
	Login string `json:"login"`
	Role  string `json:"role,omitempty"`  // member (default) or maintainer
	State string `json:"state,omitempty"` // active (default) or pending
}

// SetCollaborator gives login role on full ("" removes it).
func (rp *Repos) SetCollaborator(full, login, role string) error {
	if rp.repo(full) == nil {
		return fmt.Errorf("githubtest: no repository %s", full)
	}
	rp.f.mu.Lock()
	defer rp.f.mu.Unlock()
	key := strings.ToLower(full)
	if rp.f.collabs[key] == nil {
		rp.f.collabs[key] = map[string]string{}
	}
	rp.f.users[strings.ToLower(login)] = true
	if role == "" {
		delete(rp.f.collabs[key], strings.ToLower(login))
		return nil
	}
	rp.f.collabs[key][strings.ToLower(login)] = role
	return nil
}

// AddTeamMember puts a user on a team (role member and state active by
// default).
func (rp *Repos) AddTeamMember(m Member) error {
	if m.Org == "" || m.Team == "" || m.Login == "" {
		return fmt.Errorf("githubtest: a team member needs org, team and login: %+v", m)
	}
	if m.Role == "" {
		m.Role = "member"
	}
	if m.State == "" {
		m.State = "active"
	}
	if m.Role != "member" && m.Role != "maintainer" || m.State != "active" && m.State != "pending" {
		return fmt.Errorf("githubtest: team role %q (member or maintainer), state %q (active or pending)", m.Role, m.State)
	}
	rp.f.mu.Lock()
	defer rp.f.mu.Unlock()
	key := strings.ToLower(m.Org + "/" + m.Team)
	if rp.f.teams[key] == nil {
		rp.f.teams[key] = map[string]*Member{}
	}
	c := m
	rp.f.teams[key][strings.ToLower(m.Login)] = &c
	rp.f.users[strings.ToLower(m.Login)] = true
	return nil
}

// knownUserLocked: a login the fake has met (a token's identity, the
// author of a comment or pull request, a collaborator or team member now
// or before, an owner of a repository). f.mu is held.
func (rp *Repos) knownUserLocked(login string) bool {
	if rp.f.users[strings.ToLower(login)] {
		return true
	}
	for _, t := range rp.f.tokens {
		if strings.EqualFold(t.Identity.Login, login) {
			return true
		}
	}
	for _, c := range rp.f.comments {
		if strings.EqualFold(c.Author.Login, login) {
			return true
		}
	}
	for _, rs := range rp.f.repos {
		if owner, _, _ := strings.Cut(rs.FullName, "/"); strings.EqualFold(owner, login) {
			return true
		}
		for _, p := range rs.pulls {
			if strings.EqualFold(p.User, login) {
				return true
			}
		}
	}
	return false
}

// getCollaboratorPermission answers a user's permission on a repository
// as GitHub does: the owner of a user-owned repository is admin, a
// collaborator has their role (maintain reported as write, triage and
// custom roles as read, role_name the role itself), anyone else read on
// a public repository and none on a private one; 404 for a login the
// fake has never met (GitHub: not a user).
func getCollaboratorPermission(c *call) {
	rs := c.repo()
	login, err := url.PathUnescape(c.params["username"])
	if err != nil {
		login = c.params["username"]
	}
	c.f.mu.Lock()
	role, isCollab := c.f.collabs[strings.ToLower(rs.FullName)][strings.ToLower(login)]
	known := c.f.Repos.knownUserLocked(login)
	c.f.mu.Unlock()
	owner, _, _ := strings.Cut(rs.FullName, "/")
	switch {
	case isCollab:
	case strings.EqualFold(owner, login):
		role, isCollab = "admin", true
	case !known:
		c.error(http.StatusNotFound, "Not Found")
		return
	case rs.Private:
		role = "none"
	default:
		role = "read"
	}
	perm := role
	switch role {
	case "admin", "write", "read", "none":
	case "maintain":
		perm = "write"
	default: // triage and custom roles
		perm = "read"
	}
	levels := map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
	lv, ok := levels[role]
	if !ok {
		lv = 1
	}
	m := c.f.spec.Synth("repository-collaborator-permission")
	u := c.f.spec.Synth("nullable-collaborator")
	maps.Copy(u, c.f.Repos.user(Identity{Login: login, Type: "User"}))
	u["role_name"] = role
	u["permissions"] = map[string]any{"pull": lv >= 1, "triage": lv >= 2, "push": lv >= 3, "maintain": lv >= 4, "admin": lv >= 5}
	if !isCollab {
		delete(u, "permissions")
	}
	m["permission"], m["role_name"], m["user"] = perm, role, u
	c.json(http.StatusOK, m)
}

// getTeamMembership answers a user's membership of a team, 404 when the
// team does not exist or the user is not on it.
func getTeamMembership(c *call) {
	org, slug := c.params["org"], c.params["team_slug"]
	login, err := url.PathUnescape(c.params["username"])
	if err != nil {
		login = c.params["username"]
	}
	var snap Member
	if !found(c, func() *Member { return c.f.teams[strings.ToLower(org+"/"+slug)][strings.ToLower(login)] }, func(mem *Member) {
		snap = *mem
	}) {
		return
	}
	m := c.f.spec.Synth("team-membership")
	m["url"] = c.f.opts.api("/orgs/" + url.PathEscape(org) + "/teams/" + url.PathEscape(slug) + "/memberships/" + url.PathEscape(snap.Login))
	m["role"], m["state"] = snap.Role, snap.State
	c.json(http.StatusOK, m)
}
