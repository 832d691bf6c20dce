package plan_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

// Credentials are assembled at run time so that no scanner mistakes this
// file for a leak.
var (
	ghToken     = "gh" + "p_" + strings.Repeat("a1B2c3D4e5", 3) + "F6g7H8"
	ghFine      = "github" + "_pat_" + strings.Repeat("A", 22) + "_" + strings.Repeat("b", 59)
	stripeLive  = "sk_" + "live_" + strings.Repeat("4eC39HqLyj", 2) + "WDar"
	stripeTest  = "sk_" + "test_" + strings.Repeat("4eC39HqLyj", 2) + "WDar"
	awsKeyID    = "AK" + "IA" + "Q3EGRIXQ7ABCDEF2"
	slackToken  = "xo" + "xb-" + "1234567890-0987654321-abcdefghijkl"
	pemKey      = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"
	jwt         = "ey" + "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	googleKey   = "AI" + "za" + strings.Repeat("SyD-9tSrke72", 2) + "PeAXRNdJhN8"
	dsnPassword = "postgres://app:" + "s3cr3t-pw@db.internal:5432/app"
)

// errAt is one expected error: its code and where it points.
type errAt struct {
	code      errs.Code
	line, col int
}

func (e errAt) String() string { return fmt.Sprintf("%d:%d %s", e.line, e.col, e.code) }

// carets shows where each error points in src, for failure messages.
func carets(src string, err error) string {
	lines := strings.Split(src, "\n")
	var b strings.Builder
	for _, e := range errs.Flatten(err) {
		fmt.Fprintf(&b, "\n  %v", e)
		if e.Line >= 1 && e.Line <= len(lines) {
			l := lines[e.Line-1]
			fmt.Fprintf(&b, "\n    %s", l)
			if e.Column >= 1 {
				col := []rune(l)
				pad := min(e.Column-1, len(col))
				fmt.Fprintf(&b, "\n    %s^", strings.Repeat(" ", pad))
			}
		}
	}
	return b.String()
}

func got(err error) []errAt {
	var out []errAt
	for _, e := range errs.Flatten(err) {
		out = append(out, errAt{e.Code, e.Line, e.Column})
	}
	return out
}

// base is a valid plan's head, to which a case appends.
const base = "version: 1\nchanges:\n"

