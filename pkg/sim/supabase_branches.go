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
	"fmt"
	"net/http"
	"slices"
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

func (sb *supabase) branchRoutes(p *api) {
	p.handle("GET /v1/projects/{ref}/branches", sb.listBranches)
	p.handle("POST /v1/projects/{ref}/branches", sb.createBranch)
	p.handle("GET /v1/branches/{id}", sb.getBranch)
	p.handle("DELETE /v1/branches/{id}", sb.deleteBranch)
}

// supabaseEpoch is when a project's default branch was made (projects are
// seeded, not created through the API).
const supabaseEpoch = "2024-01-01T00:00:00Z"

func (b *SupabaseBranch) view() map[string]any {
	st := "FUNCTIONS_DEPLOYED"
	if b.Status != "ACTIVE_HEALTHY" {
		st = "CREATING_PROJECT"
	}
	// A branch made without git_branch has none in the answer (the
	// BranchResponse schema does not allow null); preview_project_status
	// is its project's status, as GET /v1/branches/{id} answers it.
	return map[string]any{"id": b.ID, "name": b.Name, "project_ref": b.ProjectRef, "parent_project_ref": b.Parent,
		"is_default": false, "persistent": false, "status": st, "with_data": false, "preview_project_status": b.Status,
		"created_at": b.created.UTC().Format(time.RFC3339), "updated_at": b.created.UTC().Format(time.RFC3339)}
}

func (sb *supabase) listBranches(w http.ResponseWriter, r *http.Request) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	p := sb.find(w, r.PathValue("ref"))
	if p == nil {
		return
	}
	out := []any{map[string]any{"id": "00000000-0000-4000-8000-" + p.Ref[:12], "name": "main", "project_ref": p.Ref, "parent_project_ref": p.Ref,
		"is_default": true, "persistent": true, "status": "FUNCTIONS_DEPLOYED", "with_data": true, "preview_project_status": "ACTIVE_HEALTHY",
		"created_at": supabaseEpoch, "updated_at": supabaseEpoch}}
	for _, b := range sb.branches {
		if b.Parent == p.Ref {
			out = append(out, b.view())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (sb *supabase) createBranch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		BranchName string  `json:"branch_name"`
		GitBranch  *string `json:"git_branch"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil || body.BranchName == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "branch_name is required"})
		return
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	p := sb.find(w, r.PathValue("ref"))
	if p == nil {
		return
	}
	for _, b := range sb.branches {
		if b.Parent == p.Ref && b.Name == body.BranchName {
			writeJSON(w, http.StatusConflict, map[string]any{"message": "A branch named " + body.BranchName + " already exists"})
			return
		}
	}
	b := &SupabaseBranch{ID: sb.uuid(), Name: body.BranchName, Parent: p.Ref, ProjectRef: sb.randString(20, "abcdefghijklmnopqrstuvwxyz"),
		Status: "COMING_UP", DBPass: sb.randString(24, alnum), Origin: OriginAPI, created: sb.now()}
	sb.branches = append(sb.branches, b)
	writeJSON(w, http.StatusCreated, b.view())
}

func (sb *supabase) branchByID(id string) (int, *SupabaseBranch) {
	for i, b := range sb.branches {
		if b.ID == id {
			return i, b
		}
	}
	return -1, nil
}

func (sb *supabase) getBranch(w http.ResponseWriter, r *http.Request) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	_, b := sb.branchByID(r.PathValue("id"))
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

func (sb *supabase) deleteBranch(w http.ResponseWriter, r *http.Request) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	i, b := sb.branchByID(r.PathValue("id"))
	if b == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Branch not found"})
		return
	}
	sb.branches = append(sb.branches[:i], sb.branches[i+1:]...)
	writeJSON(w, http.StatusOK, map[string]any{"message": "ok"})
}

// SeedSupabaseBranch adds a healthy preview branch of a project (marked
// seeded) and returns its id.
func (k Console) SeedSupabaseBranch(parentRef, name string) string {
	c := k.c
	return lookup[*supabase](c).seedSupabaseBranch(parentRef, name)
}

func (sb *supabase) seedSupabaseBranch(parentRef, name string) string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	b := &SupabaseBranch{ID: sb.uuid(), Name: name, Parent: parentRef, ProjectRef: sb.randString(20, "abcdefghijklmnopqrstuvwxyz"),
		Status: "ACTIVE_HEALTHY", DBPass: sb.randString(24, alnum), Origin: OriginSeed, created: sb.now()}
	sb.branches = append(sb.branches, b)
	return b.ID
}

func (sb *supabase) branchesSnapshot() []SupabaseBranch {
	out := []SupabaseBranch{}
	for _, b := range sb.branches {
		out = append(out, *b)
	}
	return out
}

func (sb *supabase) driftBranch(d Drift) (string, error) {
	i := slices.IndexFunc(sb.branches, func(b *SupabaseBranch) bool { return b.Parent == d.Project && b.Name == d.ID })
	if i < 0 {
		return "", fmt.Errorf("sim: drift: no supabase branch %q of %q", d.ID, d.Project)
	}
	b := sb.branches[i]
	switch d.Action {
	case DriftDelete:
		sb.branches = slices.Delete(sb.branches, i, i+1)
		return b.ID, nil
	case DriftRecreate:
		n := &SupabaseBranch{ID: sb.uuid(), Name: b.Name, Parent: b.Parent, ProjectRef: sb.randString(20, "abcdefghijklmnopqrstuvwxyz"),
			Status: "ACTIVE_HEALTHY", DBPass: sb.randString(24, alnum), Origin: OriginConsole, created: sb.now()}
		sb.branches[i] = n
		return n.ID, nil
	}
	return "", badAction(d)
}
