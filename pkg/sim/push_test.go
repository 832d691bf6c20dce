package sim

import (
	"context"
	"slices"
	"testing"
)

func (tc *tcloud) vercelDeployment(uid string) VercelDeployment {
	tc.t.Helper()
	for _, p := range tc.c.State().Vercel {
		for _, d := range p.Deployments {
			if d.UID == uid {
				return d
			}
		}
	}
	tc.t.Fatalf("no deployment %s", uid)
	return VercelDeployment{}
}

// A push starts a build on every linked project at once, with the
// variables as they are then; a variable written afterwards makes it
// stale, and a redeploy by deploymentId rebuilds the same commit with the
// variable. Timestamps never tie, even on a frozen clock.
func TestPushThenRedeployVercel(t *testing.T) {
	tc := newCloud(t, Options{Now: newClock().Now})
	tc.sendsForbidden() // a redeploy without the name its description requires
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web", Link: &VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 7, ProductionBranch: "main"}})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "cli-only"})
	got, err := tc.c.Push(Push{SHA: "s1", Branch: "feat", PullRequest: 7})
	if err != nil || len(got.Vercel) != 1 {
		t.Fatalf("push = %+v, %v; want one deployment (the unlinked project builds nothing)", got, err)
	}
	pushed := got.Vercel[0]
	if d := tc.vercelDeployment(pushed); d.SHA != "s1" || d.Branch != "feat" || d.Target != "" || len(d.Env) != 0 {
		t.Fatalf("pushed deployment = %+v", d)
	}
	tc.call("vercel", "POST", "/v10/projects/web/env", map[string]any{"key": "DATABASE_URL", "value": "postgres://x", "type": "encrypted", "target": []string{"preview"}, "gitBranch": "feat"}).want(t, 201)
	p, _ := tc.c.State().VercelProject("web")
	if stale, ok := p.StaleVariables(pushed); !ok || !slices.Equal(stale, []string{"DATABASE_URL"}) {
		t.Fatalf("stale = %v, %v; want DATABASE_URL", stale, ok)
	}

	made := tc.call("vercel", "POST", "/v13/deployments", map[string]any{"name": "web", "deploymentId": pushed}).want(t, 200).obj(t)
	id, _ := made["id"].(string)
	d := tc.vercelDeployment(id)
	if d.SHA != "s1" || d.Branch != "feat" || d.RedeployOf != pushed || d.Env["DATABASE_URL"] != "postgres://x" {
		t.Errorf("redeploy = %+v", d)
	}
	p, _ = tc.c.State().VercelProject("web")
	if stale, _ := p.StaleVariables(id); len(stale) != 0 {
		t.Errorf("the redeploy is stale: %v", stale)
	}
	tc.call("vercel", "POST", "/v13/deployments", map[string]any{"name": "web", "deploymentId": "dpl_unknown"}).want(t, 404)
	tc.call("vercel", "POST", "/v13/deployments", map[string]any{"deploymentId": pushed}).want(t, 400)
	// A gitSource beside it must still be the project's connection.
	tc.call("vercel", "POST", "/v13/deployments", map[string]any{"name": "web", "deploymentId": pushed,
		"gitSource": map[string]any{"type": "github", "repoId": 8, "ref": "feat", "sha": "s1"}}).want(t, 400)

	// The production branch builds production.
	got, _ = tc.c.Push(Push{SHA: "s2", Branch: "main"})
	if d := tc.vercelDeployment(got.Vercel[0]); d.Target != "production" {
		t.Errorf("push to main built %+v", d)
	}
}

