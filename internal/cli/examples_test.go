package cli_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"

	splan "github.com/sponson/apply/pkg/plan"
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
			if r := runCLI(t, env, "validate", "--no-credentials", "--pr", "7", "--branch", "feature/x"); r.code != 0 {
				t.Fatalf("validate: exit %d\n%s%s", r.code, r.out, r.err)
			}
		})
	}
}

// exampleVars are the variables, beyond the ones `sponson sim` exports,
// that point an example's generic APIs and recipes at the fake cloud's
// generic API (each example's header says so): its URL and token are
// given as url and token.
var exampleVars = map[string]func(url, token string) map[string]string{
	"http-generic.release.plan.yaml": func(url, token string) map[string]string {
		return map[string]string{"FLAGS_API_URL": url, "FLAGS_API_TOKEN": token, "CDN_API_URL": url, "CDN_API_TOKEN": token}
	},
	"recipes-and-manual-steps.release.plan.yaml": func(url, token string) map[string]string {
		return map[string]string{
			"GITHUB_API_URL": url, "GITHUB_TOKEN": token, "SENTRY_API_URL": url, "SENTRY_AUTH_TOKEN": token,
			"CLOUDFLARE_API_URL": url, "CLOUDFLARE_API_TOKEN": token, "RESEND_API_URL": url, "RESEND_API_KEY": token,
		}
	},
}

// exampleSecrets are the secrets the examples reference.
var exampleSecrets = map[string]string{"CLERK_PREVIEW_SECRET_KEY": "sk_test_preview", "STRIPE_TEST_SECRET_KEY": "sk_test_stripe",
	"STRIPE_LIVE_SECRET_KEY": "sk_live_stripe", "AUTH0_PREVIEW_CLIENT_SECRET": "preview-client-secret"}

// exampleCloud serves a fake cloud seeded as `sponson sim` seeds it, and
// returns it with the variables its server exports (and the commit).
func exampleCloud(t *testing.T) (*sim.Cloud, map[string]string) {
	t.Helper()
	cloud := sim.New(sim.Options{Seed: 11})
	cloud.CheckDescriptions(t)
	srv := httptest.NewServer(cloud.Handler())
	t.Cleanup(srv.Close)
	if err := cloud.Console.SeedExamples(); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"SPONSON_CTX_SHA": exampleSHA}
	for _, kv := range cloud.Env(srv.URL) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return cloud, vars
}

// TestExamplesPlanAgainstTheFakeCloud plans every example against the
// fake cloud as `sponson sim` seeds it (sim.SeedExamples): every line is
// planned as a create, pending on an output not known yet, or (a manual
// step) a todo, and nothing is written to any provider.
func TestExamplesPlanAgainstTheFakeCloud(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cloud, vars := exampleCloud(t)
			for k, v := range exampleSecrets {
				vars[k] = v
			}
			if extra := exampleVars[name]; extra != nil {
				for k, v := range extra(vars[sim.HTTPURLVar], vars[sim.HTTPTokenVar]) {
					vars[k] = v
				}
			}
			p, err := splan.Parse(name, src)
			if err != nil {
				t.Fatal(err)
			}
			env := testEnv(t, vars, map[string]string{"release.plan.yaml": string(src),
				".secrets/sentry_dsn": "https://public@sentry.example/1\n"})
			// A checkout of acme/shop, so ${ctx.repo} has a value.
			repo, err := git.PlainInit(env.Dir, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"https://github.com/acme/shop.git"}}); err != nil {
				t.Fatal(err)
			}
			for _, envName := range p.Environments {
				args := []string{"plan", "--json", "--pr", "7", "--branch", "feature/x", "--receipts", "local"}
				if envName != "preview" {
					args = []string{"plan", "--json", "--env", envName, "--branch", "main", "--receipts", "local"}
				}
				r := runCLI(t, env, args...)
				if r.code != 0 {
					t.Fatalf("plan %s: exit %d\n%s%s", envName, r.code, r.out, r.err)
				}
				lines, _ := oneDocument(t, r)["lines"].([]any)
				if len(lines) == 0 && envName == "preview" {
					t.Fatalf("the plan has no lines:\n%s", r.out)
				}
				for _, l := range lines {
					l := l.(map[string]any)
					switch l["status"] {
					case "create", "pending", "todo":
					default:
						t.Errorf("%s: line %v: %v\n%s", envName, l["id"], l["status"], r.out)
					}
				}
			}
			if n := len(cloud.Writes()); n != 0 {
				t.Errorf("plan wrote %d times", n)
			}
		})
	}
}

// A line waiting on another's output has nothing to list for unmanaged
// drift yet. With the Clerk key unset, the netlify example's Clerk line is
// blocked; plan must not try to list what the lines waiting on outputs
// would own (and warn that it could not, with a pending value).
func TestPendingLinesAreNotListedForDrift(t *testing.T) {
	src, err := os.ReadFile("../../examples/netlify-planetscale.release.plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, vars := exampleCloud(t)
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": string(src)})
	r := runCLI(t, env, "plan", "--json", "--pr", "7", "--branch", "feature/x", "--receipts", "local")
	if r.code == 0 {
		t.Fatalf("plan with an unset secret: exit 0\n%s", r.out)
	}
	for _, w := range oneDocument(t, r)["warnings"].([]any) {
		if m := w.(map[string]any)["message"].(string); strings.Contains(m, "unmanaged drift") {
			t.Errorf("warning: %s", m)
		}
	}
}
