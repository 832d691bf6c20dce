package github_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sponson/apply/internal/github"
	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/internal/testing/gittest"
	"github.com/sponson/apply/pkg/errs"
)

var appKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}()

func appPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(appKey)})
}

func newApp(t *testing.T) (*world, *github.App) {
	t.Helper()
	w := newWorld(t)
	if _, err := w.AddApp(githubtest.App{ID: 42, Slug: "sponson", Key: appKey}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddRepo(githubtest.Repo{FullName: "octo/other"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddInstallation(githubtest.Installation{ID: 7, App: 42, Account: "octo", Repos: []string{"octo/app", "octo/other"}}); err != nil {
		t.Fatal(err)
	}
	app, err := github.NewApp(w.config(), 42, appPEM())
	if err != nil {
		t.Fatal(err)
	}
	return w, app
}

func TestAppCalls(t *testing.T) {
	w, app := newApp(t)
	ctx := context.Background()
	info, err := app.Get(ctx)
	if err != nil || info.Slug != "sponson" || info.Login() != "sponson[bot]" {
		t.Fatalf("app: %+v %v", info, err)
	}
	if err := app.Check(ctx); err != nil {
		t.Fatal(err)
	}
	insts, err := app.Installations(ctx)
	if err != nil || len(insts) != 1 || insts[0].ID != 7 || insts[0].Account != "octo" {
		t.Fatalf("installations: %+v %v", insts, err)
	}
	in, err := app.RepositoryInstallation(ctx, "octo", "app")
	if err != nil || in.ID != 7 {
		t.Fatalf("repository installation: %+v %v", in, err)
	}
	_, err = app.RepositoryInstallation(ctx, "octo", "nowhere")
	wantCode(t, err, errs.GITHUB_NOT_FOUND)

	c, err := app.Installation(7)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := app.Installation(7); again != c {
		t.Error("the installation client is not cached")
	}
	repos, err := c.InstallationRepositories(ctx)
	if err != nil || len(repos) != 2 {
		t.Fatalf("installation repositories: %+v %v", repos, err)
	}
	if login, err := c.Login(ctx); err != nil || login != "sponson[bot]" {
		t.Fatalf("login: %q %v", login, err)
	}
	cm, created, err := c.UpsertComment(ctx, "octo", "app", 1, "<!-- sponson:bot -->", "<!-- sponson:bot -->\ninherited")
	if err != nil || !created || cm.Author != "sponson[bot]" {
		t.Fatalf("comment: %+v %v", cm, err)
	}
	if _, created, err := c.UpsertComment(ctx, "octo", "app", 1, "<!-- sponson:bot -->", "<!-- sponson:bot -->\ndestroyed"); err != nil || created {
		t.Fatalf("second upsert: %v %v", created, err)
	}
	if n := len(w.IssuedTokens(7)); n != 1 {
		t.Errorf("tokens issued for all those calls: %d, want 1", n)
	}
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("violations: %v", v)
	}
}

func TestInstallationTokenForGit(t *testing.T) {
	w, app := newApp(t)
	c, _ := app.Installation(7)
	tok, err := c.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(c.RemoteURL("octo", "app"))
	u.User = url.UserPassword("x-access-token", tok)
	work := filepath.Join(t.TempDir(), "work")
	gittest.Run(t, "", "clone", "-q", u.String(), work)
	gittest.Run(t, work, "commit", "-q", "--allow-empty", "-m", "receipt")
	gittest.Run(t, work, "push", "-q", "origin", "HEAD:refs/heads/sponson-receipts/preview/pr-1")
	if w.Branches("octo/app")["sponson-receipts/preview/pr-1"] == "" {
		t.Error("the push with the installation token did not land")
	}
}

func TestInstallationTokenRefresh(t *testing.T) {
	w, app := newApp(t)
	c, _ := app.Installation(7)
	ctx := context.Background()
	first, err := c.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 54 minutes in, the token has six minutes left: kept.
	w.time.Advance(54 * time.Minute)
	if tok, _ := c.Token(ctx); tok != first {
		t.Error("a token with six minutes left was replaced")
	}
	// 56 minutes in, four: replaced, once, however many callers ask.
	w.time.Advance(2 * time.Minute)
	var wg sync.WaitGroup
	toks := make([]string, 8)
	for i := range toks {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				toks[i], _ = c.Token(ctx)
				return
			}
			if _, err := c.GetPullRequest(ctx, "octo", "app", 1); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if n := len(w.IssuedTokens(7)); n != 2 {
		t.Fatalf("tokens issued: %d, want 2 (one refresh at a time)", n)
	}
	for i := 0; i < len(toks); i += 2 {
		if toks[i] == first || toks[i] == "" {
			t.Errorf("caller %d got the old token", i)
		}
	}
}

func TestA401ForcesOneRefresh(t *testing.T) {
	w, app := newApp(t)
	c, _ := app.Installation(7)
	ctx := context.Background()
	if _, err := c.GetRepository(ctx, "octo", "app"); err != nil {
		t.Fatal(err)
	}
	w.ExpireTokens(7) // revoked early: GitHub answers 401
	w.ResetLog()
	if _, err := c.CreateIssueComment(ctx, "octo", "app", 1, "after a revoked token"); err != nil {
		t.Fatalf("the call after a 401: %v", err)
	}
	if n := len(w.IssuedTokens(7)); n != 2 {
		t.Errorf("tokens issued: %d, want 2", n)
	}
	if got := w.Count("issues/create-comment"); got != 2 {
		t.Errorf("create-comment calls: %d, want 2 (the 401, the retry)", got)
	}
	if n := len(w.Comments("octo/app", 1)); n != 1 {
		t.Errorf("comments: %d", n)
	}
}

func TestAppErrors(t *testing.T) {
	w, _ := newApp(t)
	ctx := context.Background()
	if _, err := github.NewApp(w.config(), 42, []byte("not a key")); errs.CodeOf(err) != errs.GITHUB_AUTH {
		t.Errorf("bad key: %v", err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 1024)
	wrong, err := github.NewApp(w.config(), 42, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)}))
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, wrong.Check(ctx), errs.GITHUB_AUTH)
	c, _ := wrong.Installation(7)
	_, err = c.GetRepository(ctx, "octo", "app")
	wantCode(t, err, errs.GITHUB_AUTH)
	app, _ := github.NewApp(w.config(), 42, appPEM())
	c, _ = app.Installation(99)
	_, err = c.Token(ctx)
	wantCode(t, err, errs.GITHUB_AUTH)
}

