package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
)

// ActionsLogin is the login of a workflow's GITHUB_TOKEN: the author of
// every comment the Action writes with it.
const ActionsLogin = "github-actions[bot]"

// Config is what every client needs. The zero value talks to github.com
// with the system clock.
type Config struct {
	// APIURL is the REST base (GITHUB_API_URL): https://api.github.com, or
	// https://HOST/api/v3 on GitHub Enterprise Server. A trailing slash is
	// optional.
	APIURL string
	// ServerURL is the web and git base (GITHUB_SERVER_URL):
	// https://github.com or https://HOST.
	ServerURL string
	// Transport is the HTTP transport under everything (default
	// http.DefaultTransport).
	Transport http.RoundTripper
	// Clock drives the rate-limit waits and token expiry (default: the
	// system clock).
	Clock clock.Clock
	// MaxWait bounds the time one call may wait on rate limits (default 15
	// minutes); Budget bounds the time all calls of this client may wait
	// together (0: no bound beyond MaxWait and the context's deadline).
	MaxWait time.Duration
	Budget  time.Duration
	// Observer hears every call and every wait (nil: none).
	Observer Observer
	// UserAgent is sent with every call (default "sponson").
	UserAgent string
	// Login is the comment identity of a token client (NewToken): who
	// GitHub says wrote the comments this token creates. Default
	// ActionsLogin, right for a workflow's GITHUB_TOKEN; a personal or
	// App token must name its own (the Actions token cannot ask /user).
	Login string
}

// ConfigFromEnv reads GITHUB_API_URL and GITHUB_SERVER_URL.
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{APIURL: getenv("GITHUB_API_URL"), ServerURL: getenv("GITHUB_SERVER_URL")}
}

// Client calls GitHub's REST API through go-github, as one identity (a
// token, or one installation of an App), behind the rate-limit governor.
// Safe for concurrent use.
type Client struct {
	gh        *gh.Client
	gov       *governor
	serverURL string
	token     func(ctx context.Context) (string, error)
	login     func(ctx context.Context) (string, error)
}

// apiBase parses the REST base: the URL as given, with one trailing slash
// (go-github resolves paths against it; without the slash it would drop
// the /api/v3 segment).
func apiBase(raw string) (*url.URL, error) {
	if raw == "" {
		raw = "https://api.github.com"
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, errs.New(errs.USAGE, "GITHUB_API_URL %q is not a URL", raw).WithHint("Set GITHUB_API_URL to https://api.github.com, or https://HOST/api/v3 on GitHub Enterprise Server.")
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/"
	return u, nil
}

// uploadBase is where go-github would upload (release assets; Sponson
// uploads nothing, but the client must not point it at github.com from a
// GitHub Enterprise base): uploads.github.com for api.github.com, else
// HOST/api/uploads/.
func uploadBase(api *url.URL) *url.URL {
	u := *api
	if strings.EqualFold(u.Host, "api.github.com") {
		u.Host, u.Path = "uploads.github.com", "/"
		return &u
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3") + "/api/uploads/"
	return &u
}

func serverBase(raw string) string {
	if raw == "" {
		raw = "https://github.com"
	}
	return strings.TrimRight(strings.TrimSpace(raw), "/")
}

func newClient(cfg Config, gov *governor, rt http.RoundTripper) (*gh.Client, error) {
	base, err := apiBase(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	c := gh.NewClient(&http.Client{Transport: gov.wrap(rt)})
	c.BaseURL, c.UploadURL = base, uploadBase(base)
	c.UserAgent = cfg.UserAgent
	if c.UserAgent == "" {
		c.UserAgent = "sponson"
	}
	return c, nil
}

func baseTransport(cfg Config) http.RoundTripper {
	if cfg.Transport != nil {
		return cfg.Transport
	}
	return http.DefaultTransport
}

// NewToken is a client authenticated with a token (the Action's
// github_token, a personal token): "Authorization: Bearer <token>" on
// every call.
func NewToken(cfg Config, token string) (*Client, error) {
	if token == "" {
		return nil, errs.New(errs.GITHUB_AUTH, "no GitHub token was given")
	}
	gov := newGovernor(cfg)
	c, err := newClient(cfg, gov, &tokenTransport{token: token, next: baseTransport(cfg)})
	if err != nil {
		return nil, err
	}
	login := cfg.Login
	if login == "" {
		login = ActionsLogin
	}
	return &Client{
		gh: c, gov: gov, serverURL: serverBase(cfg.ServerURL),
		token: func(context.Context) (string, error) { return token, nil },
		login: func(context.Context) (string, error) { return login, nil },
	}, nil
}

type tokenTransport struct {
	token string
	next  http.RoundTripper
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// Token is the client's current token, for git over HTTP
// (x-access-token:<token>): an installation client refreshes it first
// when it expires within five minutes.
func (c *Client) Token(ctx context.Context) (string, error) { return c.token(ctx) }

// Login is the identity GitHub records as the author of the comments this
// client writes: ActionsLogin (or Config.Login) for a token client,
// "<app-slug>[bot]" for an installation.
func (c *Client) Login(ctx context.Context) (string, error) { return c.login(ctx) }

// RemoteURL is the git remote of a repository:
// ${GITHUB_SERVER_URL}/{owner}/{repo}.git.
func (c *Client) RemoteURL(owner, repo string) string {
	return fmt.Sprintf("%s/%s/%s.git", c.serverURL, owner, repo)
}

// Stats is what the rate-limit governor counted for this client (an
// App's installations share the App's governor).
func (c *Client) Stats() Stats { return c.gov.snapshot() }
