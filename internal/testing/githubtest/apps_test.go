package githubtest_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"strconv"
	"testing"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"

	"github.com/sponson/apply/internal/testing/githubtest"
	"github.com/sponson/apply/pkg/clock"
)

var testKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}()

func appJWT(t *testing.T, key *rsa.PrivateKey, iss string, iat, exp time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": iss, "iat": iat.Unix(), "exp": exp.Unix()})
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func withApp(t *testing.T) (*githubtest.Server, *clock.Fake) {
	t.Helper()
	s, clock := seeded(t)
	if _, err := s.AddApp(githubtest.App{ID: 42, Slug: "sponson", Key: testKey}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddInstallation(githubtest.Installation{ID: 7, App: 42, Account: "octo", Repos: []string{"octo/app"}}); err != nil {
		t.Fatal(err)
	}
	return s, clock
}

func get(t *testing.T, url, auth string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAppJWTIsChecked(t *testing.T) {
	t.Parallel()
	s, clock := withApp(t)
	now := clock.Now
	other, _ := rsa.GenerateKey(rand.Reader, 1024)
	n := now()
	cases := []struct {
		name string
		jwt  string
		want int
	}{
		{"valid", appJWT(t, testKey, "42", n.Add(-30*time.Second), n.Add(9*time.Minute)), 200},
		{"iss as a number", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": 42, "iat": n.Unix(), "exp": n.Add(time.Minute).Unix()})
			s, _ := tok.SignedString(testKey)
			return s
		}(), 200},
		{"another key", appJWT(t, other, "42", n, n.Add(time.Minute)), 401},
		{"unknown app", appJWT(t, testKey, "43", n, n.Add(time.Minute)), 401},
		{"expired", appJWT(t, testKey, "42", n.Add(-11*time.Minute), n.Add(-time.Minute)), 401},
		{"exp over ten minutes ahead", appJWT(t, testKey, "42", n, n.Add(11*time.Minute)), 401},
		{"iat a minute back, exp ten minutes ahead", appJWT(t, testKey, "42", n.Add(-time.Minute), n.Add(10*time.Minute)), 200},
		{"iat in the future", appJWT(t, testKey, "42", n.Add(5*time.Minute), n.Add(6*time.Minute)), 401},
		{"not a JWT", "abc", 401},
	}
	for _, c := range cases {
		if got := get(t, s.APIURL+"/app", "Bearer "+c.jwt); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// An installation token is not an App JWT.
	if got := get(t, s.APIURL+"/app", "token wf"); got != 401 {
		t.Errorf("GET /app with a token: %d", got)
	}
}

func TestInstallationTokensExpire(t *testing.T) {
	t.Parallel()
	s, clock := withApp(t)
	now := clock.Now
	jwtc := func() *github.Client {
		hc := &http.Client{Transport: bearer(appJWT(t, testKey, strconv.Itoa(42), now(), now().Add(5*time.Minute)))}
		c, err := github.NewClient(hc).WithEnterpriseURLs(s.APIURL+"/", s.APIURL+"/")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	app, _, err := jwtc().Apps.Get(ctx, "")
	if err != nil || app.GetSlug() != "sponson" {
		t.Fatalf("app: %v %v", app.GetSlug(), err)
	}
	insts, _, err := jwtc().Apps.ListInstallations(ctx, nil)
	if err != nil || len(insts) != 1 || insts[0].GetID() != 7 {
		t.Fatalf("installations: %v %v", insts, err)
	}
	in, _, err := jwtc().Apps.FindRepositoryInstallation(ctx, "octo", "app")
	if err != nil || in.GetID() != 7 {
		t.Fatalf("repo installation: %v", err)
	}
	tok, _, err := jwtc().Apps.CreateInstallationToken(ctx, 7, &github.InstallationTokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := now().Add(time.Hour); !tok.GetExpiresAt().Time.Equal(want) {
		t.Errorf("expires at %v, want %v", tok.GetExpiresAt(), want)
	}
	inst := client(t, s, tok.GetToken())
	repos, _, err := inst.Apps.ListRepos(ctx, nil)
	if err != nil || repos.GetTotalCount() != 1 || repos.Repositories[0].GetFullName() != "octo/app" {
		t.Fatalf("installation repositories: %v", err)
	}
	c, _, err := inst.Issues.CreateComment(ctx, "octo", "app", 1, &github.IssueComment{Body: github.String("bot")})
	if err != nil || c.GetUser().GetLogin() != "sponson[bot]" {
		t.Fatalf("comment as the app: %v %v", c.GetUser().GetLogin(), err)
	}
	clock.Advance(time.Hour)
	if _, resp, err := inst.Repositories.Get(ctx, "octo", "app"); err == nil || resp.StatusCode != 401 {
		t.Fatalf("an expired token was accepted: %v", err)
	}
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
