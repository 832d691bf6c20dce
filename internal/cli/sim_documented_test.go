package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/cli"
)

// TestSimPlansTheDocumentedPlans starts `sponson sim` as a newcomer does and
// plans, against it, the README's plan and the examples of the providers it
// models: every line plans as a create or as pending on an output not known
// yet; none fails because the fake cloud lacks an object the plan names.
func TestSimPlansTheDocumentedPlans(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(readme), "## A plan\n")
	_, block, _ := strings.Cut(after, "```yaml\n")
	readmePlan, _, ok := strings.Cut(block, "```")
	if !ok || !strings.Contains(readmePlan, "providers:") {
		t.Fatalf("no plan in the README's section \"A plan\"")
	}
	plans := map[string]string{"README.md": readmePlan}
	for _, name := range []string{"cloudflare-supabase", "netlify-planetscale", "preview-stack", "production-release", "supabase-redirects"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "examples", name+".release.plan.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		plans[name] = string(src)
	}

	env := testEnv(t, map[string]string{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	env.Context = ctx
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"sim", "--json"}, env, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var doc struct {
		OK  bool
		Env map[string]string
	}
	out.await(func(s string) bool { return json.Unmarshal([]byte(s), &doc) == nil && doc.OK })
	if !doc.OK {
		t.Fatalf("sim printed no environment:\n%s\n%s", out.String(), errb.String())
	}

	for name, src := range plans {
		t.Run(name, func(t *testing.T) {
			vars := map[string]string{"SPONSON_CTX_SHA": exampleSHA, "STRIPE_KEY": "sk_test_readme",
				"STRIPE_TEST_SECRET_KEY": "sk_test_example", "AUTH0_PREVIEW_CLIENT_SECRET": "preview-client-secret",
				"CLERK_PREVIEW_SECRET_KEY": "sk_test_preview"}
			for k, v := range doc.Env {
				vars[k] = v
			}
			env := testEnv(t, vars, map[string]string{"release.plan.yaml": src})
			r := runCLI(t, env, "plan", "--json", "--pr", "7", "--branch", "feature/x", "--receipts", "local")
			if r.code != 0 || strings.Contains(r.out, "PROVIDER_NOT_FOUND") {
				t.Fatalf("plan: exit %d\n%s%s", r.code, r.out, r.err)
			}
			lines, _ := oneDocument(t, r)["lines"].([]any)
			if len(lines) == 0 {
				t.Fatalf("the plan has no lines:\n%s", r.out)
			}
			for _, l := range lines {
				l := l.(map[string]any)
				if l["status"] != "create" && l["status"] != "pending" {
					t.Errorf("line %v: %v\n%s", l["id"], l["status"], r.out)
				}
			}
		})
	}
}
