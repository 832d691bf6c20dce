package initplan

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Placeholder is a value Starter could not know.
type Placeholder struct {
	Path  string `json:"path"`  // providers.neon.project, changes.login.url
	Value string `json:"value"` // what the plan holds now
	What  string `json:"what"`  // what to put there
}

// Starter is a starter plan.
type Starter struct {
	Plan         []byte        `json:"-"`
	Lines        []string      `json:"lines"` // the ids of its lines, in order
	Placeholders []Placeholder `json:"placeholders"`
	// Notes say what the plan lacks that init could not decide.
	Notes []string `json:"notes"`
}

// previewURLPlaceholder stands for the preview's URL where no line of the
// plan makes it.
const previewURLPlaceholder = "https://${ctx.scope}.preview.example.com"

// RenderStarter renders the starter plan of a detection: a provider block
// for each detected provider an op manages, a line for each op that makes
// a preview's side effect (a database branch, the deployment's variables,
// the login callbacks, a flag's target), every setting it could not find
// as a placeholder. With no provider detected it holds one manual step.
func RenderStarter(d *Detection) *Starter {
	r := &renderer{d: d, s: &Starter{Placeholders: []Placeholder{}}}
	r.header()
	r.providers()
	r.b.WriteString("\nchanges:\n")
	r.database()
	r.hosts()
	if r.dbOutput != "" && r.previewURL == "" && !r.d.Has("cloudflare") {
		r.s.Notes = append(r.s.Notes, "no deployment host was detected (vercel, netlify, cloudflare): the database branch's connection string reaches no preview; add the host's env line (docs/adapters.md) or a manual.step")
	}
	r.auth()
	r.flags()
	if len(r.s.Lines) == 0 {
		r.manualStep()
	}
	r.s.Plan = []byte(r.b.String())
	return r.s
}

type renderer struct {
	d *Detection
	s *Starter
	b strings.Builder

	dbOutput   string // the line output holding the connection string
	previewURL string // the line output holding the preview's URL
}

// q is a YAML double-quoted string.
func q(s string) string { return strconv.Quote(s) }

func (r *renderer) line(format string, args ...any) {
	fmt.Fprintf(&r.b, format+"\n", args...)
}

func (r *renderer) header() {
	r.line("# yaml-language-server: $schema=https://sponson.dev/schema/release.plan.schema.json")
	r.line("#")
	r.line("# Written by `sponson init` from what it found in this repository. Values marked")
	r.line("# FILL IN are placeholders: replace them, then check the plan with")
	r.line("#")
	r.line("#   sponson validate")
	r.line("#   sponson plan --pr <number>")
	r.line("#")
	r.line("# Every op's parameters and outputs: docs/adapters.md; the format: docs/plan-format.md.")
	r.line("version: 1")
	r.line("environments: [preview]")
}

// settingFor is a provider block's setting: found, or a placeholder.
func (r *renderer) settingFor(adapter, name, placeholder, what string) string {
	key := adapter + "." + name
	if s, ok := r.d.Settings[key]; ok {
		return fmt.Sprintf("    %s: %s   # from %s", name, q(s.Value), s.Source)
	}
	r.s.Placeholders = append(r.s.Placeholders, Placeholder{Path: "providers." + key, Value: placeholder, What: what})
	return fmt.Sprintf("    %s: %s   # FILL IN: %s", name, q(placeholder), what)
}

// providerBlocks are each adapter's settings a starter writes:
// name, placeholder, what it is.
var providerBlocks = map[string][][3]string{
	"neon":         {{"project", "fill-in-neon-project-id", "the Neon project id (console: Settings, or NEON_PROJECT_ID)"}},
	"vercel":       {{"project", "fill-in-vercel-project", "the Vercel project id or name (.vercel/project.json after `vercel link`, or VERCEL_PROJECT_ID)"}},
	"netlify":      {{"site", "fill-in-netlify-site-id", "the Netlify site id (Site configuration, or NETLIFY_SITE_ID)"}},
	"cloudflare":   {{"account", "fill-in-cloudflare-account-id", "the Cloudflare account id (CLOUDFLARE_ACCOUNT_ID)"}, {"project", "fill-in-pages-project", "the Pages project's name (wrangler.toml's name)"}},
	"supabase":     {{"project", "fill-in-supabase-project-ref", "the Supabase project ref (supabase/.temp/project-ref after `supabase link`)"}},
	"auth0":        {{"domain", "fill-in.eu.auth0.com", "the Auth0 tenant's domain (AUTH0_DOMAIN)"}, {"client", "fill-in-auth0-client-id", "the application's client id (AUTH0_CLIENT_ID)"}},
	"clerk":        nil,
	"planetscale":  {{"organization", "fill-in-planetscale-org", "the PlanetScale organization"}, {"database", "fill-in-planetscale-database", "the PlanetScale database"}},
	"launchdarkly": {{"project", "fill-in-launchdarkly-project", "the LaunchDarkly project key"}, {"environment", "fill-in-launchdarkly-environment", "the environment key previews are targeted in (not production)"}},
}

