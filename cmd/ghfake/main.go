// Command ghfake serves the fake GitHub (REST under /api/v3, git smart
// HTTP at /{owner}/{repo}.git, every call checked against GitHub's OpenAPI
// description) for scripts and workflow runs:
//
//	go run ./cmd/ghfake -addr 127.0.0.1:8787 -seed seed.json -git /tmp/ghfake
//
// It prints GITHUB_SERVER_URL=... and GITHUB_API_URL=... lines, then
// serves until interrupted. GET /_ghfake/state dumps the state (repositories,
// branches, pull requests, comments with their edit history, the request
// log, violations of the description) as JSON; POST /_ghfake/seed applies
// more of the seed format (a pull request with an existing number is
// replaced: that is how a script closes one); POST /_ghfake/fault injects
// a rate limit or server error. See githubtest.Seed for the format, e.g.:
//
//	{
//	  "repos":  [{"full_name": "octo/app", "branches": {"feature": "a commit message"}}],
//	  "tokens": [{"token": "t0ken", "identity": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"},
//	              "permissions": {"contents": "write", "pull_requests": "write", "actions": "read"}}],
//	  "pulls":  [{"repo": "octo/app", "number": 1, "head": {"ref": "feature"}}],
//	  "runs":   [{"repo": "octo/app", "id": 42, "status": "completed", "conclusion": "cancelled"}],
//	  "events": [{"event": "pull_request", "path": "shared/fixtures/github/webhooks/pull_request/opened.payload.json"}]
//	}
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/sponson/apply/internal/testing/githubtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

type stderrReport struct{ w io.Writer }

func (r stderrReport) Errorf(format string, args ...any) { fmt.Fprintf(r.w, format+"\n", args...) }

// Main runs the program; it returns when ctx is done or the server fails.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ghfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./cmd/ghfake [-addr 127.0.0.1:0] [-seed seed.json] [-git DIR] [-spec openapi.json] [-url URL]")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	seed := fs.String("seed", "", "JSON seed file (repos, tokens, pulls, runs, deployments, apps, installations, collaborators, team_members)")
	gitRoot := fs.String("git", "", "folder for the bare repositories (default: a new temporary folder)")
	specPath := fs.String("spec", "", "OpenAPI description (default: the fixtures' openapi-subset.json)")
	baseURL := fs.String("url", "", "the URL clients reach the server at, if not http://ADDR")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := githubtest.Options{Report: stderrReport{stderr}, GitRoot: *gitRoot}
	if opts.GitRoot == "" {
		d, err := os.MkdirTemp("", "ghfake-")
		if err != nil {
			fmt.Fprintln(stderr, "ghfake:", err)
			return 1
		}
		opts.GitRoot = d
	}
	if *specPath != "" {
		s, err := githubtest.LoadSpec(*specPath)
		if err != nil {
			fmt.Fprintln(stderr, "ghfake:", err)
			return 1
		}
		opts.Spec = s
	}
	f, err := githubtest.New(opts)
	if err != nil {
		fmt.Fprintln(stderr, "ghfake:", err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "ghfake:", err)
		return 1
	}
	u := *baseURL
	if u == "" {
		u = "http://" + ln.Addr().String()
	}
	f.SetBaseURL(u)
	if *seed != "" {
		b, err := os.ReadFile(*seed)
		if err == nil {
			var s githubtest.Seed
			if err = json.Unmarshal(b, &s); err == nil {
				err = f.Apply(s)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "ghfake: seed %s: %v\n", *seed, err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "GITHUB_SERVER_URL=%s\nGITHUB_API_URL=%s/api/v3\nGHFAKE_STATE_URL=%s/_ghfake/state\n", u, u, u)
	if fl, ok := stdout.(interface{ Sync() error }); ok {
		fl.Sync() //nolint:errcheck
	}
	srv := &http.Server{Handler: f}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.New(stderr, "", 0).Printf("ghfake: %v", err)
		return 1
	}
	return 0
}
