package initplan

import "strings"

// service is something a repository can use: a provider an adapter
// manages, or a service no op manages (adapter ""), with where to look.
type service struct {
	name    string // the key in findings ("neon", "sentry")
	title   string // how people write it ("Neon", "Sentry")
	adapter string // the adapter that manages it; "" when no op does
	// pointer says, for a service no op manages, what to write instead.
	pointer string
	// packages are dependency names (npm, Go modules, Python); a name
	// ending in "/" or "-" matches every package it prefixes.
	packages []string
	// envPrefixes are variable names (or prefixes ending in "_") that
	// belong to it, in .env files and CI configuration.
	envPrefixes []string
	// files are paths whose presence means the service.
	files []string
}

const (
	genericPointer = "no op manages it: write it with the generic http.resource or http.list_item (docs/adapters.md, \"http.resource\"), or a manual.step"
)

func recipePointer(r string) string {
	return "no op of its own: adapter http, recipe " + r + " (docs/adapters.md, \"recipe " + r + "\")"
}

// services is the catalogue init detects. Its providers with an adapter
// must cover every adapter of the built-in registry but http and manual
// (TestEveryAdapterIsDetected).
var services = []service{
	{name: "neon", title: "Neon", adapter: "neon",
		packages:    []string{"@neondatabase/", "@prisma/adapter-neon", "neon-serverless", "github.com/neondatabase/"},
		envPrefixes: []string{"NEON_"}},
	{name: "vercel", title: "Vercel", adapter: "vercel",
		packages:    []string{"vercel", "@vercel/analytics", "@vercel/speed-insights", "@vercel/functions"},
		envPrefixes: []string{"VERCEL_"},
		files:       []string{"vercel.json", ".vercel/project.json"}},
	{name: "netlify", title: "Netlify", adapter: "netlify",
		packages:    []string{"netlify-cli", "@netlify/"},
		envPrefixes: []string{"NETLIFY_"},
		files:       []string{"netlify.toml", ".netlify/state.json"}},
	{name: "cloudflare", title: "Cloudflare Pages", adapter: "cloudflare",
		packages:    []string{"wrangler", "@cloudflare/next-on-pages", "@cloudflare/workers-types", "@cloudflare/"},
		envPrefixes: []string{"CLOUDFLARE_", "CF_PAGES"},
		files:       []string{"wrangler.toml", "wrangler.json", "wrangler.jsonc"}},
	{name: "supabase", title: "Supabase", adapter: "supabase",
		packages:    []string{"@supabase/", "supabase", "github.com/supabase-community/"},
		envPrefixes: []string{"SUPABASE_", "NEXT_PUBLIC_SUPABASE_", "VITE_SUPABASE_", "PUBLIC_SUPABASE_"},
		files:       []string{"supabase/config.toml"}},
	{name: "auth0", title: "Auth0", adapter: "auth0",
		packages:    []string{"@auth0/", "auth0", "auth0-python", "github.com/auth0/"},
		envPrefixes: []string{"AUTH0_"}},
	{name: "clerk", title: "Clerk", adapter: "clerk",
		packages:    []string{"@clerk/", "clerk-backend-api", "github.com/clerk/"},
		envPrefixes: []string{"CLERK_", "NEXT_PUBLIC_CLERK_", "VITE_CLERK_"}},
	{name: "planetscale", title: "PlanetScale", adapter: "planetscale",
		packages:    []string{"@planetscale/", "github.com/planetscale/"},
		envPrefixes: []string{"PLANETSCALE_"}},
	{name: "launchdarkly", title: "LaunchDarkly", adapter: "launchdarkly",
		packages:    []string{"launchdarkly-", "@launchdarkly/", "github.com/launchdarkly/"},
		envPrefixes: []string{"LAUNCHDARKLY_", "LD_SDK_KEY", "NEXT_PUBLIC_LD_"}},

	// Reachable through a recipe of http.recipe.
	{name: "sentry", title: "Sentry", pointer: recipePointer("sentry.release"),
		packages: []string{"@sentry/", "sentry-sdk", "github.com/getsentry/"}, envPrefixes: []string{"SENTRY_"}},
	{name: "posthog", title: "PostHog", pointer: recipePointer("posthog.release_condition"),
		packages: []string{"posthog-js", "posthog-node", "posthog"}, envPrefixes: []string{"POSTHOG_", "NEXT_PUBLIC_POSTHOG_"}},
	{name: "resend", title: "Resend", pointer: recipePointer("resend.webhook"),
		packages: []string{"resend", "github.com/resend/"}, envPrefixes: []string{"RESEND_"}},
	{name: "svix", title: "Svix", pointer: recipePointer("svix.endpoint"),
		packages: []string{"svix", "github.com/svix/"}, envPrefixes: []string{"SVIX_"}},
	{name: "turso", title: "Turso", pointer: recipePointer("turso.database_branch"),
		packages: []string{"@libsql/", "libsql-client", "github.com/tursodatabase/"}, envPrefixes: []string{"TURSO_"}},
	{name: "unleash", title: "Unleash", pointer: recipePointer("unleash.flag_strategy"),
		packages: []string{"unleash-client", "@unleash/", "github.com/Unleash/"}, envPrefixes: []string{"UNLEASH_"}},

	// No op and no recipe: the generic ops.
	{name: "stripe", title: "Stripe", pointer: genericPointer,
		packages: []string{"stripe", "@stripe/", "github.com/stripe/"}, envPrefixes: []string{"STRIPE_", "NEXT_PUBLIC_STRIPE_"}},
	{name: "upstash", title: "Upstash", pointer: genericPointer,
		packages: []string{"@upstash/"}, envPrefixes: []string{"UPSTASH_"}},
	{name: "sendgrid", title: "SendGrid", pointer: genericPointer,
		packages: []string{"@sendgrid/", "sendgrid"}, envPrefixes: []string{"SENDGRID_"}},
	{name: "postmark", title: "Postmark", pointer: genericPointer,
		packages: []string{"postmark"}, envPrefixes: []string{"POSTMARK_"}},
	{name: "firebase", title: "Firebase", pointer: genericPointer,
		packages: []string{"firebase", "firebase-admin"}, envPrefixes: []string{"FIREBASE_", "NEXT_PUBLIC_FIREBASE_"}},
	{name: "mongodb", title: "MongoDB", pointer: genericPointer,
		packages: []string{"mongodb", "mongoose", "go.mongodb.org/"}, envPrefixes: []string{"MONGODB_"}},
	{name: "redis", title: "Redis", pointer: genericPointer,
		packages: []string{"redis", "ioredis", "github.com/redis/"}, envPrefixes: []string{"REDIS_"}},
	{name: "github-oauth", title: "GitHub OAuth app", pointer: "no op manages an OAuth app's callback: a manual.step (docs/adapters.md, \"manual.step\")",
		envPrefixes: []string{"GITHUB_CLIENT_ID", "GITHUB_ID", "AUTH_GITHUB_"}},
}

// matchPackage reports whether dependency name belongs to s.
func (s service) matchPackage(name string) bool {
	for _, p := range s.packages {
		if p == name || (strings.HasSuffix(p, "/") || strings.HasSuffix(p, "-")) && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// matchEnv reports whether a variable name belongs to s.
func (s service) matchEnv(name string) bool {
	for _, p := range s.envPrefixes {
		if name == p || strings.HasSuffix(p, "_") && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func serviceNamed(name string) (service, bool) {
	for _, s := range services {
		if s.name == name {
			return s, true
		}
	}
	return service{}, false
}
