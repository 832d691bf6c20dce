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
	"cmp"
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

// neon is the Neon provider: projects with their branches and
// operations.
type neon struct {
	*core
	routes   *api
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

func newNeon(c *core) provider {
	ne := &neon{core: c}
	ne.routes = ne.newAPI()
	return ne
}

func (ne *neon) api() *api { return ne.routes }

func (ne *neon) reset() {
	ne.projects, ne.opsAfter, ne.opsDur, ne.set = nil, 0, 0, false
}

func (ne *neon) newAPI() *api {
	p := &api{name: ProviderNeon, mux: http.NewServeMux(), token: func() string { return ne.tokens.Neon },
		env: func(url string) []string { return []string{"NEON_API_URL=" + url, "NEON_API_KEY=" + ne.tokens.Neon} }}
	p.fail = func(w http.ResponseWriter, status int, code, msg string) { ne.err(w, status, msg) }
	p.deny = func(w http.ResponseWriter, missing bool) {
		msg := "authentication required"
		if !missing {
			msg = "invalid API key"
		}
		ne.err(w, http.StatusUnauthorized, msg)
	}
	p.rateLimit = func(w http.ResponseWriter, after time.Duration, now time.Time) {
		setRetryAfter(w, after)
		ne.err(w, http.StatusTooManyRequests, "rate limit exceeded")
	}
	p.handle("POST /projects/{project_id}/branches", ne.createBranch)
	p.handle("GET /projects/{project_id}/branches", ne.listBranches)
	p.handle("GET /projects/{project_id}/branches/{branch_id}", ne.getBranch)
	p.handle("DELETE /projects/{project_id}/branches/{branch_id}", ne.deleteBranch)
	p.handle("GET /projects/{project_id}/connection_uri", ne.connectionURI)
	p.handle("GET /projects/{project_id}/operations/{operation_id}", ne.getOperation)
	p.handle("/", func(w http.ResponseWriter, r *http.Request) {
		ne.err(w, http.StatusNotFound, "not found")
	})
	return p
}

func (ne *neon) err(w http.ResponseWriter, status int, msg string) {
	ne.mu.Lock()
	id := ne.uuid()
	ne.mu.Unlock()
	writeJSON(w, status, map[string]any{"code": "", "message": msg, "request_id": id})
}

// neonErrLocked is neonErr for callers holding ne.mu.
func (ne *neon) errLocked(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"code": "", "message": msg, "request_id": ne.uuid()})
}

// SetNeonOps changes when Neon operations finish: after that many further
// requests to the project, or after that much clock time (zero turns a
// trigger off; both zero restores the default of 2 requests).
func (k Console) SetNeonOps(afterRequests int, after time.Duration) {
	c := k.c
	lookup[*neon](c).setNeonOps(afterRequests, after)
}

func (ne *neon) setNeonOps(afterRequests int, after time.Duration) {
	ne.mu.Lock()
	defer ne.mu.Unlock()
	ne.opsAfter, ne.opsDur, ne.set = afterRequests, after, true
}

func (ne *neon) opsRule() (int, time.Duration) {
	n, d := ne.opts.NeonOpsAfterRequests, ne.opts.NeonOpsAfter
	if ne.set {
		n, d = ne.opsAfter, ne.opsDur
	}
	if n <= 0 && d <= 0 {
		n = 2
	}
	return n, d
}

// neonProjectFor finds the project, counts the request and settles its
// operations. Callers hold ne.mu.
func (ne *neon) projectFor(w http.ResponseWriter, id string) *neonProject {
	for _, p := range ne.projects {
		if p.ID == id {
			p.ticks++
			ne.settle(p)
			return p
		}
	}
	ne.errLocked(w, http.StatusNotFound, "project not found")
	return nil
}

