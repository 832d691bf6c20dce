package bot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/secret"
)

// The bot's own secrets, as its process environment holds them.
var botEnviron = map[string]string{
	"SPONSON_APP_PRIVATE_KEY":  "-----BEGIN RSA PRIVATE KEY-----the-apps-key",
	"SPONSON_WEBHOOK_SECRET":   "the-webhook-secret-value",
	"SPONSON_GITHUB_TOKEN":     "ghs_the-bots-own-token",
	"SPONSON_RECEIPT_KEY":      "the-receipt-signing-key-0123456789",
	"SPONSON_WEBHOOK_PROXY":    "https://proxy.example.test/with-a-password",
	"SPONSON_LEASE_TTL":        "15m",
	"SPONSON_APP_PRIVATE_KEY2": "another-bot-setting-value",
	"API_KEY":                  "the-provider-api-key",
}

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// A plan's env:// reference to any SPONSON_* variable that no provider op
// names as its credential is refused by its name (SECRET_REFUSED), when
// validated and when resolved; a provider's credential resolves. An
// adapter that reads a variable the plan names finds none of the bot's
// secrets, but the settings a run needs.
func TestPlanSecretsNeverReachTheBotsOwn(t *testing.T) {
	providers := map[string]bool{"SPONSON_FAKE_TOKEN": true}
	env := map[string]string{"SPONSON_FAKE_TOKEN": "a-provider-token"}
	for k, v := range botEnviron {
		env[k] = v
	}
	lookup := planEnv(lookupIn(env), providers)
	res := secret.New(secret.Config{LookupEnv: lookup})
	guardPlan(res, lookup, providers)
	for _, name := range []string{"SPONSON_APP_PRIVATE_KEY", "SPONSON_WEBHOOK_SECRET", "SPONSON_GITHUB_TOKEN", "SPONSON_RECEIPT_KEY",
		"SPONSON_WEBHOOK_PROXY", "SPONSON_LEASE_TTL", "SPONSON_HTTP_TIMEOUT", "sponson_app_private_key", "Sponson_Unset"} {
		ref := "env://" + name
		if err := res.Validate(ref); errs.CodeOf(err) != errs.SECRET_REFUSED {
			t.Errorf("Validate(%s) = %v, want SECRET_REFUSED", ref, err)
		}
		v, err := res.Resolve(context.Background(), ref)
		if errs.CodeOf(err) != errs.SECRET_REFUSED || v != "" {
			t.Errorf("Resolve(%s) = %q, %v, want SECRET_REFUSED", ref, v, err)
		} else if e := errs.Coded(err); !strings.Contains(e.Message, "the bot's own settings or secrets") || e.HintText() == "" {
			t.Errorf("the refusal says nothing to do: %+v", e)
		}
	}
	for name, want := range map[string]string{"API_KEY": "the-provider-api-key", "SPONSON_FAKE_TOKEN": "a-provider-token"} {
		if v, err := res.Resolve(context.Background(), "env://"+name); err != nil || v != want {
			t.Errorf("Resolve(env://%s) = %q, %v", name, v, err)
		}
	}
	for name, visible := range map[string]bool{"SPONSON_APP_PRIVATE_KEY": false, "SPONSON_WEBHOOK_SECRET": false, "SPONSON_GITHUB_TOKEN": false,
		"SPONSON_RECEIPT_KEY": false, "SPONSON_WEBHOOK_PROXY": false, "SPONSON_LEASE_TTL": true, "SPONSON_FAKE_TOKEN": true, "API_KEY": true} {
		if _, ok := lookup(name); ok != visible {
			t.Errorf("a run's environment has %s: %v, want %v", name, ok, visible)
		}
	}
}

