package sim

// PlanetScale API: the subset planetscale.branch and planetscale.password
// use (database branches and their passwords).
//
// Assumptions about the real API, and where each was checked:
//
// P1. Base https://api.planetscale.com/v1. A service token authenticates
//     as "Authorization: <service token id>:<service token>" (no scheme).
//     Sources: PlanetScale API reference, "Authentication",
//     https://planetscale.com/docs/api/reference/getting-started-with-planetscale-api;
//     planetscale/planetscale-go client.go (the same header).
// P2. Errors are {"code","message"}; a missing or wrong token answers 401
//     {"code":"unauthorized"}; an unknown organization, database, branch or
//     password 404 {"code":"not_found"}. Text is the sim's.
// P3. Lists answer {"type":"list","current_page","next_page" (null on the
//     last page),"next_page_url","prev_page","prev_page_url","data":[...]},
//     paged by page (from 1) and per_page (default 25, at most 100). Source:
//     PlanetScale API reference, "Pagination"; planetscale-go
//     defaultListOptions (page, per_page).
// P4. POST /organizations/{org}/databases/{db}/branches {name,
//     parent_branch[, region, backup_id, seed_data]} answers 201 with the
//     branch {id, name, parent_branch, ready: false, production,
//     created_at, updated_at, ...}. The branch is created asynchronously:
//     it reports ready: true once it can be used. A taken name answers 422
//     (Rails-style "Name has already been taken"; status not checked); an
//     unknown parent 404. Sources: "Create a branch",
//     https://planetscale.com/docs/api/reference/create_branch.md;
//     planetscale-go branches.go (CreateDatabaseBranchRequest,
//     DatabaseBranch.Ready).
// P5. GET and DELETE /organizations/{org}/databases/{db}/branches/{name}
//     (the branch by name); DELETE answers 204. The sim makes a new branch
//     ready after two reads of it (observation-driven, so tests never
//     sleep). Source: planetscale-go branches.go (Get, Delete by name).
// P6. POST .../branches/{branch}/passwords {name, role[, ttl, replica]}
//     answers 201 with the password {id, name, role, username,
//     access_host_url, plain_text, database_branch, created_at, ...};
//     plain_text is answered only then, never by GET (the list and GET
//     .../passwords/{id} answer it null: it is a required, nullable field
//     of the Password schema of PlanetScale's OpenAPI description,
//     planetscale/terraform-provider-planetscale schemas/openapi.yaml, which
//     also requires every field the sim's branches and passwords carry). role is one of reader, writer,
//     readwriter, admin (default admin) and cannot be changed after
//     creation. A password for a branch that is not ready yet answers 422.
//     Sources: planetscale-go passwords.go (DatabaseBranchPassword,
//     DatabaseBranchPasswordRequest); "Password roles" ("Once a password is
//     created, its role cannot be changed"),
//     https://planetscale.com/docs/concepts/password-roles; the not-ready
//     refusal is the sim's stricter choice.
// P7. DELETE .../passwords/{id} answers 204. Source: planetscale-go
//     passwords.go (Delete by id).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PlanetScaleDatabase is a database with its branches.
type PlanetScaleDatabase struct {
	Organization string              `json:"organization"`
	Name         string              `json:"name"`
	Branches     []PlanetScaleBranch `json:"branches"`
	Origin       Origin              `json:"origin"`
}

// PlanetScaleBranch is a branch and its passwords (never their secrets).
type PlanetScaleBranch struct {
	ID        string                `json:"id"`
	Name      string                `json:"name"`
	Parent    string                `json:"parent_branch"`
	Ready     bool                  `json:"ready"`
	Passwords []PlanetScalePassword `json:"passwords"`
	Origin    Origin                `json:"origin"`
}

// PlanetScalePassword is a branch password; PlainText is kept for tests
// (the sim answers it only at creation).
type PlanetScalePassword struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	Username  string `json:"username"`
	PlainText string `json:"plain_text"`
	Origin    Origin `json:"origin"`
}

// planetscale is the PlanetScale provider: databases with their branches and passwords.
type planetscale struct {
	*core
	routes *api
	dbs    []*psDatabase
}

