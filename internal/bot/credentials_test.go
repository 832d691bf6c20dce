package bot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/secret"
)

func TestParseDotenv(t *testing.T) {
	src := "\ufeff# the shop's tokens\n" +
		"VERCEL_TOKEN=plain-value   # a comment\r\n" +
		"export NEON_API_KEY='single # kept $HOME'\n" +
		"\n" +
		"SIM_HTTP_URL=\"http://x/a\\nb\\\"c\\\\\" # after\n" +
		"EMPTY=\n"
	got, err := ParseDotenv("acme.env", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"VERCEL_TOKEN": "plain-value", "NEON_API_KEY": "single # kept $HOME",
		"SIM_HTTP_URL": "http://x/a\nb\"c\\", "EMPTY": ""}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// Every malformed line is refused with the file and its line, and no
// error quotes a value back.
func TestParseDotenvRefusesWithTheLine(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"A=1\nsecret-value-without-name\n", "acme.env:2: not NAME=value"},
		{"# c\n\n1BAD=s3cr3tvalue\n", "acme.env:3: what comes before '='"},
		{"A='s3cr3tvalue\n", "acme.env:1: the value of A opens a '"},
		{"A=\"s3cr3tvalue\n", "acme.env:1: the value of A opens a \""},
		{"A=\"s3cr3t\\qvalue\"\n", "acme.env:1: the value of A has an escape"},
		{"A=\"s3cr3tvalue\" s3cr3tmore\n", "acme.env:1: the value of A has more after"},
		{"A=s3cr3t\"value\n", "acme.env:1: the value of A has a quote inside"},
		{"A=1\nB=2\nA=s3cr3tvalue\n", "acme.env:3: A is set twice"},
	} {
		_, err := ParseDotenv("acme.env", []byte(tc.src))
		e := errs.Coded(err)
		if err == nil || e.Code != errs.CREDENTIALS_INVALID || !strings.HasPrefix(e.Message, tc.want) {
			t.Errorf("%q: %v, want CREDENTIALS_INVALID %q", tc.src, err, tc.want)
			continue
		}
		if strings.Contains(e.Message, "s3cr3t") {
			t.Errorf("%q: the message quotes the value: %s", tc.src, e.Message)
		}
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A repository's own file wins over its owner's; an owner's file serves
// its other repositories; a repository of neither is refused; with the
// directory set the process environment gives no provider credential,
// only the bot's run settings.
func TestCredentialsPerRepository(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "acme", "shop.env"), "VERCEL_TOKEN=shop-token\n")
	writeFile(t, filepath.Join(dir, "acme.env"), "VERCEL_TOKEN=acme-token\nSPONSON_LEASE_TTL=2m\n")
	process := map[string]string{"VERCEL_TOKEN": "process-token", "NEON_API_KEY": "process-neon", "SPONSON_HTTP_TIMEOUT": "9s", "SPONSON_LEASE_TTL": "5m"}
	env := func(k string) (string, bool) { v, ok := process[k]; return v, ok }
	c := Credentials{Dir: dir, ReadFile: secret.ReadFile, Env: env}

	look := func(owner, name, key string) (string, bool) {
		t.Helper()
		rc, err := c.For(owner, name)
		if err != nil {
			t.Fatalf("%s/%s: %v", owner, name, err)
		}
		return rc.Lookup(key)
	}
	if v, _ := look("acme", "shop", "VERCEL_TOKEN"); v != "shop-token" {
		t.Errorf("acme/shop: %q", v)
	}
	if v, _ := look("acme", "web", "VERCEL_TOKEN"); v != "acme-token" {
		t.Errorf("acme/web: %q", v)
	}
	if v, ok := look("acme", "shop", "NEON_API_KEY"); ok {
		t.Errorf("a process credential reached acme/shop: %q", v)
	}
	if v, _ := look("acme", "shop", "SPONSON_HTTP_TIMEOUT"); v != "9s" {
		t.Errorf("the process's run settings: %q", v)
	}
	if v, _ := look("acme", "web", "SPONSON_LEASE_TTL"); v != "2m" {
		t.Errorf("the file's own setting wins: %q", v)
	}
	// acme/shop's file does not fall back to acme.env's lines.
	if v, _ := look("acme", "shop", "SPONSON_LEASE_TTL"); v != "5m" {
		t.Errorf("acme/shop: %q", v)
	}

	for _, r := range [][2]string{{"other", "repo"}, {"..", "x"}, {"acme", ".."}} {
		_, err := c.For(r[0], r[1])
		if errs.CodeOf(err) != errs.CREDENTIALS_NOT_FOUND {
			t.Errorf("%s/%s: %v, want CREDENTIALS_NOT_FOUND", r[0], r[1], err)
		}
	}
	_, err := c.For("other", "repo")
	if msg := errs.Coded(err).Message; !strings.Contains(msg, filepath.Join("other", "repo.env")) || !strings.Contains(msg, "other.env") {
		t.Errorf("the refusal names the files to add: %s", msg)
	}

	writeFile(t, filepath.Join(dir, "bad.env"), "OK=1\nnot a line\n")
	_, err = c.For("bad", "repo")
	if e := errs.Coded(err); e.Code != errs.CREDENTIALS_INVALID || !strings.Contains(e.Message, "bad.env:2:") {
		t.Errorf("bad.env: %v", err)
	}

	// Without the directory: the process environment, as before.
	rc, err := Credentials{Env: env}.For("other", "repo")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rc.Lookup("VERCEL_TOKEN"); v != "process-token" || rc.File != "" {
		t.Errorf("without the directory: %q from %q", v, rc.File)
	}
}

func TestConfigReadsTheCredentialsDir(t *testing.T) {
	c, err := ConfigFromEnv(source(map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": testKeyPEM(t),
		"SPONSON_WEBHOOK_SECRET": "s3cret", CredentialsDirVar: " /var/run/sponson/credentials "}))
	if err != nil {
		t.Fatal(err)
	}
	if c.CredentialsDir != "/var/run/sponson/credentials" {
		t.Errorf("CredentialsDir = %q", c.CredentialsDir)
	}
}

// A credentials directory that is not one stops the bot at start, named.
func TestConfigRefusesACredentialsDirThatIsNone(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "acme.env")
	writeFile(t, file, "A=1\n")
	for _, d := range []string{file, filepath.Join(dir, "missing")} {
		src := source(map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": testKeyPEM(t),
			"SPONSON_WEBHOOK_SECRET": "s3cret", CredentialsDirVar: d})
		src.Stat = os.Stat
		_, err := ConfigFromEnv(src)
		if e := errs.Coded(err); e.Code != errs.CONFIG_INVALID || !strings.Contains(e.Message, CredentialsDirVar) {
			t.Errorf("%s: %v", d, err)
		}
	}
	src := source(map[string]string{"SPONSON_APP_ID": "1", "SPONSON_APP_PRIVATE_KEY": testKeyPEM(t),
		"SPONSON_WEBHOOK_SECRET": "s3cret", CredentialsDirVar: dir})
	src.Stat = os.Stat
	if _, err := ConfigFromEnv(src); err != nil {
		t.Errorf("a directory: %v", err)
	}
}
