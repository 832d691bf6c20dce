// Package httpclient is the one HTTP client every provider adapter uses
// (design: adapters-and-sim.md, "The shared provider HTTP client").
//
// Invariants:
//   - Every attempt has its own timeout (Config.Timeout, which the CLI takes
//     from SPONSON_HTTP_TIMEOUT), and all attempts of one request share a
//     bounded budget (Config.Budget): a request never takes longer than the
//     budget plus one attempt, whatever the provider says.
//   - Idempotent requests (GET, HEAD, PUT, DELETE, OPTIONS, and a PATCH or
//     POST the caller declares idempotent) are retried on network errors,
//     timeouts, 5xx and 423, with exponential backoff and full jitter.
//   - 429 and 423 are refusals: the provider did not act. They are retried for
//     every method, a create included. 429 and 503 honour Retry-After (seconds
//     or an HTTP date); 429 also honours X-RateLimit-Reset (epoch seconds,
//     Auth0's convention). A wait longer than what is left of the budget ends
//     the request at once (PROVIDER_TRANSIENT) instead of sleeping past it.
//   - A non-idempotent request (a create) is never retried after a failure
//     that may have reached the provider (network error, timeout, 5xx): the
//     error is ambiguous (IsAmbiguous), and the op resolves it by re-reading
//     what it meant to create (its intent names it).
//   - A failure to connect that retrying cannot mend is final at once
//     (PROVIDER_UNREACHABLE), for every method and never ambiguous, since
//     nothing was sent: a host that does not exist (an authoritative "no
//     such host"), and a literal address that refuses the connection. A
//     resolver that could not answer, and a refusal from a host name (it
//     may resolve elsewhere next time), are retried like any network error.
//   - Statuses map to codes in one table (codeFor): 401/403 PROVIDER_AUTH,
//     404/410 PROVIDER_NOT_FOUND, 409/412 PROVIDER_CONFLICT, 400/422
//     PROVIDER_INVALID, 429 and 5xx after the budget PROVIDER_TRANSIENT,
//     timeouts PROVIDER_TIMEOUT, an undecodable answer PROVIDER_RESPONSE; the
//     caller's own cancellation is INTERRUPTED.
//   - Error text never holds a credential: the Authorization header is never
//     rendered, the token is cut out of provider text, and query parameters
//     with credential-like names are shown as "***".
//   - A request that may write (any method but GET and HEAD) first calls
//     the context's adapter.BeforeWrite, and is not sent when it fails: the
//     engine takes the scope lease there if an op writes before its intent.
//   - Time and randomness are injected (Config.Now, Config.Sleep,
//     Config.Rand): tests never sleep for real.
//
// Sources: RFC 9110 §10.2.3 (Retry-After: delay-seconds or HTTP-date);
// "Exponential Backoff And Jitter" (AWS Architecture Blog, full jitter);
// Neon API reference, Operations ("Requests that conflict with a running
// operation return 423 Locked; retry with exponential backoff",
// https://neon.com/docs/reference/api/operations); Auth0 "Why You're
// Getting 429s" (x-ratelimit-reset on every response,
// https://auth0.com/blog/why-getting-429s-and-how-to-stop-them); Supabase
// Management API reference (60 requests a minute, then 429,
// https://supabase.com/docs/reference/api).
package httpclient
