package sim

// Vercel REST API, deployments made through the project's git connection:
// the subset vercel.deploy uses (V1, V2, V13, V14 of vercel.go hold).
//
// Assumptions about the real API, and where each was checked:
//
// V18. GET /v9/projects/{idOrName}[?teamId] answers the project with its
//      git connection: link {type: github|gitlab|bitbucket, repo, repoId,
//      org, productionBranch, ...} (absent when none). Source: "Find a
//      project by id or name",
//      https://vercel.com/docs/rest-api/projects/find-a-project-by-id-or-name.
// V19. POST /v13/deployments[?teamId] {name, project, target?, gitSource:
//      {type: "github", repoId, ref, sha} (or {type, org, repo, ref, sha};
//      gitlab {projectId, ref, sha}; bitbucket {workspaceUuid, repoUuid,
//      ref, sha})} creates a deployment of that commit and answers 200 with
//      it {id, url, name, readyState: QUEUED, target, meta, ...}. A
//      gitSource that does not match the project's connection is 400
//      incorrect_git_source_info (code checked in community reports; the
//      sim requires the repoId, or org/repo, of the project's link). Source:
//      "Create a new deployment",
//      https://vercel.com/docs/rest-api/deployments/create-a-new-deployment.
// V20. GET /v13/deployments/{idOrUrl}[?teamId] answers one deployment with
//      readyState (QUEUED, BUILDING, READY, ERROR, CANCELED); each read
//      counts as a poll of it (as list requests do, V14). Source: "Get a
//      deployment by ID or URL",
//      https://vercel.com/docs/rest-api/deployments/get-a-deployment-by-id-or-url.
// V21. A Bitbucket link is {type: "bitbucket", name, slug, owner, uuid,
//      workspaceUuid, ...}: the repository's uuid is `uuid`, which a
//      gitSource names `repoUuid` ({type: "bitbucket", repoUuid,
//      workspaceUuid?, ref, sha}, or {owner, slug, ref, sha}). Source: the
//      Vercel description (vercel/sdk vercel-spec.json, getProject's link
//      and createDeployment's gitSource).
// V22. POST /v13/deployments with deploymentId rebuilds that deployment
//      ("An deployment id for an existing deployment to redeploy"): a new
//      deployment of the same commit and branch, which reads the project's
//      variables as they are now. name is still required; a gitSource sent
//      beside it must match the project's connection. An unknown id is 404.
//      Source: same description, createDeployment's deploymentId and
//      withLatestCommit.
//
// Git-triggered builds: Push (push.go) starts a deployment of a pushed
// commit for every project linked to a repository, the moment of the
// push, before any workflow has written a variable, as Vercel's git
// integration does.

import (
	"cmp"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"
)

// VercelGitLink is a project's git connection.
type VercelGitLink struct {
	Type             string `json:"type"` // github, gitlab, bitbucket
	Org              string `json:"org,omitempty"`
	Repo             string `json:"repo,omitempty"`
	RepoID           int64  `json:"repoId,omitempty"`
	ProductionBranch string `json:"productionBranch,omitempty"`
	// Bitbucket: the repository's uuid, its workspace's uuid, owner and
	// slug (V21).
	UUID          string `json:"uuid,omitempty"`
	WorkspaceUUID string `json:"workspaceUuid,omitempty"`
	Owner         string `json:"owner,omitempty"`
	Slug          string `json:"slug,omitempty"`
}

func (vc *vercel) deployRoutes(p *api) {
	p.handle("GET /v9/projects/{idOrName}", vc.getProject)
	p.handle("POST /v13/deployments", vc.createDeployment)
	p.handle("GET /v13/deployments/{idOrUrl}", vc.getDeployment)
}

func (vc *vercel) getProject(w http.ResponseWriter, r *http.Request) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.find(r.PathValue("idOrName"), r.URL.Query().Get("teamId"))
	if p == nil {
		vercelErr(w, http.StatusNotFound, "not_found", "Project not found")
		return
	}
	v := vercelProjectView(p)
	writeJSON(w, http.StatusOK, v)
}

