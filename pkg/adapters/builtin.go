// Package adapters wires the built-in adapters (design: adapters-and-sim.md,
// "Built-in adapters") into one registry: vercel.env, neon.branch,
// supabase.auth_redirect, auth0.callback, http.resource and
// http.list_item.
//
// Invariants:
//   - Every op reads its credential and base URL from env at each call, so
//     a missing variable is PROVIDER_AUTH (naming it) when the op is used,
//     not when the registry is built: plan and validate need no credentials.
//   - All ops share one HTTP client (timeouts, retries, budget); the CLI
//     builds it from SPONSON_HTTP_TIMEOUT.
//   - Every op embeds base.Op (internal/base): its Spec, the parameter
//     check against it, and the provider's API built from the variables the
//     Spec names; the env-value ops share one diff rule (internal/envdiff).
//     Adding an op is one file (its type, Spec and provider calls) and one
//     line below.
//   - This registry is the one list of the user-facing ops: the catalogue
//     plans are checked against, docs/adapters.md and the JSON schema's op
//     parameters are derived from it (go generate ./pkg/adapters).
package adapters

import (
	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/auth0"
	"github.com/sponson/apply/pkg/adapters/clerk"
	"github.com/sponson/apply/pkg/adapters/cloudflare"
	"github.com/sponson/apply/pkg/adapters/httpop"
	"github.com/sponson/apply/pkg/adapters/launchdarkly"
	"github.com/sponson/apply/pkg/adapters/manual"
	"github.com/sponson/apply/pkg/adapters/neon"
	"github.com/sponson/apply/pkg/adapters/netlify"
	"github.com/sponson/apply/pkg/adapters/planetscale"
	"github.com/sponson/apply/pkg/adapters/supabase"
	"github.com/sponson/apply/pkg/adapters/vercel"
)

// Registry returns the built-in ops. env looks environment variables up
// (os.LookupEnv in the CLI; a map in tests); client nil means a client with
// the defaults.
func Registry(env func(string) (string, bool), client *httpclient.Client) *adapter.Registry {
	if client == nil {
		client = httpclient.New(httpclient.Config{})
	}
	e := httpclient.Env(env)
	resource, list := httpop.NewResource(e, client), httpop.NewListItem(e, client)
	return adapter.NewRegistry(
		vercel.NewEnv(e, client),
		vercel.NewDeploy(e, client),
		neon.NewBranch(e, client),
		supabase.NewRedirect(e, client),
		supabase.NewBranch(e, client),
		auth0.NewCallback(e, client),
		resource,
		list,
		httpop.NewRecipe(resource, list),
		manual.NewStep(client, nil),
		netlify.NewEnv(e, client),
		cloudflare.NewPagesEnv(e, client),
		clerk.NewRedirect(e, client),
		planetscale.NewBranch(e, client),
		planetscale.NewPassword(e, client),
		launchdarkly.NewTarget(e, client),
	)
}
