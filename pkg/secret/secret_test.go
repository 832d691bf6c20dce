package secret_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/secret"
)

func TestParseRef(t *testing.T) {
	ok := []struct{ ref, scheme, rest string }{
		{"env://NEON_API_KEY", "env", "NEON_API_KEY"},
		{"ENV://X", "env", "X"},
		{"file:///run/secrets/db", "file", "/run/secrets/db"},
		{"file://secrets/db.txt", "file", "secrets/db.txt"},
		{"aws-sm://prod/db#password", "aws-sm", "prod/db#password"},
		{"op://vault/item/field", "op", "vault/item/field"},
	}
	for _, c := range ok {
		s, r, err := secret.ParseRef(c.ref)
		if err != nil || s != c.scheme || r != c.rest {
			t.Errorf("ParseRef(%q) = %q, %q, %v; want %q, %q", c.ref, s, r, err, c.scheme, c.rest)
		}
	}
	bad := []string{"", "NEON_API_KEY", "env:/X", "://X", "1env://X", "e nv://X", "env://", "env:// X", "env://X ", "env://A\nB", "file://a\x00b"}
	for _, ref := range bad {
		_, _, err := secret.ParseRef(ref)
		if errs.CodeOf(err) != errs.PLAN_INVALID {
			t.Errorf("ParseRef(%q): code %s (%v), want PLAN_INVALID", ref, errs.CodeOf(err), err)
		}
	}
}

