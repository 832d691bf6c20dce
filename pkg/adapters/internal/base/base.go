// Package base is the skeleton every built-in op holds: its Spec (the one
// declaration the catalogue, docs/adapters.md and the schema are derived
// from), the environment and HTTP client it was built with, the check of
// its parameters against the Spec, and the provider's API built from the
// credential and base-URL variables the Spec names. An op embeds base.Op
// and keeps only what is its provider's.
//
// Invariants:
//   - The credential and the base URL are read from the environment at
//     each call (API), never when the op is built: plan and validate need
//     no credentials, and a missing variable is PROVIDER_AUTH naming it.
//   - The variables read are the ones the Spec declares (Credentials,
//     BaseURLVar, BaseURL), so the documentation cannot name others.
//   - All ops share the client they are given (timeouts, retries, budget).
package base

import (
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapter/httpclient"
	"github.com/sponson/apply/pkg/adapters/internal/param"
)

// Endpoint says how an op reaches its provider beyond what its Spec
// declares; the zero Endpoint is a bearer token on the base URL as it is.
type Endpoint struct {
	// Root maps the base URL to the API's root (Version, or a fixed
	// suffix); nil keeps the base URL.
	Root func(base string) string
	// RawToken: the credential is the whole Authorization value, not a
	// bearer token. Several credentials are joined by ':' (an id and a
	// secret, as PlanetScale's service tokens are sent).
	RawToken bool
}

// Version is a Root that completes a base URL naming only a host with the
// API's version path (httpclient.VersionPath).
func Version(path string) func(string) string {
	return func(base string) string { return httpclient.VersionPath(base, path) }
}

// Op is the part every built-in op shares. Env and Client are what the
// op was built with: the environment its credential is read from at each
// call, and the one HTTP client of the registry.
type Op struct {
	Env      httpclient.Env
	Client   *httpclient.Client
	spec     adapter.Spec
	endpoint Endpoint
}

// New is the base of the op spec declares.
func New(spec adapter.Spec, env httpclient.Env, client *httpclient.Client, e Endpoint) Op {
	return Op{Env: env, Client: client, spec: spec, endpoint: e}
}

// Spec declares the op.
func (o *Op) Spec() adapter.Spec { return o.spec }

// Known refuses the parameters the Spec does not declare, naming them.
func (o *Op) Known(params map[string]any) error {
	return param.Known(o.spec.Name(), params, o.spec.ParamNames()...)
}

// API is the provider's API at the Spec's default base URL (or the one
// its BaseURLVar holds), with the credential of its Credentials:
// PROVIDER_AUTH naming the first one missing.
func (o *Op) API() (httpclient.API, error) { return o.APIAt(o.spec.BaseURL) }

// APIAt is API with a default base URL the op computes (a tenant's own
// domain) in place of the Spec's.
func (o *Op) APIAt(defaultURL string) (httpclient.API, error) {
	name := o.spec.Adapter
	toks := make([]string, len(o.spec.Credentials))
	for i, v := range o.spec.Credentials {
		tok, err := httpclient.Token(o.Env, v, name)
		if err != nil {
			return httpclient.API{}, err
		}
		toks[i] = tok
	}
	base, err := httpclient.BaseURL(o.Env, o.spec.BaseURLVar, defaultURL)
	if err != nil {
		return httpclient.API{}, err
	}
	if o.endpoint.Root != nil {
		base = o.endpoint.Root(base)
	}
	return httpclient.API{Client: o.Client, Provider: name, BaseURL: base,
		Token: strings.Join(toks, ":"), RawToken: o.endpoint.RawToken, TokenVar: strings.Join(o.spec.Credentials, " and ")}, nil
}

// Suffix is a Root that appends the API's path unless the base URL already
// ends with it (the providers' SDKs read their base-URL variables as the
// host and add the version themselves).
func Suffix(path string) func(string) string {
	return func(base string) string {
		if strings.HasSuffix(base, path) {
			return base
		}
		return base + path
	}
}
