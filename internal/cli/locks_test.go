package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/localstore"
)

func TestLocksAndUnlock(t *testing.T) {
	env := testEnv(t, map[string]string{"USER": "mona"}, nil)
	st := localstore.New(filepath.Join(env.Dir, ".sponson", "receipts"), clock.System{})
	ctx := context.Background()
	scope := receipt.ScopeTarget("preview", "pr-12")
	parent := receipt.ParentTarget("auth0:example.eu.auth0.com:client:AbCd123")
	held, _, err := st.Acquire(ctx, scope, receipt.Owner{RunID: "r-held", Kind: receipt.KindAction, Actor: "octocat", GitHubRunID: 99, GitHubRunAttempt: 2}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Acquire(ctx, parent, receipt.Owner{RunID: "r-held", Kind: receipt.KindAction}, time.Hour); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, env, "locks", "--receipts", "local")
	for _, want := range []string{"preview/pr-12", "r-held", "action, by octocat, GitHub run 99/2", "auth0:example.eu.auth0.com:client:AbCd123"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("locks does not show %q:\n%s", want, r.out)
		}
	}
	r = runCLI(t, env, "locks", "--json", "--receipts", "local")
	doc := oneDocument(t, r)
	var got struct {
		Locks []struct {
			Kind, Target, Holder, Unlock string
			Generation                   int64
			Expired                      bool
		}
		Capabilities receipt.Capabilities
	}
	b, _ := json.Marshal(doc)
	json.Unmarshal(b, &got)
	if len(got.Locks) != 2 || !got.Capabilities.FencedWrites {
		t.Fatalf("locks --json = %s", r.out)
	}

	// No reason: refused, nothing released.
	r = runCLI(t, env, "unlock", "preview", "pr-12", "--receipts", "local")
	if r.code != 2 || !strings.Contains(r.err, "USAGE: unlock needs --reason") {
		t.Fatalf("unlock without a reason: exit %d, %s", r.code, r.err)
	}
	if l, _ := st.Lease(ctx, scope); l == nil {
		t.Fatal("the lease was released without a reason")
	}

	r = runCLI(t, env, "unlock", "preview", "pr-12", "--reason", "job cancelled", "--receipts", "local")
	if r.code != 0 || !strings.Contains(r.out, "released the lease on preview/pr-12") {
		t.Fatalf("unlock: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if l, _ := st.Lease(ctx, scope); l != nil {
		t.Fatal("the lease is still held after unlock")
	}
	// The old holder is fenced out.
	if err := st.Write(ctx, &receipt.Receipt{Version: 1, Env: "preview", Scope: "pr-12", RunID: "r-held"}, held); err == nil {
		t.Fatal("the released holder could still write")
	}
	hist, err := st.History(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1]
	if last.Reason != "job cancelled" || last.By != "mona" {
		t.Errorf("history does not record the unlock: %+v", last)
	}

	r = runCLI(t, env, "unlock", "--parent", "auth0:example.eu.auth0.com:client:AbCd123", "--reason", "stuck", "--receipts", "local", "--json")
	doc = oneDocument(t, r)
	if doc["released"] == nil {
		t.Errorf("the parent lease was not released: %s", r.out)
	}
	r = runCLI(t, env, "unlock", "preview", "pr-12", "--reason", "again", "--receipts", "local")
	if r.code != 0 || !strings.Contains(r.out, "no lease was held") {
		t.Errorf("a second unlock: exit %d %s", r.code, r.out)
	}
}
