package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/internal/cli"
	"github.com/sponson/apply/internal/testing/optest"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/localstore"
)

const fakePlan = `version: 1
environments: [preview, production]
changes:
  - id: app
    adapter: fake
    op: object
    name: app-${ctx.scope}
    fields:
      api_key: { secret: "env://APP_KEY" }
  - id: cb
    adapter: fake
    op: item
    list: callbacks
    item: https://${ctx.scope}.example.dev/cb
    depends_on: [app]
`

const appKey = "k3y-0f-the-app-that-must-never-leak"

// fakeWorld is the CLI wired to a fake cloud and a local store in a temp dir.
func fakeWorld(t *testing.T) (cli.Env, *optest.Cloud, receipt.Store) {
	cloud := optest.New()
	env := testEnv(t, map[string]string{"APP_KEY": appKey, "SPONSON_RECEIPTS_DIR": "receipts"}, map[string]string{"release.plan.yaml": fakePlan})
	env.Ops = cloud.Registry()
	return env, cloud, localstore.New(filepath.Join(env.Dir, "receipts"), clock.System{})
}

func TestApplyExitCodesAndShapes(t *testing.T) {
	env, cloud, st := fakeWorld(t)

	// Production needs a named approver: refused before anything is touched.
	r := runCLI(t, env, "apply", "--json", "--pr", "3", "--env", "production", "--receipts", "local")
	if r.code != 2 {
		t.Fatalf("production without approver: exit %d\n%s", r.code, r.out)
	}
	if doc := oneDocument(t, r); doc["error"].(map[string]any)["code"] != string(errs.ENV_NOT_APPROVED) {
		t.Errorf("error = %v", doc["error"])
	}
	if len(cloud.Keys()) != 0 {
		t.Fatalf("something was written: %v", cloud.Keys())
	}

	// A failing line: exit 1, the receipt is in the envelope, the run rolled back.
	cloud.FailNext(optest.Match{Op: optest.OpItem, Method: optest.MethodCreate}, errs.New(errs.PROVIDER_INVALID, "bad url"), 1)
	r = runCLI(t, env, "apply", "--json", "--pr", "3", "--receipts", "local")
	if r.code != 1 {
		t.Fatalf("failing line: exit %d\n%s%s", r.code, r.out, r.err)
	}
	doc := oneDocument(t, r)
	rc := doc["receipt"].(map[string]any)
	if rc["status"] != "failed" {
		t.Errorf("receipt status %v", rc["status"])
	}
	if len(cloud.Keys()) != 0 {
		t.Errorf("not rolled back: %v", cloud.Keys())
	}

	// The scope lease held by another run: exit 3 with the holder named.
	ctx := context.Background()
	l, _, err := st.Acquire(ctx, receipt.ScopeTarget("preview", "pr-3"), receipt.Owner{RunID: "r-other", Kind: receipt.KindAction, Actor: "octocat"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "apply", "--pr", "3", "--receipts", "local")
	if r.code != 3 || !strings.Contains(r.err, "LOCK_HELD") || !strings.Contains(r.err, "r-other") {
		t.Fatalf("held lease: exit %d\n%s", r.code, r.err)
	}
	st.Release(ctx, l)

	// Now it applies; the secret never appears in any output or receipt (I1).
	r = runCLI(t, env, "apply", "--pr", "3", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.out, r.err)
	}
	for _, args := range [][]string{
		{"plan", "--pr", "3", "--receipts", "local"},
		{"plan", "--json", "--pr", "3", "--receipts", "local"},
		{"receipt", "--json", "--pr", "3", "--receipts", "local"},
		{"apply", "--json", "--pr", "3", "--receipts", "local"},
	} {
		r := runCLI(t, env, args...)
		if strings.Contains(r.out+r.err, appKey) {
			t.Errorf("%v leaked the secret", args)
		}
	}
	stored, _, err := st.Read(ctx, "preview", "pr-3")
	if err != nil || stored == nil {
		t.Fatal(err)
	}
	raw, _ := receipt.Encode(stored)
	if strings.Contains(string(raw), appKey) {
		t.Error("the receipt holds the secret")
	}

	// A missing secret blocks the line: the run fails, nothing new is created.
	env2 := env
	env2.LookupEnv = func(k string) (string, bool) {
		if k == "APP_KEY" {
			return "", false
		}
		return env.LookupEnv(k)
	}
	r = runCLI(t, env2, "apply", "--json", "--pr", "4", "--receipts", "local")
	if r.code != 1 || !strings.Contains(r.out, string(errs.SECRET_UNRESOLVED)) {
		t.Errorf("missing secret: exit %d\n%s", r.code, r.out)
	}
	for _, k := range cloud.Keys() {
		if strings.Contains(k, "pr-4") {
			t.Errorf("pr-4 created %s with its secret missing", k)
		}
	}

	// apply --destroy is destroy.
	r = runCLI(t, env, "apply", "--destroy", "--json", "--pr", "3", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("apply --destroy: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if doc := oneDocument(t, r); doc["command"] != "destroy" || doc["receipt"].(map[string]any)["destroyed"] != true {
		t.Errorf("apply --destroy answered %v", doc)
	}
	if len(cloud.Keys()) != 0 {
		t.Errorf("destroy left %v", cloud.Keys())
	}
}

func TestReceiptsPush(t *testing.T) {
	env, _, st := fakeWorld(t)
	if r := runCLI(t, env, "apply", "--pr", "5", "--receipts", "local"); r.code != 0 {
		t.Fatalf("apply: %s%s", r.out, r.err)
	}
	ctx := context.Background()
	stored, _, err := st.Read(ctx, "preview", "pr-5")
	if err != nil {
		t.Fatal(err)
	}
	// An unsaved receipt that knows one more resource than the store.
	unsaved, err := stored.Clone()
	if err != nil {
		t.Fatal(err)
	}
	extra := unsaved.Ledger[0]
	extra.Key = optest.ObjectKey("default", "made-but-not-recorded")
	unsaved.Ledger = append(unsaved.Ledger, extra)
	unsaved.RunID = "r-lost"
	path, err := receipt.SaveUnsaved(filepath.Join(env.Dir, ".sponson", "unsaved"), unsaved)
	if err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, env, "receipts", "push", path, "--receipts", "local")
	if r.code != 0 || !strings.Contains(r.out, "made-but-not-recorded") {
		t.Fatalf("push (show): exit %d\n%s%s", r.code, r.out, r.err)
	}
	after, _, _ := st.Read(ctx, "preview", "pr-5")
	if len(after.Ledger) != len(stored.Ledger) {
		t.Fatal("showing the difference wrote the receipt")
	}
	if r := runCLI(t, env, "receipts", "push", path, "--adopt-missing", "--replace", "--receipts", "local"); r.code != 2 {
		t.Errorf("both modes: exit %d", r.code)
	}
	r = runCLI(t, env, "receipts", "push", path, "--adopt-missing", "--receipts", "local", "--json")
	if r.code != 0 {
		t.Fatalf("push --adopt-missing: exit %d\n%s%s", r.code, r.out, r.err)
	}
	oneDocument(t, r)
	after, _, _ = st.Read(ctx, "preview", "pr-5")
	if len(after.Ledger) != len(stored.Ledger)+1 {
		t.Errorf("adopt-missing did not add the entry: %d entries", len(after.Ledger))
	}
}

