// Package httpop is the http adapter, the generic escape hatch: an object
// of any REST API (http.resource) and an entry in a collection on a parent
// object (http.list_item).
//
// Provider block: providers.http.<api> = {base_url: https://... | base_url_env:
// NAME, auth: {bearer_env: NAME}}. Lines name their block with the api
// parameter. The engine may pass the whole providers.http block (every api)
// or the one api's block: both are understood. The credential is read from
// the variable auth.bearer_env names (PROVIDER_AUTH naming it when unset);
// without auth no Authorization header is sent.
//
// http.resource parameters:
//   - api (required); fields: the desired state (top-level keys; each is
//     compared whole, in canonical form; a field may be {keep: true});
//   - create: {method POST|PUT (default POST), path (required), body
//     (default fields)};
//   - read: {path}, default <create.path>/{id}; update: {method
//     PATCH|PUT|POST (default PATCH), path (default read.path), body
//     (default fields)}; delete: {path (default read.path)};
//   - id_path: JSON pointer to the id in an object (default /id);
//   - match: fields that identify the object in its collection, default
//     {name: fields.name}; needed when read.path holds {id} (the id is not
//     known before the object is found); list: {path (default
//     create.path), items (JSON pointer to the array; default the answer
//     itself, or its items, data or results)}. The collection is read with
//     the match as query parameters and checked again here; next_cursor
//     pages are followed with cursor=;
//   - outputs: name → JSON pointer into the object (id is always an output).
//
// Key (decision): <api>:<read path> when the read path is fixed, else
// <api>:<collection path>?<match query> (sorted, URL-encoded). The api name
// is part of the key because the engine records the whole providers.http
// block with a ledger entry: without it, Lookup and Destroy (which get no
// parameters) could not tell two apis apart. The canonical value is the
// object's fields named by the line's fields; the id is the object's.
// Lookup and Destroy work from the key alone with the API's defaults (the
// object at <collection>/<id>, id at /id, DELETE on the object's path): a
// line with a custom delete path or id_path is destroyed by convention,
// not by its parameters, and Lookup returns no Value (it cannot know which
// fields the line controls).
//
// http.list_item parameters:
//   - api (required); parent: {path (required), update_method PATCH|PUT
//     (default PATCH)}; list_path: JSON pointer to the list in the parent
//     (required); shape: array (default), delimited (one string, delimiter
//     default ","), map (the item is a key; value, default true, is its
//     value); item (required).
//
// Key: <api>:<parent path>#<list_path>=<item> (the table's key with the api
// in front, for the reason above). LockOn: http:<base url><parent path>
// (the variable's name stands in when base_url_env is unset). Writes are a
// JSON merge patch (RFC 7386) of only the list (a map entry alone, null to
// remove it), or with update_method PUT the whole parent. Destroy works
// from the key: the shape is read from the JSON type at list_path, a
// delimited string's delimiter is the first of , ; space newline | that
// splits the item out, and the write is a PATCH.
//
// API block settings beyond base_url: base_url_env (when set, it overrides
// base_url), auth (one form: {bearer_env}, {authorization_env} (the whole
// Authorization value, for APIs without a bearer scheme), {username_env,
// password_env} (basic; the password may be left out) or {header,
// value_env} (X-Postmark-Server-Token, STATSIG-API-KEY)), headers (literal
// extra headers, never credentials: an API version), encoding (json or
// form: application/x-www-form-urlencoded, nested values as a[b]=v and
// a[0]=v), idempotency_header (each create carries a new random key in it
// and may then be retried after a lost answer; updates carry none),
// paging (below), object_path (the object inside a single-object answer,
// such as /result; http.list_item reads and writes the parent inside it),
// id_path (every line's default id pointer), list_patch (merge or field),
// list_method (PATCH, PUT or POST: how http.list_item writes, destroy
// included), list_entries (exact, or subset: an object entry holding the
// item's fields and more the API adds, an id, is the item), list_items
// and list_suffix (how a key's listing is read: its array, and the path
// the listing adds to the objects' collection). Lookup and Destroy, which
// have only a key and the recorded block, use them too. Every setting is
// checked when the line is planned: PARAM_INVALID naming the setting.
//
// Paging (the block's paging, or a line's list.paging): by default
// next_cursor is sent back as cursor, and has_more as after=<the last
// item's id>; cursor {next: /pointer, param}; after {param}; link (the
// Link header's rel="next", RFC 8288, which must stay beneath the base
// URL; Sentry's results="false" ends it); offset {param, size_param,
// size} until a short page. Every walk is bounded (httpclient.MaxPages)
// and a repeated cursor is PROVIDER_RESPONSE.
//
// Outputs (http.resource): name → JSON pointer, or {path, sensitive,
// once}. ResourceOp is an adapter.Expander only to declare them to the
// engine with their sensitivity (the line stays an http.resource), so a
// sensitive output is masked and kept out of receipts as any op's is. What
// only the create answers (a new key's token) joins the object as read.
// read: {from: list} reads the object from its collection's listing, for
// APIs without a read of one object.
//
// destroy: keep (both ops; decision): the line's object outlives the
// scope. Apply neither intends it nor reports it created, so the ledger
// records it adopted: destroy lets go of it, rollback leaves it, and a
// line removed from the plan forgets it (ADOPTED_FORGOTTEN). See ADR 0017.
//
// http.recipe (recipe.go, recipes.go): adapter http with recipe:
// <provider>.<op> (op: recipe may be left out) is a provider's object or
// list entry with typed, checked parameters. The engine expands it
// (adapter.Expander) before anything runs into the http.resource or
// http.list_item line and the API block it stands for; plan, apply, the
// ledger and destroy see only that expansion. An unknown recipe, op or
// parameter, a mistyped one, or an identity that is not known before the
// run is PARAM_INVALID before any request. Each recipe names its
// provider's pages in its Sources (docs/adapters.md lists them).
//
// Creates (http.resource) are never repeated after an ambiguous failure:
// the op finds the object again by its match or fixed path. Updates and
// list writes set absolute values and are declared idempotent.
//
// Sources: RFC 6901 (JSON pointer), RFC 7386 (JSON merge patch), and the
// fake cloud's generic API contract (pkg/sim httpapi.go), which is the
// sim's own design, not a provider's.
package httpop