type psDatabase struct {
	org, name string
	origin    Origin
	branches  []*psBranch
}

type psBranch struct {
	PlanetScaleBranch
	reads     int
	created   time.Time
	passwords []*PlanetScalePassword
}

const psReadyAfterReads = 2

func psErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg})
}

func newPlanetScale(c *core) provider {
	pl := &planetscale{core: c}
	pl.routes = pl.newAPI()
	return pl
}

func (pl *planetscale) api() *api { return pl.routes }

func (pl *planetscale) reset() { pl.dbs = nil }

func (pl *planetscale) newAPI() *api {
	p := &api{name: ProviderPlanetScale, mux: http.NewServeMux(), token: func() string { return pl.tokens.PlanetScale }}
	p.authorized = func(h string) bool { return h == pl.tokens.PlanetScaleID+":"+pl.tokens.PlanetScale }
	p.fail = func(w http.ResponseWriter, status int, code, msg string) { psErr(w, status, code, msg) }
	p.deny = func(w http.ResponseWriter, missing bool) {
		psErr(w, http.StatusUnauthorized, "unauthorized", "You must be authenticated to access this resource")
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		psErr(w, http.StatusTooManyRequests, "rate_limited", "Too many requests")
	}
	const b = "/organizations/{org}/databases/{db}/branches"
	p.handle("GET "+b, pl.psListBranches)
	p.handle("POST "+b, pl.psCreateBranch)
	p.handle("GET "+b+"/{branch}", pl.psGetBranch)
	p.handle("DELETE "+b+"/{branch}", pl.psDeleteBranch)
	p.handle("GET "+b+"/{branch}/passwords", pl.psListPasswords)
	p.handle("POST "+b+"/{branch}/passwords", pl.psCreatePassword)
	p.handle("GET "+b+"/{branch}/passwords/{id}", pl.psGetPassword)
	p.handle("DELETE "+b+"/{branch}/passwords/{id}", pl.psDeletePassword)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
		psErr(w, http.StatusNotFound, "not_found", "Not Found")
	})
	p.env = func(url string) []string {
		return []string{"PLANETSCALE_API_URL=" + url, "PLANETSCALE_SERVICE_TOKEN_ID=" + pl.tokens.PlanetScaleID, "PLANETSCALE_SERVICE_TOKEN=" + pl.tokens.PlanetScale}
	}
	return p
}

// psDB finds a database, answering 404 itself. Callers hold pl.mu.
func (pl *planetscale) psDB(w http.ResponseWriter, r *http.Request) *psDatabase {
	for _, d := range pl.dbs {
		if d.org == r.PathValue("org") && d.name == r.PathValue("db") {
			return d
		}
	}
	psErr(w, http.StatusNotFound, "not_found", "Database not found")
	return nil
}

func (d *psDatabase) branch(name string) (int, *psBranch) {
	for i, b := range d.branches {
		if b.Name == name {
			return i, b
		}
	}
	return -1, nil
}

// psBranchOf finds the branch of the path. Callers hold pl.mu.
func (pl *planetscale) psBranchOf(w http.ResponseWriter, r *http.Request) (*psDatabase, *psBranch) {
	d := pl.psDB(w, r)
	if d == nil {
		return nil, nil
	}
	_, b := d.branch(r.PathValue("branch"))
	if b == nil {
		psErr(w, http.StatusNotFound, "not_found", "Branch not found")
		return nil, nil
	}
	return d, b
}

