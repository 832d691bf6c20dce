package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/sim"
)

// SimOptions are `sponson sim`'s.
type SimOptions struct {
	f    *Factory
	Addr string
}

func newCmdSim(f *Factory, runF func(*SimOptions) error) *cobra.Command {
	opts := &SimOptions{f: f}
	cmd := &cobra.Command{
		Use:   "sim [--addr 127.0.0.1:PORT]",
		Short: "Run the fake cloud standalone",
		Long: `Runs the fake cloud that models the providers' APIs (Vercel, Neon, Supabase, Auth0, Netlify,
Cloudflare, Clerk, PlanetScale, LaunchDarkly and a generic HTTP API), seeded with one Vercel,
Neon, Supabase and Auth0 project and one HTTP object, and prints the environment a shell needs
and the seeded ids (a plan run against it names those in its providers block):

  sim_env=$(mktemp)                                    # outside the checkout
  sponson sim --addr 127.0.0.1:8787 > "$sim_env" &     # serves until interrupted
  until grep -q '^# also seeded' "$sim_env"; do sleep 0.2; done
  . "$sim_env"                                         # or copy the export lines

With SPONSON_CTX_SHA and SPONSON_CTX_BRANCH set (and SPONSON_CTX_PR for a pull request), it
starts as a push of that commit would: every linked Vercel project and every Netlify site is
already building it, before any plan has written a variable.

Break it on purpose with POST /_chaos (latency, failures, 429, lost responses, holds, drift,
deployments, pushes); GET /_state shows its state and write log. It serves until interrupted.`,
		Example: `  sponson sim --addr 127.0.0.1:8787 > "$sim_env" &
  sponson sim --json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return simRun(opts, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "the address to serve on (loopback; port 0 picks a free one)")
	return cmd
}

// simRun serves the fake cloud until the command's context ends; requests
// the providers' descriptions refuse are told on stderr.
func simRun(opts *SimOptions, stderr io.Writer) error {
	f := opts.f
	// Requests are validated against the providers' descriptions
	// here too: a refused one is answered 400 and told on stderr.
	c := sim.New(sim.Options{Seed: uint64(time.Now().UnixNano()), OnViolation: func(v sim.Violation) {
		fmt.Fprintf(stderr, "sponson sim: %s\n", v)
	}})
	demo := c.Console.SeedDemo()
	if err := c.Console.SeedExamples(); err != nil {
		return err
	}
	var pushed *sim.PushResult
	if sha, branch := f.Env.Getenv("SPONSON_CTX_SHA"), f.Env.Getenv("SPONSON_CTX_BRANCH"); sha != "" && branch != "" {
		pr, _ := strconv.Atoi(f.Env.Getenv("SPONSON_CTX_PR"))
		got, err := c.Push(sim.Push{SHA: sha, Branch: branch, PullRequest: max(pr, 0)})
		if err != nil {
			return errs.Wrap(err, errs.USAGE, "cannot start the builds of commit %s", sha)
		}
		pushed = &got
	}
	srv, err := c.Start(opts.Addr)
	if err != nil {
		return errs.Wrap(err, errs.USAGE, "cannot serve the fake cloud on %s", opts.Addr).
			WithHint("Pick a free address with --addr 127.0.0.1:PORT (port 0 picks one).")
	}
	defer srv.Close()
	// What follows is the sim's own placeholders, to be sourced: a shell
	// that holds them from an earlier sim (registered with the redactor as
	// credential-looking variables) must still get them, not ***.
	f.answer.ownValues = true
	if f.JSON {
		vars := map[string]string{}
		for _, l := range srv.Env() {
			k, v, _ := strings.Cut(l, "=")
			vars[k] = v
		}
		res := map[string]any{"url": srv.URL, "env": vars, "seeded": demo}
		if pushed != nil {
			res["pushed"] = pushed
		}
		f.answer.result = res
		f.flushResult() // the document comes first; the server runs after it
	} else {
		simText(f, srv, demo, pushed)
	}
	<-f.Context.Done()
	f.answer.text = func(io.Writer) {}
	return nil
}

// simText is what a shell sources: the exports, then what was seeded.
func simText(f *Factory, srv *sim.Server, demo sim.Demo, pushed *sim.PushResult) {
	out := f.IO.Out
	if f.rawOut != nil {
		flush(f.IO.Out)
		out = f.rawOut
	}
	fmt.Fprintf(out, "# sponson sim: fake cloud at %s (chaos: POST %s/_chaos, state: GET %s/_state)\n", srv.URL, srv.URL, srv.URL)
	for _, l := range srv.Env() {
		fmt.Fprintf(out, "export %s\n", l)
	}
	fmt.Fprintf(out, "# seeded: vercel project web (%s), neon project %s, supabase project %s, auth0 client %s, http object apps/%s\n",
		demo.VercelProject, demo.NeonProject, demo.SupabaseRef, demo.Auth0Client, demo.HTTPApp)
	fmt.Fprintf(out, "# also seeded: the projects the README's plan and the provider examples in examples/ name\n")
	if pushed != nil {
		fmt.Fprintf(out, "# pushed: commit %s of %s is building (vercel deployments %s; netlify deploys %s)\n",
			f.Env.Getenv("SPONSON_CTX_SHA"), f.Env.Getenv("SPONSON_CTX_BRANCH"), strings.Join(pushed.Vercel, ", "), strings.Join(pushed.Netlify, ", "))
	}
	flush(out)
}

// flush pushes buffered output (the redacting writer holds back a tail).
func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() error }); ok {
		f.Flush()
	}
}
