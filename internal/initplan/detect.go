package initplan

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Finding is one thing detected, and where.
type Finding struct {
	Service string `json:"service"` // a service's name: neon, prisma, nextjs, sentry, ...
	Title   string `json:"title"`
	Source  string `json:"source"` // "package.json: @prisma/client", ".env.example: NEON_API_KEY"
}

// Setting is a provider block's value found in the repository or the
// environment, and where.
type Setting struct {
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Unmanaged is a detected service no op manages.
type Unmanaged struct {
	Service string   `json:"service"`
	Title   string   `json:"title"`
	Pointer string   `json:"pointer"`
	Sources []string `json:"sources"`
}

// Detection is what Detect found in a repository.
type Detection struct {
	Findings []Finding `json:"findings"`
	// Providers are the adapters a detected service is managed by, sorted.
	Providers []string `json:"providers"`
	// Settings are provider block values found, by "adapter.setting".
	Settings map[string]Setting `json:"settings"`
	// Unmanaged are detected services no op manages.
	Unmanaged []Unmanaged `json:"unmanaged"`
	// EnvNames are the variable names of the .env files, sorted (never a
	// value).
	EnvNames []string `json:"env_names"`
	// ORM is prisma or drizzle ("" for none); DatabaseURL the variable
	// its schema reads the connection string from ("" when unknown).
	ORM         string `json:"orm,omitempty"`
	DatabaseURL string `json:"database_url_var,omitempty"`
	// Framework is nextjs, remix, sveltekit, astro, nuxt, vite or "".
	Framework string `json:"framework,omitempty"`
}

// Has reports whether a provider (an adapter's name) was detected.
func (d *Detection) Has(adapter string) bool { return slices.Contains(d.Providers, adapter) }

// idVars are the variables whose values Detect reads from the
// environment: ids of a provider's project, never a credential.
var idVars = map[string]string{
	"VERCEL_PROJECT_ID":     "vercel.project",
	"VERCEL_ORG_ID":         "vercel.team",
	"NEON_PROJECT_ID":       "neon.project",
	"NETLIFY_SITE_ID":       "netlify.site",
	"CLOUDFLARE_ACCOUNT_ID": "cloudflare.account",
	"CLOUDFLARE_PROJECT":    "cloudflare.project",
	"SUPABASE_PROJECT_REF":  "supabase.project",
	"SUPABASE_PROJECT_ID":   "supabase.project",
	"AUTH0_DOMAIN":          "auth0.domain",
	"AUTH0_CLIENT_ID":       "auth0.client",
	"PLANETSCALE_ORG":       "planetscale.organization",
	"PLANETSCALE_DATABASE":  "planetscale.database",
	"LAUNCHDARKLY_PROJECT":  "launchdarkly.project",
}

// credentialVars are the providers' credential variables: init says they
// are set (by name) and never reads them (TestCredentialVarsAreTheOps).
var credentialVars = []string{
	"AUTH0_MANAGEMENT_TOKEN", "CLERK_SECRET_KEY", "CLOUDFLARE_API_TOKEN", "LAUNCHDARKLY_ACCESS_TOKEN",
	"NEON_API_KEY", "NETLIFY_AUTH_TOKEN", "PLANETSCALE_SERVICE_TOKEN", "PLANETSCALE_SERVICE_TOKEN_ID",
	"SUPABASE_ACCESS_TOKEN", "VERCEL_TOKEN",
}

// idValue keeps only values shaped like an id or a host name: a variable
// set to something else (a URL with credentials, a token pasted by
// mistake) is never copied into the plan.
var idValue = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ciFiles are the CI configurations scanned for variable names.
var ciFiles = []string{".gitlab-ci.yml", ".circleci/config.yml", "bitbucket-pipelines.yml", "netlify.toml", "vercel.json"}

// Detect reads the repository at fsys (its root) and the environment
// (lookup; nil is an empty one).
func Detect(fsys fs.FS, lookup func(string) (string, bool)) *Detection {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	d := &detector{fsys: fsys, seen: map[string]bool{}, settings: map[string]Setting{}, services: map[string][]string{}, env: map[string]bool{}}
	for _, dir := range appDirs(fsys) {
		d.dir = dir
		d.manifests()
		d.providerFiles()
		d.orms()
		d.envFiles()
	}
	d.dir = "."
	d.environment(lookup)
	d.ciConfig()
	return d.result()
}

// appDirs are the folders read for an app: the root, and each folder of
// apps/ and packages/ (a monorepo's apps).
func appDirs(fsys fs.FS) []string {
	dirs := []string{"."}
	for _, parent := range []string{"apps", "packages"} {
		entries, err := fs.ReadDir(fsys, parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				dirs = append(dirs, parent+"/"+e.Name())
			}
		}
	}
	return dirs
}