func (b *psBranch) view() map[string]any {
	ts := b.created.UTC().Format(time.RFC3339)
	state := "pending"
	if b.Ready {
		state = "ready"
	}
	var parent any = b.Parent
	if b.Parent == "" {
		parent = nil
	}
	// Every field the Branch schema of PlanetScale's description requires,
	// with the values of a MySQL branch on one cluster in one region.
	return map[string]any{
		"id": b.ID, "type": "Branch", "name": b.Name, "parent_branch": parent, "ready": b.Ready, "production": b.Parent == "",
		"created_at": ts, "updated_at": ts, "deleted_at": nil, "restore_checklist_completed_at": nil, "schema_last_updated_at": ts,
		"kind": "mysql", "state": state, "mysql_address": psMySQLAddress, "mysql_edge_address": psEdgeAddress,
		"direct_vtgate": false, "vtgate_size": "", "vtgate_name": nil, "vtgate_count": 1, "vtgate_autoscaling": false,
		"vtgate_max_count": nil, "vtgate_target_cpu_utilization": nil, "cluster_name": "PS_DEV", "cluster_iops": nil,
		"schema_ready": b.Ready, "metal": false, "safe_migrations": false, "deletion_protected": false, "sharded": false,
		"shard_count": 1, "keyspace_count": 1, "stale_schema": false, "actor": psActor, "restored_from_branch": nil,
		"private_edge_connectivity": false, "has_replicas": false, "has_read_only_replicas": false,
		"html_url": "https://app.planetscale.com/branches/" + b.ID, "url": "https://api.planetscale.com/v1/branches/" + b.ID,
		"region": psRegion, "vtgate_options": map[string]any{},
	}
}

const (
	psMySQLAddress = "aws.connect.psdb.cloud"
	psEdgeAddress  = "aws.connect.psdb.cloud"
)

// psActor and psRegion are the service token's actor and the database's
// region, as PlanetScale answers them on branches and passwords.
var (
	psActor  = map[string]any{"id": "svc-token", "display_name": "sponson sim", "avatar_url": "https://app.planetscale.com/avatar.png"}
	psRegion = map[string]any{"id": "us-east", "provider": "AWS", "enabled": true, "public_ip_addresses": []any{}, "display_name": "AWS us-east-1",
		"location": "Ashburn, Virginia", "slug": "us-east", "current_default": true, "mysql_supported": true, "postgresql_supported": true}
)

func psPasswordView(d *psDatabase, b *psBranch, p *PlanetScalePassword, secret bool) map[string]any {
	ts := b.created.UTC().Format(time.RFC3339)
	v := map[string]any{
		"id": p.ID, "type": "Password", "name": p.Name, "role": p.Role, "username": p.Username,
		"access_host_url": psMySQLAddress, "access_host_regional_url": psMySQLAddress, "access_host_regional_urls": []any{psMySQLAddress},
		"database_branch": map[string]any{"name": b.Name, "id": b.ID, "production": b.Parent == "", "mysql_edge_address": psEdgeAddress,
			"private_edge_connectivity": false},
		"renewable": false, "replica": false, "ttl_seconds": nil, "expires_at": nil, "expired": false, "cidrs": nil,
		"created_at": ts, "deleted_at": nil, "last_used_at": nil, "direct_vtgate": false, "direct_vtgate_addresses": []any{},
		"actor": psActor, "region": psRegion, "plain_text": nil,
	}
	if secret {
		v["plain_text"] = p.PlainText
	}
	return v
}

// psPage answers one page of items (P3).
func psPage(w http.ResponseWriter, r *http.Request, items []any) {
	q := r.URL.Query()
	page, per := 1, 25
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			psErr(w, http.StatusUnprocessableEntity, "invalid_params", "page must be 1 or more")
			return
		}
		page = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			psErr(w, http.StatusUnprocessableEntity, "invalid_params", "per_page must be between 1 and 100")
			return
		}
		per = n
	}
	if ps := pageSizeOf(r); ps > 0 && ps < per {
		per = ps
	}
	start := (page - 1) * per
	data := []any{}
	if start < len(items) {
		data = items[start:min(len(items), start+per)]
	}
	out := map[string]any{"type": "list", "current_page": page, "per_page": per, "next_page": nil, "next_page_url": nil, "prev_page": nil,
		"prev_page_url": nil, "total_count": len(items), "total_pages": (len(items) + per - 1) / per, "data": data}
	if start+per < len(items) {
		out["next_page"] = page + 1
		nq := url.Values{"page": {strconv.Itoa(page + 1)}, "per_page": {strconv.Itoa(per)}}
		out["next_page_url"] = r.URL.Path + "?" + nq.Encode()
	}
	if page > 1 {
		out["prev_page"] = page - 1
	}
	writeJSON(w, http.StatusOK, out)
}

