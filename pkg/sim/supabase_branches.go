package sim

// Supabase Management API, branches: the subset supabase.branch uses.
//
// Assumptions about the real API, and where each was checked (S1, S2 of
// supabase.go hold: base, bearer token, 401 format):
//
// S8.  GET /v1/projects/{ref}/branches lists the project's branches as an
//      array of BranchResponse {id (uuid), name, project_ref (the branch's
//      own 20-character ref), parent_project_ref, is_default, git_branch,
//      persistent, status, created_at, updated_at}. Sources:
//      supabase/terraform-provider-supabase internal/provider
//      branch_resource.go and branch_resource_test.go (V1ListAllBranches,
//      api.BranchResponse); "Create a database branch" (the attributes),
//      https://supabase.com/docs/reference/api/v2-create-a-branch.
// S9.  POST /v1/projects/{ref}/branches {branch_name, git_branch?, region?}
//      answers 201 with the BranchResponse; the branch's project starts
//      provisioning. A name that exists answers 409 (status not checked:
//      the stricter choice). Source: branch_resource.go
//      (V1CreateABranchWithResponse, CreateBranchBody, JSON201).
// S10. GET /v1/branches/{branch_id} answers BranchDetailResponse {ref,
//      status, db_host, db_port, db_user, db_pass, jwt_secret,
//      postgres_version, ...}; status is the branch project's status:
//      COMING_UP while provisioning, then ACTIVE_HEALTHY (INIT_FAILED when it
//      cannot start). The sim moves a new branch to ACTIVE_HEALTHY after two
//      reads of it. Source: branch_resource.go (V1GetABranchConfig:
//      Ref, DbHost, DbPort, DbUser, DbPass, JwtSecret, PostgresVersion,
//      Status).
// S11. DELETE /v1/branches/{branch_id} answers 200; an unknown id 404. The
//      default branch cannot be deleted (400, the sim's choice). Source:
//      branch_resource.go (V1DeleteABranch, expects 200).

import (
	"encoding/json"
	"net/http"
	"time"
)

// SupabaseBranch is a preview branch of a project.
type SupabaseBranch struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Parent     string `json:"parent_project_ref"`
	ProjectRef string `json:"project_ref"`
	Status     string `json:"status"` // the branch project's status
	DBPass     string `json:"db_pass"`
	Origin     Origin `json:"origin"`
	reads      int
	created    time.Time
}

const supabaseHealthyAfterReads = 2

func (c *Cloud) supabaseBranchRoutes(p *api) {
	p.mux.HandleFunc("GET /v1/projects/{ref}/branches", c.supabaseListBranches)
	p.mux.HandleFunc("POST /v1/projects/{ref}/branches", c.supabaseCreateBranch)
	p.mux.HandleFunc("GET /v1/branches/{id}", c.supabaseGetBranch)
	p.mux.HandleFunc("DELETE /v1/branches/{id}", c.supabaseDeleteBranch)
}

func (b *SupabaseBranch) view() map[string]any {
	st := "FUNCTIONS_DEPLOYED"
	if b.Status != "ACTIVE_HEALTHY" {
		st = "CREATING_PROJECT"
	}
	return map[string]any{"id": b.ID, "name": b.Name, "project_ref": b.ProjectRef, "parent_project_ref": b.Parent,
		"is_default": false, "git_branch": nil, "persistent": false, "status": st,
		"created_at": b.created.UTC().Format(time.RFC3339), "updated_at": b.created.UTC().Format(time.RFC3339)}
}

func (c *Cloud) supabaseListBranches(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.supabaseFind(w, r.PathValue("ref"))
	if p == nil {
		return
	}
	out := []any{map[string]any{"id": "00000000-0000-4000-8000-" + p.Ref[:12], "name": "main", "project_ref": p.Ref, "parent_project_ref": p.Ref,
		"is_default": true, "persistent": true, "status": "FUNCTIONS_DEPLOYED"}}
	for _, b := range c.supabase.branches {
		if b.Parent == p.Ref {
			out = append(out, b.view())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Cloud) supabaseCreateBranch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		BranchName string  `json:"branch_name"`
		GitBranch  *string `json:"git_branch"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil || body.BranchName == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "branch_name is required"})
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.supabaseFind(w, r.PathValue("ref"))
	if p == nil {
		return
	}
	for _, b := range c.supabase.branches {
		if b.Parent == p.Ref && b.Name == body.BranchName {
			writeJSON(w, http.StatusConflict, map[string]any{"message": "A branch named " + body.BranchName + " already exists"})
			return
		}
	}
	b := &SupabaseBranch{ID: c.uuid(), Name: body.BranchName, Parent: p.Ref, ProjectRef: c.randString(20, "abcdefghijklmnopqrstuvwxyz"),
		Status: "COMING_UP", DBPass: c.randString(24, alnum), Origin: OriginAPI, created: c.now()}
	c.supabase.branches = append(c.supabase.branches, b)
	writeJSON(w, http.StatusCreated, b.view())
}

func (c *Cloud) supabaseBranchByID(id string) (int, *SupabaseBranch) {
	for i, b := range c.supabase.branches {
		if b.ID == id {
			return i, b
		}
	}
	return -1, nil
}

func (c *Cloud) supabaseGetBranch(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, b := c.supabaseBranchByID(r.PathValue("id"))
	if b == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Branch not found"})
		return
	}
	if b.Status == "COMING_UP" {
		if b.reads++; b.reads >= supabaseHealthyAfterReads {
			b.Status = "ACTIVE_HEALTHY"
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ref": b.ProjectRef, "status": b.Status, "db_host": "db." + b.ProjectRef + ".supabase.co",
		"db_port": 5432, "db_user": "postgres", "db_pass": b.DBPass, "jwt_secret": "sim-jwt-secret-" + b.ProjectRef, "postgres_version": "15.8",
		"postgres_engine": "15", "release_channel": "ga"})
}

func (c *Cloud) supabaseDeleteBranch(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, b := c.supabaseBranchByID(r.PathValue("id"))
	if b == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Branch not found"})
		return
	}
	c.supabase.branches = append(c.supabase.branches[:i], c.supabase.branches[i+1:]...)
	writeJSON(w, http.StatusOK, map[string]any{"message": "ok"})
}

// SeedSupabaseBranch adds a healthy preview branch of a project (marked
// seeded) and returns its id.
func (c *Cloud) SeedSupabaseBranch(parentRef, name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := &SupabaseBranch{ID: c.uuid(), Name: name, Parent: parentRef, ProjectRef: c.randString(20, "abcdefghijklmnopqrstuvwxyz"),
		Status: "ACTIVE_HEALTHY", DBPass: c.randString(24, alnum), Origin: OriginSeed, created: c.now()}
	c.supabase.branches = append(c.supabase.branches, b)
	return b.ID
}

func (c *Cloud) supabaseBranchesSnapshot() []SupabaseBranch {
	out := []SupabaseBranch{}
	for _, b := range c.supabase.branches {
		out = append(out, *b)
	}
	return out
}
