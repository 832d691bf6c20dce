package cli_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"

	"github.com/sponson/apply/pkg/sim"
)

// exampleSHA is the commit the example runs are for.
const exampleSHA = "0123456789abcdef0123456789abcdef01234567"

// TestExamplesValidate checks every plan in examples/ with the real
// catalogue of ops (the plan package's own test knows only a fake one):
// every adapter, op, parameter and output an example uses exists.
func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			env := testEnv(t, map[string]string{"SPONSON_CTX_SHA": exampleSHA}, map[string]string{"release.plan.yaml": string(src)})
			// A checkout of acme/shop, so ${ctx.repo} has a value.
			repo, err := git.PlainInit(env.Dir, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"https://github.com/acme/shop.git"}}); err != nil {
				t.Fatal(err)
			}
			if r := runCLI(t, env, "validate", "--pr", "7", "--branch", "feature/x"); r.code != 0 {
				t.Fatalf("validate: exit %d\n%s%s", r.code, r.out, r.err)
			}
		})
	}
}

// TestExamplesPlanAgainstTheFakeCloud plans the examples that use the
// newer providers against the fake cloud, seeded with the objects the
// examples name: every line is planned as a create (or pending on an
// output not known yet) and nothing is written.
func TestExamplesPlanAgainstTheFakeCloud(t *testing.T) {
	seeds := map[string]func(c *sim.Cloud){
		"netlify-planetscale.release.plan.yaml": func(c *sim.Cloud) {
			c.SeedNetlifySite(sim.NetlifySite{ID: "3f1c2a9e-7b4d-4e61-9a0f-2c8d5e6b7a10", Name: "shop", AccountID: "5e8a1c0f2b3d4e5f6a7b8c9d", AccountSlug: "acme"})
			c.SeedPlanetScaleDatabase("acme", "shop")
			c.SeedLaunchDarklyFlag(sim.LaunchDarklyFlag{Project: "shop", Key: "new-checkout",
				Variations:   []sim.LaunchDarklyVariation{{Value: true}, {Value: false}},
				Environments: map[string]*sim.LaunchDarklyEnv{"test": {}}})
		},
		"cloudflare-supabase.release.plan.yaml": func(c *sim.Cloud) {
			if _, err := c.SeedSupabaseProject(sim.SupabaseProject{Ref: "abcdefghijklmnopqrst", Name: "shop"}); err != nil {
				t.Fatal(err)
			}
			c.SeedVercelProject(sim.VercelProject{ID: "prj_8f2kQx1LmN3", Name: "web", TeamID: "team_acme",
				Link: &sim.VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 4815162342, ProductionBranch: "main"}})
			c.SeedCloudflarePagesProject(sim.CloudflarePagesProject{Account: "023e105f4ecef8ad9ca31a8372d0c353", Name: "acme-marketing"})
		},
	}
	for name, seed := range seeds {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
			if err != nil {
				t.Fatal(err)
			}
			cloud := sim.New(sim.Options{Seed: 11})
			srv := httptest.NewServer(cloud.Handler())
			t.Cleanup(srv.Close)
			seed(cloud)
			vars := map[string]string{"SPONSON_CTX_SHA": exampleSHA, "CLERK_PREVIEW_SECRET_KEY": "sk_test_preview"}
			for _, kv := range cloud.Env(srv.URL) {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = v
			}
			env := testEnv(t, vars, map[string]string{"release.plan.yaml": string(src)})
			r := runCLI(t, env, "plan", "--json", "--pr", "7", "--branch", "feature/x", "--receipts", "local")
			if r.code != 0 {
				t.Fatalf("plan: exit %d\n%s%s", r.code, r.out, r.err)
			}
			lines, _ := oneDocument(t, r)["lines"].([]any)
			if len(lines) == 0 {
				t.Fatalf("the plan has no lines:\n%s", r.out)
			}
			for _, l := range lines {
				l := l.(map[string]any)
				if l["status"] != "create" && l["status"] != "pending" {
					t.Errorf("line %v: %v", l["id"], l["status"])
				}
			}
			if n := len(cloud.Writes()); n != 0 {
				t.Errorf("plan wrote %d times", n)
			}
		})
	}
}
