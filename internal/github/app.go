package github

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
	gh "github.com/google/go-github/v62/github"
	ghtoken "github.com/google/go-github/v88/github"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
)

// RefreshBefore is how long before its expiry an installation token is
// replaced: a token handed to git must outlive the push it is used for.
const RefreshBefore = 5 * time.Minute

// App is a GitHub App: its own calls are signed with the App's JWT
// (ghinstallation's AppsTransport), and Installation gives one client per
// installation, cached, each with its installation token. Every client of
// an App shares its rate-limit governor. Safe for concurrent use.
type App struct {
	id     int64
	cfg    Config
	gov    *governor
	client *gh.Client
	tokens *ghinstallation.AppsTransport // signs the access-token calls
	base   string

	mu    sync.Mutex
	info  AppInfo // cached by Get
	insts map[int64]*Client
}

// NewApp is the App appID with its private key (PEM, as GitHub hands it
// out). The key is checked here; the JWT is signed per call.
func NewApp(cfg Config, appID int64, privateKeyPEM []byte) (*App, error) {
	key, err := jwt.ParseRSAPrivateKeyFromPEM(privateKeyPEM)
	if err != nil {
		return nil, errs.Wrap(err, errs.GITHUB_AUTH, "the App's private key is not an RSA key in PEM").
			WithHint("Set SPONSON_APP_PRIVATE_KEY (or SPONSON_APP_PRIVATE_KEY_FILE) to the .pem file GitHub generated for the App.")
	}
	if appID <= 0 {
		return nil, errs.New(errs.GITHUB_AUTH, "the App id %d is not valid", appID).WithHint("Set SPONSON_APP_ID to the App ID shown on the App's settings page.")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	base, err := apiBase(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	gov := newGovernor(cfg)
	signer := ghinstallation.WithSigner(clockSigner{key: key, clock: cfg.Clock})
	api, err := ghinstallation.NewAppsTransportWithOptions(baseTransport(cfg), appID, signer)
	if err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "App transport")
	}
	// The access-token calls go through the governor too; the API calls
	// have it outermost (so a retry is signed afresh).
	tok, err := ghinstallation.NewAppsTransportWithOptions(gov.wrap(baseTransport(cfg)), appID, signer)
	if err != nil {
		return nil, errs.Wrap(err, errs.INTERNAL, "App transport")
	}
	trimmed := base.String()
	trimmed = trimmed[:len(trimmed)-1]
	api.BaseURL, tok.BaseURL = trimmed, trimmed
	client, err := newClient(cfg, gov, api)
	if err != nil {
		return nil, err
	}
	return &App{id: appID, cfg: cfg, gov: gov, client: client, tokens: tok, base: trimmed, insts: map[int64]*Client{}}, nil
}

// clockSigner signs ghinstallation's claims with the App's key after
// moving iat and exp onto the injected clock (ghinstallation stamps them
// with the wall clock: iat 30 s back, exp two minutes on).
type clockSigner struct {
	key   interface{}
	clock clock.Clock
}

func (s clockSigner) Sign(claims jwt.Claims) (string, error) {
	if rc, ok := claims.(*jwt.RegisteredClaims); ok {
		shift := time.Until(s.clock.Now())
		if rc.IssuedAt != nil {
			rc.IssuedAt = jwt.NewNumericDate(rc.IssuedAt.Add(shift).Truncate(time.Second))
		}
		if rc.ExpiresAt != nil {
			rc.ExpiresAt = jwt.NewNumericDate(rc.ExpiresAt.Add(shift).Truncate(time.Second))
		}
	}
	return jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(s.key)
}

// ID is the App's id.
func (a *App) ID() int64 { return a.id }

// Stats is what the App's governor counted, over the App's own calls and
// every installation's.
func (a *App) Stats() Stats { return a.gov.snapshot() }

// Calls is the number of HTTP requests sent for the App and all its
// installations.
func (a *App) Calls() int64 { return counters{a.gov}.Calls() }

// ThrottledSeconds is the time the App and all its installations spent
// waiting on rate limits, in seconds.
func (a *App) ThrottledSeconds() float64 { return counters{a.gov}.ThrottledSeconds() }

// Get returns the App (GET /app, with the JWT). The first success is
// cached: the slug does not change.
func (a *App) Get(ctx context.Context) (AppInfo, error) {
	a.mu.Lock()
	if a.info.ID != 0 {
		defer a.mu.Unlock()
		return a.info, nil
	}
	a.mu.Unlock()
	x, _, err := a.client.Apps.Get(withOp(ctx, "apps/get-authenticated"), "")
	if err != nil {
		return AppInfo{}, wrapErr(err, call{"read the App (GET /app)", "the App's JWT"})
	}
	info := AppInfo{ID: x.GetID(), Slug: x.GetSlug(), Name: x.GetName()}
	a.mu.Lock()
	a.info = info
	a.mu.Unlock()
	return info, nil
}

// Check signs a JWT and calls GET /app: the bot's readiness check.
func (a *App) Check(ctx context.Context) error {
	_, _, err := a.client.Apps.Get(withOp(ctx, "apps/get-authenticated"), "")
	return wrapErr(err, call{"read the App (GET /app)", "the App's JWT"})
}