type detector struct {
	fsys                  fs.FS
	dir                   string // the app folder being read ("." for the root)
	findings              []Finding
	seen                  map[string]bool     // service + source already found
	services              map[string][]string // service → sources
	settings              map[string]Setting
	env                   map[string]bool // names in .env files
	orm, dbURL, framework string
}

// rel is name in the app folder being read, as a source says it.
func (d *detector) rel(name string) string { return path.Join(d.dir, name) }

func (d *detector) read(name string) ([]byte, bool) {
	b, err := fs.ReadFile(d.fsys, d.rel(name))
	return b, err == nil
}

func (d *detector) exists(name string) bool {
	_, err := fs.Stat(d.fsys, d.rel(name))
	return err == nil
}

// found records that service was detected at source.
func (d *detector) found(svc, title, source string) {
	if d.seen[svc+"\x00"+source] {
		return
	}
	d.seen[svc+"\x00"+source] = true
	d.findings = append(d.findings, Finding{Service: svc, Title: title, Source: source})
	d.services[svc] = append(d.services[svc], source)
}

// setting records a provider block value unless one was found before.
func (d *detector) setting(key, value, source string) {
	if _, ok := d.settings[key]; ok || !idValue.MatchString(value) {
		return
	}
	d.settings[key] = Setting{Value: value, Source: source}
}

// dependency records what a dependency name means.
func (d *detector) dependency(file, name string) {
	for _, s := range services {
		if s.matchPackage(name) {
			d.found(s.name, s.title, file+": "+name)
		}
	}
	if fw, ok := frameworks[name]; ok && d.framework == "" {
		d.framework = fw
		d.found(fw, frameworkTitles[fw], file+": "+name)
	}
	switch {
	case name == "prisma" || name == "@prisma/client" || name == "prisma-client-py":
		d.orm = cmp.Or(d.orm, "prisma")
		d.found("prisma", "Prisma", file+": "+name)
	case name == "drizzle-orm" || name == "drizzle-kit":
		d.orm = cmp.Or(d.orm, "drizzle")
		d.found("drizzle", "Drizzle", file+": "+name)
	}
}

var frameworks = map[string]string{
	"next": "nextjs", "@remix-run/react": "remix", "@sveltejs/kit": "sveltekit", "astro": "astro", "nuxt": "nuxt", "vite": "vite",
}

var frameworkTitles = map[string]string{
	"nextjs": "Next.js", "remix": "Remix", "sveltekit": "SvelteKit", "astro": "Astro", "nuxt": "Nuxt", "vite": "Vite",
}

// manifests reads the dependency manifests.
func (d *detector) manifests() {
	if b, ok := d.read("package.json"); ok {
		var pkg struct {
			Dependencies    map[string]any `json:"dependencies"`
			DevDependencies map[string]any `json:"devDependencies"`
		}
		if json.Unmarshal(b, &pkg) == nil {
			for _, name := range slices.Sorted(maps.Keys(pkg.Dependencies)) {
				d.dependency(d.rel("package.json"), name)
			}
			for _, name := range slices.Sorted(maps.Keys(pkg.DevDependencies)) {
				d.dependency(d.rel("package.json"), name)
			}
		}
	}
	if b, ok := d.read("go.mod"); ok {
		for _, m := range goRequire.FindAllSubmatch(b, -1) {
			d.dependency(d.rel("go.mod"), string(m[1]))
		}
	}
	if b, ok := d.read("requirements.txt"); ok {
		for _, line := range strings.Split(string(b), "\n") {
			if name := pyName(line); name != "" {
				d.dependency(d.rel("requirements.txt"), name)
			}
		}
	}
	if b, ok := d.read("pyproject.toml"); ok {
		for _, m := range pyprojectDep.FindAllSubmatch(b, -1) {
			d.dependency(d.rel("pyproject.toml"), strings.ToLower(string(m[1])))
		}
	}
}