// observe advances a new branch towards ready (P5). Callers hold pl.mu.
func (b *psBranch) observe() {
	if b.Ready {
		return
	}
	b.reads++
	if b.reads >= psReadyAfterReads {
		b.Ready = true
	}
}

func (pl *planetscale) psListBranches(w http.ResponseWriter, r *http.Request) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d := pl.psDB(w, r)
	if d == nil {
		return
	}
	items := []any{}
	for _, b := range d.branches {
		items = append(items, b.view())
	}
	psPage(w, r, items)
}

func (pl *planetscale) psGetBranch(w http.ResponseWriter, r *http.Request) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if _, b := pl.psBranchOf(w, r); b != nil {
		b.observe()
		writeJSON(w, http.StatusOK, b.view())
	}
}

func psNameValid(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '/' || r == '.') {
			return false
		}
	}
	return true
}

func (pl *planetscale) psCreateBranch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name   string `json:"name"`
		Parent string `json:"parent_branch"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil {
		psErr(w, http.StatusBadRequest, "invalid_body", "the body must be a JSON object")
		return
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d := pl.psDB(w, r)
	if d == nil {
		return
	}
	if !psNameValid(body.Name) {
		psErr(w, http.StatusUnprocessableEntity, "invalid_params", "Name must be lowercase letters, digits and dashes")
		return
	}
	if _, b := d.branch(body.Name); b != nil {
		psErr(w, http.StatusUnprocessableEntity, "invalid_params", "Name has already been taken")
		return
	}
	if body.Parent == "" {
		psErr(w, http.StatusUnprocessableEntity, "invalid_params", "parent_branch is required")
		return
	}
	if _, pb := d.branch(body.Parent); pb == nil {
		psErr(w, http.StatusNotFound, "not_found", "Parent branch not found")
		return
	}
	b := &psBranch{PlanetScaleBranch: PlanetScaleBranch{ID: pl.randString(12, lowerDigits), Name: body.Name, Parent: body.Parent, Origin: OriginAPI}, created: pl.now()}
	d.branches = append(d.branches, b)
	writeJSON(w, http.StatusCreated, b.view())
}

func (pl *planetscale) psDeleteBranch(w http.ResponseWriter, r *http.Request) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d, b := pl.psBranchOf(w, r)
	if b == nil {
		return
	}
	if b.Parent == "" {
		psErr(w, http.StatusUnprocessableEntity, "invalid_params", "A production branch cannot be deleted")
		return
	}
	i, _ := d.branch(b.Name)
	d.branches = append(d.branches[:i], d.branches[i+1:]...)
	w.WriteHeader(http.StatusNoContent)
}

func (pl *planetscale) psListPasswords(w http.ResponseWriter, r *http.Request) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d, b := pl.psBranchOf(w, r)
	if b == nil {
		return
	}
	items := []any{}
	for _, p := range b.passwords {
		items = append(items, psPasswordView(d, b, p, false))
	}
	psPage(w, r, items)
}

func (pl *planetscale) psGetPassword(w http.ResponseWriter, r *http.Request) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d, b := pl.psBranchOf(w, r)
	if b == nil {
		return
	}
	for _, p := range b.passwords {
		if p.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, psPasswordView(d, b, p, false))
			return
		}
	}
	psErr(w, http.StatusNotFound, "not_found", "Password not found")
}

var psRoles = map[string]bool{"reader": true, "writer": true, "readwriter": true, "admin": true}

func (pl *planetscale) psCreatePassword(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string `json:"name"`
		Role string `json:"role"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil {
		psErr(w, http.StatusBadRequest, "invalid_body", "the body must be a JSON object")
		return
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d, b := pl.psBranchOf(w, r)
	if b == nil {
		return
	}
	if body.Role == "" {
		body.Role = "admin"
	}
	switch {
	case strings.TrimSpace(body.Name) == "":
		psErr(w, http.StatusUnprocessableEntity, "invalid_params", "Name can't be blank")
		return
	case !psRoles[body.Role]:
		psErr(w, http.StatusUnprocessableEntity, "invalid_params", "role must be one of reader, writer, readwriter, admin")
		return
	case !b.Ready:
		psErr(w, http.StatusUnprocessableEntity, "branch_not_ready", "The branch is not ready yet")
		return
	}
	p := &PlanetScalePassword{ID: pl.randString(12, lowerDigits), Name: body.Name, Role: body.Role,
		Username: pl.randString(20, lowerDigits), PlainText: "pscale_pw_" + pl.randString(32, alnum), Origin: OriginAPI}
	b.passwords = append(b.passwords, p)
	writeJSON(w, http.StatusCreated, psPasswordView(d, b, p, true))
}