func TestParseRefuses(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []errAt
		// msg, when set, must appear in the first error's text.
		msg string
		// secret, when set, must not appear in any error's text or hint.
		secret string
	}{
		// environment_url.
		{"environment_url a string", "version: 1\nenvironment_url: web.url\nchanges:\n  - {id: web, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 2, 18}}, "environment_url takes {from:", ""},
		{"environment_url unknown line", "version: 1\nenvironment_url: {from: wbe.url}\nchanges:\n  - {id: web, adapter: x, op: y}\n",
			[]errAt{{errs.REF_UNKNOWN, 2, 25}}, `environment_url names line "wbe", which does not exist; the lines are: web`, ""},
		{"environment_url malformed from", "version: 1\nenvironment_url: {from: web}\nchanges:\n  - {id: web, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 2, 25}}, "must be \"<line>.<output>\"", ""},
		{"environment_url a keep", "version: 1\nenvironment_url: {keep: true}\nchanges:\n  - {id: web, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 2, 18}}, "found a keep", ""},
		// The file itself.
		{"empty file", "", []errAt{{errs.PLAN_INVALID, 1, 1}}, "empty", ""},
		{"comments only", "# nothing yet\n", []errAt{{errs.PLAN_INVALID, 1, 1}}, "empty", ""},
		{"document marker only", "---\n", []errAt{{errs.PLAN_INVALID, 1, 1}}, "empty", ""},
		{"unclosed flow list", "version: 1\nchanges: [\n", []errAt{{errs.PLAN_PARSE, 3, 1}}, "invalid YAML", ""}, // never column 0
		{"tab indentation", "version: 1\n\tchanges: []\n", []errAt{{errs.PLAN_PARSE, 2, 1}}, "tab", ""},
		{"mapping on line 1", "version: 1: 2\n", []errAt{{errs.PLAN_PARSE, 1, 1}}, "mapping values", ""},
		{"invalid utf-8", "version: 1\nchanges:\n  - id: \xff\n", []errAt{{errs.PLAN_PARSE, 3, 9}}, "UTF-8", ""},
		{"control character", "version: 1\nchanges:\n  - id: a\x01\n", []errAt{{errs.PLAN_PARSE, 3, 10}}, "control", ""},
		{"unknown anchor", base + "  - {id: a, adapter: x, op: y, p: *nope}\n", []errAt{{errs.PLAN_PARSE, 3, 35}}, "nope", ""},
		{"two documents", "version: 1\nchanges: []\n---\nversion: 1\n", []errAt{{errs.PLAN_INVALID, 3, 1}}, "second YAML document", ""},
		{"list at the root", "- id: a\n", []errAt{{errs.PLAN_INVALID, 1, 1}}, "found a list", ""},
		{"string at the root", "hello\n", []errAt{{errs.PLAN_INVALID, 1, 1}}, "found a string", ""},

		// version.
		{"no version", "changes:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 1, 1}}, "version is required", ""},
		{"version string", "version: \"1\"\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 1, 10}}, "integer 1, found a string", ""},
		{"version float", "version: 1.0\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 1, 10}}, "float 1.0", ""},
		{"version 2", "version: 2\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 1, 10}}, "version 2 is not supported", ""},
		{"version null", "version:\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 1, 9}}, "found null", ""},

		// changes.
		{"no changes", "version: 1\n", []errAt{{errs.PLAN_INVALID, 1, 1}}, "changes is required", ""},
		{"empty changes", "version: 1\nchanges: []\n", []errAt{{errs.PLAN_INVALID, 2, 10}}, "at least one line", ""},
		{"changes is a map", "version: 1\nchanges: {a: 1}\n", []errAt{{errs.PLAN_INVALID, 2, 10}}, "list of lines", ""},
		{"line is a string", base + "  - db\n", []errAt{{errs.PLAN_INVALID, 3, 5}}, "must be a map", ""},
		{"line lacks id adapter op", base + "  - {name: x}\n", []errAt{
			{errs.PLAN_INVALID, 3, 5}, {errs.PLAN_INVALID, 3, 5}, {errs.PLAN_INVALID, 3, 5}}, "has no id", ""},
		{"line lacks op", base + "  - id: db\n    adapter: neon\n", []errAt{{errs.PLAN_INVALID, 3, 5}}, `line "db" has no op`, ""},

		// id, adapter, op.
		{"id with capitals", base + "  - {id: Db, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 10}}, "must match", ""},
		{"id starting with a digit", base + "  - {id: 1db, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 10}}, "must match", ""},
		{"id as a number", base + "  - {id: 12, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 10}}, "must be a string", ""},
		{"duplicate id", base + "  - id: db\n    adapter: neon\n    op: branch\n  - id: db\n    adapter: neon\n    op: branch\n",
			[]errAt{{errs.PLAN_INVALID, 6, 9}}, "already has it", ""},
		{"duplicate id names the first line", base + "  - {id: db, adapter: x, op: y}\n  - {id: db, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 4, 10}}, "at line 3", ""},
		{"empty adapter", base + "  - {id: a, adapter: \"\", op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 22}}, "must not be empty", ""},
		{"adapter as a list", base + "  - {id: a, adapter: [x], op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 22}}, "must be a string", ""},
		{"op null", base + "  - id: a\n    adapter: x\n    op:\n", []errAt{{errs.PLAN_INVALID, 5, 8}}, "found null", ""},

		// environments.
		{"empty top-level environments", "version: 1\nenvironments: []\nchanges:\n  - {id: a, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 2, 15}}, "must not be empty", ""},
		{"environments not a list", "version: 1\nenvironments: preview\nchanges:\n  - {id: a, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 2, 15}}, "list of environment names", ""},
		{"environment listed twice", "version: 1\nenvironments: [preview, preview]\nchanges:\n  - {id: a, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 2, 25}}, "twice", ""},
		{"environment name with a space", "version: 1\nenvironments: [\"pre view\"]\nchanges:\n  - {id: a, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 2, 16}}, "must match", ""},
		{"line names an undeclared environment", "version: 1\nenvironments: [preview]\nchanges:\n  - {id: a, adapter: x, op: y, environments: [staging]}\n",
			[]errAt{{errs.PLAN_INVALID, 4, 47}}, `"staging" is not declared; the plan's environments are: preview`, ""},
		{"line environments empty", base + "  - {id: a, adapter: x, op: y, environments: []}\n", []errAt{{errs.PLAN_INVALID, 3, 46}}, "must not be empty", ""},

		// depends_on and from.
		{"depends_on unknown", base + "  - {id: a, adapter: x, op: y, depends_on: [b]}\n", []errAt{{errs.REF_UNKNOWN, 3, 45}}, `names line "b", which does not exist; the lines are: a`, ""},
		{"depends_on a string", base + "  - {id: a, adapter: x, op: y, depends_on: b}\n  - {id: b, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 44}}, "list of line ids", ""},
		{"from unknown line", base + "  - {id: a, adapter: x, op: y, url: {from: web.url}}\n", []errAt{{errs.REF_UNKNOWN, 3, 44}}, `from web.url names line "web"`, ""},
		{"from without output", base + "  - {id: a, adapter: x, op: y}\n  - {id: b, adapter: x, op: y, url: {from: a}}\n", []errAt{{errs.PLAN_INVALID, 4, 44}}, `must be "<line>.<output>"`, ""},
		{"from spliced", base + "  - {id: a, adapter: x, op: y}\n  - {id: b, adapter: x, op: y, url: {from: \"https://${a.url}\"}}\n", []errAt{{errs.PLAN_INVALID, 4, 44}}, "<line>.<output>", ""},
		{"from not a string", base + "  - {id: a, adapter: x, op: y, url: {from: [a, b]}}\n", []errAt{{errs.PLAN_INVALID, 3, 44}}, "found a list", ""},
		{"cycle of two", base + "  - {id: a, adapter: x, op: y, p: {from: b.out}}\n  - {id: b, adapter: x, op: y, depends_on: [a]}\n",
			[]errAt{{errs.REF_CYCLE, 3, 42}}, "a → b → a", ""},
		{"cycle of three through from and depends_on", base +
			"  - {id: a, adapter: x, op: y, depends_on: [b]}\n  - {id: b, adapter: x, op: y, p: {from: c.out}}\n  - {id: c, adapter: x, op: y, depends_on: [a]}\n",
			[]errAt{{errs.REF_CYCLE, 3, 45}}, "a → b → c → a", ""},
		{"line depends on itself", base + "  - {id: a, adapter: x, op: y, depends_on: [a]}\n", []errAt{{errs.REF_CYCLE, 3, 45}}, "a → a", ""},
		{"cycle across environments", base +
			"  - {id: a, adapter: x, op: y, environments: [preview], depends_on: [b]}\n  - {id: b, adapter: x, op: y, environments: [production], depends_on: [a]}\n",
			[]errAt{{errs.REF_CYCLE, 3, 70}}, "a → b → a", ""},

		// Value forms.
		{"from with another key", base + "  - {id: a, adapter: x, op: y}\n  - {id: b, adapter: x, op: y, url: {from: a.url, default: x}}\n",
			[]errAt{{errs.PLAN_INVALID, 4, 37}}, "found keys from, default", ""},
		{"secret and keep together", base + "  - {id: a, adapter: x, op: y, v: {secret: \"env://A\", keep: true}}\n",
			[]errAt{{errs.PLAN_INVALID, 3, 35}}, "value form", ""},
		{"value form with extra key in a list", base + "  - id: a\n    adapter: x\n    op: y\n    items:\n      - plain\n      - {keep: true, note: adopt}\n",
			[]errAt{{errs.PLAN_INVALID, 8, 9}}, "items[1]", ""},
		{"keep false", base + "  - {id: a, adapter: x, op: y, v: {keep: false}}\n", []errAt{{errs.PLAN_INVALID, 3, 42}}, "keep takes only true, found the bool false", ""},
		{"keep string", base + "  - {id: a, adapter: x, op: y, v: {keep: \"true\"}}\n", []errAt{{errs.PLAN_INVALID, 3, 42}}, "found a string", ""},
		{"secret without scheme", base + "  - {id: a, adapter: x, op: y, v: {secret: hunter2hunter2}}\n", []errAt{{errs.PLAN_INVALID, 3, 44}}, "not shown", "hunter2"},
		{"secret pasted as a reference", base + "  - {id: a, adapter: x, op: y, v: {secret: \"" + stripeLive + "\"}}\n", []errAt{{errs.SECRET_LITERAL, 3, 44}}, "Stripe", stripeLive},
		{"secret with ctx", base + "  - {id: a, adapter: x, op: y, v: {secret: \"env://${ctx.env}_KEY\"}}\n", []errAt{{errs.PLAN_INVALID, 3, 44}}, "not in a secret reference", ""},
		{"null parameter", base + "  - id: a\n    adapter: x\n    op: y\n    parent:\n", []errAt{{errs.PLAN_INVALID, 6, 12}}, "null", ""},
		{"null in a list", base + "  - {id: a, adapter: x, op: y, l: [a, ~]}\n", []errAt{{errs.PLAN_INVALID, 3, 39}}, "l[1] is null", ""},
		{"infinite float", base + "  - {id: a, adapter: x, op: y, ratio: .inf}\n", []errAt{{errs.PLAN_INVALID, 3, 39}}, "finite", ""},
		{"integer too large", base + "  - {id: a, adapter: x, op: y, n: !!int 99999999999999999999}\n", []errAt{{errs.PLAN_INVALID, 3, 35}}, "64 bits", ""},
		{"binary", base + "  - {id: a, adapter: x, op: y, b: !!binary aGVsbG8=}\n", []errAt{{errs.PLAN_INVALID, 3, 35}}, "binary", ""},
		{"custom tag", base + "  - {id: a, adapter: x, op: y, b: !env HOME}\n", []errAt{{errs.PLAN_INVALID, 3, 35}}, "tag !env", ""},
		{"key that is a list", base + "  - id: a\n    adapter: x\n    op: y\n    m:\n      ? [k]\n      : v\n", []errAt{{errs.PLAN_INVALID, 7, 9}}, "key must be a string", ""},
		{"duplicate parameter", base + "  - id: a\n    adapter: x\n    op: y\n    url: a\n    url: b\n", []errAt{{errs.PLAN_INVALID, 7, 5}}, "already at line 6", ""},
		{"duplicate top-level key", "version: 1\nversion: 1\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 2, 1}}, "duplicate key", ""},

		// Secret literals, by name.
		{"secret-named literal, nested", base + "  - id: env\n    adapter: vercel\n    op: env\n    values:\n      STRIPE_KEY: abc\n",
			[]errAt{{errs.SECRET_LITERAL, 7, 19}}, "values.STRIPE_KEY is named like a secret", "abc"},
		{"secret-named literal, lower case", base + "  - {id: a, adapter: x, op: y, api_token: hunter22}\n",
			[]errAt{{errs.SECRET_LITERAL, 3, 43}}, "api_token", "hunter22"},
		{"secret-named number", base + "  - {id: a, adapter: x, op: y, ADMIN_PASS: 123456}\n",
			[]errAt{{errs.SECRET_LITERAL, 3, 44}}, "6 characters", "123456"},
		{"secret-named list item", base + "  - {id: a, adapter: x, op: y, DB_PASSWORD: [first-pw, second-pw]}\n",
			[]errAt{{errs.SECRET_LITERAL, 3, 46}, {errs.SECRET_LITERAL, 3, 56}}, "DB_PASSWORD[0]", "first-pw"},
		{"every suffix", base + "  - id: a\n    adapter: x\n    op: y\n    a_KEY: v\n    a_secret: v\n    A_Token: v\n    password: v\n    x_pass: v\n    passwd: v\n    SSH_PRIVATE_KEY: v\n",
			[]errAt{{errs.SECRET_LITERAL, 6, 12}, {errs.SECRET_LITERAL, 7, 15}, {errs.SECRET_LITERAL, 8, 14},
				{errs.SECRET_LITERAL, 9, 15}, {errs.SECRET_LITERAL, 10, 13}, {errs.SECRET_LITERAL, 11, 13}, {errs.SECRET_LITERAL, 12, 22}}, "a_KEY", ""},
		{"secret-named literal in a provider", "version: 1\nproviders:\n  http:\n    api: {base_url: https://x.dev, api_key: abc123}\nchanges:\n  - {id: a, adapter: x, op: y}\n",
			[]errAt{{errs.SECRET_LITERAL, 4, 45}}, "providers.http.api.api_key", "abc123"},

		// Secret literals, by format, under innocent names.
		{"GitHub token", base + "  - {id: a, adapter: x, op: y, note: " + ghToken + "}\n", []errAt{{errs.SECRET_LITERAL, 3, 38}}, "GitHub token", ghToken},
		{"GitHub fine-grained token", base + "  - {id: a, adapter: x, op: y, note: " + ghFine + "}\n", []errAt{{errs.SECRET_LITERAL, 3, 38}}, "fine-grained", ghFine},
		{"Stripe live key", base + "  - {id: a, adapter: x, op: y, values: {STRIPE: " + stripeLive + "}}\n", []errAt{{errs.SECRET_LITERAL, 3, 49}}, "Stripe", stripeLive},
		{"Stripe test key", base + "  - {id: a, adapter: x, op: y, l: [ok, " + stripeTest + "]}\n", []errAt{{errs.SECRET_LITERAL, 3, 40}}, "l[1]", stripeTest},
		{"AWS key id", base + "  - {id: a, adapter: x, op: y, aws: " + awsKeyID + "}\n", []errAt{{errs.SECRET_LITERAL, 3, 37}}, "AWS", awsKeyID},
		{"Slack token", base + "  - {id: a, adapter: x, op: y, hook: " + slackToken + "}\n", []errAt{{errs.SECRET_LITERAL, 3, 38}}, "Slack", slackToken},
		{"PEM private key", base + "  - id: a\n    adapter: x\n    op: y\n    cert: |\n      " + strings.ReplaceAll(pemKey, "\n", "\n      ") + "\n",
			[]errAt{{errs.SECRET_LITERAL, 6, 11}}, "PEM", "MIIEow"},
		{"JWT", base + "  - {id: a, adapter: x, op: y, anon: " + jwt + "}\n", []errAt{{errs.SECRET_LITERAL, 3, 38}}, "JSON Web Token", jwt},
		{"Google API key", base + "  - {id: a, adapter: x, op: y, maps: " + googleKey + "}\n", []errAt{{errs.SECRET_LITERAL, 3, 38}}, "Google", googleKey},
		{"URL with a password", base + "  - {id: a, adapter: x, op: y, DATABASE_URL: \"" + dsnPassword + "\"}\n", []errAt{{errs.SECRET_LITERAL, 3, 46}}, "URL with a password", "s3cr3t"},
		{"credential as an id", base + "  - {id: " + ghToken + ", adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 10}}, "hidden: it looks like a GitHub token", ghToken},
		{"credential as an environment", "version: 1\nenvironments: [" + stripeLive + "]\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 2, 16}}, "hidden", stripeLive},
		{"credential as a from", base + "  - {id: a, adapter: x, op: y, v: {from: " + awsKeyID + "}}\n", []errAt{{errs.PLAN_INVALID, 3, 42}}, "hidden", awsKeyID},
		{"credential in a provider block", "version: 1\nproviders:\n  vercel: {project: p, note: " + ghToken + "}\nchanges:\n  - {id: a, adapter: x, op: y}\n",
			[]errAt{{errs.SECRET_LITERAL, 3, 30}}, "providers.vercel.note", ghToken},

		// Pasted display text.
		{"pasted pending", base + "  - {id: db, adapter: x, op: y}\n  - {id: a, adapter: x, op: y, url: \"(pending ← db.connection_string)\"}\n",
			[]errAt{{errs.PLAN_INVALID, 4, 37}}, "displays a value", ""},
		{"pasted secret with ascii arrow", base + "  - {id: a, adapter: x, op: y, v: \"(secret <- env://X)\"}\n",
			[]errAt{{errs.PLAN_INVALID, 3, 35}}, "displays a value", ""},
		{"pasted kept", base + "  - {id: a, adapter: x, op: y, v: (kept)}\n", []errAt{{errs.PLAN_INVALID, 3, 35}}, "(kept)", ""},

		// ${ctx.*}.
		{"unknown ctx name", base + "  - {id: a, adapter: x, op: y, name: \"app-${ctx.branch}\"}\n", []errAt{{errs.CTX_NULL, 3, 38}}, "ctx.env, ctx.scope, ctx.git.branch", ""},
		{"not a ctx placeholder", base + "  - {id: a, adapter: x, op: y, name: \"${env.HOME}\"}\n", []errAt{{errs.PLAN_INVALID, 3, 38}}, "only ${ctx.NAME}", ""},
		{"unterminated placeholder", base + "  - {id: a, adapter: x, op: y, name: \"a-${ctx.env\"}\n", []errAt{{errs.PLAN_INVALID, 3, 38}}, "unterminated", ""},
		{"ctx in an id", base + "  - {id: \"${ctx.scope}\", adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 10}}, "not in id", ""},
		{"ctx in an adapter", base + "  - {id: a, adapter: \"${ctx.env}\", op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 22}}, "not in adapter", ""},
		{"ctx in environments", base + "  - {id: a, adapter: x, op: y, environments: [\"${ctx.env}\"]}\n", []errAt{{errs.PLAN_INVALID, 3, 47}}, "environment name", ""},
		{"ctx in a key", base + "  - {id: a, adapter: x, op: y, values: {\"${ctx.env}_URL\": u}}\n", []errAt{{errs.PLAN_INVALID, 3, 41}}, "not in keys", ""},
		{"ctx in a provider", "version: 1\nproviders:\n  neon: {project: \"p-${ctx.scope}\"}\nchanges:\n  - {id: a, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 3, 19}}, "provider settings", ""},

		// The rest of the top level.
		{"receipts unknown", "version: 1\nreceipts: s3\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 2, 11}}, "git-branch or local", ""},
		{"providers a list", "version: 1\nproviders: [neon]\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 2, 12}}, "map of adapter name", ""},
		{"provider block a string", "version: 1\nproviders: {neon: proj}\nchanges:\n  - {id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 2, 19}}, "must be a map", ""},
		{"value form in a provider", "version: 1\nproviders:\n  http:\n    api: {token: {secret: \"env://T\"}}\nchanges:\n  - {id: a, adapter: x, op: y}\n",
			[]errAt{{errs.PLAN_INVALID, 4, 18}}, "not allowed in providers", ""},

		// Anchors gone wrong.
		{"alias inside its own anchor", base + "  - &l {id: a, adapter: x, op: y, p: *l}\n", []errAt{{errs.PLAN_INVALID, 3, 38}}, "inside its own anchor", ""},
		{"duplicate id through an alias", base + "  - &x {id: a, adapter: x, op: y}\n  - *x\n", []errAt{{errs.PLAN_INVALID, 4, 5}}, "at line 3", ""},
		{"merge of a string", base + "  - {<<: abc, id: a, adapter: x, op: y}\n", []errAt{{errs.PLAN_INVALID, 3, 10}}, "merge key", ""},

		// Several mistakes at once: all reported, in file order.
		{"all errors in one pass", "version: 2\nreceipts: s3\nchanges:\n  - {id: A, adapter: x, op: y}\n  - {id: b, adapter: x, op: y, depends_on: [zz], K_TOKEN: v}\n",
			[]errAt{{errs.PLAN_INVALID, 1, 10}, {errs.PLAN_INVALID, 2, 11}, {errs.PLAN_INVALID, 4, 10}, {errs.REF_UNKNOWN, 5, 45}, {errs.SECRET_LITERAL, 5, 59}}, "version 2", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.Parse("release.plan.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("no error; plan has %d lines\nsrc:\n%s", len(p.Lines), c.src)
			}
			if p != nil {
				t.Error("a plan returned beside an error")
			}
			var l errs.List
			if !errors.As(err, &l) {
				t.Fatalf("error is %T, want errs.List", err)
			}
			if g := got(err); !slices.Equal(g, c.want) {
				t.Errorf("errors:\n got  %v\n want %v%s", g, c.want, carets(c.src, err))
			}
			for _, e := range l {
				if e.File != "release.plan.yaml" {
					t.Errorf("error without the file: %v", e)
				}
				if c.secret != "" && (strings.Contains(e.Error(), c.secret) || strings.Contains(e.HintText(), c.secret)) {
					t.Errorf("the error prints the secret: %v (hint %q)", e, e.HintText())
				}
			}
			if c.msg != "" && !strings.Contains(l[0].Error(), c.msg) {
				t.Errorf("first error %q does not say %q", l[0].Error(), c.msg)
			}
		})
	}
}

func TestPastedDisplayTextHintsTheValueForm(t *testing.T) {
	cases := []struct{ text, hint string }{
		{"(pending ← db.connection_string)", "{from: db.connection_string}"},
		{"(pending <- env.preview_url)", "{from: env.preview_url}"},
		{"(secret ← env://STRIPE_KEY)", `{secret: "env://STRIPE_KEY"}`},
		{"(sensitive ← db.connection_string)", "{from: db.connection_string}"},
		{"(kept)", "{keep: true}"},
	}
	for _, c := range cases {
		src := base + "  - {id: db, adapter: x, op: y}\n  - {id: env, adapter: x, op: y}\n  - {id: a, adapter: x, op: y, v: \"" + c.text + "\"}\n"
		_, err := plan.Parse("p.yaml", []byte(src))
		e := errs.Coded(err)
		if e == nil || e.Code != errs.PLAN_INVALID {
			t.Errorf("%s: got %v, want PLAN_INVALID", c.text, err)
			continue
		}
		if !strings.Contains(e.HintText(), c.hint) {
			t.Errorf("%s: hint %q does not suggest %s", c.text, e.HintText(), c.hint)
		}
	}
}

func TestSecretLiteralHintNamesAReference(t *testing.T) {
	_, err := plan.Parse("p.yaml", []byte(base+"  - {id: a, adapter: x, op: y, values: {STRIPE_KEY: abcd}}\n"))
	e := errs.Coded(err)
	if e == nil || e.Code != errs.SECRET_LITERAL {
		t.Fatalf("got %v", err)
	}
	if want := `{secret: "env://STRIPE_KEY"}`; !strings.Contains(e.HintText(), want) {
		t.Errorf("hint %q does not suggest %s", e.HintText(), want)
	}
}

func TestNotSecrets(t *testing.T) {
	// Literals that resemble credentials or secret names but are not.
	for _, v := range []string{
		"token", "monkey", "sk_live_", "the sk_live_ keys are refused", "ghp_short", "AKIA",
		"https://user@host.dev/path", "postgres://db.internal:5432/app", "http://host:8080/a@b",
		"eyJhbGciOi", "-----BEGIN PUBLIC KEY-----", "xoxb-1",
	} {
		src := base + fmt.Sprintf("  - {id: a, adapter: x, op: y, note: %q, key: x, token: x, keys: x, passes: x, secret_name: x, KEY_ID: x}\n", v)
		if _, err := plan.Parse("p.yaml", []byte(src)); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
}

const full = `# a comment
version: 1
environments: [preview, production, staging]
providers:
  neon: { project: proj_abc }
  http:
    api:
      base_url: https://api.example.dev
      auth: { bearer_env: API_TOKEN }
      retry: [1, 2.5, true]
receipts: local
changes:
  - id: db
    adapter: neon
    op: branch
    parent: main
    environments: [preview, staging]

  - id: env
    adapter: vercel
    op: env
    depends_on: [db, db]
    target: preview
    values:
      DATABASE_URL: { from: db.connection_string }
      STRIPE_KEY: { secret: "env://STRIPE_KEY" }
      OLD: { keep: true }
      SCOPE: "pr-${ctx.pr.number} $${not} $$"
    list: [1, -2, 0x10, 1.5, false, "x", { from: db.host }]
    nested: { deep: { deeper: [ { secret: "file:///run/s" } ] } }
    when: 2024-01-01
    environments: [preview, staging]
`

func TestParseFull(t *testing.T) {
	p, err := plan.Parse("full.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != 1 || p.Receipts != "local" || p.File != "full.yaml" {
		t.Errorf("version %d receipts %q file %q", p.Version, p.Receipts, p.File)
	}
	if !p.EnvironmentsExplicit || !slices.Equal(p.Environments, []string{"preview", "production", "staging"}) {
		t.Errorf("environments %v explicit %v", p.Environments, p.EnvironmentsExplicit)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings: %v", p.Warnings)
	}
	if got, want := p.Providers["http"].String(), `{api: {base_url: "https://api.example.dev", auth: {bearer_env: "API_TOKEN"}, retry: [1, 2.5, true]}}`; got != want {
		t.Errorf("providers.http:\n got  %s\n want %s", got, want)
	}
	if len(p.Lines) != 2 {
		t.Fatalf("%d lines", len(p.Lines))
	}
	db, env := p.Lines[0], p.Lines[1]
	if db.ID != "db" || db.Adapter != "neon" || db.Op != "branch" || db.Index != 0 || db.Pos != (errs.Pos{File: "full.yaml", Line: 13, Column: 5}) {
		t.Errorf("db = %+v", db)
	}
	if db.IDPos.Line != 13 || db.AdapterPos.Line != 14 || db.OpPos.Line != 15 || db.OpPos.Column != 9 {
		t.Errorf("db positions id %v adapter %v op %v", db.IDPos, db.AdapterPos, db.OpPos)
	}
	if p.Line("env") != env || p.Line("nope") != nil {
		t.Error("Line(id) does not find lines")
	}
	want := `{target: "preview", values: {DATABASE_URL: {from: db.connection_string}, STRIPE_KEY: {secret: "env://STRIPE_KEY"}, ` +
		`OLD: {keep: true}, SCOPE: "pr-${ctx.pr.number} $${not} $$"}, list: [1, -2, 16, 1.5, false, "x", {from: db.host}], ` +
		`nested: {deep: {deeper: [{secret: "file:///run/s"}]}}, when: "2024-01-01"}`
	if got := env.Params.String(); got != want {
		t.Errorf("params:\n got  %s\n want %s", got, want)
	}
	if !slices.Equal(env.DependsOn, []string{"db"}) || !slices.Equal(env.Deps(), []string{"db"}) {
		t.Errorf("depends_on %v deps %v", env.DependsOn, env.Deps())
	}
	if !slices.Equal(env.Environments, []string{"preview", "staging"}) || env.In("production") || !env.In("staging") {
		t.Errorf("environments %v", env.Environments)
	}
	v := env.Params.Get("values").Get("DATABASE_URL")
	if v.Kind != plan.KindFrom || v.From != (plan.Ref{Line: "db", Output: "connection_string"}) || v.Pos.Line != 25 || v.Pos.Column != 29 {
		t.Errorf("DATABASE_URL = %+v", v)
	}
	if k := env.Params.Fields[1].KeyPos; k.Line != 24 || k.Column != 5 {
		t.Errorf("values key at %v", k)
	}
}

func TestDefaultEnvironments(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte(base+
		"  - {id: a, adapter: x, op: y, environments: [qa, preview]}\n  - {id: b, adapter: x, op: y, environments: [demo, qa]}\n  - {id: c, adapter: x, op: y}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"preview", "production", "qa", "demo"}; !slices.Equal(p.Environments, want) || p.EnvironmentsExplicit {
		t.Errorf("environments %v, want %v", p.Environments, want)
	}
	if p.Lines[2].Environments != nil {
		t.Errorf("a line without environments has %v", p.Lines[2].Environments)
	}
}

func TestWarnings(t *testing.T) {
	src := `version: 1
x-owner: platform-team
defaults: &neon
  adapter: neon
  op: branch
changes:
  - <<: *neon
    id: db
  - id: db2
    <<: *neon
    parent: &p main
    copy: *p
`
	p, err := plan.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var g []errAt
	for _, w := range p.Warnings {
		g = append(g, errAt{w.Code, w.Line, w.Column})
		if !errs.Lookup(w.Code).Warning {
			t.Errorf("%v is not a warning code", w)
		}
	}
	want := []errAt{
		{errs.UNKNOWN_KEY, 2, 1}, {errs.UNKNOWN_KEY, 3, 1}, {errs.YAML_ANCHOR, 3, 11},
		{errs.YAML_ANCHOR, 7, 9}, {errs.YAML_ANCHOR, 10, 9}, {errs.YAML_ANCHOR, 11, 13}, {errs.YAML_ANCHOR, 12, 11},
	}
	if !slices.Equal(g, want) {
		t.Errorf("warnings:\n got  %v\n want %v", g, want)
	}
	for _, l := range p.Lines {
		if l.Adapter != "neon" || l.Op != "branch" {
			t.Errorf("merge key not applied: %s is %s.%s", l.ID, l.Adapter, l.Op)
		}
	}
	if got := p.Lines[1].Params.String(); got != `{parent: "main", copy: "main"}` {
		t.Errorf("db2 params %s", got)
	}
}

func TestMergeKeyExplicitKeysWin(t *testing.T) {
	src := base + "  - {<<: [{adapter: a, op: first}, {op: second, extra: 1}], id: x, adapter: b}\n"
	p, err := plan.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	l := p.Lines[0]
	if l.Adapter != "b" || l.Op != "first" || l.Params.String() != "{extra: 1}" {
		t.Errorf("got %s.%s %s", l.Adapter, l.Op, l.Params)
	}
}

func TestAliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n  - id: a\n    adapter: x\n    op: y\n")
	b.WriteString("    l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "    l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	_, err := plan.Parse("bomb.yaml", []byte(b.String()))
	if e := errs.Coded(err); e == nil || e.Code != errs.PLAN_INVALID || !strings.Contains(e.Message, "expands to more than") {
		t.Fatalf("got %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "release.plan.yaml")
	if err := os.WriteFile(path, []byte(base+"  - {id: a, adapter: x, op: y}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Load(path)
	if err != nil || p.File != path {
		t.Fatalf("Load: %v, file %q", err, p.File)
	}
	_, err = plan.Load(filepath.Join(dir, "missing.yaml"))
	e := errs.Coded(err)
	if e == nil || e.Code != errs.PLAN_PARSE || e.File == "" || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestExamples parses every example with no error and no warning, and
// checks them against the example catalogue.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(src), "# yaml-language-server: $schema=../schema/release.plan.schema.json\n") {
				t.Error("the example does not start with the yaml-language-server schema comment")
			}
			p, err := plan.Parse(f, src)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Warnings) > 0 {
				t.Errorf("warnings: %v", p.Warnings)
			}
			if err := p.Check(fakeCatalog{}); err != nil {
				t.Errorf("Check: %v", err)
			}
			for _, env := range p.Environments {
				if _, err := p.Select(env); err != nil {
					t.Errorf("Select(%s): %v", env, err)
				}
			}
		})
	}
}

// TestRoundTrip checks that a parsed plan holds everything the file says:
// each line rebuilt from the model equals the line as a generic YAML
// decoder reads it (aliases and merge keys included).
func TestRoundTrip(t *testing.T) {
	srcs := map[string]string{
		"anchors": "version: 1\nx: &d {adapter: neon, op: branch, tags: [a, 1, 2.5, true]}\nchanges:\n" +
			"  - {<<: *d, id: a, parent: main}\n  - {<<: *d, id: b, op: other, m: {k: {from: a.host}, l: [{secret: \"env://S\"}, {keep: true}]}}\n",
	}
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[filepath.Base(f)] = string(b)
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			p, err := plan.Parse(name, []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Providers map[string]any   `yaml:"providers"`
				Changes   []map[string]any `yaml:"changes"`
			}
			if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
				t.Fatal(err)
			}
			var rebuilt []map[string]any
			for _, l := range p.Lines {
				m := l.Params.Data().(map[string]any)
				m["id"], m["adapter"], m["op"] = l.ID, l.Adapter, l.Op
				if l.Environments != nil {
					m["environments"] = l.Environments
				}
				if l.DependsOn != nil {
					m["depends_on"] = l.DependsOn
				}
				rebuilt = append(rebuilt, m)
			}
			providers := map[string]any{}
			for k, v := range p.Providers {
				providers[k] = v.Data()
			}
			if len(doc.Providers) == 0 {
				doc.Providers = map[string]any{}
			}
			for _, c := range []struct{ what, got, want string }{
				{"changes", normJSON(t, rebuilt), normJSON(t, doc.Changes)},
				{"providers", normJSON(t, providers), normJSON(t, doc.Providers)},
			} {
				if c.got != c.want {
					t.Errorf("%s:\n got  %s\n want %s", c.what, c.got, c.want)
				}
			}
		})
	}
}

// normJSON renders v as JSON with sorted keys and numbers in one form.
func normJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

// A file with too many values and no alias is told so, not blamed on
// aliases; one that expands through aliases is.
func TestTooManyValuesSaysWhy(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n  - id: a\n    adapter: x\n    op: y\n    l: [")
	for i := 0; i < 100_001; i++ {
		b.WriteString("1,")
	}
	b.WriteString("1]\n")
	_, err := plan.Parse("p.yaml", []byte(b.String()))
	if err == nil || strings.Contains(err.Error(), "aliases") || !strings.Contains(err.Error(), "more than 100000 values") {
		t.Errorf("no aliases: %v", err)
	}
	bomb := "version: 1\nchanges:\n  - id: a\n    adapter: x\n    op: y\n    a: &a [1,1,1,1,1,1,1,1,1,1]\n    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n    f: [*e,*e]\n"
	if _, err := plan.Parse("p.yaml", []byte(bomb)); err == nil || !strings.Contains(err.Error(), "aliases copy too much") {
		t.Errorf("aliases: %v", err)
	}
}

// A misspelt ${ctx.*} name is answered with the closest one.
func TestUnknownCtxNameSuggestsTheClosest(t *testing.T) {
	cases := []struct{ name, hint string }{
		{"scop", "Did you mean ${ctx.scope}?"},
		{"pr.numbr", "Did you mean ${ctx.pr.number}?"},
		{"git.shortsha", "Did you mean ${ctx.git.short_sha}?"},
		{"weather", ""},
	}
	for _, c := range cases {
		_, err := plan.Parse("p.yaml", []byte(base+"  - {id: a, adapter: x, op: y, v: \"https://${ctx."+c.name+"}.x\"}\n"))
		e := errs.Coded(err)
		if e == nil || e.Code != errs.CTX_NULL {
			t.Errorf("%s: got %v, want CTX_NULL", c.name, err)
			continue
		}
		if c.hint == "" && strings.Contains(e.HintText(), "Did you mean") || !strings.Contains(e.HintText(), c.hint) {
			t.Errorf("%s: hint %q, want %q", c.name, e.HintText(), c.hint)
		}
	}
}
