package httpop_test

import (
	"context"
	"testing"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/httpop"
)

// TestRepoWebhookRecipeAgainstGitHubsDescription runs github.repo_webhook
// against the fake GitHub, which checks every request and answer against
// GitHub's OpenAPI description: the hook is created, found again by its
// URL, unchanged on a second read, and destroyed.
func TestRepoWebhookRecipeAgainstGitHubsDescription(t *testing.T) {
	s := githubtest.Start(t, nil)
	if err := s.AddRepo(githubtest.Repo{FullName: "octo/app"}); err != nil {
		t.Fatal(err)
	}
	s.AddToken(githubtest.Token{Value: "tok", Permissions: map[string]string{"repository_hooks": "write", "metadata": "read"}})
	vars := map[string]string{"GITHUB_API_URL": s.APIURL, "GITHUB_TOKEN": "tok"}
	env := httpclient.Env(func(n string) (string, bool) { v, ok := vars[n]; return v, ok })
	cfg, err := httpclient.ConfigFromEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	client := httpclient.New(cfg)
	op := httpop.NewRecipe(httpop.NewResource(env, client), httpop.NewListItem(env, client))
	req := adapter.Request{Line: "hook", Provider: adapter.Provider{}, Run: adapter.RunCtx{Env: "preview", Scope: "pr-7"},
		Params: map[string]any{"recipe": "github.repo_webhook", "owner": "octo", "repo": "app", "url": "https://pr-7.example.dev/hook", "events": []any{"push", "pull_request"}}}
	ctx := context.Background()
	live, err := op.Read(ctx, req)
	if err != nil || len(live.Resources) != 0 {
		t.Fatalf("before: %+v %v", live, err)
	}
	res, err := op.Apply(ctx, req, live, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	hooks := s.Hooks("octo/app")
	if len(hooks) != 1 || hooks[0].Config["url"] != "https://pr-7.example.dev/hook" || hooks[0].Config["content_type"] != "json" || len(hooks[0].Events) != 2 {
		t.Fatalf("hooks after the apply: %+v", hooks)
	}
	if res.Outputs["ping_url"] == nil {
		t.Errorf("outputs: %v", res.Outputs)
	}
	live, err = op.Read(ctx, req)
	if err != nil || len(live.Resources) != 1 {
		t.Fatalf("read again: %+v %v", live, err)
	}
	diffs, err := op.Diff(live, req)
	if err != nil || len(diffs) != 1 || diffs[0].Action != adapter.Unchanged {
		t.Errorf("diff after the apply: %+v %v", diffs, err)
	}
	if err := op.Destroy(ctx, req.Provider, req.Run, live.Resources[0]); err != nil {
		t.Fatal(err)
	}
	if hooks := s.Hooks("octo/app"); len(hooks) != 0 {
		t.Errorf("hooks after the destroy: %+v", hooks)
	}
	if s.Count("repos/create-webhook") != 1 || s.Count("repos/delete-webhook") != 1 {
		t.Errorf("calls: %+v", s.Requests())
	}
}
