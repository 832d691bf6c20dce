// Package clerk is the clerk adapter: clerk.redirect_allow, one allowed
// redirect URL of a Clerk instance.
//
// Credentials and endpoint: CLERK_SECRET_KEY (the instance's secret key,
// sent as a bearer token; the key selects the instance), CLERK_API_URL
// (default https://api.clerk.com; /v1 is appended unless the URL ends
// with it, as Clerk's SDKs read CLERK_API_URL). The provider block has no keys.
//
// clerk.redirect_allow parameters:
//   - url: the redirect URL, https:// or a custom scheme (my-app://cb).
//
// Key: redirect_url:<url>. Clerk keeps one object per URL (id ru_...), so
// the resource is that object: the canonical value is the URL, the id is
// Clerk's. Output, immediate: url.
//
// Decisions where the documentation is silent:
//   - An URL that is already allowed is taken over, never duplicated: Read
//     finds it, the diff is unchanged, and the engine records it as adopted
//     (destroy leaves it). A create that Clerk refuses because the URL
//     appeared meanwhile (another writer) is resolved by re-reading: the
//     URL found is taken over and not counted as created (the engine
//     records it adopted, so destroy leaves it).
//   - The listing is read with paginated=true, limit and offset until
//     total_count entries were seen (a bare array answer, the unpaginated
//     form, is accepted too).
//   - Destroy deletes by id; a 404 is success. An entry whose id changed
//     (deleted and re-added in the dashboard) is not touched.
//
// Sources (the search tool's stored copies):
//   - Clerk Backend SDK, getRedirectUrlList() (PaginatedResourceResponse
//     {data, totalCount}; BAPI GET /redirect_urls),
//     https://clerk.com/docs/reference/backend/redirect-urls/get-redirect-url-list.md;
//   - createRedirectUrl() (POST /redirect_urls {url}; https:// or a custom
//     scheme; ru_ ids),
//     https://clerk.com/docs/reference/backend/redirect-urls/create-redirect-url.md;
//   - @clerk/backend RedirectUrlApi.d.ts (list, get, create, delete by id);
//     hex.pm clerk lib/redirect_url.ex (GET/POST /v1/redirect_urls, GET and
//     DELETE /v1/redirect_urls/{id});
//   - clerk-sdk-rust-community models/redirect_url.rs (object, id, url,
//     created_at, updated_at).
package clerk
