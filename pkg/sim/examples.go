package sim

// SeedExamples adds what the README's plan and every plan in examples/
// name, so that a newcomer's `sponson plan` of one of them against
// `sponson sim` plans instead of failing PROVIDER_NOT_FOUND: the projects,
// sites and flags of the provider examples, the shared objects of the
// generic http example (the CDN bucket's CORS list, the flag service's web
// client), and the recipes' targets in the generic API (HTTPTargets:
// GitHub's hooks, Sentry's releases, Cloudflare's DNS records, Resend's
// webhooks). `sponson sim`
// and internal/cli's examples test both call it.
func (k Console) SeedExamples() error {
	c := k.c
	// README.md, "A plan".
	c.Console.SeedNeonProject(NeonProject{ID: "proj-abc"})
	c.Console.SeedVercelProject(VercelProject{ID: "prj_123", Name: "readme", TeamID: "team_9"})
	c.Console.SeedAuth0Client(Auth0Client{ClientID: "AbCd123"})

	// examples/*.release.plan.yaml, the providers with adapters.
	c.Console.SeedNeonProject(NeonProject{ID: "proj-snowy-meadow-421"})
	// Its production database URL is managed elsewhere; the production
	// example keeps it ({keep: true}).
	c.Console.SeedVercelProject(VercelProject{ID: "prj_8f2kQx1LmN3", Name: "web", TeamID: "team_acme",
		Link: &VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 4815162342, ProductionBranch: "main"},
		Envs: []VercelEnv{{Key: "DATABASE_URL", Value: "postgres://app@db.acme.internal/shop", Type: "encrypted", Target: []string{"production"}}}})
	c.Console.SeedAuth0Client(Auth0Client{ClientID: "q8XbT2nYv0pLwE4r"})
	if _, err := c.Console.SeedSupabaseProject(SupabaseProject{Ref: "abcdefghijklmnopqrst", Name: "shop"}); err != nil {
		return err
	}
	c.Console.SeedNetlifySite(NetlifySite{ID: "3f1c2a9e-7b4d-4e61-9a0f-2c8d5e6b7a10", Name: "shop", AccountID: "5e8a1c0f2b3d4e5f6a7b8c9d", AccountSlug: "acme"})
	c.Console.SeedPlanetScaleDatabase("acme", "shop")
	c.Console.SeedLaunchDarklyFlag(LaunchDarklyFlag{Project: "shop", Key: "new-checkout",
		Variations:   []LaunchDarklyVariation{{Value: true}, {Value: false}},
		Environments: map[string]*LaunchDarklyEnv{"test": {}}})
	c.Console.SeedCloudflarePagesProject(CloudflarePagesProject{Account: "023e105f4ecef8ad9ca31a8372d0c353", Name: "acme-marketing"})

	// examples/http-generic.release.plan.yaml: the shared objects whose
	// lists it adds to.
	if _, err := c.Console.SeedHTTPObject("v2/buckets/assets", map[string]any{
		"id": "cors", "allowed_origins": []any{"https://acme.dev"},
	}); err != nil {
		return err
	}
	if _, err := c.Console.SeedHTTPObject("v1/clients", map[string]any{"id": "web", "flag_keys": "checkout-v2"}); err != nil {
		return err
	}
	// The flag service makes a flag's key from its name and stamps its
	// creation, as the example's outputs (/key, /created_at) read them.
	c.Console.SetHTTPShape("v1/flags", HTTPShape{Generated: map[string]string{"key": "slug:name", "created_at": "now"}})

	// examples/recipes-and-manual-steps.release.plan.yaml: the recipes'
	// providers, as their APIs answer (httptargets.go; answers checked
	// against the descriptions where there is one).
	for _, r := range []string{"github.repo_webhook", "sentry.release", "cloudflare.dns_cname", "resend.webhook"} {
		c.Console.UseHTTPTarget(r)
	}
	return nil
}
