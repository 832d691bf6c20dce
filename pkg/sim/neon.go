package sim

// Neon API v2: the subset neon.branch uses (branches, connection URI,
// operations).
//
// Assumptions about the real API, and where each was checked:
//
// N1. Base https://console.neon.tech/api/v2, "Authorization: Bearer
//     $NEON_API_KEY". Errors are {"code","message"} ("message" required;
//     the sim sends "code":"" and a request_id). A missing or wrong key is
//     401 (status documented generally; body text is the sim's). Sources:
//     "Retrieve connection URI" (standard Neon API error response),
//     https://neon.com/docs/reference/api/projects/get-connection-uri.
// N2. POST /projects/{project_id}/branches takes an optional body
//     {"branch":{"name","parent_id"}, "endpoints":[{"type":"read_write"}]};
//     without a parent the default branch is the parent; without endpoints
//     no compute is made. It answers 201 with branch (current_state "init",
//     pending_state "ready"), endpoints, operations (create_branch
//     "running", start_compute "scheduling"), roles, databases and, when an
//     endpoint was made, connection_uris [{connection_uri,
//     connection_parameters{database, password, role, host, pooler_host}}].
//     Sources: "Create branch",
//     https://neon.com/docs/reference/api/branches/create-project-branch.md;
//     neondatabase/website content/docs/guides/branching-neon-api.md
//     (response example); generated clients' CreatedBranch =
//     Branch+ConnectionURIsOptional+Databases+Endpoints+Operations+Roles.
// N3. A branch name already in use answers 409 "branch already exists;
//     branch_name:\"...\"". Sources: neondatabase/neon-pkgs PR #307 (409
//     "branch already exists"), neondatabase/create-branch-action issue #67
//     (the message text).
// N4. Operations run in the background with statuses scheduling, running,
//     finished, failed, cancelling, cancelled, skipped. "Requests that
//     conflict with a running operation return 423 Locked"; retry with
//     backoff. GET /projects/{id}/operations/{operation_id} answers
//     {"operation":{...}}. Source: "Operations",
//     https://neon.com/docs/reference/api/operations.md. Which requests
//     conflict is not listed: the sim answers 423 to a delete of a branch
//     with unfinished operations and to a create whose parent has them (and,
//     with Options.NeonLockProject, to any branch write in the project). The
//     423 body text is the sim's.
// N5. GET /projects/{id}/branches answers {"branches":[...]}, sorted by
//     updated_at desc by default; query search (partial name or id),
//     sort_by, sort_order, cursor, limit (1..10000); the next page is
//     cursor=pagination.next. Source: "List branches",
//     https://neon.com/docs/reference/api/branches/list-project-branches.md
//     and https://api-docs.neon.tech/reference/listprojectbranches. The sim
//     matches search as a substring of name or id (so an adapter must
//     compare names exactly itself), and sends pagination.next only when
//     more remain (docs silent on the last page).
// N6. GET /projects/{id}/branches/{branch_id} answers {"branch":{...}}; ids
//     only (names are not resolved). 404 for an unknown id (body text is
//     the sim's).
// N7. DELETE /projects/{id}/branches/{branch_id} answers 200 {"branch",
//     "operations"} and 204 "if the branch doesn't exist or has already
//     been deleted". Sources: branching guide (200 body); the
//     deleteProjectBranch responses as quoted in public client tests (204).
//     Deleting the default branch or a branch with children is refused
//     with 400 (sim's choice; not checked).
// N8. GET /projects/{id}/connection_uri?branch_id=&database_name=&role_name=
//     [&pooled=true] answers {"uri":"postgresql://role:password@host/db?
//     sslmode=require&channel_binding=require"}; database_name and
//     role_name are required; branch_id defaults to the default branch;
//     pooled adds "-pooler" to the endpoint id. Sources: V1 page above;
//     "find database connection string url" FAQ (URL shape). The sim does
//     not answer 423 here (docs silent); a branch with no read_write
//     endpoint is 404.
// N9. Child branches keep the parent's roles and their passwords; the sim
//     has one role and one database per project (neondb_owner, neondb).
// N10. 429 on rate limit (Neon documents per-account limits); body and
//     headers are the sim's: {"code":"","message":"rate limit exceeded"}
//     with Retry-After.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// NeonProject is a Neon project with its branches and operations.
type NeonProject struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	RegionID        string          `json:"region_id"`
	DefaultBranchID string          `json:"default_branch_id"`
	Database        string          `json:"database"`
	Role            string          `json:"role"`
	Password        string          `json:"password"` // the role's password: sensitive
	Origin          Origin          `json:"origin"`
	Branches        []NeonBranch    `json:"branches"`
	Operations      []NeonOperation `json:"operations"`
}

