package adapters_test

import (
	"testing"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/plan"
)

// Destroy works from a ledger, without the line's parameters: every op
// that can write production judges its keys (adapter.KeyJudge), so destroy
// knows which entries need an approver.
func TestProductionWritersJudgeTheirKeys(t *testing.T) {
	for _, op := range registry().Ops() {
		if _, pw := op.(adapter.ProductionWriter); !pw {
			continue
		}
		if _, kj := op.(adapter.KeyJudge); !kj {
			t.Errorf("%s can write production and cannot judge a ledger key (adapter.KeyJudge)", op.Spec().Name())
		}
	}
}

// A production key is plausible only in the environment production, and
// needs an approver wherever it is.
func TestKeysOfProduction(t *testing.T) {
	preview := adapter.RunCtx{Env: "preview", Scope: "branch-ghost", Branch: "ghost"}
	production := adapter.RunCtx{Env: "production", Scope: "main", Branch: "main"}
	for _, tc := range []struct {
		op, key      string
		provider     adapter.Provider
		inPreview    bool // plausible in a preview scope
		inProduction bool
		production   bool // KeyEnvironment
	}{
		{"vercel.env", "env:production:*:DATABASE_URL", nil, false, true, true},
		{"vercel.env", "env:preview:ghost:DATABASE_URL", nil, true, true, false},
		{"vercel.env", "env:development:ghost:X", nil, false, false, false},
		{"vercel.env", "callbacks:https://x", nil, false, false, false},
		{"vercel.deploy", "deployment:production:abc", nil, false, true, true},
		{"vercel.deploy", "deployment:preview:abc", nil, true, false, false},
		{"netlify.env", "env:production:API_URL", nil, false, true, true},
		{"netlify.env", "env:deploy-preview:API_URL", nil, true, true, false},
		{"cloudflare.pages_env", "env:production:X", nil, false, true, true},
		{"cloudflare.pages_env", "env:preview:X", nil, true, true, false},
		{"launchdarkly.flag_target", "target:production:checkout:user:pr-7", adapter.Provider{"project": "p", "environment": "production", "production": true}, true, true, true},
		{"launchdarkly.flag_target", "target:preview:checkout:user:pr-7", adapter.Provider{"project": "p", "environment": "preview"}, true, true, false},
		// Production by name: a key containing "prod" (plan.Production).
		{"launchdarkly.flag_target", "target:prod-eu:checkout:user:pr-7", adapter.Provider{"project": "p", "environment": "prod-eu"}, true, true, true},
	} {
		a, o, _ := cut(tc.op)
		op, ok := registry().Lookup(a, o)
		if !ok {
			t.Fatalf("no %s", tc.op)
		}
		kj := op.(adapter.KeyJudge)
		for _, run := range []adapter.RunCtx{preview, production} {
			want := tc.inPreview
			if run.Env == "production" {
				want = tc.inProduction
			}
			err := kj.CheckKey(tc.key, tc.provider, run)
			if (err == nil) != want {
				t.Errorf("%s %q in %s: CheckKey = %v, want plausible %v", tc.op, tc.key, run.Env, err, want)
			}
			if err != nil && errs.CodeOf(err) != errs.PARAM_INVALID {
				t.Errorf("%s %q: code %s", tc.op, tc.key, errs.CodeOf(err))
			}
		}
		if got := plan.Production(kj.KeyEnvironment(tc.key, tc.provider, preview)); got != tc.production {
			t.Errorf("%s %q: KeyEnvironment production = %v, want %v", tc.op, tc.key, got, tc.production)
		}
	}
}

func cut(name string) (string, string, bool) {
	for i := range name {
		if name[i] == '.' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}

// An op whose resources carry their scope's mark says what the mark is in
// its docs, and only such an op does.
func TestMarkedOpsDocumentTheirMark(t *testing.T) {
	n := 0
	for _, op := range registry().Ops() {
		_, marked := op.(adapter.Marked)
		if marked {
			n++
		}
		if doc := op.Spec().Mark; marked != (doc != "") {
			t.Errorf("%s: Marked %v, Spec.Mark %q", op.Spec().Name(), marked, doc)
		}
	}
	if n < 3 {
		t.Errorf("%d ops check a mark, want neon.branch, vercel.env and netlify.env at least", n)
	}
}

// The marks the ops judge from the key alone: a Neon branch named for
// another scope, a Netlify value of another branch, refused; the scope's
// own, and what carries no mark, accepted.
func TestMarksOfKeys(t *testing.T) {
	pr := adapter.RunCtx{Env: "preview", Scope: "pr-7", Branch: "feat/a"}
	br := adapter.RunCtx{Env: "preview", Scope: "branch-feat-a", Branch: "feat/a"}
	for _, tc := range []struct {
		op, key string
		run     adapter.RunCtx
		ok      bool
	}{
		{"neon.branch", "branch:sponson/preview/pr-7", pr, true},
		{"neon.branch", "branch:sponson/preview/pr-8", pr, false},
		{"neon.branch", "branch:sponson/production/pr-7", pr, false},
		{"neon.branch", "branch:sponson/preview/pr-7/x", pr, false},
		{"neon.branch", "branch:my-db-pr-7", pr, true},
		{"netlify.env", "env:branch:feat/a:API_URL", pr, true},
		{"netlify.env", "env:branch:main:API_URL", pr, false},
		{"netlify.env", "env:branch:feat/a:API_URL", br, true},
		{"netlify.env", "env:branch:feat-a:API_URL", br, false},
		{"netlify.env", "env:branch:feat-a:API_URL", adapter.RunCtx{Env: "preview", Scope: "branch-feat-a"}, true},
		{"netlify.env", "env:branch:feat-b:API_URL", adapter.RunCtx{Env: "preview", Scope: "branch-feat-a"}, false},
		{"netlify.env", "env:branch:feat/b:API_URL", br, false},
		{"netlify.env", "env:deploy-preview:API_URL", pr, true},
	} {
		a, o, _ := cut(tc.op)
		op, _ := registry().Lookup(a, o)
		err := op.(adapter.Marked).CheckMark(t.Context(), adapter.Provider{"project": "p", "site": "s"}, tc.run, adapter.Resource{Key: tc.key})
		if (err == nil) != tc.ok || (err != nil && errs.CodeOf(err) != errs.RESOURCE_UNMARKED) {
			t.Errorf("%s %q in %s: %v, want marked %v", tc.op, tc.key, tc.run.Scope, err, tc.ok)
		}
	}
}