// vercelProjectView is getProject's answer: the fields its description
// requires (accountId, directoryListing, nodeVersion, the resource
// configurations) and the Git link in the shape of its type, with the
// credential and deploy hooks every link carries.
func vercelProjectView(p *vercelProject) map[string]any {
	account := p.TeamID
	if account == "" {
		account = "sim-user"
	}
	resources := map[string]any{"functionDefaultRegions": []string{"iad1"}}
	v := map[string]any{"id": p.ID, "name": p.Name, "accountId": account, "framework": "nextjs",
		"directoryListing": false, "nodeVersion": "22.x", "resourceConfig": resources, "defaultResourceConfig": resources}
	l := p.Link
	if l == nil {
		return v
	}
	link := map[string]any{"type": l.Type, "productionBranch": l.ProductionBranch,
		"gitCredentialId": "cred_sim", "deployHooks": []any{}, "createdAt": 0, "updatedAt": 0}
	set := func(k string, x any) {
		switch x := x.(type) {
		case string:
			if x != "" {
				link[k] = x
			}
		case int64:
			if x != 0 {
				link[k] = x
			}
		}
	}
	switch l.Type {
	case "gitlab":
		// GitLab's link names the project: its numeric id and path.
		link["projectId"] = jsonInt(l.RepoID)
		link["projectName"], link["projectNamespace"] = l.Repo, l.Org
		link["projectNameWithNamespace"] = l.Org + " / " + l.Repo
		link["projectUrl"] = "https://gitlab.com/" + l.Org + "/" + l.Repo
	case "bitbucket":
		for k, x := range map[string]string{"uuid": l.UUID, "workspaceUuid": l.WorkspaceUUID, "owner": l.Owner, "slug": l.Slug, "name": l.Slug} {
			link[k] = x
		}
	default:
		set("org", l.Org)
		set("repo", l.Repo)
		set("repoId", l.RepoID)
	}
	v["link"] = link
	return v
}

// vercelGitSource is the gitSource of a deployment request.
type vercelGitSource struct {
	Type          string      `json:"type"`
	RepoID        json.Number `json:"repoId"`
	ProjectID     json.Number `json:"projectId"` // gitlab
	Org           string      `json:"org"`
	Repo          string      `json:"repo"`
	RepoUUID      string      `json:"repoUuid"`
	WorkspaceUUID string      `json:"workspaceUuid"`
	Owner         string      `json:"owner"`
	Slug          string      `json:"slug"`
	Ref           string      `json:"ref"`
	SHA           string      `json:"sha"`
}

// names says whether the source names the repository of the link.
func (gs *vercelGitSource) names(l *VercelGitLink) bool {
	return l != nil && gs.Type == l.Type && gs.Ref != "" &&
		((gs.RepoID != "" && gs.RepoID.String() == jsonInt(l.RepoID)) ||
			(gs.ProjectID != "" && gs.ProjectID.String() == jsonInt(l.RepoID)) || (gs.Org != "" && gs.Org == l.Org && gs.Repo == l.Repo) ||
			(gs.RepoUUID != "" && gs.RepoUUID == l.UUID && (gs.WorkspaceUUID == "" || gs.WorkspaceUUID == l.WorkspaceUUID)) ||
			(gs.Owner != "" && gs.Owner == l.Owner && gs.Slug == l.Slug))
}

// vercelDeployRequest is the body of a deployment request.
type vercelDeployRequest struct {
	Name         string           `json:"name"`
	Project      string           `json:"project"`
	Target       string           `json:"target"`
	DeploymentID string           `json:"deploymentId"`
	GitSource    *vercelGitSource `json:"gitSource"`
}