// NeonBranch is a branch; EndpointID and Host are empty without a compute.
type NeonBranch struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	ParentID     string `json:"parent_id,omitempty"`
	Default      bool   `json:"default"`
	CurrentState string `json:"current_state"` // "init" while operations run, then "ready"
	EndpointID   string `json:"endpoint_id,omitempty"`
	Host         string `json:"host,omitempty"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
	Origin       Origin `json:"origin"`
}

// NeonOperation is a background operation.
type NeonOperation struct {
	ID         string `json:"id"`
	BranchID   string `json:"branch_id"`
	EndpointID string `json:"endpoint_id,omitempty"`
	Action     string `json:"action"`
	Status     string `json:"status"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
}

type neonState struct {
	projects []*neonProject
	opsAfter int           // requests; 0 = not by count
	opsDur   time.Duration // 0 = not by time
	set      bool
}

type neonProject struct {
	NeonProject
	ticks    int
	branches []*neonBranch
	ops      []*neonOp
}

type neonBranch struct {
	NeonBranch
	updated time.Time
}

type neonOp struct {
	NeonOperation
	startTick int
	start     time.Time
}

const neonTime = "2006-01-02T15:04:05Z"

func (c *Cloud) neonProvider() *api {
	p := &api{name: ProviderNeon, mux: http.NewServeMux(), token: func() string { return c.tokens.Neon }}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) { c.neonErr(w, status, msg) }
	p.deny = func(w http.ResponseWriter, missing bool) {
		msg := "authentication required"
		if !missing {
			msg = "invalid API key"
		}
		c.neonErr(w, http.StatusUnauthorized, msg)
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		c.neonErr(w, http.StatusTooManyRequests, "rate limit exceeded")
	}
	p.mux.HandleFunc("POST /projects/{project_id}/branches", c.neonCreateBranch)
	p.mux.HandleFunc("GET /projects/{project_id}/branches", c.neonListBranches)
	p.mux.HandleFunc("GET /projects/{project_id}/branches/{branch_id}", c.neonGetBranch)
	p.mux.HandleFunc("DELETE /projects/{project_id}/branches/{branch_id}", c.neonDeleteBranch)
	p.mux.HandleFunc("GET /projects/{project_id}/connection_uri", c.neonConnectionURI)
	p.mux.HandleFunc("GET /projects/{project_id}/operations/{operation_id}", c.neonGetOperation)
	p.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.neonErr(w, http.StatusNotFound, "not found")
	})
	return p
}

func (c *Cloud) neonErr(w http.ResponseWriter, status int, msg string) {
	c.mu.Lock()
	id := c.uuid()
	c.mu.Unlock()
	writeJSON(w, status, map[string]any{"code": "", "message": msg, "request_id": id})
}

// neonErrLocked is neonErr for callers holding c.mu.
func (c *Cloud) neonErrLocked(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"code": "", "message": msg, "request_id": c.uuid()})
}

// SetNeonOps changes when Neon operations finish: after that many further
// requests to the project, or after that much clock time (zero turns a
// trigger off; both zero restores the default of 2 requests).
func (c *Cloud) SetNeonOps(afterRequests int, after time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.neon.opsAfter, c.neon.opsDur, c.neon.set = afterRequests, after, true
}

func (c *Cloud) neonOpsRule() (int, time.Duration) {
	n, d := c.opts.NeonOpsAfterRequests, c.opts.NeonOpsAfter
	if c.neon.set {
		n, d = c.neon.opsAfter, c.neon.opsDur
	}
	if n <= 0 && d <= 0 {
		n = 2
	}
	return n, d
}

// neonProjectFor finds the project, counts the request and settles its
// operations. Callers hold c.mu.
func (c *Cloud) neonProjectFor(w http.ResponseWriter, id string) *neonProject {
	for _, p := range c.neon.projects {
		if p.ID == id {
			p.ticks++
			c.neonSettle(p)
			return p
		}
	}
	c.neonErrLocked(w, http.StatusNotFound, "project not found")
	return nil
}