// A Bitbucket link names its repository uuid; a gitSource names it
// repoUuid.
func TestVercelBitbucketLink(t *testing.T) {
	tc := newCloud(t, Options{})
	tc.c.Console.SeedVercelProject(VercelProject{Name: "web", Link: &VercelGitLink{Type: "bitbucket", UUID: "{r-1}", WorkspaceUUID: "{w-1}", Owner: "acme", Slug: "web"}})
	l := tc.call("vercel", "GET", "/v9/projects/web", nil).want(t, 200).obj(t)["link"].(map[string]any)
	if l["uuid"] != "{r-1}" || l["workspaceUuid"] != "{w-1}" || l["repoUuid"] != nil {
		t.Errorf("link = %v", l)
	}
	src := func(s map[string]any) map[string]any {
		s["type"], s["ref"], s["sha"] = "bitbucket", "feat", "s1"
		return map[string]any{"name": "web", "gitSource": s}
	}
	tc.call("vercel", "POST", "/v13/deployments", src(map[string]any{"repoUuid": "{r-1}", "workspaceUuid": "{w-1}"})).want(t, 200)
	tc.call("vercel", "POST", "/v13/deployments", src(map[string]any{"owner": "acme", "slug": "web"})).want(t, 200)
	tc.call("vercel", "POST", "/v13/deployments", src(map[string]any{"repoUuid": "", "workspaceUuid": "{w-1}"})).want(t, 400)
}

// Netlify: a push starts a deploy per site; createSiteBuild rebuilds a
// branch's head (production without a branch), building then ready; a
// branch never pushed is 422.
func TestPushThenBuildNetlify(t *testing.T) {
	tc := newCloud(t, Options{Now: newClock().Now})
	site := tc.c.Console.SeedNetlifySite(NetlifySite{Name: "shop", AccountSlug: "acme"})
	auth := "Bearer " + tc.c.Tokens().Netlify
	call := func(method, path string, body any) resp {
		return tc.raw(context.Background(), method, "/netlify"+path, auth, body, nil)
	}
	got, err := tc.c.Push(Push{SHA: "s1", Branch: "feat", PullRequest: 7})
	if err != nil || len(got.Netlify) != 1 {
		t.Fatalf("push = %+v, %v", got, err)
	}
	call("POST", "/accounts/acme/env?site_id="+site, []any{map[string]any{"key": "DATABASE_URL", "values": []any{map[string]any{"context": "deploy-preview", "value": "postgres://x"}}}}).want(t, 201)
	st := tc.c.State().Netlify[0]
	if stale, _ := st.StaleVariables(got.Netlify[0]); !slices.Equal(stale, []string{"DATABASE_URL"}) || st.Deploys[0].Context != "deploy-preview" || st.Deploys[0].ReviewID != 7 {
		t.Fatalf("pushed deploy %+v, stale %v", st.Deploys[0], stale)
	}
	call("POST", "/sites/"+site+"/builds?branch=other", nil).want(t, 422)
	call("POST", "/sites/"+site+"/builds", nil).want(t, 422) // main was never pushed

	tc.c.Push(Push{SHA: "s2", Branch: "feat"})
	b := call("POST", "/sites/"+site+"/builds?branch=feat&title=why", nil).want(t, 200).obj(t)
	if b["sha"] != "s2" || b["deploy_id"] == "" || b["done"] != false {
		t.Fatalf("build = %v", b)
	}
	states := []string{}
	for range 2 {
		for _, d := range call("GET", "/sites/"+site+"/deploys", nil).want(t, 200).arr(t) {
			if m := d.(map[string]any); m["id"] == b["deploy_id"] {
				states = append(states, m["state"].(string))
				if m["context"] != "branch-deploy" || m["branch"] != "feat" || m["commit_ref"] != "s2" || m["title"] != "why" {
					t.Errorf("built deploy = %v", m)
				}
			}
		}
	}
	if !slices.Equal(states, []string{"building", "ready"}) {
		t.Errorf("states %v, want building then ready", states)
	}
	tc.c.Push(Push{SHA: "s3", Branch: "main"})
	b = call("POST", "/sites/"+site+"/builds", nil).want(t, 200).obj(t)
	for _, d := range tc.c.State().Netlify[0].Deploys {
		if d.ID == b["deploy_id"] && (d.Context != "production" || d.CommitRef != "s3") {
			t.Errorf("production build = %+v", d)
		}
	}
}