func (r *renderer) providers() {
	if len(r.d.Providers) == 0 {
		return
	}
	r.line("\nproviders:")
	for _, a := range r.d.Providers {
		block := providerBlocks[a]
		if len(block) == 0 {
			r.line("  %s: {}", a)
			continue
		}
		r.line("  %s:", a)
		for _, s := range block {
			r.line("%s", r.settingFor(a, s[0], s[1], s[2]))
		}
		if a == "vercel" {
			if s, ok := r.d.Settings["vercel.team"]; ok {
				r.line("    team: %s   # from %s", q(s.Value), s.Source)
			}
		}
	}
}

func (r *renderer) add(id string) { r.s.Lines = append(r.s.Lines, id) }

// database writes the database branch of the first database provider.
func (r *renderer) database() {
	switch {
	case r.d.Has("neon"):
		r.line("  # A database branch per scope, copied from main when it is created.")
		r.line("  - id: db\n    adapter: neon\n    op: branch\n    parent: main")
		r.add("db")
		r.dbOutput = "db.connection_string"
	case r.d.Has("supabase"):
		r.line("  # A preview branch of the Supabase project, waited for until healthy.")
		r.line("  - id: db\n    adapter: supabase\n    op: branch")
		r.add("db")
		r.dbOutput = "db.connection_string"
	case r.d.Has("planetscale"):
		r.line("  # A PlanetScale branch per scope, and a password on it (answered once).")
		r.line("  - id: db\n    adapter: planetscale\n    op: branch\n    parent: main")
		r.line("  - id: dbpass\n    adapter: planetscale\n    op: password\n    branch: { from: db.name }\n    role: readwriter")
		r.add("db")
		r.add("dbpass")
		r.dbOutput = "dbpass.connection_string"
	}
}

// dbVar is the variable the app reads its connection string from.
func (r *renderer) dbVar() string { return cmp.Or(r.d.DatabaseURL, "DATABASE_URL") }

// values writes a values map: the connection string, else one example.
func (r *renderer) values(indent, key string) {
	r.line("%s%s:", indent, key)
	if r.dbOutput != "" {
		r.line("%s  %s: { from: %s }", indent, r.dbVar(), r.dbOutput)
		for _, n := range r.wired() {
			r.line("%s  %s: { from: db.api_url }", indent, n)
		}
		return
	}
	r.line("%s  PREVIEW_SCOPE: ${ctx.scope}   # an example: replace it with the variables a preview needs", indent)
}

// wired are the .env names a line's output gives: a Supabase branch's
// API URL for the variables that name the project's URL.
func (r *renderer) wired() []string {
	var out []string
	if r.dbOutput != "db.connection_string" || !r.d.Has("supabase") || r.d.Has("neon") {
		return nil
	}
	for _, n := range r.d.EnvNames {
		if strings.HasSuffix(n, "SUPABASE_URL") && n != r.dbVar() {
			out = append(out, n)
		}
	}
	return out
}

