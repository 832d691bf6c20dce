package bot

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sponson/apply/pkg/errs"
)

func testKeyPEM(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func source(env map[string]string) Source {
	return Source{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, ReadFile: os.ReadFile}
}

func TestConfigFromEnv(t *testing.T) {
	key := testKeyPEM(t)
	dir := t.TempDir()
	keyFile, secretFile := filepath.Join(dir, "key.pem"), filepath.Join(dir, "secret")
	os.WriteFile(keyFile, []byte(key), 0o600)
	os.WriteFile(secretFile, []byte("s3cret-from-a-file\n"), 0o600)
	os.WriteFile(secretFile+".receipt", []byte(strings.Repeat("ab", 32)+"\n"), 0o600)

	c, err := ConfigFromEnv(source(map[string]string{
		"SPONSON_APP_ID": "12345", "SPONSON_APP_PRIVATE_KEY_FILE": keyFile, "SPONSON_WEBHOOK_SECRET_FILE": secretFile,
		"GITHUB_API_URL": "https://ghe.example.com/api/v3", "GITHUB_SERVER_URL": "https://ghe.example.com/",
		"SPONSON_SWEEP_INTERVAL": "5m", "SPONSON_RETENTION": "7d", "SPONSON_WORKERS": "8", "SPONSON_RECEIPT_KEY_FILE": secretFile + ".receipt",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.AppID != 12345 || string(c.WebhookSecret) != "s3cret-from-a-file" || c.APIURL != "https://ghe.example.com/api/v3/" ||
		c.ServerURL != "https://ghe.example.com" || c.ReceiptKeys == nil || c.SweepInterval != 5*time.Minute || c.Retention != 7*24*time.Hour || c.Workers != 8 || c.Addr != DefaultAddr {
		t.Errorf("config: %+v", c)
	}

	c, err = ConfigFromEnv(source(map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": key, "SPONSON_WEBHOOK_SECRET": "x"}))
	if err != nil || c.SweepInterval != DefaultSweepInterval || c.Retention != DefaultRetention || c.Workers != DefaultWorkers || c.APIURL != DefaultAPIURL || c.ReceiptKeys != nil {
		t.Errorf("defaults: %+v %v", c, err)
	}
}

func TestConfigErrorsNameTheVariables(t *testing.T) {
	key := testKeyPEM(t)
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing set", map[string]string{}, []string{"SPONSON_APP_ID", "SPONSON_APP_PRIVATE_KEY", "SPONSON_WEBHOOK_SECRET"}},
		{"no webhook secret", map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": key}, []string{"SPONSON_WEBHOOK_SECRET"}},
		{"bad values", map[string]string{"SPONSON_APP_ID": "abc", "SPONSON_APP_PRIVATE_KEY": "not a key", "SPONSON_WEBHOOK_SECRET": "x",
			"SPONSON_SWEEP_INTERVAL": "soon", "SPONSON_RETENTION": "-1h", "SPONSON_WORKERS": "0", "GITHUB_API_URL": "ftp://x"},
			[]string{"SPONSON_APP_ID", "SPONSON_APP_PRIVATE_KEY", "SPONSON_SWEEP_INTERVAL", "SPONSON_RETENTION", "SPONSON_WORKERS", "GITHUB_API_URL"}},
		{"both inline and file", map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": key, "SPONSON_WEBHOOK_SECRET": "x", "SPONSON_WEBHOOK_SECRET_FILE": "/x"}, []string{"SPONSON_WEBHOOK_SECRET"}},
		{"receipt key too short", map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": key, "SPONSON_WEBHOOK_SECRET": "x", "SPONSON_RECEIPT_KEY": "short"}, []string{"SPONSON_RECEIPT_KEY"}},
		{"unreadable file", map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": key, "SPONSON_WEBHOOK_SECRET_FILE": "/nonexistent/secret"}, []string{"SPONSON_WEBHOOK_SECRET_FILE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ConfigFromEnv(source(c.env))
			e := errs.As(err)
			if e == nil || e.Code != errs.CONFIG_INVALID || errs.ExitCode(err) != 2 {
				t.Fatalf("err %v", err)
			}
			got, _ := e.Details["variables"].([]string)
			slices.Sort(got)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("variables %v, want %v", got, want)
			}
			for _, v := range c.want {
				if !strings.Contains(e.Message, v) {
					t.Errorf("message does not name %s: %s", v, e.Message)
				}
			}
			if strings.Contains(e.Message, key[40:80]) {
				t.Errorf("the message shows the key")
			}
		})
	}
}

// SPONSON_APPROVERS_TEAM is org/team-slug, or unset.
func TestConfigApproversTeam(t *testing.T) {
	base := map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": testKeyPEM(t), "SPONSON_WEBHOOK_SECRET": "s"}
	for v, ok := range map[string]bool{"": true, "acme/release-approvers": true, "acme": false, "acme/": false, "/x": false, "a/b/c": false} {
		env := maps.Clone(base)
		if v != "" {
			env["SPONSON_APPROVERS_TEAM"] = v
		}
		c, err := ConfigFromEnv(source(env))
		if ok && (err != nil || c.Approvers != v) {
			t.Errorf("%q: %+v %v", v, c.Approvers, err)
		}
		if !ok && (errs.CodeOf(err) != errs.CONFIG_INVALID || !strings.Contains(err.Error(), "SPONSON_APPROVERS_TEAM")) {
			t.Errorf("%q: %v, want CONFIG_INVALID naming it", v, err)
		}
	}
}