func TestParseRefDoesNotEchoAPastedSecret(t *testing.T) {
	const pasted = "ghp_d7f0a1b2c3d4e5f60718293a4b5c6d7e8f90"
	_, _, err := secret.ParseRef(pasted)
	if err == nil || strings.Contains(err.Error(), pasted) || strings.Contains(errs.As(err).HintText(), pasted) {
		t.Fatalf("err = %v", err)
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

type fakeFS map[string]string

func (f fakeFS) read(p string) ([]byte, error) {
	if p == filepath.FromSlash("/base/denied") {
		return nil, fs.ErrPermission
	}
	v, ok := f[filepath.ToSlash(p)]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return []byte(v), nil
}

func TestResolve(t *testing.T) {
	r := secret.New(secret.Config{
		LookupEnv: env(map[string]string{"TOKEN": "tok-value-1", "EMPTY": "", "BLANK": " \t", "NL": "line1\nline2\n"}),
		ReadFile: fakeFS{
			"/base/db.txt":   "file-value\n",
			"/base/two.txt":  "two\n\n",
			"/base/crlf.txt": "crlf-value\r\n",
			"/abs/key.pem":   "-----BEGIN-----\nabc\n-----END-----\n",
			"/base/empty":    "",
			"/base/newline":  "\n",
		}.read,
		BaseDir:   "/base",
		AllowDirs: []string{"/abs"},
	})
	cases := []struct {
		ref  string
		want string
		code errs.Code
	}{
		{"env://TOKEN", "tok-value-1", ""},
		{"env://NL", "line1\nline2\n", ""}, // env values are not trimmed
		{"env://MISSING", "", errs.SECRET_UNRESOLVED},
		{"env://EMPTY", "", errs.SECRET_UNRESOLVED},
		{"env://BLANK", "", errs.SECRET_UNRESOLVED},
		{"env://NOT-A-NAME", "", errs.PLAN_INVALID},
		{"env://1X", "", errs.PLAN_INVALID},
		{"file://db.txt", "file-value", ""},
		{"file://./db.txt", "file-value", ""},
		{"file://two.txt", "two\n", ""}, // one newline only
		{"file://crlf.txt", "crlf-value", ""},
		{"file:///abs/key.pem", "-----BEGIN-----\nabc\n-----END-----", ""},
		// Outside the working tree and every allowed directory.
		{"file:///proc/self/environ", "", errs.SECRET_UNRESOLVED},
		{"file://../outside.txt", "", errs.SECRET_UNRESOLVED},
		{"file:///base/../abs2/x", "", errs.SECRET_UNRESOLVED},
		{"file://missing.txt", "", errs.SECRET_UNRESOLVED},
		{"file://empty", "", errs.SECRET_UNRESOLVED},
		{"file://newline", "", errs.SECRET_UNRESOLVED},
		{"file://denied", "", errs.SECRET_UNRESOLVED},
		{"vault://kv/db", "", errs.SECRET_UNRESOLVED},
		{"TOKEN", "", errs.PLAN_INVALID},
	}
	for _, c := range cases {
		got, err := r.Resolve(context.Background(), c.ref)
		if code := errs.CodeOf(err); code != c.code || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q, code %q", c.ref, got, err, c.want, c.code)
			continue
		}
		if err == nil {
			continue
		}
		if e := errs.As(err); e.Code == errs.SECRET_UNRESOLVED && !strings.Contains(e.Message, c.ref) {
			t.Errorf("Resolve(%q): message %q does not name the reference", c.ref, e.Message)
		}
	}
}

func TestResolveErrorsKeepCauseAndHint(t *testing.T) {
	r := secret.New(secret.Config{LookupEnv: env(nil), ReadFile: fakeFS{}.read, BaseDir: "/base"})
	_, err := r.Resolve(context.Background(), "file://nope")
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, errs.SECRET_UNRESOLVED) {
		t.Errorf("missing file: %v", err)
	}
	_, err = r.Resolve(context.Background(), "vault://kv/db")
	if h := errs.As(err).HintText(); !strings.Contains(h, "env://, file://") {
		t.Errorf("unknown scheme hint %q does not list the schemes", h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.Resolve(ctx, "env://X")
	if !errors.Is(err, context.Canceled) || errs.CodeOf(err) != errs.SECRET_UNRESOLVED {
		t.Errorf("cancelled: %v", err)
	}
}

func TestResolveRealFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s"), []byte("from-disk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := secret.New(secret.Config{ReadFile: os.ReadFile, BaseDir: dir, LookupEnv: os.LookupEnv})
	got, err := r.Resolve(context.Background(), "file://s")
	if err != nil || got != "from-disk" {
		t.Fatalf("got %q, %v", got, err)
	}
	got, err = r.Resolve(context.Background(), "file://"+filepath.ToSlash(filepath.Join(dir, "s")))
	if err != nil || got != "from-disk" {
		t.Fatalf("absolute: got %q, %v", got, err)
	}
}

func TestUnwiredSourcesAreInternal(t *testing.T) {
	r := secret.New(secret.Config{})
	for _, ref := range []string{"env://X", "file://x"} {
		if _, err := r.Resolve(context.Background(), ref); errs.CodeOf(err) != errs.INTERNAL {
			t.Errorf("%s: %v, want INTERNAL", ref, err)
		}
	}
}

// vault is a stand-in for a later source, registered like any other.
type vault map[string]string

func (v vault) Resolve(_ context.Context, ref secret.Ref) (string, error) {
	if ref.Rest == "broken" {
		return "", errors.New("connection refused")
	}
	return v[ref.Rest], nil
}

func TestRegisterScheme(t *testing.T) {
	r := secret.New(secret.Config{LookupEnv: env(nil)})
	r.Register("vault", vault{"kv/db": "vault-value", "kv/empty": ""})
	if got, err := r.Resolve(context.Background(), "vault://kv/db"); err != nil || got != "vault-value" {
		t.Errorf("got %q, %v", got, err)
	}
	for _, ref := range []string{"vault://kv/empty", "vault://broken"} {
		if _, err := r.Resolve(context.Background(), ref); errs.CodeOf(err) != errs.SECRET_UNRESOLVED {
			t.Errorf("%s: %v, want SECRET_UNRESOLVED", ref, err)
		}
	}
	if got := strings.Join(r.Schemes(), ","); got != "env,file,vault" {
		t.Errorf("Schemes = %s", got)
	}
	var zero secret.Resolver
	if _, err := zero.Resolve(context.Background(), "env://X"); errs.CodeOf(err) != errs.SECRET_UNRESOLVED {
		t.Errorf("zero resolver: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering an invalid scheme did not panic")
		}
	}()
	r.Register("not a scheme", vault{})
}