// However the bot is given its credentials — its process environment, or
// SPONSON_CREDENTIALS_DIR (even a file that wrongly holds a SPONSON_*
// secret) — the workspace it builds for a repository refuses the bot's
// secrets to a plan and hides them from its adapters.
func TestWorkspaceRunsNeverSeeTheBotsSecrets(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Codertocat.env"), []byte("API_KEY=the-provider-api-key\nSPONSON_WEBHOOK_SECRET=the-webhook-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(a *AppWorkspaces){
		"process environment": func(a *AppWorkspaces) {},
		"credentials dir":     func(a *AppWorkspaces) { a.CredentialsDir, a.ReadFile = dir, os.ReadFile },
	} {
		t.Run(name, func(t *testing.T) {
			w := newAppWorld(t)
			w.ws.LookupEnv = lookupIn(botEnviron)
			set(w.ws)
			ws, err := w.ws.Open(context.Background(), Repository{Installation: 1, Owner: "Codertocat", Name: "Hello-World"})
			if err != nil || ws.Refused != nil {
				t.Fatalf("%v %v", err, ws.Refused)
			}
			defer ws.close()
			for _, k := range []string{"SPONSON_APP_PRIVATE_KEY", "SPONSON_WEBHOOK_SECRET", "SPONSON_GITHUB_TOKEN", "SPONSON_RECEIPT_KEY"} {
				if _, err := ws.Engine.Secrets.Resolve(context.Background(), "env://"+k); errs.CodeOf(err) != errs.SECRET_REFUSED {
					t.Errorf("env://%s: %v, want SECRET_REFUSED", k, err)
				}
				if v, ok := ws.Engine.LookupEnv(k); ok {
					t.Errorf("the run's adapters see %s=%q", k, v)
				}
			}
			if v, err := ws.Engine.Secrets.Resolve(context.Background(), "env://API_KEY"); err != nil || v != "the-provider-api-key" {
				t.Errorf("the provider's key: %q %v", v, err)
			}
		})
	}
}

// Journey: a pull request's plan that references the App's private key
// is refused from its comment before anything runs: nothing is created,
// and the key's value is in no comment, receipt or cloud write.
func TestPullRequestPlanCannotReadTheAppKey(t *testing.T) {
	w := stepWorld(t)
	w.ws.LookupEnv = lookupIn(botEnviron)
	leak := strings.TrimLeft(testPlan, "\n") + `  - { id: leak, adapter: fake, op: object, name: "${ctx.env}-leak", fields: { key: { secret: "env://SPONSON_APP_PRIVATE_KEY" }, api: { secret: "env://API_KEY" } } }
`
	sha, err := w.gh.Git.CommitFiles(hello, "changes", "read the key", map[string]string{"release.plan.yaml": leak})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Issues.SetPullHead(hello, 2, sha); err != nil {
		t.Fatal(err)
	}
	w.say("wes", "/sponson apply --env preview")
	if keys := w.cloud.Keys(); len(keys) != 0 {
		t.Errorf("created from a plan that names the App's key: %v", keys)
	}
	body := strings.ReplaceAll(w.botComment(report.Marker("preview"))+w.botComment(answerMarker), "&#95;", "_")
	if !strings.Contains(body, string(errs.SECRET_REFUSED)) || !strings.Contains(body, "SPONSON_APP_PRIVATE_KEY") {
		t.Errorf("the comment does not say why:\n%s", body)
	}
	if r := w.receipt("preview", "pr-2"); r != nil && len(r.Ledger) != 0 {
		t.Errorf("the receipt: %+v", r)
	}
	for _, c := range w.gh.Comments(hello, 2) {
		if strings.Contains(c.Body, "the-apps-key") {
			t.Errorf("a comment holds the key:\n%s", c.Body)
		}
	}
	for _, wr := range w.cloud.Writes() {
		if strings.Contains(wr.Key, "leak") {
			t.Errorf("a cloud write of the leaking line: %+v", wr)
		}
	}

	// The same line with the provider's key alone is applied: the test
	// can tell a plan that runs from one that is refused.
	ok := strings.Replace(leak, `key: { secret: "env://SPONSON_APP_PRIVATE_KEY" }, `, "", 1)
	if sha, err = w.gh.Git.CommitFiles(hello, "changes", "no key", map[string]string{"release.plan.yaml": ok}); err != nil {
		t.Fatal(err)
	}
	if err := w.gh.Issues.SetPullHead(hello, 2, sha); err != nil {
		t.Fatal(err)
	}
	w.say("wes", "/sponson apply --env preview")
	if keys := w.cloud.Keys(); len(keys) != 3 {
		t.Errorf("the plan without the key was not applied: %v", keys)
	}
}
