package githubtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// checkJWT verifies an App's JWT as GitHub does: RS256 signed by the
// App's key, iss the App's id, iat not in the future (60 s of clock drift
// allowed), exp in the future and at most ten minutes ahead.
func (ap *Apps) checkJWT(tok string) (*App, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("A JSON web token could not be decoded")
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat *json.Number    `json:"iat"`
		Exp *json.Number    `json:"exp"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	pb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &hdr) != nil || json.Unmarshal(pb, &claims) != nil {
		return nil, errors.New("A JSON web token could not be decoded")
	}
	if hdr.Alg != "RS256" {
		return nil, errors.New("A JSON web token could not be decoded: only RS256 is accepted")
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	appID, err := strconv.ParseInt(iss, 10, 64)
	if err != nil {
		return nil, errors.New("'Issuer' claim ('iss') must be an Integer")
	}
	ap.f.mu.Lock()
	app := ap.f.apps[appID]
	ap.f.mu.Unlock()
	if app == nil {
		return nil, fmt.Errorf("Integration not found")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&app.Key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return nil, errors.New("A JSON web token could not be decoded: signature verification failed")
	}
	if claims.Iat == nil || claims.Exp == nil {
		return nil, errors.New("'Issued at' claim ('iat') and 'Expiration time' claim ('exp') are required")
	}
	iat, err1 := claims.Iat.Int64()
	exp, err2 := claims.Exp.Int64()
	if err1 != nil || err2 != nil {
		return nil, errors.New("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
	}
	now := ap.f.opts.now().Unix()
	switch {
	case iat > now+60:
		return nil, errors.New("'Issued at' claim ('iat') must be an Integer representing a time in the past")
	case exp <= now:
		return nil, errors.New("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	case exp > now+600:
		return nil, errors.New("'Expiration time' claim ('exp') is too far in the future")
	}
	ap.f.mu.Lock()
	ap.f.jwtSeen++
	ap.f.mu.Unlock()
	return app, nil
}

func botIdentity(a *App) Identity {
	return Identity{Login: a.Slug + "[bot]", ID: 900000 + a.ID, Type: "Bot"}
}

func getApp(c *call) {
	a := c.app
	m := c.f.spec.Synth("integration")
	m["id"], m["slug"], m["node_id"], m["name"] = a.ID, a.Slug, fmt.Sprintf("A_%d", a.ID), a.Name
	m["owner"] = c.f.Repos.user(Identity{Login: a.Owner, Type: "Organization"})
	m["description"] = nil
	m["external_url"], m["html_url"] = c.f.opts.web("/apps/"+a.Slug), c.f.opts.web("/apps/"+a.Slug)
	now := ts(c.f.opts.now())
	m["created_at"], m["updated_at"] = now, now
	m["permissions"] = map[string]any{"contents": "write", "pull_requests": "write", "actions": "read", "metadata": "read"}
	m["events"] = []any{"pull_request", "push", "installation", "installation_repositories"}
	c.json(http.StatusOK, m)
}

func (ap *Apps) installation(a *App, in *Installation) map[string]any {
	m := ap.f.spec.Synth("installation")
	m["id"], m["app_id"], m["app_slug"] = in.ID, a.ID, a.Slug
	acct := Identity{Login: in.Account, ID: int64(len(in.Account)) + 100, Type: "User"}
	m["account"] = ap.f.Repos.user(acct)
	m["target_id"], m["target_type"] = acct.ID, "User"
	m["single_file_name"], m["suspended_by"], m["suspended_at"] = nil, nil, nil
	m["repository_selection"] = "selected"
	m["access_tokens_url"] = ap.f.opts.api(fmt.Sprintf("/app/installations/%d/access_tokens", in.ID))
	m["repositories_url"] = ap.f.opts.api("/installation/repositories")
	m["html_url"] = ap.f.opts.web(fmt.Sprintf("/settings/installations/%d", in.ID))
	m["events"] = []any{"pull_request", "push"}
	perms := map[string]any{}
	for k, v := range in.Permissions {
		perms[k] = v
	}
	m["permissions"] = perms
	now := ts(ap.f.opts.now())
	m["created_at"], m["updated_at"] = now, now
	return m
}

func (ap *Apps) installationsOf(appID int64) []*Installation {
	ap.f.mu.Lock()
	defer ap.f.mu.Unlock()
	var out []*Installation
	for _, in := range ap.f.insts {
		if in.App == appID {
			c := *in
			out = append(out, &c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func listInstallations(c *call) {
	out := []any{}
	for _, in := range paginate(c, c.f.Apps.installationsOf(c.app.ID)) {
		out = append(out, c.f.Apps.installation(c.app, in))
	}
	c.json(http.StatusOK, out)
}

func getRepoInstallation(c *call) {
	full := c.full()
	for _, in := range c.f.Apps.installationsOf(c.app.ID) {
		for _, r := range in.Repos {
			if strings.EqualFold(r, full) && c.f.Repos.repo(full) != nil {
				c.json(http.StatusOK, c.f.Apps.installation(c.app, in))
				return
			}
		}
	}
	c.error(http.StatusNotFound, "Not Found")
}

func createInstallationToken(c *call) {
	id, _ := strconv.ParseInt(c.params["installation_id"], 10, 64)
	var inst Installation
	if !found(c, func() *Installation {
		if in := c.f.insts[id]; in != nil && in.App == c.app.ID {
			return in
		}
		return nil
	}, func(in *Installation) {
		inst = *in
	}) {
		return
	}
	var req struct {
		Repositories []string          `json:"repositories"`
		Permissions  map[string]string `json:"permissions"`
	}
	if len(c.body) > 0 {
		json.Unmarshal(c.body, &req) //nolint:errcheck // validated against the description
	}
	repos := append([]string(nil), inst.Repos...)
	if len(req.Repositories) > 0 {
		repos = nil
		for _, name := range req.Repositories {
			for _, r := range inst.Repos {
				if _, n, _ := strings.Cut(r, "/"); strings.EqualFold(n, name) {
					repos = append(repos, r)
				}
			}
		}
	}
	perms := inst.Permissions
	if len(req.Permissions) > 0 {
		perms = req.Permissions
	}
	buf := make([]byte, 18)
	rand.Read(buf) //nolint:errcheck
	now := c.f.opts.now()
	t := Token{
		Value: "ghs_" + hex.EncodeToString(buf), Identity: botIdentity(c.app), Permissions: perms,
		Repos: repos, ExpiresAt: now.Add(c.app.TokenTTL), Installation: id,
	}
	if repos == nil {
		t.Repos = []string{}
	}
	c.f.Apps.AddToken(t)
	out := map[string]any{
		"token": t.Value, "expires_at": ts(t.ExpiresAt), "repository_selection": "selected",
	}
	pm := map[string]any{}
	for k, v := range perms {
		pm[k] = v
	}
	out["permissions"] = pm
	c.json(http.StatusCreated, out)
}

func listInstallationRepos(c *call) {
	if c.token.Installation == 0 {
		c.error(http.StatusForbidden, "This endpoint can only be accessed with an installation token")
		return
	}
	names := append([]string(nil), c.token.Repos...)
	sort.Strings(names)
	var known []*repoState
	for _, n := range names {
		if rs := c.f.Repos.repo(n); rs != nil {
			known = append(known, rs)
		}
	}
	repos := []any{}
	for _, rs := range paginate(c, known) {
		repos = append(repos, c.f.Repos.repository(rs))
	}
	c.json(http.StatusOK, map[string]any{"total_count": len(known), "repositories": repos, "repository_selection": "selected"})
}

// JWTs is how many App JWTs the fake has accepted.
func (ap *Apps) JWTs() int {
	ap.f.mu.Lock()
	defer ap.f.mu.Unlock()
	return ap.f.jwtSeen
}

// ExpireTokens makes every installation token of installation expire now
// (a token revoked or expired early: the next call answers 401).
func (ap *Apps) ExpireTokens(installation int64) {
	ap.f.mu.Lock()
	defer ap.f.mu.Unlock()
	now := ap.f.opts.now()
	for _, t := range ap.f.tokens {
		if t.Installation == installation {
			t.ExpiresAt = now
		}
	}
}