func TestValidate(t *testing.T) {
	r := secret.New(secret.Config{})
	cases := map[string]errs.Code{
		"env://OK":       "",
		"env://1BAD":     errs.PLAN_INVALID,
		"file://any/x":   "",
		"nope":           errs.PLAN_INVALID,
		"vault://kv/db":  errs.SECRET_UNRESOLVED,
		"env://has-dash": errs.PLAN_INVALID,
	}
	for ref, want := range cases {
		if got := errs.CodeOf(r.Validate(ref)); got != want {
			t.Errorf("Validate(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestLooksLikeCredentialEnv(t *testing.T) {
	yes := []string{
		"GITHUB_TOKEN", "github_token", "VERCEL_TOKEN", "NEON_API_KEY", "SUPABASE_ACCESS_TOKEN",
		"AUTH0_MANAGEMENT_TOKEN", "SPONSON_GIT_TOKEN", "ACTIONS_RUNTIME_TOKEN",
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN", "AWS_SECRET_ACCESS_KEY", "STRIPE_SECRET", "PGPASSWORD",
		"DB_PASSWORD", "SMTP_PASS", "MYSQL_PASSWD", "SSH_PRIVATE_KEY", "OPENAI_API_KEY", "Api_Key",
		"TOKEN", "GPG_PASSPHRASE",
	}
	no := []string{
		"PATH", "HOME", "GITHUB_SHA", "GITHUB_REF", "DATABASE_URL", "BYPASS", "KEYBOARD",
		"TOKEN_URL", "ACTIONS_ID_TOKEN_REQUEST_URL", "SECRETS_DIR", "PASSWORD_FILE", "",
	}
	for _, n := range yes {
		if !secret.LooksLikeCredentialEnv(n) {
			t.Errorf("%q: false, want true", n)
		}
	}
	for _, n := range no {
		if secret.LooksLikeCredentialEnv(n) {
			t.Errorf("%q: true, want false", n)
		}
	}
}

var (
	_ secret.Source    = secret.Env{}
	_ secret.Source    = secret.File{}
	_ secret.Validator = secret.Env{}
)

// A link inside the working tree that leads out of it is refused; bounded
// reads refuse a FIFO and a device without blocking.
func TestFileSecretsStayInTheTree(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "key"), []byte("outside-secret-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "key"), filepath.Join(dir, "link")); err != nil {
		t.Skip("no symlinks:", err)
	}
	r := secret.New(secret.Config{ReadFile: secret.ReadFile, BaseDir: dir})
	if _, err := r.Resolve(context.Background(), "file://link"); errs.CodeOf(err) != errs.SECRET_UNRESOLVED {
		t.Errorf("a link out of the tree: %v", err)
	}
	opted := secret.New(secret.Config{ReadFile: secret.ReadFile, BaseDir: dir, AllowDirs: []string{outside}})
	if v, err := opted.Resolve(context.Background(), "file://link"); err != nil || v != "outside-secret-value" {
		t.Errorf("with the directory allowed: %q, %v", v, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		if _, err := secret.ReadFile(fifo); !secret.IsRefused(err) {
			t.Errorf("ReadFile of a FIFO: %v", err)
		}
	}
	if _, err := secret.ReadFile("/dev/zero"); !secret.IsRefused(err) {
		t.Errorf("ReadFile of /dev/zero: %v", err)
	}
}

// A file:// read that never finishes (a hung mount) cannot hold the run:
// it gives up when the run is cancelled, and on its own after
// ReadTimeout. Time is the bubble's, so the verdict does not depend on
// this machine.
func TestStuckFileReadIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unblock := make(chan struct{})
		defer close(unblock)
		stuck := func(string) ([]byte, error) { <-unblock; return []byte("late"), nil }
		r := secret.New(secret.Config{ReadFile: stuck, BaseDir: "/repo"})

		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel) // the bubble's time: no real wait
		start := time.Now()
		_, err := r.Resolve(ctx, "file://token")
		if !errors.Is(err, context.Canceled) || errs.CodeOf(err) != errs.SECRET_UNRESOLVED {
			t.Fatalf("cancelled read: %v (code %s)", err, errs.CodeOf(err))
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("the cancelled read returned after %s, want at the cancel (1s)", d)
		}

		start = time.Now()
		_, err = r.Resolve(context.Background(), "file://token")
		if !errors.Is(err, context.DeadlineExceeded) || errs.CodeOf(err) != errs.SECRET_UNRESOLVED || !strings.Contains(err.Error(), "did not finish") {
			t.Fatalf("stuck read: %v (code %s)", err, errs.CodeOf(err))
		}
		if d := time.Since(start); d != secret.ReadTimeout {
			t.Errorf("the stuck read gave up after %s, want %s", d, secret.ReadTimeout)
		}
	})
}