// A destroyed pull request's scope can be closed; apply then refuses it
// (SCOPE_CLOSED, exit 2) until told --reopen.
func TestDestroyCloseAndReopen(t *testing.T) {
	env, cloud, _ := fakeWorld(t)
	if r := runCLI(t, env, "apply", "--pr", "6", "--receipts", "local"); r.code != 0 {
		t.Fatalf("apply: %s%s", r.out, r.err)
	}
	r := runCLI(t, env, "destroy", "--close", "--json", "--pr", "6", "--sha", "0123456789abcdef0123456789abcdef01234567", "--receipts", "local")
	if r.code != 0 {
		t.Fatalf("destroy --close: exit %d\n%s%s", r.code, r.out, r.err)
	}
	closed := oneDocument(t, r)["receipt"].(map[string]any)["closed"].(map[string]any)
	if closed["head_sha"] != "0123456789abcdef0123456789abcdef01234567" || closed["by"] == "" {
		t.Errorf("tombstone %v", closed)
	}
	r = runCLI(t, env, "apply", "--pr", "6", "--receipts", "local")
	if r.code != 2 || !strings.Contains(r.err, "SCOPE_CLOSED") {
		t.Fatalf("apply of a closed scope: exit %d\n%s", r.code, r.err)
	}
	if len(cloud.Keys()) != 0 {
		t.Fatalf("a closed scope was rebuilt: %v", cloud.Keys())
	}
	if r := runCLI(t, env, "apply", "--reopen", "--pr", "6", "--receipts", "local"); r.code != 0 {
		t.Fatalf("apply --reopen: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if len(cloud.Keys()) == 0 {
		t.Error("--reopen applied nothing")
	}
}
