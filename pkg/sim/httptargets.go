package sim

// The recipes' targets, as the generic API under /http stands in for
// them: for each, the collections' pattern and the HTTPShape that makes
// them answer as the provider does. Tests apply them with
// Console.SetHTTPShape (UseHTTPTarget); the numbered assumptions say
// what each shape models and where it was checked.
//
//   T1. ConfigCat: a setting's value is one object at
//       v1/environments/{e}/settings/{s}/value, read with GET and
//       replaced whole with PUT; credentials are basic auth. Source:
//       configcat.com/docs/api/reference/replace-setting-value.
//   T2. GrowthBook: GET /api/v1/features/{id} answers {"feature": {...}};
//       POST to it updates the feature. Source: docs.growthbook.io/api
//       (getFeature, updateFeature).
//   T3. Honeycomb: markers are created with POST /1/markers/{dataset}
//       (200), listed as a bare array, updated with PUT and deleted by
//       id; the key is in X-Honeycomb-Team. Source:
//       docs.honeycomb.io/api/tag/Markers.
//   T4. Postmark servers: POST /servers answers 200 with ID (a number)
//       and ApiTokens; GET /servers needs count and offset and answers
//       {TotalCount, Servers}; X-Postmark-Account-Token. Source:
//       postmarkapp.com/developer/api/servers-api.
//   T5. Postmark webhooks: POST /webhooks answers 200 with ID; GET
//       /webhooks answers {Webhooks}; X-Postmark-Server-Token. Source:
//       postmarkapp.com/developer/api/webhooks-api.
//   T6. Resend API keys: POST /api-keys answers 201 {id, token}; the
//       token is answered to the create only; GET /api-keys pages with
//       has_more and after. Source: resend.json (api-keys/create, list).
//   T7. SendGrid event webhooks: created at .../event/settings, listed
//       at .../event/settings/all as {webhooks}. Source: twilio.com/docs
//       /sendgrid/api-reference/webhooks.
//   T8. SendGrid parse settings: addressed by hostname, listed as
//       {result}. Source: twilio.com/docs/sendgrid/api-reference
//       /settings-inbound-parse.
//   T9. Sentry deploys: created and listed at .../releases/{v}/deploys/,
//       a bare array paged by a Link header with results="true|false".
//       Source: docs.sentry.io/api/pagination.
//   T10. Split: a flag's definition in an environment is one object at
//       internal/api/v2/splits/ws/{ws}/{flag}/environments/{env}, replaced
//       with PUT. Source: docs.split.io/reference.
//   T12. Postmark's /webhooks is Resend's path too: the generic API
//       serves Postmark beneath /http/postmark (HTTPPrefixes), so each is
//       checked against its own description, or none.
//   T11. Statsig: GET /console/v1/gates/{id} answers {"message", "data":
//       {...}}, PATCH replaces the fields it names; STATSIG-API-KEY.
//       Source: docs.statsig.com/api-reference/gates.

// HTTPTarget is one collection pattern of a recipe's target and its shape.
type HTTPTarget struct {
	Pattern string
	Shape   HTTPShape
}

// HTTPTargets are the shapes of the recipes' targets, by recipe.
var HTTPTargets = map[string][]HTTPTarget{
	"cloudflare.dns_cname":     {{"zones/*/dns_records", HTTPShape{Object: "result", List: "result"}}},
	"github.repo_webhook":      {{"repos/*/*/hooks", HTTPShape{BareList: true, NumericID: true}}},
	"sentry.release":           {{"organizations/*/releases", HTTPShape{IDField: "version"}}},
	"resend.webhook":           {{"webhooks", HTTPShape{List: "data", AfterPaging: true}}},
	"svix.endpoint":            {{"api/v1/app/*/endpoint", HTTPShape{IDField: "uid"}}},
	"turso.database_branch":    {{"v1/organizations/*/databases", HTTPShape{IDField: "name", Object: "database"}}},
	"unleash.flag_strategy":    {{"api/admin/projects/*/features/*/environments/*/strategies", HTTPShape{BareList: true}}},
	"configcat.targeting_rule": {{"v1/environments/*/settings/*", HTTPShape{}}},
	"growthbook.force_rule":    {{"api/v1/features", HTTPShape{Object: "feature", PostUpdates: true}}},
	"honeycomb.marker":         {{"1/markers/*", HTTPShape{BareList: true, CreateStatus: 200, Generated: map[string]string{"created_at": "now"}}}},
	"postmark.server":          {{"postmark/servers", HTTPShape{IDField: "ID", NumericID: true, List: "Servers", OffsetParam: "offset", SizeParam: "count", CreateStatus: 200, Generated: map[string]string{"ApiTokens": "tokens"}}}},
	"postmark_server.webhook":  {{"postmark/webhooks", HTTPShape{IDField: "ID", NumericID: true, List: "Webhooks", CreateStatus: 200}}},
	"resend.api_key":           {{"api-keys", HTTPShape{List: "data", AfterPaging: true, Once: []string{"token"}, Generated: map[string]string{"token": "token", "created_at": "now"}}}},
	"sendgrid.event_webhook":   {{"v3/user/webhooks/event/settings", HTTPShape{List: "webhooks", ListSuffix: "all"}}},
	"sendgrid.parse_setting":   {{"v3/user/webhooks/parse/settings", HTTPShape{IDField: "hostname", List: "result"}}},
	"sentry.deploy":            {{"organizations/*/releases/*/deploys", HTTPShape{LinkPaging: true, Generated: map[string]string{"dateFinished": "now"}}}},
	"split.targeting_rule":     {{"internal/api/v2/splits/ws/*/*/environments", HTTPShape{}}},
	"statsig.gate_rule":        {{"console/v1/gates", HTTPShape{Object: "data"}}},
}

// HTTPPrefixes are the paths beneath /http where a target is served when
// its paths would collide with another's, by base-URL variable: that
// variable points at <sim>/http<prefix>.
var HTTPPrefixes = map[string]string{"POSTMARK_API_URL": "/postmark"}

// UseHTTPTarget shapes the generic API as the recipe's target (a recipe
// without a target shape changes nothing).
func (k Console) UseHTTPTarget(recipe string) {
	for _, t := range HTTPTargets[recipe] {
		k.SetHTTPShape(t.Pattern, t.Shape)
	}
}