// Installations returns every installation of the App, every page.
func (a *App) Installations(ctx context.Context) ([]Installation, error) {
	ctx = withOp(ctx, "apps/list-installations")
	opts := &gh.ListOptions{PerPage: perPage}
	var out []Installation
	for {
		page, resp, err := a.client.Apps.ListInstallations(ctx, opts)
		if err != nil {
			return nil, wrapErr(err, call{"list the App's installations", "the App's JWT"})
		}
		for _, in := range page {
			out = append(out, Installation{ID: in.GetID(), AppID: in.GetAppID(), Account: in.GetAccount().GetLogin()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// InstalledRepository is a repository the App is installed on, with the
// installation that covers it.
type InstalledRepository struct {
	Installation int64
	Repository
}

// Repositories returns every repository of every installation of the App
// (GET /app/installations, then GET /installation/repositories as each
// installation, every page): the set the bot sweeps. An installation that
// fails stops the listing with its error: a partial set would make a
// sweep think repositories were uninstalled.
func (a *App) Repositories(ctx context.Context) ([]InstalledRepository, error) {
	insts, err := a.Installations(ctx)
	if err != nil {
		return nil, err
	}
	var out []InstalledRepository
	for _, in := range insts {
		c, err := a.Installation(in.ID)
		if err != nil {
			return nil, err
		}
		repos, err := c.InstallationRepositories(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range repos {
			out = append(out, InstalledRepository{Installation: in.ID, Repository: r})
		}
	}
	return out, nil
}

// RepositoryInstallation returns the installation that covers
// owner/repo (GITHUB_NOT_FOUND when the App is not installed there).
func (a *App) RepositoryInstallation(ctx context.Context, owner, repo string) (Installation, error) {
	in, _, err := a.client.Apps.FindRepositoryInstallation(withOp(ctx, "apps/get-repo-installation"), owner, repo)
	if err != nil {
		return Installation{}, wrapErr(err, call{fmt.Sprintf("find the App's installation on %s", repoName(owner, repo)), "the App's JWT"})
	}
	return Installation{ID: in.GetID(), AppID: in.GetAppID(), Account: in.GetAccount().GetLogin()}, nil
}

// Installation returns the client of installation id, made once and
// cached: every call of it carries the installation's token, refreshed
// RefreshBefore its expiry, one refresh at a time; a 401 forces one
// refresh and one retry. Its Login is "<slug>[bot]" (GET /app, once).
func (a *App) Installation(id int64) (*Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.insts[id]; c != nil {
		return c, nil
	}
	src := &tokenSource{app: a, id: id, clock: a.cfg.Clock}
	client, err := newClient(a.cfg, a.gov, &installationTransport{src: src, next: baseTransport(a.cfg)})
	if err != nil {
		return nil, err
	}
	c := &Client{
		gh: client, gov: a.gov, serverURL: serverBase(a.cfg.ServerURL),
		token: func(ctx context.Context) (string, error) {
			t, err := src.get(ctx, "")
			return t, err
		},
		login: func(ctx context.Context) (string, error) {
			info, err := a.Get(ctx)
			if err != nil {
				return "", err
			}
			return info.Login(), nil
		},
	}
	a.insts[id] = c
	return c, nil
}

// tokenSource holds one installation's token. ghinstallation issues it
// (POST /app/installations/{id}/access_tokens with the App's JWT); the
// source decides when, by the injected clock.
type tokenSource struct {
	app   *App
	id    int64
	clock clock.Clock

	mu      sync.Mutex // held across a refresh: one at a time
	token   string
	expires time.Time
	issued  int
}

// get returns a token valid for at least RefreshBefore. stale, when not
// empty, is a token GitHub refused (401): it is replaced even if it looks
// valid, unless another caller has replaced it already.
func (s *tokenSource) get(ctx context.Context, stale string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := s.token != "" && s.clock.Now().Add(RefreshBefore).Before(s.expires)
	if fresh && (stale == "" || stale != s.token) {
		return s.token, nil
	}
	tr := ghinstallation.NewFromAppsTransport(s.app.tokens, s.id)
	tr.BaseURL = s.app.base
	// Without options ghinstallation sends the body "null", which a
	// strict reading of GitHub's description refuses; an empty object is
	// what the description allows. (The options type is the go-github
	// version ghinstallation is built on; every call of ours is v62's.)
	tr.InstallationTokenOptions = &ghtoken.InstallationTokenOptions{}
	tok, err := tr.Token(withOp(ctx, "apps/create-installation-access-token"))
	if err != nil {
		return "", wrapErr(err, call{fmt.Sprintf("get a token of installation %d", s.id), "the App's JWT"})
	}
	exp, _, err := tr.Expiry()
	if err != nil {
		return "", errs.Wrap(err, errs.INTERNAL, "installation %d token", s.id)
	}
	s.token, s.expires = tok, exp
	s.issued++
	return tok, nil
}

// installationTransport authenticates each call with the installation's
// token; on a 401 it replaces the token once and sends the call again.
type installationTransport struct {
	src  *tokenSource
	next http.RoundTripper
}

func (t *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.src.get(req.Context(), "")
	if err != nil {
		return nil, err
	}
	resp, err := t.send(req, tok)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	retry, ok := rewind(req)
	if !ok {
		return resp, nil
	}
	tok2, err := t.src.get(req.Context(), tok)
	if err != nil {
		return resp, nil
	}
	drain(resp)
	return t.send(retry, tok2)
}

func (t *installationTransport) send(req *http.Request, tok string) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "token "+tok)
	return t.next.RoundTrip(r)
}