var (
	// goRequire matches a module path in a require line or block.
	goRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?([a-z0-9.-]+\.[a-z]{2,}/[^\s]+)\s+v[0-9]`)
	// pyprojectDep matches a quoted requirement ("supabase>=2", 'sentry-sdk[flask]').
	pyprojectDep = regexp.MustCompile(`["']([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:[<>=!~;].*?)?["']`)
	pyReq        = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)`)
)

func pyName(line string) string {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "-") {
		return ""
	}
	return strings.ToLower(pyReq.FindString(line))
}

// providerFiles reads the providers' own files, and the ids they hold.
func (d *detector) providerFiles() {
	for _, s := range services {
		for _, f := range s.files {
			if d.exists(f) {
				d.found(s.name, s.title, d.rel(f))
			}
		}
	}
	if b, ok := d.read(".vercel/project.json"); ok {
		var p struct {
			ProjectID string `json:"projectId"`
			OrgID     string `json:"orgId"`
		}
		if json.Unmarshal(b, &p) == nil {
			d.setting("vercel.project", p.ProjectID, d.rel(".vercel/project.json")+": projectId")
			if strings.HasPrefix(p.OrgID, "team_") {
				d.setting("vercel.team", p.OrgID, d.rel(".vercel/project.json")+": orgId")
			}
		}
	}
	if b, ok := d.read(".netlify/state.json"); ok {
		var s struct {
			SiteID string `json:"siteId"`
		}
		if json.Unmarshal(b, &s) == nil {
			d.setting("netlify.site", s.SiteID, d.rel(".netlify/state.json")+": siteId")
		}
	}
	if b, ok := d.read(d.rel("supabase/.temp/project-ref")); ok {
		d.setting("supabase.project", strings.TrimSpace(string(b)), d.rel("supabase/.temp/project-ref"))
	}
	if b, ok := d.read("wrangler.toml"); ok {
		top := tomlTop(b)
		if top["pages_build_output_dir"] != "" {
			d.setting("cloudflare.project", top["name"], d.rel("wrangler.toml")+": name")
		}
		d.setting("cloudflare.account", top["account_id"], d.rel("wrangler.toml")+": account_id")
	}
}

// tomlTop returns the top-level string keys of a TOML file (before its
// first table): enough for wrangler.toml's name and account_id.
func tomlTop(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			break
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		out[strings.TrimSpace(k)] = strings.Trim(v, `"'`)
	}
	return out
}

// orms reads the ORM's schema: which variable holds the connection string.
// The first ORM found is the repository's; each is read at its first file.
func (d *detector) orms() {
	for _, o := range []struct {
		name, label string
		files       []string
		url         *regexp.Regexp
	}{
		{"prisma", "Prisma", []string{"prisma/schema.prisma", "schema.prisma"}, prismaURL},
		{"drizzle", "Drizzle", []string{"drizzle.config.ts", "drizzle.config.js", "drizzle.config.mjs", "drizzle.config.json"}, drizzleURL},
	} {
		for _, f := range o.files {
			b, ok := d.read(f)
			if !ok {
				continue
			}
			d.orm = cmp.Or(d.orm, o.name)
			d.found(o.name, o.label, d.rel(f))
			if m := o.url.FindSubmatch(b); m != nil {
				d.dbURL = cmp.Or(d.dbURL, string(m[1]))
			}
			break
		}
	}
}

var (
	prismaURL  = regexp.MustCompile(`(?m)^\s*url\s*=\s*env\(\s*"([A-Za-z_][A-Za-z0-9_]*)"\s*\)`)
	drizzleURL = regexp.MustCompile(`process\.env\.([A-Za-z_][A-Za-z0-9_]*)`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// ciVar is a variable name in a CI file: an upper-case word of a
	// provider's, read as a name only.
	ciVar = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b`)
)

// envFiles reads the names (only) of the .env files at the root.
func (d *detector) envFiles() {
	entries, err := fs.ReadDir(d.fsys, d.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() || (e.Name() != ".env" && !strings.HasPrefix(e.Name(), ".env.")) {
			continue
		}
		b, ok := d.read(e.Name())
		if !ok {
			continue
		}
		for _, name := range envNames(b) {
			d.env[name] = true
			d.envName(d.rel(e.Name()), name)
		}
	}
}

// envNames returns the variable names of a dotenv file. Each line is cut at
// its "=" and what follows is dropped at once: the values are never kept.
func envNames(b []byte) []string {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		name, _, ok := strings.Cut(sc.Text(), "=")
		name = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), "export "))
		if ok && envName.MatchString(name) {
			names = append(names, name)
		}
	}
	return names
}

// envName records what a variable name means.
func (d *detector) envName(file, name string) {
	for _, s := range services {
		if s.matchEnv(name) {
			d.found(s.name, s.title, file+": "+name)
		}
	}
}

// ciConfig scans the CI configurations for the names of variables.
func (d *detector) ciConfig() {
	files := slices.Clone(ciFiles)
	if entries, err := fs.ReadDir(d.fsys, ".github/workflows"); err == nil {
		for _, e := range entries {
			if ext := path.Ext(e.Name()); !e.IsDir() && (ext == ".yml" || ext == ".yaml") {
				files = append(files, ".github/workflows/"+e.Name())
			}
		}
	}
	for _, f := range files {
		b, ok := d.read(f)
		if !ok {
			continue
		}
		for _, name := range ciVar.FindAllString(string(b), -1) {
			d.envName(f, name)
		}
		d.ciIDs(f, b)
		for _, c := range deployCommands {
			if bytes.Contains(b, []byte(c.text)) {
				s, _ := serviceNamed(c.service)
				d.found(s.name, s.title, f+": "+c.text)
			}
		}
	}
}

// ciIDs reads the provider ids a CI file sets as literals (env:
// VERCEL_PROJECT_ID: prj_...): only the names of idVars, and never a value
// taken from elsewhere (${{ secrets.X }}, $X).
func (d *detector) ciIDs(file string, b []byte) {
	for _, m := range ciIDLine.FindAllSubmatch(b, -1) {
		name, v := string(m[1]), strings.Trim(string(m[2]), `"'`)
		key, ok := idVars[name]
		if !ok || strings.ContainsAny(v, "${}") {
			continue
		}
		if key == "vercel.team" && !strings.HasPrefix(v, "team_") {
			continue
		}
		d.setting(key, v, file+": "+name)
	}
}