// The bot reads these counters for its metrics.
var _ interface {
	Calls() int64
	ThrottledSeconds() float64
} = (*github.App)(nil)

func TestAppCountersSpanInstallations(t *testing.T) {
	w, app := newApp(t)
	c, _ := app.Installation(7)
	w.Inject(githubtest.SecondaryRateLimit(1, 3*time.Second))
	if _, err := c.GetRepository(context.Background(), "octo", "app"); err != nil {
		t.Fatal(err)
	}
	// The token call, the rate-limited call and its retry.
	if app.Calls() != 3 || app.ThrottledSeconds() != 3 || c.Stats().Calls != 3 {
		t.Errorf("calls %d, throttled %vs", app.Calls(), app.ThrottledSeconds())
	}
}

func TestAppRepositoriesSpanInstallations(t *testing.T) {
	w, app := newApp(t)
	if err := w.AddRepo(githubtest.Repo{FullName: "acme/site"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddInstallation(githubtest.Installation{ID: 8, App: 42, Account: "acme", Repos: []string{"acme/site"}}); err != nil {
		t.Fatal(err)
	}
	got, err := app.Repositories(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, fmt.Sprintf("%d:%s", r.Installation, r.FullName))
	}
	if strings.Join(names, " ") != "7:octo/app 7:octo/other 8:acme/site" {
		t.Errorf("repositories: %v", names)
	}
}

func TestTokenErrorsAreCleanlyCoded(t *testing.T) {
	_, app := newApp(t)
	c, _ := app.Installation(99)
	_, err := c.GetRepository(context.Background(), "octo", "app")
	wantCode(t, err, errs.GITHUB_AUTH)
	if !strings.HasPrefix(err.Error(), "GITHUB_AUTH: ") || !strings.Contains(err.Error(), "installation 99") {
		t.Errorf("message %q", err)
	}
}

// bodies records the body of every POST.
type bodies struct {
	mu   sync.Mutex
	got  []string
	next http.RoundTripper
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil {
		raw, _ := io.ReadAll(r.Body)
		r.Body.Close()
		b.mu.Lock()
		b.got = append(b.got, r.URL.Path+" "+strings.TrimSpace(string(raw)))
		b.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(raw))
	}
	return b.next.RoundTrip(r)
}

func TestTokenRequestBodyIsAnObject(t *testing.T) {
	w, _ := newApp(t)
	rec := &bodies{next: http.DefaultTransport}
	cfg := w.config()
	cfg.Transport = rec
	app, err := github.NewApp(cfg, 42, appPEM())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := app.Installation(7)
	if _, err := c.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.got) != 1 || rec.got[0] != "/api/v3/app/installations/7/access_tokens {}" {
		t.Errorf("token requests: %q", rec.got)
	}
}

func TestCallsAreLabelledByOperation(t *testing.T) {
	w, _ := newApp(t)
	obs := &observed{}
	cfg := w.config()
	cfg.Observer = obs
	app, err := github.NewApp(cfg, 42, appPEM())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := app.Repositories(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"apps/list-installations":                    1,
		"apps/create-installation-access-token":      1,
		"apps/list-repos-accessible-to-installation": 1,
	}
	if fmt.Sprint(obs.ops) != fmt.Sprint(want) {
		t.Errorf("operations %v, want %v", obs.ops, want)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{"GITHUB_API_URL": "https://ghe.example.com/api/v3", "GITHUB_SERVER_URL": "https://ghe.example.com"}
	cfg := github.ConfigFromEnv(func(k string) string { return env[k] })
	if cfg.APIURL != env["GITHUB_API_URL"] || cfg.ServerURL != env["GITHUB_SERVER_URL"] {
		t.Errorf("%+v", cfg)
	}
	c, err := github.NewToken(cfg, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RemoteURL("octo", "app"); got != "https://ghe.example.com/octo/app.git" {
		t.Errorf("remote %q", got)
	}
}
