// Package launchdarkly is the launchdarkly adapter:
// launchdarkly.flag_target, this scope as an individual target of one
// variation of a flag in one environment.
//
// Credentials and endpoint: LAUNCHDARKLY_ACCESS_TOKEN, sent as the whole
// Authorization header (LaunchDarkly's convention, no scheme);
// LAUNCHDARKLY_API_URL (default https://app.launchdarkly.com; /api/v2 is
// appended unless the URL ends with it). Provider block: project and
// environment (keys, required), production (bool: the line then writes
// production and needs an approver, as vercel.env's production target
// does). An environment whose key contains "prod" (production, prod-eu)
// needs an approver whatever production says (plan.Production).
//
// launchdarkly.flag_target parameters:
//   - flag: the flag's key (required). The flag must exist: the op never
//     creates, deletes or toggles flags (PROVIDER_NOT_FOUND otherwise);
//   - key: the context key to target, default ${ctx.scope};
//   - context_kind: default user;
//   - variation: a variation's name, or its value (true, "blue", 3);
//     default true. A string matches a name first, then a value (also the
//     JSON text of a non-string value, so "true" is the variation true).
//
// Key target:<environment>:<flag>:<context kind>:<context key>. The
// canonical value is {variation} in the line's own terms when the key is
// targeted on the line's variation, else the targeted variation's name (or
// value); no ids. Outputs, immediate: key, variation.
//
// Writes are semantic patches (PATCH /api/v2/flags/{project}/{flag} with
// Content-Type "application/json; domain-model=launchdarkly.semanticpatch",
// {environmentKey, instructions, comment}): addTargets to add the key,
// removeTargets + addTargets in one patch to move it to another
// variation, removeTargets to destroy. Adding a present target or removing
// an absent one changes nothing, so the patches are declared idempotent to
// the HTTP client. An environment that requires approvals refuses direct
// changes: the op answers PROVIDER_CONFLICT saying so, and never creates an
// approval request on its own.
//
// Requests: Read is one GET of the flag (env filter); Apply starts from the
// flag that Read fetched (adapter.Live.Read: variation ids and targets), so
// a create or a move is that read and one patch. The patch needs no
// version: its instructions name the key and a variation id, never a
// position, so it is right against the flag as it is when applied.
//
// Sources (the search tool's stored copies):
//   - "Update feature flag" (semantic patch media type, environmentKey,
//     instructions; targeting instructions addTargets/removeTargets with
//     contextKind, values, variationId),
//     https://launchdarkly.com/docs/api/feature-flags/update-feature-flag;
//   - "Update expiring context targets on feature flag" (the same
//     semantic-patch convention, contextKind and variationId parameters),
//     https://launchdarkly.com/docs/api/feature-flags/update-expiring-context-targets-on-feature-flag;
//   - "Get feature flag" (GET /api/v2/flags/{projectKey}/{featureFlagKey},
//     env filter; variations with _id, value, name; per-environment
//     targets and contextTargets),
//     https://launchdarkly.com/docs/api/feature-flags/get-feature-flag;
//   - "Create approval request" (changes in environments with required
//     approvals go through approval requests),
//     https://launchdarkly.com/docs/api/approvals/post-approval-request;
//   - the refusal of a direct change in such an environment, 405
//     {"code":"method_not_allowed","message":"Flag configuration updates
//     require approval: ..."}, as quoted in launchdarkly/ldcli issue 581,
//     https://github.com/launchdarkly/ldcli/issues/581.
package launchdarkly