func (c *Cloud) neonSettle(p *neonProject) {
	n, d := c.neonOpsRule()
	now := c.now()
	for _, op := range p.ops {
		if op.Status == "finished" {
			continue
		}
		if c.opts.NeonOpsImmediate || (n > 0 && p.ticks-op.startTick >= n) || (d > 0 && now.Sub(op.start) >= d) {
			op.Status = "finished"
			op.UpdatedAt = now.UTC().Format(neonTime)
		} else if op.Status == "scheduling" {
			op.Status = "running"
		}
	}
	for _, b := range p.branches {
		if b.CurrentState == "init" && !p.busy(b.ID) {
			b.CurrentState = "ready"
			b.UpdatedAt = now.UTC().Format(neonTime)
		}
	}
}

func (p *neonProject) busy(branchID string) bool {
	for _, op := range p.ops {
		if op.BranchID == branchID && op.Status != "finished" {
			return true
		}
	}
	return false
}

func (p *neonProject) anyBusy() bool {
	for _, op := range p.ops {
		if op.Status != "finished" {
			return true
		}
	}
	return false
}

func (p *neonProject) branch(id string) *neonBranch {
	for _, b := range p.branches {
		if b.ID == id {
			return b
		}
	}
	return nil
}

func (p *neonProject) regionHost() string {
	return strings.TrimPrefix(p.RegionID, "aws-") + ".aws.neon.tech"
}

var neonWords = [][]string{
	{"dawn", "wispy", "small", "cool", "bitter", "floral", "shy", "flat", "autumn", "quiet", "young", "silent"},
	{"scene", "dew", "bush", "darkness", "sound", "king", "meadow", "disk", "river", "frost", "cloud", "leaf"},
}

func (c *Cloud) neonName(prefix string) string {
	return prefix + "-" + neonWords[0][c.rng.IntN(len(neonWords[0]))] + "-" + neonWords[1][c.rng.IntN(len(neonWords[1]))] + "-" + c.randString(8, lowerDigits)
}

func (c *Cloud) neonNow() (time.Time, string) {
	now := c.now()
	return now, now.UTC().Format(neonTime)
}

func branchView(p *neonProject, b *neonBranch) map[string]any {
	v := map[string]any{
		"id": b.ID, "project_id": p.ID, "name": b.Name, "current_state": b.CurrentState,
		"default": b.Default, "primary": b.Default, "protected": false,
		"created_at": b.CreatedAt, "updated_at": b.UpdatedAt, "state_changed_at": b.UpdatedAt,
		"logical_size": 30, "cpu_used_sec": 0, "compute_time_seconds": 0, "active_time_seconds": 0,
		"written_data_bytes": 0, "data_transfer_bytes": 0, "creation_source": "console",
	}
	if b.ParentID != "" {
		v["parent_id"] = b.ParentID
		v["parent_lsn"] = "0/1F78F48"
	}
	if b.CurrentState == "init" {
		v["pending_state"] = "ready"
	}
	return v
}

func endpointView(p *neonProject, b *neonBranch) map[string]any {
	state := "active"
	v := map[string]any{
		"host": b.Host, "id": b.EndpointID, "project_id": p.ID, "branch_id": b.ID,
		"autoscaling_limit_min_cu": 0.25, "autoscaling_limit_max_cu": 0.25, "region_id": p.RegionID,
		"type": "read_write", "settings": map[string]any{}, "pooler_enabled": false,
		"pooler_mode": "transaction", "disabled": false, "passwordless_access": true,
		"creation_source": "console", "created_at": b.CreatedAt, "updated_at": b.UpdatedAt,
		"proxy_host": p.regionHost(), "suspend_timeout_seconds": 0, "provisioner": "k8s-neonvm",
	}
	if b.CurrentState == "init" {
		state = "init"
		v["pending_state"] = "active"
	}
	v["current_state"] = state
	return v
}

func opView(p *neonProject, op *neonOp) map[string]any {
	v := map[string]any{
		"id": op.ID, "project_id": p.ID, "branch_id": op.BranchID, "action": op.Action,
		"status": op.Status, "failures_count": 0, "created_at": op.CreatedAt, "updated_at": op.UpdatedAt,
		"total_duration_ms": 0,
	}
	if op.EndpointID != "" {
		v["endpoint_id"] = op.EndpointID
	}
	return v
}