// ciIDLine is a variable set to a literal in YAML (NAME: value) or TOML
// (NAME = "value").
var ciIDLine = regexp.MustCompile(`(?m)^\s*([A-Z][A-Z0-9_]*)\s*[:=]\s*("[^"\n]*"|'[^'\n]*'|[^\s#]+)\s*(?:#.*)?$`)

// deployCommands are the steps of a CI file that deploy to a host.
var deployCommands = []struct{ text, service string }{
	{"vercel deploy", "vercel"}, {"vercel pull", "vercel"}, {"vercel build", "vercel"}, {"amondnet/vercel-action", "vercel"},
	{"netlify deploy", "netlify"}, {"nwtgck/actions-netlify", "netlify"},
	{"wrangler pages deploy", "cloudflare"}, {"cloudflare/pages-action", "cloudflare"}, {"cloudflare/wrangler-action", "cloudflare"},
}

// environment reads the variables of the CI or shell init runs in: every
// name, and the values of the provider ids in idVars.
func (d *detector) environment(lookup func(string) (string, bool)) {
	for _, name := range credentialVars {
		if _, ok := lookup(name); ok {
			d.envName("environment", name) // the name only
		}
	}
	for _, name := range slices.Sorted(maps.Keys(idVars)) {
		v, ok := lookup(name)
		if !ok || v == "" {
			continue
		}
		d.envName("environment", name)
		key := idVars[name]
		if key == "vercel.team" && !strings.HasPrefix(v, "team_") {
			continue // a personal account's id is no team
		}
		if key == "auth0.domain" {
			v = strings.TrimSuffix(strings.TrimPrefix(v, "https://"), "/")
		}
		d.setting(key, v, "environment: "+name)
	}
}

// result assembles the detection.
func (d *detector) result() *Detection {
	r := &Detection{Findings: d.findings, Settings: d.settings, Unmanaged: []Unmanaged{}, ORM: d.orm, DatabaseURL: d.dbURL, Framework: d.framework}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for _, s := range services {
		srcs, ok := d.services[s.name]
		if !ok {
			continue
		}
		if s.adapter != "" {
			r.Providers = append(r.Providers, s.adapter)
			continue
		}
		r.Unmanaged = append(r.Unmanaged, Unmanaged{Service: s.name, Title: s.title, Pointer: s.pointer, Sources: srcs})
	}
	slices.Sort(r.Providers)
	if r.Providers == nil {
		r.Providers = []string{}
	}
	r.EnvNames = slices.Sorted(maps.Keys(d.env))
	if r.EnvNames == nil {
		r.EnvNames = []string{}
	}
	// A database no op manages: a Prisma or Drizzle schema with no
	// provider of a database branch.
	if d.orm != "" && !r.Has("neon") && !r.Has("supabase") && !r.Has("planetscale") {
		r.Unmanaged = append(r.Unmanaged, Unmanaged{Service: "database", Title: "a database (" + d.orm + ")",
			Pointer: "no provider of a database branch was detected (neon, supabase, planetscale): name its provider in the plan, or create the database with http.resource (docs/adapters.md)",
			Sources: d.services[d.orm]})
	}
	return r
}