func (pl *planetscale) psDeletePassword(w http.ResponseWriter, r *http.Request) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	_, b := pl.psBranchOf(w, r)
	if b == nil {
		return
	}
	for i, p := range b.passwords {
		if p.ID == r.PathValue("id") {
			b.passwords = append(b.passwords[:i], b.passwords[i+1:]...)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	psErr(w, http.StatusNotFound, "not_found", "Password not found")
}

// SeedPlanetScaleDatabase adds a database with its ready production branch
// main (and any other branches named), marked seeded.
func (k Console) SeedPlanetScaleDatabase(org, name string, branches ...string) {
	c := k.c
	lookup[*planetscale](c).seedPlanetScaleDatabase(org, name, branches...)
}

func (pl *planetscale) seedPlanetScaleDatabase(org, name string, branches ...string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	d := &psDatabase{org: org, name: name, origin: OriginSeed}
	d.branches = append(d.branches, &psBranch{PlanetScaleBranch: PlanetScaleBranch{ID: pl.randString(12, lowerDigits), Name: "main", Ready: true, Origin: OriginSeed}, created: pl.now()})
	for _, b := range branches {
		d.branches = append(d.branches, &psBranch{PlanetScaleBranch: PlanetScaleBranch{ID: pl.randString(12, lowerDigits), Name: b, Parent: "main", Ready: true, Origin: OriginSeed}, created: pl.now()})
	}
	pl.dbs = append(pl.dbs, d)
}

func (pl *planetscale) planetscaleSnapshot() []PlanetScaleDatabase {
	out := []PlanetScaleDatabase{}
	for _, d := range pl.dbs {
		sd := PlanetScaleDatabase{Organization: d.org, Name: d.name, Origin: d.origin, Branches: []PlanetScaleBranch{}}
		for _, b := range d.branches {
			sb := b.PlanetScaleBranch
			sb.Passwords = []PlanetScalePassword{}
			for _, p := range b.passwords {
				sb.Passwords = append(sb.Passwords, *p)
			}
			sd.Branches = append(sd.Branches, sb)
		}
		out = append(out, sd)
	}
	return out
}

func (pl *planetscale) drift(d Drift) (string, error) {
	var db *psDatabase
	for _, x := range pl.dbs {
		if x.org+"/"+x.name == d.Project {
			db = x
		}
	}
	if db == nil {
		return "", fmt.Errorf("sim: drift: no planetscale database %q (org/database)", d.Project)
	}
	i, b := db.branch(d.ID)
	if b == nil {
		return "", fmt.Errorf("sim: drift: no planetscale branch %q in %s", d.ID, d.Project)
	}
	switch d.Action {
	case DriftDelete:
		db.branches = slices.Delete(db.branches, i, i+1)
		return b.ID, nil
	case DriftRecreate:
		n := &psBranch{PlanetScaleBranch: PlanetScaleBranch{ID: pl.randString(12, lowerDigits), Name: b.Name, Parent: b.Parent, Ready: true, Origin: OriginConsole}, created: pl.now()}
		db.branches[i] = n
		return n.ID, nil
	}
	return "", badAction(d)
}

// snapshot adds the databases with their branches and passwords.
func (pl *planetscale) snapshot(s *Snapshot, now time.Time) {
	s.PlanetScale = pl.planetscaleSnapshot()
}
