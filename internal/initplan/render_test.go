package initplan

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/adapters"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
	"github.com/sponson/apply/pkg/scope"
)

// checkPlan parses src and runs every check validate --no-credentials
// runs on it, for env preview; it fails the test on any error.
func checkPlan(t *testing.T, src []byte) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("release.plan.yaml", src)
	if err != nil {
		t.Fatalf("the plan does not parse: %v\n%s", err, src)
	}
	eng := wire.Checker(wire.Config{})
	if err := p.Check(eng.Catalog()); err != nil {
		t.Fatalf("the plan fails the catalogue: %v\n%s", err, src)
	}
	n := 1
	c := scope.Ctx{Env: "preview", Scope: "pr-1", Repo: "acme/shop"}
	c.PR.Number = &n
	c.Git.Branch, c.Git.SHA, c.Git.ShortSHA = "feat/x", strings.Repeat("0", 40), "0000000"
	if _, err := p.Select("preview"); err != nil {
		t.Fatalf("select: %v", err)
	}
	if err := eng.CheckForm(p, c, "preview"); err != nil {
		t.Fatalf("the plan fails the ops' checks: %v\n%s", errs.Flatten(err), src)
	}
	return p
}

// Every provider, alone and all together, gives a starter plan that
// validates; so does a repository with none.
func TestStarterValidates(t *testing.T) {
	all := []string{}
	for a := range providerBlocks {
		all = append(all, a)
	}
	slices.Sort(all)
	cases := map[string]*Detection{"nothing": {Settings: map[string]Setting{}}}
	for _, a := range all {
		cases[a] = &Detection{Providers: []string{a}, Settings: map[string]Setting{}}
	}
	cases["all"] = &Detection{Providers: all, Settings: map[string]Setting{}, EnvNames: []string{"STRIPE_SECRET_KEY"}}
	cases["prisma-url"] = &Detection{Providers: []string{"neon", "vercel"}, Settings: map[string]Setting{"neon.project": {Value: "proj-1", Source: "environment: NEON_PROJECT_ID"}}, DatabaseURL: "POSTGRES_PRISMA_URL"}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			s := RenderStarter(d)
			p := checkPlan(t, s.Plan)
			var ids []string
			for _, l := range p.Lines {
				ids = append(ids, l.ID)
			}
			if !slices.Equal(ids, s.Lines) {
				t.Errorf("lines: plan has %v, Starter says %v", ids, s.Lines)
			}
			for _, ph := range s.Placeholders {
				if !strings.Contains(string(s.Plan), ph.Value) {
					t.Errorf("placeholder %s (%q) is not in the plan", ph.Path, ph.Value)
				}
			}
		})
	}
}

// Found settings replace placeholders; the connection string's variable
// is the one the ORM's schema reads.
func TestStarterUsesWhatWasFound(t *testing.T) {
	d := Detect(fstest.MapFS{
		"package.json":         {Data: []byte(`{"dependencies":{"next":"15","@prisma/client":"6","@neondatabase/serverless":"1"}}`)},
		"prisma/schema.prisma": {Data: []byte("datasource db {\n  provider = \"postgresql\"\n  url      = env(\"POSTGRES_PRISMA_URL\")\n}\n")},
		".vercel/project.json": {Data: []byte(`{"projectId":"prj_abc","orgId":"team_xyz"}`)},
	}, mapEnv(map[string]string{"NEON_PROJECT_ID": "proj-snowy-1"}))
	s := RenderStarter(d)
	checkPlan(t, s.Plan)
	for _, want := range []string{`project: "proj-snowy-1"   # from environment: NEON_PROJECT_ID`, `project: "prj_abc"`, `team: "team_xyz"`, "POSTGRES_PRISMA_URL: { from: db.connection_string }"} {
		if !strings.Contains(string(s.Plan), want) {
			t.Errorf("the plan lacks %q:\n%s", want, s.Plan)
		}
	}
	if len(s.Placeholders) != 0 {
		t.Errorf("placeholders left: %+v", s.Placeholders)
	}
}

func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The catalogue of services covers every adapter of the built-in
// registry that manages a provider, and each has a provider block.
func TestEveryAdapterIsDetected(t *testing.T) {
	reg := adapters.Registry(nil, nil)
	for _, a := range reg.Catalog().Adapters() {
		if a == "http" || a == "manual" {
			continue
		}
		found := false
		for _, s := range services {
			found = found || s.adapter == a
		}
		if !found {
			t.Errorf("no service of the catalogue is managed by adapter %s: init cannot detect it", a)
		}
		if _, ok := providerBlocks[a]; !ok {
			t.Errorf("adapter %s has no provider block in the starter", a)
		}
	}
}

// The credential variables init names are exactly those the ops declare.
func TestCredentialVarsAreTheOps(t *testing.T) {
	var want []string
	for _, s := range adapters.Registry(nil, nil).Specs() {
		for _, c := range s.Credentials {
			if !slices.Contains(want, c) {
				want = append(want, c)
			}
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(credentialVars))
	if !slices.Equal(got, want) {
		t.Errorf("credentialVars = %v, the ops declare %v", got, want)
	}
}
