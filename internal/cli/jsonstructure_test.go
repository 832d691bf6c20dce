package cli_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/redact"
)

// structureRun applies and then destroys a one-line plan with --json,
// with extra variables in the environment, and returns both documents;
// or, when apply refuses with SECRET_IN_STRUCTURE, that refusal.
func structureRun(t *testing.T, extra map[string]string) (docs [2]map[string]any, refusal *run) {
	t.Helper()
	_, vars := exampleCloud(t)
	// The key makes every command warn RECEIPTS_UNSIGNED: a code in the
	// document.
	vars["SPONSON_RECEIPT_KEY"] = strings.Repeat("c4", 20)
	for k, v := range extra {
		vars[k] = v
	}
	env := testEnv(t, vars, map[string]string{"release.plan.yaml": `version: 1
providers:
  vercel: { project: prj_123, team: team_9 }
changes:
  - id: env-scope
    adapter: vercel
    op: env
    target: preview
    branch: "*"
    values:
      SCOPE_NAME: "${ctx.scope}"
`})
	checkout(t, env.Dir)
	for i, cmd := range []string{"apply", "destroy"} {
		r := runCLI(t, env, cmd, "--pr", "41", "--receipts", "local", "--json")
		// Refused before anything is done (exit 2), or the line whose
		// key would hold the value refused before its write (exit 1).
		if i == 0 && r.code != 0 && strings.Contains(r.out, `"SECRET_IN_STRUCTURE"`) {
			return docs, &r
		}
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", cmd, r.code, r.out, r.err)
		}
		docs[i] = oneDocument(t, r)
	}
	return docs, nil
}

// structureOfDoc lists a --json document's structure: every object key
// and every string under a member that names things (the scope, the env,
// ids, ledger keys, line ids, codes), by path. Run ids, which differ from
// run to run, are left out.
func structureOfDoc(doc any) []string {
	named := map[string]bool{"command": true, "code": true, "env": true, "scope": true, "id": true,
		"key": true, "line": true, "resources": true, "order": true, "op": true, "adapter": true, "provider": true}
	var out []string
	var walk func(v any, path string, kept bool)
	walk = func(v any, path string, kept bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				out = append(out, path+"{"+k+"}")
				if k != "run_id" {
					walk(e, path+"."+k, kept || named[k])
				}
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", path, i), kept)
			}
		case string:
			if kept {
				out = append(out, path+"="+x)
			}
		}
	}
	walk(doc, "", false)
	sort.Strings(out)
	return out
}

// The --json answer masks values, never structure: with a credential-
// looking variable (registered with the redactor) equal to a key of the
// document, the scope, the env, a ledger key, a resource id, a line id or
// a code, apply's and destroy's documents keep every key and every such
// name as a run without it writes them; "***" never appears in their
// place. One equal to the scope (or the env, or the branch) is refused
// before anything is done, SECRET_IN_STRUCTURE, as the engine refuses a
// plan's secret equal to a name; one in a resource's key is refused
// before that line's write.
func TestJSONRedactionNeverRewritesStructure(t *testing.T) {
	base, refused := structureRun(t, nil)
	if refused != nil {
		t.Fatalf("apply without a secret refused:\n%s", refused.out)
	}
	var want [2][]string
	seen := map[string]bool{}
	var candidates []string
	for i, d := range base {
		want[i] = structureOfDoc(d)
		for _, s := range want[i] {
			if _, v, ok := strings.Cut(s, "="); ok && !seen[v] {
				seen[v] = true
				candidates = append(candidates, v)
			}
		}
	}
	for _, must := range []string{"pr-41", "preview", "env:preview:*:SCOPE_NAME", "env-scope", "RECEIPTS_UNSIGNED"} {
		if !seen[must] {
			t.Fatalf("the document lacks %q among its names: %v", must, candidates)
		}
	}
	tried, refusals := 0, 0
	for _, v := range candidates {
		if ws := redact.New().Register(v, "test"); len(ws) > 0 {
			continue // too short or a word of Sponson's own: never masked anyway
		}
		tried++
		t.Run(v, func(t *testing.T) {
			got, refused := structureRun(t, map[string]string{"SOME_API_TOKEN": v})
			if refused != nil {
				// A credential equal to the scope, the env or the branch
				// is refused before anything is done, one in a resource's
				// key before that line's write; neither is printed.
				if strings.Contains(refused.out+refused.err, v) {
					t.Errorf("the refusal prints the credential:\n%s", refused.out)
				}
				refusals++
				return
			}
			for i := range got {
				g := structureOfDoc(got[i])
				if !slices.Equal(g, want[i]) {
					t.Errorf("a secret equal to %q rewrote the structure of %s's answer:\ngot  %v\nwant %v", v, []string{"apply", "destroy"}[i], g, want[i])
				}
				for _, s := range g {
					if strings.Contains(s, redact.Mask) {
						t.Errorf("masked structure: %s", s)
					}
				}
			}
		})
	}
	if tried-refusals < 5 || refusals == 0 {
		t.Fatalf("test is vacuous: %d names tried of %v, %d refused", tried, candidates, refusals)
	}
}

// A plan of 30,000 bad lines answers `validate --json` with the first
// errors and a count of the rest, in a document of bounded size (it was
// 10 MB), as one JSON document with the refusal's exit code.
func TestJSONErrorsOfAHugePlanAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nchanges:\n")
	for i := range 30000 {
		fmt.Fprintf(&b, "  - { id: l%d, adapter: nosuch, op: object }\n", i)
	}
	env := testEnv(t, nil, map[string]string{"release.plan.yaml": b.String()})
	r := runCLI(t, env, "validate", "--json")
	if r.code != 2 {
		t.Fatalf("validate: exit %d, want 2\n%.2000s", r.code, r.out)
	}
	if len(r.out) > 200<<10 {
		t.Fatalf("the --json answer is %d bytes, want at most 200 KiB", len(r.out))
	}
	doc := oneDocument(t, r)
	list, _ := doc["errors"].([]any)
	if len(list) < 2 || len(list) > 101 {
		t.Fatalf("%d errors listed, want the first 100 and a count", len(list))
	}
	last, _ := list[len(list)-1].(map[string]any)
	if msg, _ := last["message"].(string); !strings.Contains(msg, "more errors") {
		t.Errorf("the last error does not count the rest: %v", last)
	}
}
