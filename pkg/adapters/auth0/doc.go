// Package auth0 is the auth0 adapter: auth0.callback, one URL in a list of
// an Auth0 application (callbacks, logout URLs, web origins, allowed
// origins).
//
// Credentials and endpoint: AUTH0_MANAGEMENT_TOKEN (a Management API access
// token, bearer), AUTH0_API_URL (default https://<domain>; the Management
// API is under /api/v2 of it). Provider block: domain (the tenant domain,
// required: it names the parent object), client (the application's client
// id, required).
//
// auth0.callback parameters:
//   - url: the URL (not blank);
//   - list: callbacks (default), allowed_logout_urls, web_origins or
//     allowed_origins.
//
// Key: <list>:<url>. The canonical value is the URL; the output url is the
// URL. LockOn: auth0:<domain>:client:<client id>.
//
// Model: each list is an array on the application. Auth0 replaces a whole
// array on PATCH and has no ETag or version, so Apply and Destroy GET the
// application (only the four lists: fields=...&include_fields=true, so the
// client secret is never fetched), add or remove the URL, and PATCH the one
// array back; the engine holds the parent lock around every write. The
// PATCH sets an absolute value and is declared idempotent to the HTTP
// client. Other entries keep their order; a URL present twice is removed in
// both places. URLs are compared exactly (Auth0 allows wildcards, which are
// entries like any other).
//
// Rate limits: Auth0 answers 429 with X-RateLimit-Limit, -Remaining and
// -Reset (epoch seconds); the HTTP client waits until the reset when no
// Retry-After is given.
//
// Decisions: ListScope lists, for unmanaged drift, the line's URL and the
// entries that are that URL in another scope (adapter.OtherScope), never
// the rest of the list: a plan does not report every production callback.
//
// Sources (the search tool's stored copies):
//   - Auth0 Management API v2, "Update a client" (PATCH
//     https://{tenantDomain}/api/v2/clients/{id}; callbacks, allowed_origins,
//     web_origins, allowed_logout_urls are arrays of strings),
//     https://auth0.com/docs/api/management/v2/clients/patch-clients-by-id;
//   - Auth0 Node.js SDK, UpdateClientRequestContent (the same four arrays),
//     https://auth0.github.io/node-auth0/interfaces/management.Management.UpdateClientRequestContent.html;
//   - "Get a client" (GET /api/v2/clients/{id}, fields and include_fields),
//     https://auth0.com/docs/api/management/v2/#!/Clients/get_clients_by_id
//     (as linked from hexdocs.pm/auth0_api);
//   - "Why You're Getting 429s in Production Using Auth0" (x-ratelimit-limit,
//     -remaining, -reset on every response),
//     https://auth0.com/blog/why-getting-429s-and-how-to-stop-them.
package auth0