func (ne *neon) settle(p *neonProject) {
	n, d := ne.opsRule()
	now := ne.now()
	for _, op := range p.ops {
		if op.Status == "finished" {
			continue
		}
		if ne.opts.NeonOpsImmediate || (n > 0 && p.ticks-op.startTick >= n) || (d > 0 && now.Sub(op.start) >= d) {
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

func (ne *neon) name(prefix string) string {
	return prefix + "-" + neonWords[0][ne.rng.IntN(len(neonWords[0]))] + "-" + neonWords[1][ne.rng.IntN(len(neonWords[1]))] + "-" + ne.randString(8, lowerDigits)
}

func (ne *neon) neonNow() (time.Time, string) {
	now := ne.now()
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

func (ne *neon) uRI(p *neonProject, b *neonBranch, pooled bool) string {
	host := b.Host
	if pooled {
		host = b.EndpointID + "-pooler." + p.regionHost()
	}
	return "postgresql://" + p.Role + ":" + p.Password + "@" + host + "/" + p.Database + "?sslmode=require&channel_binding=require"
}

func (ne *neon) addOp(p *neonProject, branchID, endpointID, action, status string) *neonOp {
	now, ts := ne.neonNow()
	op := &neonOp{
		NeonOperation: NeonOperation{ID: ne.uuid(), BranchID: branchID, EndpointID: endpointID, Action: action, Status: status, CreatedAt: ts, UpdatedAt: ts},
		startTick:     p.ticks, start: now,
	}
	p.ops = append(p.ops, op)
	return op
}

// neonNewBranch makes a branch (and, with endpoint, its compute). Callers hold ne.mu.
func (ne *neon) newBranch(p *neonProject, name, parentID string, endpoint bool, origin Origin) *neonBranch {
	now, ts := ne.neonNow()
	b := &neonBranch{NeonBranch: NeonBranch{ID: ne.name("br"), Name: name, ParentID: parentID, CurrentState: "ready", CreatedAt: ts, UpdatedAt: ts, Origin: origin}, updated: now}
	if b.Name == "" {
		b.Name = b.ID
	}
	if endpoint {
		b.EndpointID = ne.name("ep")
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

func (ne *neon) createBranch(w http.ResponseWriter, r *http.Request) {
	var in neonCreateBody
	if body := readBody(r); len(strings.TrimSpace(string(body))) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			ne.err(w, http.StatusBadRequest, "invalid request body: "+err.Error())
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
			ne.err(w, http.StatusBadRequest, fmt.Sprintf("invalid endpoint type %q", e.Type))
			return
		}
	}
	if rw > 1 {
		ne.err(w, http.StatusBadRequest, "a branch can have only one read_write endpoint")
		return
	}
	ne.mu.Lock()
	defer ne.mu.Unlock()
	p := ne.projectFor(w, r.PathValue("project_id"))
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
		ne.errLocked(w, http.StatusNotFound, "parent branch not found")
		return
	}
	if ne.opts.NeonLockProject && p.anyBusy() || p.busy(parent) {
		ne.locked(w, p, parent)
		return
	}
	for _, b := range p.branches {
		if name != "" && b.Name == name {
			ne.errLocked(w, http.StatusConflict, fmt.Sprintf("branch already exists; branch_name:%q", name))
			return
		}
	}
	b := ne.newBranch(p, name, parent, rw > 0, OriginAPI)
	b.CurrentState = "init"
	ops := []any{opView(p, ne.addOp(p, b.ID, "", "create_branch", "running"))}
	if b.EndpointID != "" {
		ops = append(ops, opView(p, ne.addOp(p, b.ID, b.EndpointID, "start_compute", "scheduling")))
	}
	if ne.opts.NeonOpsImmediate {
		ne.settle(p)
		ops = ops[:0]
		for _, op := range p.ops {
			if op.BranchID == b.ID {
				ops = append(ops, opView(p, op))
			}
		}
	}
	_, ts := ne.neonNow()
	out := map[string]any{
		"branch":     branchView(p, b),
		"endpoints":  []any{},
		"operations": ops,
		"roles":      []any{map[string]any{"branch_id": b.ID, "name": p.Role, "protected": false, "created_at": ts, "updated_at": ts}},
		"databases":  []any{map[string]any{"id": ne.rng.IntN(1 << 30), "branch_id": b.ID, "name": p.Database, "owner_name": p.Role, "created_at": ts, "updated_at": ts}},
	}
	if b.EndpointID != "" {
		out["endpoints"] = []any{endpointView(p, b)}
		out["connection_uris"] = []any{map[string]any{
			"connection_uri": ne.uRI(p, b, false),
			"connection_parameters": map[string]any{
				"database": p.Database, "password": p.Password, "role": p.Role,
				"host": b.Host, "pooler_host": b.EndpointID + "-pooler." + p.regionHost(),
			},
		}}
	}
	writeJSON(w, http.StatusCreated, out)
}

func (ne *neon) locked(w http.ResponseWriter, p *neonProject, branchID string) {
	var actions []string
	for _, op := range p.ops {
		if op.Status != "finished" && (branchID == "" || op.BranchID == branchID || ne.opts.NeonLockProject) {
			actions = append(actions, op.Action)
		}
	}
	ne.errLocked(w, http.StatusLocked, "project already has running conflicting operations, scope: project, conflicting action: "+strings.Join(actions, ","))
}

func (ne *neon) listBranches(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l, bad := parseBranchQuery(r)
	if bad != "" {
		ne.err(w, http.StatusBadRequest, bad)
		return
	}
	ne.mu.Lock()
	defer ne.mu.Unlock()
	p := ne.projectFor(w, r.PathValue("project_id"))
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
	l.sort(bs)
	offset := min(l.offset, len(bs))
	bs = bs[offset:]
	more := l.limit > 0 && len(bs) > l.limit
	if more {
		bs = bs[:l.limit]
	}
	views := []any{}
	for _, b := range bs {
		views = append(views, branchView(p, b))
	}
	out := map[string]any{"branches": views, "annotations": map[string]any{}}
	if l.limit > 0 || q.Get("cursor") != "" {
		pag := map[string]any{"sort_by": l.sortBy, "sort_order": l.order}
		if more {
			pag["next"] = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(offset+l.limit)))
		}
		out["pagination"] = pag
	}
	writeJSON(w, http.StatusOK, out)
}

// branchQuery is the page and order a list of branches asks for.
type branchQuery struct {
	limit, offset int // limit 0: all
	sortBy, order string
}

// parseBranchQuery reads the query of a list of branches; bad is the
// message of the answer when it is not valid.
func parseBranchQuery(r *http.Request) (l branchQuery, bad string) {
	q := r.URL.Query()
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			return l, "limit must be an integer from 1 to 10000"
		}
		l.limit = n
	}
	if ps := pageSizeOf(r); ps > 0 && (l.limit == 0 || ps < l.limit) {
		l.limit = ps
	}
	if s := q.Get("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "o:"))
		if err != nil || err2 != nil || n < 0 {
			return l, "invalid cursor"
		}
		l.offset = n
	}
	l.sortBy, l.order = cmp.Or(q.Get("sort_by"), "updated_at"), cmp.Or(q.Get("sort_order"), "desc")
	if !slices.Contains([]string{"updated_at", "created_at", "name"}, l.sortBy) || (l.order != "asc" && l.order != "desc") {
		return l, "invalid sort_by or sort_order"
	}
	return l, ""
}

