package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Server is a cloud served on a real listener.
type Server struct {
	URL   string // "http://127.0.0.1:PORT"
	Cloud *Cloud
	srv   *http.Server
	done  chan error
}

// Start serves the cloud on addr ("127.0.0.1:0" picks a free port; "" means
// that). The server runs until Close.
func (c *Cloud) Start(addr string) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		// The caller names the address; the listener's own error repeats
		// it ("listen tcp ADDR: bind: ..."), so only its cause is returned
		// ("bind: address already in use", still errors.Is EADDRINUSE).
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return nil, op.Err
		}
		return nil, err
	}
	s := &Server{
		URL:   "http://" + ln.Addr().String(),
		Cloud: c,
		srv:   &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second},
		done:  make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Env is the cloud's Env for this server's URL.
func (s *Server) Env() []string { return s.Cloud.Env(s.URL) }

// Close releases every held or hanging request and stops the server.
func (s *Server) Close() error {
	s.Cloud.ReleaseAll()
	err := s.srv.Close()
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Demo names what SeedDemo made.
type Demo struct {
	VercelProject string // id; its name is "web"
	NeonProject   string
	SupabaseRef   string
	Auth0Client   string
	HTTPApp       string // id of the object "apps/demo-app"
	// The providers beyond the first set.
	NetlifySite        string // id; its name is "sim-site"
	CloudflareAccount  string
	CloudflareProject  string
	PlanetScaleOrg     string
	PlanetScaleDB      string
	LaunchDarklyProj   string
	LaunchDarklyFlag   string // a boolean flag, in environments preview and production (approvals required)
	ClerkRedirectURLID string
}

// SeedDemo seeds one project per provider, with something already there
// that Sponson must never touch: a Vercel project "web" with a
// production variable, a Neon project with its main branch, a Supabase
// project whose allow-list has one entry, an Auth0 application with one
// callback, and an http object apps/demo-app with a list.
func (k Console) SeedDemo() Demo {
	c := k.c
	var d Demo
	d.VercelProject = c.Console.SeedVercelProject(VercelProject{Name: "web", Envs: []VercelEnv{
		{Key: "ANALYTICS_ID", Value: "UA-SEEDED", Target: []string{"production"}},
	}, Link: &VercelGitLink{Type: "github", Org: "acme", Repo: "web", RepoID: 4815162342, ProductionBranch: "main"}})
	d.NeonProject = c.Console.SeedNeonProject(NeonProject{Name: "sim-db"}).ID
	d.SupabaseRef, _ = c.Console.SeedSupabaseProject(SupabaseProject{Name: "sim-auth", Auth: SupabaseAuthConfig{
		SiteURL: "https://example.com", URIAllowList: "https://example.com/**", ExternalEmailEnabled: true,
	}})
	d.Auth0Client = c.Console.SeedAuth0Client(Auth0Client{Name: "Sim Web App", Lists: map[string][]string{
		Auth0Callbacks: {"https://example.com/callback"}, Auth0AllowedLogoutURLs: {"https://example.com"},
	}})
	d.HTTPApp, _ = c.Console.SeedHTTPObject("apps", map[string]any{
		"id": "demo-app", "name": "demo", "redirects": []any{"https://example.com/cb"}, "origins": "https://example.com",
	})
	d.NetlifySite = c.Console.SeedNetlifySite(NetlifySite{Name: "sim-site", Env: []NetlifyEnvVar{
		{Key: "API_URL", Values: []NetlifyEnvValue{{Value: "https://api.example.com", Context: "production"}}},
	}})
	d.CloudflareAccount, d.CloudflareProject = "0123456789abcdef0123456789abcdef", "sim-pages"
	c.Console.SeedCloudflarePagesProject(CloudflarePagesProject{Account: d.CloudflareAccount, Name: d.CloudflareProject,
		Env: map[string]map[string]CloudflareVar{"preview": {"NODE_VERSION": {Type: "plain_text", Value: "20"}}}})
	d.PlanetScaleOrg, d.PlanetScaleDB = "sim-org", "sim-db"
	c.Console.SeedPlanetScaleDatabase(d.PlanetScaleOrg, d.PlanetScaleDB)
	d.LaunchDarklyProj, d.LaunchDarklyFlag = "sim-project", "new-checkout"
	c.Console.SeedLaunchDarklyFlag(LaunchDarklyFlag{Project: d.LaunchDarklyProj, Key: d.LaunchDarklyFlag,
		Variations: []LaunchDarklyVariation{{Value: true, Name: "on"}, {Value: false, Name: "off"}},
		Environments: map[string]*LaunchDarklyEnv{
			"preview":    {On: true, Targets: []LaunchDarklyTarget{{ContextKind: "user", Variation: 1, Values: []string{"qa-bot"}}}},
			"production": {On: true, ApprovalRequired: true},
		}})
	d.ClerkRedirectURLID = c.Console.SeedClerkRedirectURL("https://example.com/sso-callback")
	return d
}

// Serve runs a cloud seeded with SeedDemo on addr, prints the environment a
// shell needs as "export NAME=value" lines (and what was seeded, as
// comments) to out, and serves until ctx is done. It is `sponson sim`.
func Serve(ctx context.Context, addr string, out io.Writer) error {
	c := New(Options{Seed: uint64(time.Now().UnixNano())})
	demo := c.Console.SeedDemo()
	s, err := c.Start(addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# sponson sim: fake cloud at %s (chaos: POST %s/_chaos, state: GET %s/_state)\n", s.URL, s.URL, s.URL)
	for _, l := range s.Env() {
		fmt.Fprintf(out, "export %s\n", l)
	}
	fmt.Fprintf(out, "# seeded: vercel project web (%s), neon project %s, supabase project %s, auth0 client %s, http object apps/%s\n",
		demo.VercelProject, demo.NeonProject, demo.SupabaseRef, demo.Auth0Client, demo.HTTPApp)
	fmt.Fprintf(out, "# seeded: netlify site %s, cloudflare account %s pages project %s, planetscale %s/%s, launchdarkly project %s flag %s\n",
		demo.NetlifySite, demo.CloudflareAccount, demo.CloudflareProject, demo.PlanetScaleOrg, demo.PlanetScaleDB, demo.LaunchDarklyProj, demo.LaunchDarklyFlag)
	<-ctx.Done()
	return s.Close()
}