func (c *Cloud) neonURI(p *neonProject, b *neonBranch, pooled bool) string {
	host := b.Host
	if pooled {
		host = b.EndpointID + "-pooler." + p.regionHost()
	}
	return "postgresql://" + p.Role + ":" + p.Password + "@" + host + "/" + p.Database + "?sslmode=require&channel_binding=require"
}

func (c *Cloud) neonAddOp(p *neonProject, branchID, endpointID, action, status string) *neonOp {
	now, ts := c.neonNow()
	op := &neonOp{
		NeonOperation: NeonOperation{ID: c.uuid(), BranchID: branchID, EndpointID: endpointID, Action: action, Status: status, CreatedAt: ts, UpdatedAt: ts},
		startTick:     p.ticks, start: now,
	}
	p.ops = append(p.ops, op)
	return op
}

// neonNewBranch makes a branch (and, with endpoint, its compute). Callers hold c.mu.
func (c *Cloud) neonNewBranch(p *neonProject, name, parentID string, endpoint bool, origin Origin) *neonBranch {
	now, ts := c.neonNow()
	b := &neonBranch{NeonBranch: NeonBranch{ID: c.neonName("br"), Name: name, ParentID: parentID, CurrentState: "ready", CreatedAt: ts, UpdatedAt: ts, Origin: origin}, updated: now}
	if b.Name == "" {
		b.Name = b.ID
	}
	if endpoint {
		b.EndpointID = c.neonName("ep")
		b.Host = b.EndpointID + "." + p.regionHost()
	}
	p.branches = append(p.branches, b)
	return b
}

type neonCreateBody struct {
	Branch *struct {
		Name     *string `json:"name"`
		ParentID *string `json:"parent_id"`
	} `json:"branch"`
	Endpoints []struct {
		Type string `json:"type"`
	} `json:"endpoints"`
}

func (c *Cloud) neonCreateBranch(w http.ResponseWriter, r *http.Request) {
	var in neonCreateBody
	if body := readBody(r); len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			c.neonErr(w, http.StatusBadRequest, "invalid request body: "+err.Error())
			return
		}
	}
	rw := 0
	for _, e := range in.Endpoints {
		switch e.Type {
		case "read_write":
			rw++
		case "read_only":
		default:
			c.neonErr(w, http.StatusBadRequest, fmt.Sprintf("invalid endpoint type %q", e.Type))
			return
		}
	}
	if rw > 1 {
		c.neonErr(w, http.StatusBadRequest, "a branch can have only one read_write endpoint")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.neonProjectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	name, parent := "", p.DefaultBranchID
	if in.Branch != nil {
		if in.Branch.Name != nil {
			name = *in.Branch.Name
		}
		if in.Branch.ParentID != nil && *in.Branch.ParentID != "" {
			parent = *in.Branch.ParentID
		}
	}
	pb := p.branch(parent)
	if pb == nil {
		c.neonErrLocked(w, http.StatusNotFound, "parent branch not found")
		return
	}
	if c.opts.NeonLockProject && p.anyBusy() || p.busy(parent) {
		c.neonLocked(w, p, parent)
		return
	}
	for _, b := range p.branches {
		if name != "" && b.Name == name {
			c.neonErrLocked(w, http.StatusConflict, fmt.Sprintf("branch already exists; branch_name:%q", name))
			return
		}
	}
	b := c.neonNewBranch(p, name, parent, rw > 0, OriginAPI)
	b.CurrentState = "init"
	ops := []any{opView(p, c.neonAddOp(p, b.ID, "", "create_branch", "running"))}
	if b.EndpointID != "" {
		ops = append(ops, opView(p, c.neonAddOp(p, b.ID, b.EndpointID, "start_compute", "scheduling")))
	}
	if c.opts.NeonOpsImmediate {
		c.neonSettle(p)
		ops = ops[:0]
		for _, op := range p.ops {
			if op.BranchID == b.ID {
				ops = append(ops, opView(p, op))
			}
		}
	}
	_, ts := c.neonNow()
	out := map[string]any{
		"branch":     branchView(p, b),
		"endpoints":  []any{},
		"operations": ops,
		"roles":      []any{map[string]any{"branch_id": b.ID, "name": p.Role, "protected": false, "created_at": ts, "updated_at": ts}},
		"databases":  []any{map[string]any{"id": c.rng.IntN(1 << 30), "branch_id": b.ID, "name": p.Database, "owner_name": p.Role, "created_at": ts, "updated_at": ts}},
	}
	if b.EndpointID != "" {
		out["endpoints"] = []any{endpointView(p, b)}
		out["connection_uris"] = []any{map[string]any{
			"connection_uri": c.neonURI(p, b, false),
			"connection_parameters": map[string]any{
				"database": p.Database, "password": p.Password, "role": p.Role,
				"host": b.Host, "pooler_host": b.EndpointID + "-pooler." + p.regionHost(),
			},
		}}
	}
	writeJSON(w, http.StatusCreated, out)
}