// sort orders branches by the query's key, ties by id.
func (l branchQuery) sort(bs []*neonBranch) {
	key := func(b *neonBranch) string {
		switch l.sortBy {
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
		if l.order == "asc" {
			return ki < kj
		}
		return ki > kj
	})
}

func (ne *neon) getBranch(w http.ResponseWriter, r *http.Request) {
	ne.mu.Lock()
	defer ne.mu.Unlock()
	p := ne.projectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	b := p.branch(r.PathValue("branch_id"))
	if b == nil {
		ne.errLocked(w, http.StatusNotFound, "branch not found")
		return
	}
	// The branch's annotation (Neon keeps one per object, empty unless a
	// client set one) is part of the answer (BranchResponse and
	// AnnotationResponse).
	writeJSON(w, http.StatusOK, map[string]any{"branch": branchView(p, b),
		"annotation": map[string]any{"object": map[string]any{"type": "console/branch", "id": b.ID}, "value": map[string]any{}}})
}

func (ne *neon) deleteBranch(w http.ResponseWriter, r *http.Request) {
	ne.mu.Lock()
	defer ne.mu.Unlock()
	p := ne.projectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	b := p.branch(r.PathValue("branch_id"))
	if b == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if b.Default {
		ne.errLocked(w, http.StatusBadRequest, "cannot delete the default branch")
		return
	}
	for _, x := range p.branches {
		if x.ParentID == b.ID {
			ne.errLocked(w, http.StatusBadRequest, "cannot delete a branch that has child branches")
			return
		}
	}
	if (ne.opts.NeonLockProject && p.anyBusy()) || p.busy(b.ID) {
		ne.locked(w, p, b.ID)
		return
	}
	p.branches = slices.DeleteFunc(p.branches, func(x *neonBranch) bool { return x == b })
	var ops []any
	if b.EndpointID != "" {
		ops = append(ops, opView(p, ne.addOp(p, b.ID, b.EndpointID, "suspend_compute", "running")))
	}
	ops = append(ops, opView(p, ne.addOp(p, b.ID, "", "delete_timeline", "scheduling")))
	writeJSON(w, http.StatusOK, map[string]any{"branch": branchView(p, b), "operations": ops})
}

func (ne *neon) connectionURI(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for _, k := range []string{"database_name", "role_name"} {
		if q.Get(k) == "" {
			ne.err(w, http.StatusBadRequest, "missing required query parameter "+k)
			return
		}
	}
	ne.mu.Lock()
	defer ne.mu.Unlock()
	p := ne.projectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	id := q.Get("branch_id")
	if id == "" {
		id = p.DefaultBranchID
	}
	b := p.branch(id)
	if b == nil {
		ne.errLocked(w, http.StatusNotFound, "branch not found")
		return
	}
	if q.Get("database_name") != p.Database {
		ne.errLocked(w, http.StatusNotFound, "database not found")
		return
	}
	if q.Get("role_name") != p.Role {
		ne.errLocked(w, http.StatusNotFound, "role not found")
		return
	}
	if b.EndpointID == "" {
		ne.errLocked(w, http.StatusNotFound, "read_write endpoint not found for the branch")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"uri": ne.uRI(p, b, q.Get("pooled") == "true")})
}

