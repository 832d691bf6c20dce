// Package sim is the fake cloud: an HTTP server that models the parts of the
// providers' APIs the built-in adapters use — Vercel (project env vars,
// deployments), Neon (branches, connection URI, operations), Supabase (the
// auth config's uri_allow_list), Auth0 (an application's URL lists) and a
// generic REST API for the http.* adapters — closely enough that an adapter
// cannot tell, and that lets a test or a person break them on purpose.
//
// It shares no code with the adapters and imports nothing of Sponson's:
// each side is written from the providers' published documentation, so a
// misunderstanding of an API is written once, and a test against the sim
// catches it. Each provider's file (vercel.go, neon.go, supabase.go,
// auth0.go) opens with its numbered assumptions about the real API and
// where each was checked; where the docs are silent it says so, and the sim
// then takes the stricter choice (the one an adapter must handle anyway).
//
// Providers are plug-ins (provider.go): each file holds its provider's
// type with its records, its routes and error formats, its snapshot and
// the console edits it understands, and one line in the providers list
// serves it. The Cloud holds only what they share: the router with
// authentication, chaos and the write log (cloud.go), the checks against
// the descriptions (describe.go), the clock, the id generator and the
// lock. A provider without a field of its own in Snapshot puts its records
// in Snapshot.More.
//
// Serving. Handler serves each provider under its own prefix — /vercel,
// /neon, /supabase, /auth0 (the Management API is under /auth0/api/v2),
// /http — so the adapters' base-URL variables point at base+prefix (Env
// lists them, with placeholder tokens the sim accepts). The control plane is
// POST /_chaos (ChaosRequest: rules, release, drift, deploy, push, reset),
// GET /_chaos (the rules) and GET /_state (Snapshot: all state, the write
// log and the rules). Use Handler with httptest.NewServer, Start for a real
// listener, or Serve for `sponson sim`.
//
// Checked against the providers' descriptions (describe.go): every request
// to a provider that publishes an OpenAPI description (Vercel, Auth0,
// Netlify, Cloudflare, Clerk, LaunchDarkly, and under /http GitHub's
// repository webhooks, Resend, Svix, Turso, Unleash and Cloudflare's DNS
// records) is validated against it before it is applied; one it does not
// allow is answered 400 (404 for an operation it lacks), not applied, and
// recorded (Violations). Tests fail on it through CheckDescriptions, which
// every test helper that makes a cloud calls; `sponson sim` reports it on
// stderr. The sim's answers are validated too and recorded (under /http,
// where a collection has a recipe target's shape: httptargets.go). Corrections to
// a description are the rows of Exceptions, each citing the provider's
// documentation.
//
// Invariants:
//
//   - One mutex guards all state; each request's reads and writes of state
//     happen under it, so every request sees and leaves a consistent world,
//     but requests are served concurrently and a read-modify-write made of
//     two requests is not atomic: Auth0 and Supabase PATCH replace a whole
//     list with no precondition, so two clients that GET then PATCH lose an
//     entry unless they lock. That is the real APIs' behaviour and the point.
//   - Requests without the expected bearer token are refused in the
//     provider's own format: 401 for Neon, Supabase, Auth0 and http; 403
//     for Vercel, as Vercel documents (see V2 in vercel.go).
//   - Every write request (POST, PUT, PATCH, DELETE) that reaches a provider
//     route is logged once, in completion order, whatever its outcome: its
//     provider, method, path beneath the prefix, body SHA-256, status, and
//     whether it failed (took no effect) or was lost (took effect, response
//     dropped). Reads, seeds, drift edits and control requests are not
//     logged. "The second apply wrote nothing" is len(Writes()) == 0.
//   - Every record says who made it: OriginSeed (Console.Seed*, Console.Deploy),
//     OriginAPI (a request), OriginConsole (a drift edit); list entries of
//     shared parents (Supabase allow-list, Auth0 lists) carry their own.
//     "Nothing Sponson did not create was touched" is: every seeded record
//     and entry is still there, unchanged.
//   - Chaos decides before a request is applied: latency delays it, fail
//     and ratelimit answer without applying it, hang never applies it, hold
//     applies it only when released, drop applies it and then closes the
//     connection without a response byte. A client that gives up while
//     delayed or held leaves nothing applied.
//   - Git pushes (Push) start their builds at once, before a workflow
//     writes anything, as the providers' git integrations do; every build
//     records the variables it read (VercelDeployment.Env,
//     NetlifyDeploy.Env), and StaleVariables names those written since it
//     started: "the preview runs with its variables" is a check on state.
//   - Lifecycles advance only when observed or when the injected clock
//     moves: a deployment by list requests that match it (a Netlify deploy
//     a push or createSiteBuild started, by the next list), a Neon operation
//     by requests to its project or by Options.Now; nothing runs in the
//     background, so tests are deterministic for a given Options.Seed.
//   - Close releases held and hanging requests; Reset empties everything.
//
// Go's HTTP client retries a request that died on a reused connection only
// when it is idempotent (GET, HEAD, ...) or carries an Idempotency-Key
// header; a dropped POST or PATCH therefore surfaces as an error, as a lost
// response must.
package sim