func (vc *vercel) createDeployment(w http.ResponseWriter, r *http.Request) {
	var body vercelDeployRequest
	dec := json.NewDecoder(strings.NewReader(string(readBody(r))))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || body.Name == "" {
		vercelErr(w, http.StatusBadRequest, "bad_request", "Invalid request: `name` is required")
		return
	}
	vc.mu.Lock()
	defer vc.mu.Unlock()
	p := vc.find(cmp.Or(body.Project, body.Name), r.URL.Query().Get("teamId"))
	if p == nil {
		vercelErr(w, http.StatusNotFound, "not_found", "Project not found")
		return
	}
	from, ok := p.deployment(body.DeploymentID)
	if !ok {
		vercelErr(w, http.StatusNotFound, "not_found", "Deployment not found")
		return
	}
	gs := body.GitSource
	if from == nil && (gs == nil || gs.Ref == "") {
		vercelErr(w, http.StatusBadRequest, "bad_request", "Invalid request: the sim models git deployments only (gitSource with ref, or deploymentId)")
		return
	}
	if gs != nil && !gs.names(p.Link) {
		vercelErr(w, http.StatusBadRequest, "incorrect_git_source_info", "The provided git source does not match the project's git repository")
		return
	}
	target := ""
	switch body.Target {
	case "", "preview":
	case "production":
		target = "production"
	default:
		vercelErr(w, http.StatusBadRequest, "bad_request", "Invalid request: `target` must be production or preview")
		return
	}
	sha, branch := "", ""
	if from != nil {
		sha, branch = from.SHA, from.Branch
	}
	if gs != nil {
		sha, branch = cmp.Or(gs.SHA, sha), gs.Ref
	}
	d := &vercelDeployment{
		VercelDeployment: VercelDeployment{
			UID: "dpl_" + vc.randString(28, alnum), Target: target, SHA: sha, Branch: branch,
			Created: vc.nowMs(), Behavior: DeployOK, Origin: OriginAPI,
			Env: p.buildEnv(target, branch),
		},
		final: "READY", buildPolls: 1,
	}
	if from != nil {
		d.RedeployOf = from.UID
	}
	d.URL = p.Name + "-" + vc.randString(9, lowerDigits) + "-sim.vercel.app"
	p.deps = append(p.deps, d)
	writeJSON(w, http.StatusOK, deploymentFull(d, p, vc.now()))
}

// deployment finds the deployment a redeploy names (the last of that uid);
// none named is (nil, true), one named that does not exist is (nil, false).
func (p *vercelProject) deployment(uid string) (*vercelDeployment, bool) {
	if uid == "" {
		return nil, true
	}
	var from *vercelDeployment
	for _, d := range p.deps {
		if d.UID == uid {
			from = d
		}
	}
	return from, from != nil
}

// deploymentFull is the answer of createDeployment and getDeployment: the
// list's view with the fields their description requires of a whole
// deployment (the build's environment names, the queues, the plan, the
// regions, the routes).
func deploymentFull(d *vercelDeployment, p *vercelProject, now time.Time) map[string]any {
	v := deploymentView(d, p, now)
	owner := p.TeamID
	if owner == "" {
		owner = "sim-user"
	}
	names := []string{}
	for k := range d.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for k, x := range map[string]any{
		"id": d.UID, "status": v["readyState"], "build": map[string]any{"env": names}, "env": names,
		"isInConcurrentBuildsQueue": false, "isInSystemBuildsQueue": false, "projectSettings": map[string]any{},
		"aliasAssigned": v["readyState"] == "READY", "bootedAt": d.Created, "buildSkipped": false, "public": false,
		"regions": []string{"iad1"}, "version": 2, "plan": "hobby", "createdIn": "sfo1", "ownerId": owner, "routes": nil,
		"alias": []string{},
	} {
		v[k] = x
	}
	return v
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func (vc *vercel) getDeployment(w http.ResponseWriter, r *http.Request) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	key := r.PathValue("idOrUrl")
	team := r.URL.Query().Get("teamId")
	for _, p := range vc.projects {
		if p.TeamID != team {
			continue
		}
		for _, d := range p.deps {
			if d.UID == key || d.URL == key {
				d.Polls++
				writeJSON(w, http.StatusOK, deploymentFull(d, p, vc.now()))
				return
			}
		}
	}
	vercelErr(w, http.StatusNotFound, "not_found", "Deployment not found")
}