// pending is the comment naming the .env variables no line writes.
func (r *renderer) pending(indent string) {
	var names []string
	for _, n := range r.d.EnvNames {
		if n != r.dbVar() && !slices.Contains(r.wired(), n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	r.line("%s# The .env files also name: %s.", indent, strings.Join(names, ", "))
	r.line("%s# A preview's own value is a line's output ({ from: line.output }) or a secret", indent)
	r.line("%s# reference ({ secret: \"env://NAME\" }); never write a value here.", indent)
}

// hosts writes the deployment's variables of each detected host.
func (r *renderer) hosts() {
	if r.d.Has("vercel") {
		r.line("  # The Vercel preview deployment's variables. preview_url is known once the")
		r.line("  # deploy of this commit is ready.")
		r.line("  - id: vercel-env\n    adapter: vercel\n    op: env\n    target: preview")
		r.pending("    ")
		r.values("    ", "values")
		r.add("vercel-env")
		r.previewURL = cmp.Or(r.previewURL, "vercel-env.preview_url")
	}
	if r.d.Has("netlify") {
		r.line("  # The Netlify deploy preview's variables.")
		r.line("  - id: netlify-env\n    adapter: netlify\n    op: env\n    context: deploy-preview")
		r.pending("    ")
		r.values("    ", "values")
		r.add("netlify-env")
		r.previewURL = cmp.Or(r.previewURL, "netlify-env.preview_url")
	}
	if r.d.Has("cloudflare") {
		r.line("  # The Cloudflare Pages project's preview variables (secrets are compared by presence).")
		r.line("  - id: pages-env\n    adapter: cloudflare\n    op: pages_env\n    target: preview")
		r.pending("    ")
		if r.dbOutput != "" {
			r.line("    secrets:\n      %s: { from: %s }", r.dbVar(), r.dbOutput)
		} else {
			r.line("    vars:\n      PREVIEW_SCOPE: ${ctx.scope}   # an example: replace it with the variables a preview needs")
		}
		r.add("pages-env")
	}
}

// url is a line's URL: the preview's, from the line that makes it, else a
// placeholder.
func (r *renderer) url(id, suffix, what string) string {
	if r.previewURL != "" {
		return "{ from: " + r.previewURL + " }"
	}
	v := previewURLPlaceholder + suffix
	r.s.Placeholders = append(r.s.Placeholders, Placeholder{Path: "changes." + id + ".url", Value: v, What: what})
	return q(v) + "   # FILL IN: " + what
}

// auth writes the login callbacks and redirects of the detected providers.
func (r *renderer) auth() {
	const what = "the preview's URL (with ${ctx.scope} where the scope goes)"
	if r.d.Has("auth0") {
		r.line("  # Log in to the preview: its URL joins the application's callbacks and logout URLs.")
		r.line("  - id: login\n    adapter: auth0\n    op: callback\n    url: %s", r.url("login", "/api/auth/callback", what))
		r.line("  - id: logout\n    adapter: auth0\n    op: callback\n    list: allowed_logout_urls\n    url: %s", r.url("logout", "", what))
		r.add("login")
		r.add("logout")
	}
	if r.d.Has("clerk") {
		r.line("  # Sign-in redirects back to the preview.")
		r.line("  - id: signin\n    adapter: clerk\n    op: redirect_allow\n    url: %s", r.url("signin", "/sso-callback", what))
		r.add("signin")
	}
	if r.d.Has("supabase") {
		r.line("  # Supabase Auth may redirect to the preview.")
		r.line("  - id: auth-redirect\n    adapter: supabase\n    op: auth_redirect\n    url: %s", r.url("auth-redirect", "/**", what))
		r.add("auth-redirect")
	}
}

func (r *renderer) flags() {
	if !r.d.Has("launchdarkly") {
		return
	}
	const flag = "fill-in-flag-key"
	r.s.Placeholders = append(r.s.Placeholders, Placeholder{Path: "changes.flag.flag", Value: flag, What: "the key of a flag previews turn on (it must exist)"})
	r.line("  # A flag turned on for this scope's previews only.")
	r.line("  - id: flag\n    adapter: launchdarkly\n    op: flag_target\n    flag: %s   # FILL IN: the key of a flag previews turn on\n    variation: true", q(flag))
	r.add("flag")
}

// manualStep is the one line of a plan for a repository where no provider
// an op manages was found.
func (r *renderer) manualStep() {
	const todo = "FILL IN: what a person does for a preview, in Markdown."
	r.s.Placeholders = append(r.s.Placeholders, Placeholder{Path: "changes.first-step.instructions", Value: todo, What: "the first side effect of a pull request: a line of an op (docs/adapters.md), or a step a person does"})
	r.line("  # No provider an op manages was found. This step is done by a person: replace it")
	r.line("  # with a line of an op (docs/adapters.md), or the generic http.resource.")
	r.line("  - id: first-step\n    adapter: manual\n    op: step")
	r.line("    title: %s", q("Prepare the preview of ${ctx.scope}"))
	r.line("    instructions: %s", q(todo))
	r.add("first-step")
}
