package initplan

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func files(kv ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = &fstest.MapFile{Data: []byte(kv[i+1])}
	}
	return m
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fs         fstest.MapFS
		env        map[string]string
		providers  []string
		unmanaged  []string
		orm, dbURL string
		settings   map[string]string
	}{
		{name: "nothing", fs: files("README.md", "hi")},
		{name: "next prisma neon auth0",
			fs: files("package.json", `{"dependencies":{"next":"15.0.0","@prisma/client":"6","@auth0/nextjs-auth0":"4"},"devDependencies":{"prisma":"6"}}`,
				"prisma/schema.prisma", `datasource db { provider = "postgresql"
  url = env("DATABASE_URL")
}`, ".env.example", "NEON_API_KEY=\nDATABASE_URL=postgres://u:p@h/db\nAUTH0_SECRET=x\n"),
			providers: []string{"auth0", "neon"}, orm: "prisma", dbURL: "DATABASE_URL"},
		{name: "go service",
			fs:        files("go.mod", "module x\n\ngo 1.26\n\nrequire (\n\tgithub.com/clerk/clerk-sdk-go/v2 v2.0.0\n\tgithub.com/getsentry/sentry-go v0.30.0\n)\nrequire github.com/launchdarkly/go-server-sdk/v7 v7.0.0\n"),
			providers: []string{"clerk", "launchdarkly"}, unmanaged: []string{"sentry"}},
		{name: "python",
			fs:        files("requirements.txt", "# deps\nsupabase==2.0\nstripe>=5\n-r other.txt\n", "pyproject.toml", "[project]\ndependencies = [\"sentry-sdk[flask]>=2\", 'psycopg']\n"),
			providers: []string{"supabase"}, unmanaged: []string{"sentry", "stripe"}},
		{name: "provider files",
			fs: files("vercel.json", "{}", ".vercel/project.json", `{"projectId":"prj_1","orgId":"user_1"}`, "netlify.toml", "[build]\n", ".netlify/state.json", `{"siteId":"abc-123"}`,
				"wrangler.toml", "name = \"marketing\"\npages_build_output_dir = \"./dist\"\naccount_id = \"acc123\" # mine\n[vars]\nname = \"no\"\n", "supabase/config.toml", "project_id = \"local\"\n", "supabase/.temp/project-ref", "abcdefghijklmnopqrst\n"),
			providers: []string{"cloudflare", "netlify", "supabase", "vercel"},
			settings:  map[string]string{"vercel.project": "prj_1", "netlify.site": "abc-123", "cloudflare.project": "marketing", "cloudflare.account": "acc123", "supabase.project": "abcdefghijklmnopqrst"}},
		{name: "deploy commands of CI files",
			fs:        files(".github/workflows/preview.yml", "steps:\n  - run: npx vercel pull --yes --environment=preview\n  - run: npx vercel deploy --prebuilt\n", "bitbucket-pipelines.yml", "script:\n  - npx netlify deploy --dir=dist\n"),
			providers: []string{"netlify", "vercel"}},
		{name: "provider ids set as literals in CI files",
			fs: files(".github/workflows/preview.yml", "env:\n  VERCEL_PROJECT_ID: prj_lit\n  VERCEL_ORG_ID: ${{ secrets.VERCEL_ORG_ID }}\n  NEON_PROJECT_ID: \"proj-lit\" # the app's\n",
				".gitlab-ci.yml", "variables:\n  NETLIFY_SITE_ID: $SITE\n"),
			providers: []string{"neon", "netlify", "vercel"},
			settings:  map[string]string{"vercel.project": "prj_lit", "neon.project": "proj-lit"}},
		{name: "a monorepo's apps",
			fs:        files("package.json", `{"devDependencies":{"turbo":"2"}}`, "apps/web/package.json", `{"dependencies":{"@clerk/nextjs":"6","next":"15"}}`, "apps/web/.env.example", "PLANETSCALE_ORG=\n", "packages/db/prisma/schema.prisma", "datasource db {\n  url = env(\"PS_URL\")\n}\n"),
			providers: []string{"clerk", "planetscale"}, orm: "prisma", dbURL: "PS_URL"},
		{name: "drizzle without a database provider",
			fs:        files("package.json", `{"dependencies":{"drizzle-orm":"1"}}`, "drizzle.config.ts", "export default { dbCredentials: { url: process.env.PG_URL! } }"),
			unmanaged: []string{"database"}, orm: "drizzle", dbURL: "PG_URL"},
		{name: "ci variables and the environment",
			fs:        files(".github/workflows/deploy.yml", "env:\n  PLANETSCALE_SERVICE_TOKEN: ${{ secrets.PLANETSCALE_SERVICE_TOKEN }}\n", ".gitlab-ci.yml", "variables:\n  UPSTASH_REDIS_REST_URL: x\n"),
			env:       map[string]string{"VERCEL_PROJECT_ID": "prj_env", "VERCEL_ORG_ID": "team_1", "NEON_PROJECT_ID": "proj-x", "NEON_API_KEY": "napi_secret_value", "AUTH0_DOMAIN": "https://acme.eu.auth0.com/", "NETLIFY_SITE_ID": "not an id!"},
			providers: []string{"auth0", "neon", "netlify", "planetscale", "vercel"}, unmanaged: []string{"upstash"},
			settings: map[string]string{"vercel.project": "prj_env", "vercel.team": "team_1", "neon.project": "proj-x", "auth0.domain": "acme.eu.auth0.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Detect(tc.fs, mapEnv(tc.env))
			if !slices.Equal(d.Providers, orEmpty(tc.providers)) {
				t.Errorf("providers = %v, want %v", d.Providers, tc.providers)
			}
			var un []string
			for _, u := range d.Unmanaged {
				un = append(un, u.Service)
				if u.Pointer == "" || len(u.Sources) == 0 {
					t.Errorf("unmanaged %s has no pointer or source: %+v", u.Service, u)
				}
			}
			if !slices.Equal(un, tc.unmanaged) {
				t.Errorf("unmanaged = %v, want %v", un, tc.unmanaged)
			}
			if d.ORM != tc.orm || d.DatabaseURL != tc.dbURL {
				t.Errorf("orm %q (%q), want %q (%q)", d.ORM, d.DatabaseURL, tc.orm, tc.dbURL)
			}
			got := map[string]string{}
			for k, s := range d.Settings {
				got[k] = s.Value
			}
			for k, v := range tc.settings {
				if got[k] != v {
					t.Errorf("setting %s = %q, want %q", k, got[k], v)
				}
			}
			if len(got) != len(tc.settings) {
				t.Errorf("settings = %v, want %v", got, tc.settings)
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// No value of a .env file, nor of a credential in the environment, is in
// anything Detect returns or the starter it renders.
func TestNoValueIsRead(t *testing.T) {
	const secret = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
	d := Detect(files(".env", "STRIPE_SECRET_KEY="+secret+"\nexport NEON_PROJECT_ID="+secret+"\n", ".env.local", "VERCEL_TOKEN = "+secret),
		mapEnv(map[string]string{"NEON_API_KEY": secret, "VERCEL_TOKEN": secret}))
	s := RenderStarter(d)
	all := string(s.Plan) + strings.Join(d.EnvNames, ",")
	for _, f := range d.Findings {
		all += f.Source
	}
	for _, v := range d.Settings {
		all += v.Value
	}
	if strings.Contains(all, secret) {
		t.Fatalf("a value reached the detection or the plan:\n%s", all)
	}
	if !slices.Equal(d.EnvNames, []string{"NEON_PROJECT_ID", "STRIPE_SECRET_KEY", "VERCEL_TOKEN"}) {
		t.Errorf("env names = %v", d.EnvNames)
	}
}
