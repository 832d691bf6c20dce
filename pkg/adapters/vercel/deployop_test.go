package vercel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/adaptertest"
	"github.com/sponson/apply/pkg/adapters/internal/simtest"
	"github.com/sponson/apply/pkg/adapters/vercel"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

const (
	shaA = "1111111111111111111111111111111111111111"
	shaB = "2222222222222222222222222222222222222222"
)

func deployWorld(t *testing.T, link *sim.VercelGitLink) (*simtest.World, string) {
	w := simtest.New(t, sim.Options{Seed: 23})
	id := w.Cloud.Console.SeedVercelProject(sim.VercelProject{Name: "shop", Link: link})
	return w, id
}

func deployReq(project, sha string) adapter.Request {
	return adapter.Request{Line: "deploy", Params: map[string]any{}, Provider: adapter.Provider{"project": project},
		Run: adapter.RunCtx{Env: "preview", Scope: "pr-7", Branch: "feat/login", SHA: sha}}
}

var githubLink = &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "shop", RepoID: 123456, ProductionBranch: "main"}

func TestDeployConformance(t *testing.T) {
	w, id := deployWorld(t, githubLink)
	adaptertest.Run(t, adaptertest.Case{
		Op:            vercel.NewDeploy(w.With(nil), w.Client),
		Request:       deployReq(id, shaA),
		Other:         deployReq(id, shaB),
		World:         adaptertest.World{Writes: w.Writes, Secrets: []string{w.Env[vercel.TokenVar], "wrong-token"}},
		Unauthorized:  vercel.NewDeploy(w.With(map[string]string{vercel.TokenVar: "wrong-token"}), w.Client),
		NoCredential:  vercel.NewDeploy(w.With(map[string]string{vercel.TokenVar: ""}), w.Client),
		CredentialVar: vercel.TokenVar,
		DestroyKeeps:  true,
	})
}

// A deployment the git integration already made is waited for, never
// repeated; one made by the op goes through the project's connection.
func TestDeployThroughTheGitConnection(t *testing.T) {
	w, id := deployWorld(t, githubLink)
	op := vercel.NewDeploy(w.With(nil), w.Client)
	ctx := context.Background()
	uids, err := w.Cloud.Console.Deploy(sim.DeploySpec{Project: id, SHA: shaA, Branch: "feat/login", Behavior: sim.DeploySlow, Polls: 2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := op.Apply(ctx, deployReq(id, shaA), nil, func(...string) error { t.Fatal("intend for an existing deployment"); return nil })
	if err != nil || len(res.Created) != 0 || res.Outputs["deployment_id"] != uids[0] || w.Writes() != 0 {
		t.Fatalf("existing deployment: %+v, %v, %d writes", res, err, w.Writes())
	}
	res, err = op.Apply(ctx, deployReq(id, shaB), nil, func(...string) error { return nil })
	if err != nil || len(res.Created) != 1 || !strings.HasPrefix(res.Outputs["preview_url"].(string), "https://shop-") {
		t.Fatalf("new deployment: %+v, %v", res, err)
	}
	p, _ := w.Cloud.State().VercelProject(id)
	if d := p.Deployments[len(p.Deployments)-1]; d.SHA != shaB || d.Branch != "feat/login" || d.Origin != sim.OriginAPI || d.Target != "" {
		t.Errorf("deployment made = %+v", d)
	}
}

func TestDeployWithoutGitConnection(t *testing.T) {
	w, id := deployWorld(t, nil)
	op := vercel.NewDeploy(w.With(nil), w.Client)
	_, err := op.Apply(context.Background(), deployReq(id, shaA), nil, func(...string) error { return nil })
	if errs.CodeOf(err) != errs.PROVIDER_INVALID || w.Writes() != 0 {
		t.Errorf("no git connection: %v (%d writes)", err, w.Writes())
	}
	r := deployReq(id, "")
	if _, err := op.Read(context.Background(), r); errs.CodeOf(err) != errs.PARAM_INVALID {
		t.Errorf("no commit: %v", err)
	}
	if got := op.WritesEnvironment(nil, nil, adapter.RunCtx{Env: "production"}); got != "production" {
		t.Errorf("WritesEnvironment = %q", got)
	}
}

// A Bitbucket connection names its repository by uuid (the link's uuid,
// sent as gitSource.repoUuid).
func TestDeployThroughBitbucketLink(t *testing.T) {
	w, id := deployWorld(t, &sim.VercelGitLink{Type: "bitbucket", UUID: "{1b7c5e0a-4d1e-4a57-9b1d-0f2e3c4d5e6f}",
		WorkspaceUUID: "{9a8b7c6d-0000-4000-8000-123456789abc}", Owner: "acme", Slug: "shop", ProductionBranch: "main"})
	op := vercel.NewDeploy(w.With(nil), w.Client)
	res, err := op.Apply(context.Background(), deployReq(id, shaA), nil, func(...string) error { return nil })
	if err != nil || len(res.Created) != 1 || res.Outputs["deployment_id"] == nil {
		t.Fatalf("bitbucket deploy: %+v, %v", res, err)
	}
}