func (ne *neon) getOperation(w http.ResponseWriter, r *http.Request) {
	ne.mu.Lock()
	defer ne.mu.Unlock()
	p := ne.projectFor(w, r.PathValue("project_id"))
	if p == nil {
		return
	}
	for _, op := range p.ops {
		if op.ID == r.PathValue("operation_id") {
			writeJSON(w, http.StatusOK, map[string]any{"operation": opView(p, op)})
			return
		}
	}
	ne.errLocked(w, http.StatusNotFound, "operation not found")
}

// SeedNeonProject adds a project with its default branch "main" (with a
// read_write compute), marked seeded, and returns it with the generated
// fields filled in (ID, DefaultBranchID, Password, ...). Branches given are
// seeded too, as children of main unless they name a parent.
func (k Console) SeedNeonProject(p NeonProject) NeonProject {
	c := k.c
	return lookup[*neon](c).seedNeonProject(p)
}

func (ne *neon) seedNeonProject(p NeonProject) NeonProject {
	ne.mu.Lock()
	defer ne.mu.Unlock()
	if p.ID == "" {
		p.ID = neonWords[0][ne.rng.IntN(len(neonWords[0]))] + "-" + neonWords[1][ne.rng.IntN(len(neonWords[1]))] + "-" + ne.randString(8, lowerDigits)
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
		p.Password = "npg_" + ne.randString(12, alnum)
	}
	np := &neonProject{NeonProject: NeonProject{ID: p.ID, Name: p.Name, RegionID: p.RegionID, Database: p.Database, Role: p.Role, Password: p.Password, Origin: OriginSeed}}
	ne.projects = append(ne.projects, np)
	main := ne.newBranch(np, "main", "", true, OriginSeed)
	main.Default = true
	np.DefaultBranchID = main.ID
	for _, b := range p.Branches {
		parent := b.ParentID
		if parent == "" {
			parent = main.ID
		}
		ne.newBranch(np, b.Name, parent, true, OriginSeed)
	}
	return ne.neonSnapshot(np)
}

// SeedNeonBranch adds a ready branch with a compute to a project, marked
// seeded, and returns its id. The parent defaults to the default branch.
func (k Console) SeedNeonBranch(project string, b NeonBranch) (string, error) {
	c := k.c
	return lookup[*neon](c).seedNeonBranch(project, b)
}

func (ne *neon) seedNeonBranch(project string, b NeonBranch) (string, error) {
	ne.mu.Lock()
	defer ne.mu.Unlock()
	for _, p := range ne.projects {
		if p.ID == project {
			parent := b.ParentID
			if parent == "" {
				parent = p.DefaultBranchID
			}
			if p.branch(parent) == nil {
				return "", fmt.Errorf("sim: no neon branch %q in project %q", parent, project)
			}
			return ne.newBranch(p, b.Name, parent, true, OriginSeed).ID, nil
		}
	}
	return "", fmt.Errorf("sim: no neon project %q", project)
}

func (ne *neon) neonSnapshot(p *neonProject) NeonProject {
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

func (ne *neon) drift(d Drift) (string, error) {
	var p *neonProject
	for _, x := range ne.projects {
		if x.ID == d.Project {
			p = x
		}
	}
	if p == nil {
		return "", fmt.Errorf("sim: drift: no neon project %q", d.Project)
	}
	if d.Action == DriftAdd {
		return ne.newBranch(p, d.Value, p.DefaultBranchID, true, OriginConsole).ID, nil
	}
	var b *neonBranch
	for _, x := range p.branches {
		if x.ID == d.ID || x.Name == d.ID {
			b = x
			break
		}
	}
	if b == nil {
		return "", fmt.Errorf("sim: drift: no neon branch %q in %q", d.ID, d.Project)
	}
	_, ts := ne.neonNow()
	switch d.Action {
	case DriftChange:
		b.Name, b.UpdatedAt = d.Value, ts
		return b.ID, nil
	case DriftDelete:
		p.branches = slices.DeleteFunc(p.branches, func(x *neonBranch) bool { return x == b })
		return b.ID, nil
	case DriftRecreate:
		p.branches = slices.DeleteFunc(p.branches, func(x *neonBranch) bool { return x == b })
		n := ne.newBranch(p, b.Name, b.ParentID, b.EndpointID != "", OriginConsole)
		n.Default = b.Default
		if b.Default {
			p.DefaultBranchID = n.ID
		}
		return n.ID, nil
	}
	return "", badAction(d)
}

// snapshot adds the projects with their branches and operations.
func (ne *neon) snapshot(s *Snapshot, now time.Time) {
	s.Neon = []NeonProject{}
	for _, p := range ne.projects {
		s.Neon = append(s.Neon, ne.neonSnapshot(p))
	}
}