func (c *Cloud) neonLocked(w http.ResponseWriter, p *neonProject, branchID string) {
	var actions []string
	for _, op := range p.ops {
		if op.Status != "finished" && (branchID == "" || op.BranchID == branchID || c.opts.NeonLockProject) {
			actions = append(actions, op.Action)
		}
	}
	c.neonErrLocked(w, http.StatusLocked, "project already has running conflicting operations, scope: project, conflicting action: "+strings.Join(actions, ","))
}

func (c *Cloud) neonListBranches(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 0
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			c.neonErr(w, http.StatusBadRequest, "limit must be an integer from 1 to 10000")
			return
		}
		limit = n
	}
	if ps := pageSizeOf(r); ps > 0 && (limit == 0 || ps < limit) {
		limit = ps
	}
	offset := 0
	if s := q.Get("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "o:"))
		if err != nil || err2 != nil || n < 0 {
			c.neonErr(w, http.StatusBadRequest, "invalid cursor")
			return
		}
		offset = n
	}
	sortBy, order := q.Get("sort_by"), q.Get("sort_order")
	if sortBy == "" {
		sortBy = "updated_at"
	}
	if order == "" {
		order = "desc"
	}
	if !slices.Contains([]string{"updated_at", "created_at", "name"}, sortBy) || (order != "asc" && order != "desc") {
		c.neonErr(w, http.StatusBadRequest, "invalid sort_by or sort_order")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.neonProjectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	search := q.Get("search")
	var bs []*neonBranch
	for _, b := range p.branches {
		if search == "" || strings.Contains(b.Name, search) || strings.Contains(b.ID, search) {
			bs = append(bs, b)
		}
	}
	key := func(b *neonBranch) string {
		switch sortBy {
		case "name":
			return b.Name
		case "created_at":
			return b.CreatedAt
		}
		return b.updated.UTC().Format(time.RFC3339Nano)
	}
	sort.SliceStable(bs, func(i, j int) bool {
		ki, kj := key(bs[i]), key(bs[j])
		if ki == kj {
			ki, kj = bs[i].ID, bs[j].ID
		}
		if order == "asc" {
			return ki < kj
		}
		return ki > kj
	})
	if offset > len(bs) {
		offset = len(bs)
	}
	bs = bs[offset:]
	more := limit > 0 && len(bs) > limit
	if more {
		bs = bs[:limit]
	}
	views := []any{}
	for _, b := range bs {
		views = append(views, branchView(p, b))
	}
	out := map[string]any{"branches": views, "annotations": map[string]any{}}
	if limit > 0 || q.Get("cursor") != "" {
		pag := map[string]any{"sort_by": sortBy, "sort_order": order}
		if more {
			pag["next"] = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(offset+limit)))
		}
		out["pagination"] = pag
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Cloud) neonGetBranch(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.neonProjectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	b := p.branch(r.PathValue("branch_id"))
	if b == nil {
		c.neonErrLocked(w, http.StatusNotFound, "branch not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"branch": branchView(p, b)})
}

func (c *Cloud) neonDeleteBranch(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.neonProjectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	b := p.branch(r.PathValue("branch_id"))
	if b == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if b.Default {
		c.neonErrLocked(w, http.StatusBadRequest, "cannot delete the default branch")
		return
	}
	for _, x := range p.branches {
		if x.ParentID == b.ID {
			c.neonErrLocked(w, http.StatusBadRequest, "cannot delete a branch that has child branches")
			return
		}
	}
	if (c.opts.NeonLockProject && p.anyBusy()) || p.busy(b.ID) {
		c.neonLocked(w, p, b.ID)
		return
	}
	p.branches = slices.DeleteFunc(p.branches, func(x *neonBranch) bool { return x == b })
	var ops []any
	if b.EndpointID != "" {
		ops = append(ops, opView(p, c.neonAddOp(p, b.ID, b.EndpointID, "suspend_compute", "running")))
	}
	ops = append(ops, opView(p, c.neonAddOp(p, b.ID, "", "delete_timeline", "scheduling")))
	writeJSON(w, http.StatusOK, map[string]any{"branch": branchView(p, b), "operations": ops})
}

func (c *Cloud) neonConnectionURI(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for _, k := range []string{"database_name", "role_name"} {
		if q.Get(k) == "" {
			c.neonErr(w, http.StatusBadRequest, "missing required query parameter "+k)
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.neonProjectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	id := q.Get("branch_id")
	if id == "" {
		id = p.DefaultBranchID
	}
	b := p.branch(id)
	if b == nil {
		c.neonErrLocked(w, http.StatusNotFound, "branch not found")
		return
	}
	if q.Get("database_name") != p.Database {
		c.neonErrLocked(w, http.StatusNotFound, "database not found")
		return
	}
	if q.Get("role_name") != p.Role {
		c.neonErrLocked(w, http.StatusNotFound, "role not found")
		return
	}
	if b.EndpointID == "" {
		c.neonErrLocked(w, http.StatusNotFound, "read_write endpoint not found for the branch")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"uri": c.neonURI(p, b, q.Get("pooled") == "true")})
}

func (c *Cloud) neonGetOperation(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.neonProjectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	for _, op := range p.ops {
		if op.ID == r.PathValue("operation_id") {
			writeJSON(w, http.StatusOK, map[string]any{"operation": opView(p, op)})
			return
		}
	}
	c.neonErrLocked(w, http.StatusNotFound, "operation not found")
}

// SeedNeonProject adds a project with its default branch "main" (with a
// read_write compute), marked seeded, and returns it with the generated
// fields filled in (ID, DefaultBranchID, Password, ...). Branches given are
// seeded too, as children of main unless they name a parent.
func (c *Cloud) SeedNeonProject(p NeonProject) NeonProject {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.ID == "" {
		p.ID = neonWords[0][c.rng.IntN(len(neonWords[0]))] + "-" + neonWords[1][c.rng.IntN(len(neonWords[1]))] + "-" + c.randString(8, lowerDigits)
	}
	if p.Name == "" {
		p.Name = p.ID
	}
	if p.RegionID == "" {
		p.RegionID = "aws-us-east-2"
	}
	if p.Database == "" {
		p.Database = "neondb"
	}
	if p.Role == "" {
		p.Role = "neondb_owner"
	}
	if p.Password == "" {
		p.Password = "npg_" + c.randString(12, alnum)
	}
	np := &neonProject{NeonProject: NeonProject{ID: p.ID, Name: p.Name, RegionID: p.RegionID, Database: p.Database, Role: p.Role, Password: p.Password, Origin: OriginSeed}}
	c.neon.projects = append(c.neon.projects, np)
	main := c.neonNewBranch(np, "main", "", true, OriginSeed)
	main.Default = true
	np.DefaultBranchID = main.ID
	for _, b := range p.Branches {
		parent := b.ParentID
		if parent == "" {
			parent = main.ID
		}
		c.neonNewBranch(np, b.Name, parent, true, OriginSeed)
	}
	return c.neonSnapshot(np)
}

// SeedNeonBranch adds a ready branch with a compute to a project, marked
// seeded, and returns its id. The parent defaults to the default branch.
func (c *Cloud) SeedNeonBranch(project string, b NeonBranch) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.neon.projects {
		if p.ID == project {
			parent := b.ParentID
			if parent == "" {
				parent = p.DefaultBranchID
			}
			if p.branch(parent) == nil {
				return "", fmt.Errorf("sim: no neon branch %q in project %q", parent, project)
			}
			return c.neonNewBranch(p, b.Name, parent, true, OriginSeed).ID, nil
		}
	}
	return "", fmt.Errorf("sim: no neon project %q", project)
}

func (c *Cloud) neonSnapshot(p *neonProject) NeonProject {
	out := p.NeonProject
	out.Branches = []NeonBranch{}
	out.Operations = []NeonOperation{}
	for _, b := range p.branches {
		out.Branches = append(out.Branches, b.NeonBranch)
	}
	for _, op := range p.ops {
		out.Operations = append(out.Operations, op.NeonOperation)
	}
	return out
}
