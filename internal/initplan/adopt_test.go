package initplan

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

// adoptBase has one line of every op whose unmanaged drift init adopts.
const adoptBase = `version: 1
environments: [preview]
providers:
  neon:         { project: proj-1 }
  vercel:       { project: prj_1 }
  netlify:      { site: site-1 }
  cloudflare:   { account: acc, project: pages }
  supabase:     { project: abcdefghijklmnopqrst }
  auth0:        { domain: acme.eu.auth0.com, client: c1 }
  clerk:        {}
  planetscale:  { organization: acme, database: shop }
  launchdarkly: { project: shop, environment: test }
  http:
    cdn: { base_url: "https://cdn.example.com", auth: { bearer_env: CDN_TOKEN } }
changes:
  # the lines
  - id: db
    adapter: neon
    op: branch
  - id: env
    adapter: vercel
    op: env
    values: { A: "1" }
  - id: nenv
    adapter: netlify
    op: env
    values: { A: "1" }
  - id: pages
    adapter: cloudflare
    op: pages_env
    secrets: { S: { secret: "env://S" } }
  - id: sbranch
    adapter: supabase
    op: branch
  - id: redirect
    adapter: supabase
    op: auth_redirect
    url: https://${ctx.scope}.preview.acme.dev/**
  - id: login
    adapter: auth0
    op: callback
    url: https://${ctx.scope}.preview.acme.dev/cb
  - id: signin
    adapter: clerk
    op: redirect_allow
    url: https://${ctx.scope}.preview.acme.dev/sso
  - id: psdb
    adapter: planetscale
    op: branch
  - id: pspass
    adapter: planetscale
    op: password
  - id: flag
    adapter: launchdarkly
    op: flag_target
    flag: new-checkout
    variation: false
  - id: cors
    adapter: http
    op: list_item
    api: cdn
    parent: { path: /v2/cors }
    list_path: /origins
    shape: delimited
    item: https://${ctx.scope}.preview.acme.dev

# after the changes
receipts: local
`

// The key of each op's unmanaged drift, as docs/adapters.md gives its form.
var adoptKeys = map[string]string{
	"db":       "branch:sponson/preview/pr-12",
	"env":      "env:preview:feat/x:DATABASE_URL",
	"nenv":     "env:branch:feat/x:API_URL",
	"pages":    "env:preview:S",
	"sbranch":  "branch:sponson-preview-pr-12",
	"redirect": "redirect:abcdefghijklmnopqrst:https://pr-12.preview.acme.dev/**",
	"login":    "callbacks:https://pr-12.preview.acme.dev/cb",
	"signin":   "redirect_url:https://pr-12.preview.acme.dev/sso",
	"psdb":     "branch:sponson-preview-pr-13",
	"pspass":   "password:sponson-preview-pr-12:sponson-preview-pr-12",
	"flag":     "target:test:new-checkout:user:pr-12",
	"cors":     "cdn:/v2/cors#/origins=https://pr-12.preview.acme.dev",
}

// Adopting one resource of every op gives a plan that still validates, with
// each new line in changes (before the keys that follow it) and the rest
// of the file byte for byte; a second append adds nothing.
func TestAppendAdoptionsValidatesAndIsIdempotent(t *testing.T) {
	p, err := plan.Parse("release.plan.yaml", []byte(adoptBase))
	if err != nil {
		t.Fatal(err)
	}
	var as []Adoption
	for _, l := range p.Lines {
		a, err := Adopt(l, adoptKeys[l.ID], "preview")
		if err != nil {
			t.Fatalf("%s: %v", l.ID, err)
		}
		as = append(as, a)
	}
	out, added, err := Append("release.plan.yaml", []byte(adoptBase), as)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != len(adoptKeys) {
		t.Fatalf("added %d lines, want %d", len(added), len(adoptKeys))
	}
	np := checkPlan(t, out)
	for _, a := range as {
		l := np.Line(a.ID)
		if l == nil {
			t.Fatalf("line %s missing:\n%s", a.ID, out)
		}
	}
	if !bytes.HasPrefix(out, []byte(adoptBase[:strings.Index(adoptBase, "\n# after")])) || !bytes.HasSuffix(out, []byte("\n# after the changes\nreceipts: local\n")) {
		t.Errorf("the file around the new lines changed:\n%s", out)
	}
	for _, want := range []string{"values: { DATABASE_URL: { keep: true } }", `branch: "feat/x"`, "secrets: { S: { keep: true } }", `shape: "delimited"`, "variation: false"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the adoptions lack %q:\n%s", want, out)
		}
	}
	again, added, err := Append("release.plan.yaml", out, as)
	if err != nil || len(added) != 0 || !bytes.Equal(again, out) {
		t.Errorf("a second append changed the plan (added %v, err %v)", added, err)
	}
}

func TestAdoptRefusesWhatItCannotDeclare(t *testing.T) {
	p, err := plan.Parse("release.plan.yaml", []byte(adoptBase))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Adopt(p.Line("db"), "callbacks:https://x", "preview"); errs.CodeOf(err) != errs.USAGE {
		t.Errorf("a key of another op's form: %v, want USAGE", err)
	}
	src := "version: 1\nchanges: [{id: a, adapter: neon, op: branch}]\n"
	if _, _, err := Append("release.plan.yaml", []byte(src), []Adoption{{ID: "x", Text: "- id: x\n"}}); errs.CodeOf(err) != errs.PLAN_INVALID {
		t.Errorf("a flow list of changes: %v, want PLAN_INVALID", err)
	}
}

func TestIgnoreOnce(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "# sponson: the local store, leases and unsaved receipts\n.sponson/\n"},
		{"node_modules", "node_modules\n# sponson: the local store, leases and unsaved receipts\n.sponson/\n"},
		{"node_modules\n/.sponson\n", "node_modules\n/.sponson\n"},
	} {
		got, _ := Ignore([]byte(tc.in))
		if string(got) != tc.want {
			t.Errorf("Ignore(%q) = %q, want %q", tc.in, got, tc.want)
		}
		again, changed := Ignore(got)
		if changed || !bytes.Equal(again, got) {
			t.Errorf("Ignore twice on %q changed it", tc.in)
		}
	}
}
