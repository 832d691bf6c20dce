package httpop

import (
	"maps"
	"strings"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/adapters/internal/param"
)

// The recipes that need more than a bearer token and JSON: basic and
// header auth, extra headers, offset and Link paging, objects read from
// their listing, sensitive once-only outputs and destroy: keep.

func init() { maps.Copy(recipes, moreRecipes) }

func headerAuth(baseURL, urlVar, header, tokenVar string) map[string]any {
	return map[string]any{"base_url": baseURL, "base_url_env": urlVar, "auth": map[string]any{"header": header, "value_env": tokenVar}}
}

func ruleName(p map[string]any, run adapter.RunCtx) any {
	return str(p, "name", "sponson "+run.Env+"/"+run.Scope)
}

var keepParam = adapter.ParamSpec{Name: "destroy", Type: adapter.TypeString, Enum: []string{"keep", "delete"}, Default: "keep",
	Doc: "keep (default): it stays when the scope is destroyed, as a record of the deploy; delete: destroy deletes it"}

var moreRecipes = map[string]recipe{
	"configcat.targeting_rule": {
		spec: adapter.Recipe{Name: "configcat.targeting_rule", Expands: "list_item",
			Summary: "a targeting rule of a ConfigCat feature flag in one environment",
			Params: []adapter.ParamSpec{
				{Name: "environment", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the environment's id"},
				{Name: "setting", Type: adapter.TypeInt, Required: true, Identity: true, Doc: "the feature flag's (setting's) id"},
				{Name: "attribute", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the user attribute compared (Identifier, Email, Country or a custom one)"},
				{Name: "comparator", Type: adapter.TypeString, Identity: true, Default: "isOneOf", Doc: "the comparator (isOneOf, contains, semVerIsOneOf, ...)"},
				{Name: "comparison_value", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the value compared with (a comma-separated list for isOneOf)"},
				{Name: "value", Type: adapter.TypeAny, Required: true, Identity: true, Doc: "the value served to matching users"},
			},
			Outputs:     []adapter.OutputSpec{},
			Key:         "configcat:/v1/environments/<environment>/settings/<setting>/value#/rolloutRules=<the rule as canonical JSON>",
			Lock:        "http:<base url>/v1/environments/<environment>/settings/<setting>/value",
			Credentials: []string{"CONFIGCAT_API_USER", "CONFIGCAT_API_PASS"}, BaseURLVar: "CONFIGCAT_API_URL", BaseURL: "https://api.configcat.com",
			API: "ConfigCat Public Management API v1: GET and PUT /v1/environments/{environmentId}/settings/{settingId}/value, basic auth",
			Sources: []string{
				"https://www.configcat.com/docs/api/reference/replace-setting-value/ (PUT replaces value, rolloutRules and the percentage rules whole: every rule is sent back; a targeting rule is comparisonAttribute, comparator, comparisonValue, value)",
				"https://github.com/configcat/configcat-publicapi-go-client/blob/v1.11.0/docs/FeatureFlagSettingValuesApi.md (GetSettingValue and ReplaceSettingValue)",
				"https://api.configcat.com/docs/ (Public Management API credentials are a basic-auth user name and password)",
			}},
		api: "configcat",
		// PUT is a complete replace: the rules are written with
		// everything else the value holds (list_method PUT). ConfigCat
		// answers a rule with segment fields of its own (subset).
		block: map[string]any{"base_url": "https://api.configcat.com", "base_url_env": "CONFIGCAT_API_URL",
			"auth": map[string]any{"username_env": "CONFIGCAT_API_USER", "password_env": "CONFIGCAT_API_PASS"}, "list_method": "PUT", "list_entries": "subset"},
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			rule := map[string]any{"comparisonAttribute": p["attribute"], "comparator": str(p, "comparator", "isOneOf"),
				"comparisonValue": p["comparison_value"], "value": p["value"]}
			return arrayEntry("/v1/environments/"+seg(p, "environment")+"/settings/"+seg(p, "setting")+"/value", "/rolloutRules", rule), nil
		},
	},

	"growthbook.force_rule": {
		spec: adapter.Recipe{Name: "growthbook.force_rule", Expands: "list_item",
			Summary: "a force rule of a GrowthBook feature in one environment",
			Params: []adapter.ParamSpec{
				{Name: "feature", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the feature's key"},
				{Name: "environment", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the environment (dev, production, ...)"},
				{Name: "value", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the value forced, as GrowthBook writes it (\"true\", a JSON string)"},
				{Name: "condition", Type: adapter.TypeString, Identity: true, Default: "\"\"", Doc: "the targeting condition as a JSON string (empty: everyone)"},
				{Name: "description", Type: adapter.TypeString, Identity: true, Default: "sponson ${ctx.env}/${ctx.scope}", Doc: "the rule's description"},
			},
			Outputs:     []adapter.OutputSpec{},
			Key:         "growthbook:/api/v1/features/<feature>#/environments/<environment>/rules=<the rule as canonical JSON>",
			Lock:        "http:<base url>/api/v1/features/<feature>",
			Credentials: []string{"GROWTHBOOK_API_KEY"}, BaseURLVar: "GROWTHBOOK_API_URL", BaseURL: "https://api.growthbook.io",
			API: "GrowthBook REST API v1: GET /api/v1/features/{id} ({feature}) and POST /api/v1/features/{id} (update)",
			Sources: []string{
				"https://docs.growthbook.io/api#tag/features/operation/getFeature (GET /api/v1/features/{id} answers {feature: {environments: {<env>: {enabled, rules}}}})",
				"https://docs.growthbook.io/api#tag/features/operation/updateFeature (POST /api/v1/features/{id} with environments.<env>.rules; a force rule is {type: force, value, condition, description, enabled})",
			}},
		api: "growthbook",
		// The feature is in {"feature": ...}; updates are POSTs, sent with
		// every environment as read (list_patch field: whether GrowthBook
		// merges environments or replaces them, none is lost); rules come
		// back with ids GrowthBook gives them (subset).
		block: with(bearer("growthbook", "https://api.growthbook.io", "GROWTHBOOK_API_URL", "GROWTHBOOK_API_KEY"),
			"object_path", "/feature", "list_method", "POST", "list_patch", PatchField, "list_entries", "subset"),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			rule := map[string]any{"type": "force", "value": p["value"], "condition": str(p, "condition", ""),
				"description": str(p, "description", "sponson "+run.Env+"/"+run.Scope), "enabled": true}
			env, _ := p["environment"].(string)
			return arrayEntry("/api/v1/features/"+seg(p, "feature"), "/environments/"+escapePointer(env)+"/rules", rule), nil
		},
	},

	"honeycomb.marker": {
		spec: adapter.Recipe{Name: "honeycomb.marker", Expands: "resource",
			Summary: "a Honeycomb marker (a deploy line on a dataset's graphs), found again by its message and type",
			Params: []adapter.ParamSpec{
				{Name: "dataset", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the dataset's slug, or __all__ for every dataset of the environment"},
				{Name: "message", Type: adapter.TypeString, Identity: true, Default: "sponson ${ctx.env}/${ctx.scope}", Doc: "the marker's message (it identifies the marker)"},
				{Name: "type", Type: adapter.TypeString, Identity: true, Default: "deploy", Doc: "the marker's type (groups markers and their colour)"},
				{Name: "url", Type: adapter.TypeString, Doc: "a link shown with the marker"},
				keepParam,
			},
			Outputs:     []adapter.OutputSpec{idOut},
			Key:         "honeycomb:/1/markers/<dataset>?message=<message>&type=<type>",
			Credentials: []string{"HONEYCOMB_API_KEY"}, BaseURLVar: "HONEYCOMB_API_URL", BaseURL: "https://api.honeycomb.io",
			API: "Honeycomb API v1: /1/markers/{datasetSlug}[/{markerId}], X-Honeycomb-Team header",
			Sources: []string{
				"https://docs.honeycomb.io/api/tag/Markers (create POST /1/markers/{datasetSlug} {message, type, url, start_time}; list GET /1/markers/{datasetSlug} answers an array; update PUT and delete /1/markers/{datasetSlug}/{markerId}; no read of one marker)",
				"https://docs.honeycomb.io/api/ (the key goes in the X-Honeycomb-Team header)",
			}},
		api:   "honeycomb",
		block: headerAuth("https://api.honeycomb.io", "HONEYCOMB_API_URL", "X-Honeycomb-Team", "HONEYCOMB_API_KEY"),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			coll := "/1/markers/" + seg(p, "dataset")
			msg, typ := str(p, "message", "sponson "+run.Env+"/"+run.Scope), str(p, "type", "deploy")
			fields := map[string]any{"message": msg, "type": typ}
			if v, ok := p["url"]; ok {
				fields["url"] = v
			}
			return map[string]any{
				"create": map[string]any{"path": coll}, "read": map[string]any{"path": coll + "/{id}", "from": "list"},
				"update": map[string]any{"method": "PUT"},
				"list":   map[string]any{"path": coll, "filter": "none"},
				"match":  map[string]any{"message": msg, "type": typ}, "fields": fields,
				"destroy": str(p, "destroy", "keep"),
			}, nil
		},
	},

	"postmark.server": {
		spec: adapter.Recipe{Name: "postmark.server", Expands: "resource",
			Summary: "a Postmark server (its own API token, streams and statistics), found again by its name",
			Params: []adapter.ParamSpec{
				{Name: "name", Type: adapter.TypeString, Identity: true, Default: "sponson-${ctx.env}-${ctx.scope}", Doc: "the server's name (it identifies it)"},
				{Name: "color", Type: adapter.TypeString, Enum: []string{"Purple", "Blue", "Turquoise", "Green", "Red", "Yellow", "Grey", "Orange"}, Default: "Purple", CreateOnly: true, Doc: "its colour in the Postmark app"},
				{Name: "track_opens", Type: adapter.TypeBool, Default: "false", Doc: "open tracking"},
			},
			Outputs: []adapter.OutputSpec{idOut,
				{Name: "server_token", When: adapter.Immediate, Sensitive: true, Doc: "the server's first API token (X-Postmark-Server-Token of its messages and webhooks)"}},
			Key:         "postmark:/servers?Name=<name>",
			Credentials: []string{"POSTMARK_ACCOUNT_TOKEN"}, BaseURLVar: "POSTMARK_API_URL", BaseURL: "https://api.postmarkapp.com",
			API: "Postmark Account API: /servers[/{serverid}], X-Postmark-Account-Token header, listed by count and offset",
			Sources: []string{
				"https://postmarkapp.com/developer/api/servers-api (create POST /servers {Name, Color, TrackOpens}; get, edit PUT and delete /servers/{serverid}; list GET /servers?count=&offset= answers {TotalCount, Servers}; a server has ID and ApiTokens)",
				"https://postmarkapp.com/developer/user-guide/managing-your-account/managing-servers (the account token in X-Postmark-Account-Token; deleting servers must be enabled by support)",
			}},
		api: "postmark",
		block: with(headerAuth("https://api.postmarkapp.com", "POSTMARK_API_URL", "X-Postmark-Account-Token", "POSTMARK_ACCOUNT_TOKEN"),
			"id_path", "/ID", "list_items", "/Servers", "paging", map[string]any{"type": PagingOffset, "param": "offset", "size_param": "count", "size": int64(500)}),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			name := str(p, "name", "sponson-"+run.Env+"-"+run.Scope)
			fields := map[string]any{"Name": name, "TrackOpens": p["track_opens"]}
			if fields["TrackOpens"] == nil {
				fields["TrackOpens"] = false
			}
			// The colour is sent at create only: Postmark's answers need
			// not spell it as the request did.
			body := maps.Clone(fields)
			body["Color"] = str(p, "color", "Purple")
			return map[string]any{
				"create": map[string]any{"path": "/servers", "body": body}, "read": map[string]any{"path": "/servers/{id}"},
				"update": map[string]any{"method": "PUT"},
				"list":   map[string]any{"path": "/servers", "items": "/Servers", "filter": "none"},
				"match":  map[string]any{"Name": name}, "fields": fields,
				"outputs": map[string]any{"server_token": map[string]any{"path": "/ApiTokens/0", "sensitive": true}},
			}, nil
		},
	},

	"postmark_server.webhook": {
		spec: adapter.Recipe{Name: "postmark_server.webhook", Expands: "resource",
			Summary: "a webhook of a Postmark server, found again by its URL",
			Params: []adapter.ParamSpec{
				{Name: "url", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the URL events are posted to (it identifies the webhook)"},
				{Name: "message_stream", Type: adapter.TypeString, Default: "outbound", CreateOnly: true, Doc: "the message stream it belongs to"},
				{Name: "triggers", Type: adapter.TypeMap, Default: "{Delivery: {Enabled: true}}", Doc: "the triggers turned on (Open, Click, Delivery, Bounce, SpamComplaint, SubscriptionChange), each {Enabled: true, ...}; the others are sent off, as Postmark answers them"},
			},
			Outputs:     []adapter.OutputSpec{idOut},
			Key:         "postmark_server:/webhooks?Url=<url>",
			Credentials: []string{"POSTMARK_SERVER_TOKEN"}, BaseURLVar: "POSTMARK_API_URL", BaseURL: "https://api.postmarkapp.com",
			API: "Postmark API: /webhooks[/{id}], X-Postmark-Server-Token header",
			Sources: []string{
				"https://postmarkapp.com/developer/api/webhooks-api (create POST /webhooks {Url, MessageStream, Triggers}; get, edit PUT and delete /webhooks/{id}; list GET /webhooks answers {Webhooks}; a webhook has ID)",
				"https://postmarkapp.com/developer/api/overview#authentication (server-level endpoints take X-Postmark-Server-Token)",
			}},
		api:   "postmark_server",
		block: with(headerAuth("https://api.postmarkapp.com", "POSTMARK_API_URL", "X-Postmark-Server-Token", "POSTMARK_SERVER_TOKEN"), "id_path", "/ID", "list_items", "/Webhooks"),
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			triggers := postmarkTriggers(p["triggers"])
			fields := map[string]any{"Url": p["url"], "Triggers": triggers}
			body := map[string]any{"Url": p["url"], "Triggers": triggers, "MessageStream": str(p, "message_stream", "outbound")}
			return map[string]any{
				"create": map[string]any{"path": "/webhooks", "body": body}, "read": map[string]any{"path": "/webhooks/{id}"},
				"update": map[string]any{"method": "PUT"},
				"list":   map[string]any{"path": "/webhooks", "items": "/Webhooks", "filter": "none"},
				"match":  map[string]any{"Url": p["url"]}, "fields": fields,
			}, nil
		},
	},

	"resend.api_key": {
		spec: adapter.Recipe{Name: "resend.api_key", Expands: "resource",
			Summary: "a Resend API key, found again by its name; its token is answered once",
			Params: []adapter.ParamSpec{
				{Name: "name", Type: adapter.TypeString, Identity: true, Default: "sponson-${ctx.env}-${ctx.scope}", Doc: "the key's name (it identifies the key)"},
				{Name: "permission", Type: adapter.TypeString, Enum: []string{"full_access", "sending_access"}, Default: "sending_access", CreateOnly: true, Doc: "what the key may do"},
				{Name: "domain_id", Type: adapter.TypeString, CreateOnly: true, Doc: "with sending_access: the only domain it sends from"},
			},
			Outputs: []adapter.OutputSpec{idOut,
				{Name: "token", When: adapter.Immediate, Sensitive: true, Once: true, Doc: "the key (re_...), answered to the create only"}},
			Key:         "resend:/api-keys?name=<name>",
			Credentials: []string{"RESEND_API_KEY"}, BaseURLVar: "RESEND_API_URL", BaseURL: "https://api.resend.com",
			API: "Resend API (unversioned): POST and GET /api-keys (after/has_more), DELETE /api-keys/{api_key_id}",
			Sources: []string{
				"https://resend.com/docs/api-reference/api-keys/create-api-key (POST /api-keys {name, permission, domain_id} answers {id, token})",
				"https://resend.com/docs/api-reference/api-keys/list-api-keys (GET /api-keys answers {object: list, has_more, data: [{id, name, created_at}]}; no read of one key)",
				"resend/resend-openapi resend.yaml (commit 18cca2d): api-keys/create, api-keys/list, api-keys/remove",
			}},
		api:   "resend",
		block: bearer("resend", "https://api.resend.com", "RESEND_API_URL", "RESEND_API_KEY"),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			name := str(p, "name", "sponson-"+run.Env+"-"+run.Scope)
			body := map[string]any{"name": name, "permission": str(p, "permission", "sending_access")}
			if v, ok := p["domain_id"]; ok {
				body["domain_id"] = v
			}
			return map[string]any{
				"create": map[string]any{"path": "/api-keys", "body": body},
				"read":   map[string]any{"path": "/api-keys/{id}", "from": "list"},
				"list":   map[string]any{"path": "/api-keys", "items": "/data", "filter": "none"},
				"match":  map[string]any{"name": name}, "fields": map[string]any{},
				"outputs": map[string]any{"token": map[string]any{"path": "/token", "sensitive": true, "once": true}},
			}, nil
		},
	},

	"sendgrid.event_webhook": {
		spec: adapter.Recipe{Name: "sendgrid.event_webhook", Expands: "resource",
			Summary: "a SendGrid event webhook, found again by its URL",
			Params: []adapter.ParamSpec{
				{Name: "url", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the URL events are posted to (it identifies the webhook)"},
				{Name: "events", Type: adapter.TypeList, Default: "[delivered, bounce, dropped]", Doc: "the events posted: " + strings.Join(sendgridEvents, ", ")},
				{Name: "enabled", Type: adapter.TypeBool, Default: "true", Doc: "events are posted"},
				{Name: "friendly_name", Type: adapter.TypeString, Default: "sponson ${ctx.env}/${ctx.scope}", Doc: "a name shown in SendGrid"},
			},
			Outputs:     []adapter.OutputSpec{idOut},
			Key:         "sendgrid:/v3/user/webhooks/event/settings/all?url=<url>",
			Credentials: []string{"SENDGRID_API_KEY"}, BaseURLVar: "SENDGRID_API_URL", BaseURL: "https://api.sendgrid.com",
			API: "SendGrid v3: /v3/user/webhooks/event/settings[/{id}], listed at /v3/user/webhooks/event/settings/all",
			Sources: []string{
				"https://www.twilio.com/docs/sendgrid/api-reference/webhooks/create-an-event-webhook (POST /v3/user/webhooks/event/settings {enabled, url, friendly_name, one boolean per event})",
				"https://www.twilio.com/docs/sendgrid/api-reference/webhooks/get-all-of-your-event-webhooks (GET .../settings/all answers {max_allowed, webhooks})",
				"https://www.twilio.com/docs/sendgrid/api-reference/webhooks/update-a-single-event-webhook-by-id (PATCH and DELETE .../settings/{id})",
			}},
		api: "sendgrid",
		// Listed at .../settings/all as {webhooks}: a key (its listing
		// path) is read and deleted beneath .../settings.
		block: with(bearer("sendgrid", "https://api.sendgrid.com", "SENDGRID_API_URL", "SENDGRID_API_KEY"), "list_items", "/webhooks", "list_suffix", "/all"),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			coll := "/v3/user/webhooks/event/settings"
			on := map[string]bool{}
			events, _ := p["events"].([]any)
			if events == nil {
				events = []any{"delivered", "bounce", "dropped"}
			}
			for _, e := range events {
				s, _ := e.(string)
				if !contains(sendgridEvents, s) {
					return nil, invalidEvent(s)
				}
				on[s] = true
			}
			fields := map[string]any{"url": p["url"], "enabled": p["enabled"], "friendly_name": str(p, "friendly_name", "sponson "+run.Env+"/"+run.Scope)}
			if fields["enabled"] == nil {
				fields["enabled"] = true
			}
			for _, e := range sendgridEvents {
				fields[e] = on[e]
			}
			return map[string]any{
				"create": map[string]any{"path": coll}, "read": map[string]any{"path": coll + "/{id}"},
				"list":  map[string]any{"path": coll + "/all", "items": "/webhooks", "filter": "none"},
				"match": map[string]any{"url": p["url"]}, "fields": fields,
			}, nil
		},
	},

	"sendgrid.parse_setting": {
		spec: adapter.Recipe{Name: "sendgrid.parse_setting", Expands: "resource",
			Summary: "a SendGrid Inbound Parse setting: mail to a host name is posted to a URL",
			Params: []adapter.ParamSpec{
				{Name: "hostname", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the receiving host name (its MX points at mx.sendgrid.net)"},
				{Name: "url", Type: adapter.TypeString, Required: true, Doc: "the URL parsed mail is posted to"},
				{Name: "spam_check", Type: adapter.TypeBool, Default: "false", Doc: "check for spam"},
				{Name: "send_raw", Type: adapter.TypeBool, Default: "false", Doc: "post the raw MIME message"},
			},
			Outputs:     []adapter.OutputSpec{idOut},
			Key:         "sendgrid_parse:/v3/user/webhooks/parse/settings/<hostname>",
			Credentials: []string{"SENDGRID_API_KEY"}, BaseURLVar: "SENDGRID_API_URL", BaseURL: "https://api.sendgrid.com",
			API: "SendGrid v3: /v3/user/webhooks/parse/settings[/{hostname}]",
			Sources: []string{
				"https://www.twilio.com/docs/sendgrid/api-reference/settings-inbound-parse/create-a-parse-setting (POST /v3/user/webhooks/parse/settings {url, hostname, spam_check, send_raw})",
				"https://www.twilio.com/docs/sendgrid/api-reference/settings-inbound-parse/retrieve-a-specific-parse-setting (GET, PATCH and DELETE .../settings/{hostname})",
			}},
		// Its own block: parse settings are addressed by host name.
		api:   "sendgrid_parse",
		block: with(bearer("sendgrid", "https://api.sendgrid.com", "SENDGRID_API_URL", "SENDGRID_API_KEY"), "id_path", "/hostname"),
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			coll := "/v3/user/webhooks/parse/settings"
			fields := map[string]any{"url": p["url"], "spam_check": p["spam_check"], "send_raw": p["send_raw"]}
			for _, k := range []string{"spam_check", "send_raw"} {
				if fields[k] == nil {
					fields[k] = false
				}
			}
			body := maps.Clone(fields)
			body["hostname"] = p["hostname"]
			return map[string]any{
				"create": map[string]any{"path": coll, "body": body}, "read": map[string]any{"path": coll + "/" + seg(p, "hostname")},
				"fields": fields,
			}, nil
		},
	},

	"sentry.deploy": {
		spec: adapter.Recipe{Name: "sentry.deploy", Expands: "resource",
			Summary: "a deploy of a Sentry release to an environment (kept: Sentry has no delete of a deploy)",
			Params: []adapter.ParamSpec{
				{Name: "organization", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the organization's slug"},
				{Name: "version", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the release's version"},
				{Name: "environment", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the environment deployed to"},
				{Name: "name", Type: adapter.TypeString, Identity: true, Default: "sponson ${ctx.env}/${ctx.scope}", Doc: "the deploy's name (with the environment, it identifies the deploy)"},
				{Name: "url", Type: adapter.TypeString, CreateOnly: true, Doc: "the deployment's URL"},
				{Name: "projects", Type: adapter.TypeList, CreateOnly: true, Doc: "the projects deployed (default the release's)"},
			},
			Outputs:     []adapter.OutputSpec{idOut},
			Key:         "sentry:/organizations/<organization>/releases/<version>/deploys/?environment=<environment>&name=<name>",
			Credentials: []string{"SENTRY_AUTH_TOKEN"}, BaseURLVar: "SENTRY_API_URL", BaseURL: "https://sentry.io/api/0",
			API: "Sentry API 0: POST and GET /api/0/organizations/{organization}/releases/{version}/deploys/ (Link header paging)",
			Sources: []string{
				"https://docs.sentry.io/api/releases/create-a-new-deploy-for-an-organization/ (POST .../releases/{version}/deploys/ {environment, name, url, projects, dateStarted, dateFinished})",
				"https://docs.sentry.io/api/releases/list-a-releases-deploys/ (GET .../deploys/ answers an array; no read of one deploy, no update, no delete)",
				"https://docs.sentry.io/api/pagination/ (Link header rel=\"next\" with results=\"true\"|\"false\")",
			}},
		api: "sentry",
		// The block is sentry.release's: one block per api name.
		block: with(bearer("sentry", "https://sentry.io/api/0", "SENTRY_API_URL", "SENTRY_AUTH_TOKEN"), "id_path", "/version"),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			coll := "/organizations/" + seg(p, "organization") + "/releases/" + seg(p, "version") + "/deploys/"
			name := str(p, "name", "sponson "+run.Env+"/"+run.Scope)
			body := map[string]any{"environment": p["environment"], "name": name}
			for _, k := range []string{"url", "projects"} {
				if v, ok := p[k]; ok {
					body[k] = v
				}
			}
			return map[string]any{
				"create": map[string]any{"path": coll, "body": body}, "read": map[string]any{"path": coll + "{id}/", "from": "list"},
				"list":    map[string]any{"path": coll, "filter": "none", "paging": PagingLink},
				"match":   map[string]any{"environment": p["environment"], "name": name},
				"id_path": "/id", "fields": map[string]any{}, "destroy": "keep",
			}, nil
		},
	},

	"split.targeting_rule": {
		spec: adapter.Recipe{Name: "split.targeting_rule", Expands: "list_item",
			Summary: "a targeting rule of a Split feature flag's definition in one environment",
			Params: []adapter.ParamSpec{
				{Name: "workspace", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the workspace's id"},
				{Name: "flag", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the feature flag's name"},
				{Name: "environment", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the environment's id or name"},
				{Name: "treatment", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the treatment served to matching traffic"},
				{Name: "matchers", Type: adapter.TypeList, Required: true, Identity: true, Doc: "the condition's matchers [{type: IN_LIST_STRING, attribute, strings: [...]}, ...], all of which must hold"},
			},
			Outputs:     []adapter.OutputSpec{},
			Key:         "split:/internal/api/v2/splits/ws/<workspace>/<flag>/environments/<environment>#/rules=<the rule as canonical JSON>",
			Lock:        "http:<base url>/internal/api/v2/splits/ws/<workspace>/<flag>/environments/<environment>",
			Credentials: []string{"SPLIT_ADMIN_API_KEY"}, BaseURLVar: "SPLIT_API_URL", BaseURL: "https://api.split.io",
			API: "Split Admin API v2: GET and PUT /internal/api/v2/splits/ws/{wsId}/{featureFlagName}/environments/{environmentId}",
			Sources: []string{
				"https://docs.split.io/reference/get-feature-flag-definition-in-environment (the definition: treatments, rules [{buckets: [{treatment, size}], condition: {combiner: AND, matchers}}], defaultRule)",
				"https://docs.split.io/reference/full-update-feature-flag-definition-in-environment (PUT replaces the definition whole)",
				"https://docs.split.io/reference/authentication (Authorization: Bearer <Admin API key>)",
			}},
		api:   "split",
		block: with(bearer("split", "https://api.split.io", "SPLIT_API_URL", "SPLIT_ADMIN_API_KEY"), "list_method", "PUT", "list_entries", "subset"),
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			rule := map[string]any{
				"buckets":   []any{map[string]any{"treatment": p["treatment"], "size": int64(100)}},
				"condition": map[string]any{"combiner": "AND", "matchers": p["matchers"]},
			}
			return arrayEntry("/internal/api/v2/splits/ws/"+seg(p, "workspace")+"/"+seg(p, "flag")+"/environments/"+seg(p, "environment"), "/rules", rule), nil
		},
	},

	"statsig.gate_rule": {
		spec: adapter.Recipe{Name: "statsig.gate_rule", Expands: "list_item",
			Summary: "a rule of a Statsig feature gate",
			Params: []adapter.ParamSpec{
				{Name: "gate", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the gate's id"},
				{Name: "name", Type: adapter.TypeString, Identity: true, Default: "sponson ${ctx.env}/${ctx.scope}", Doc: "the rule's name"},
				{Name: "conditions", Type: adapter.TypeList, Required: true, Identity: true, Doc: "the conditions [{type: user_id, operator: any, targetValue: [...]}]"},
				{Name: "pass_percentage", Type: adapter.TypeNumber, Identity: true, Default: "100", Doc: "the share of matching users who pass"},
				{Name: "environments", Type: adapter.TypeList, Identity: true, Doc: "the environments the rule holds in (absent: all)"},
			},
			Outputs:     []adapter.OutputSpec{},
			Key:         "statsig:/console/v1/gates/<gate>#/rules=<the rule as canonical JSON>",
			Lock:        "http:<base url>/console/v1/gates/<gate>",
			Credentials: []string{"STATSIG_CONSOLE_API_KEY"}, BaseURLVar: "STATSIG_API_URL", BaseURL: "https://statsigapi.net",
			API: "Statsig Console API, version 20240601: GET and PATCH /console/v1/gates/{id} ({message, data})",
			Sources: []string{
				"https://docs.statsig.com/console-api/gates/ (STATSIG-API-KEY header; STATSIG-API-VERSION 20240601)",
				"https://docs.statsig.com/api-reference/gates/partially-update-gates (PATCH /console/v1/gates/{id} with rules replaces them; a rule is {name, passPercentage, conditions, environments}, and Statsig adds id and baseID)",
			}},
		api: "statsig",
		// The gate is in {"data": ...}; a PATCH's rules replace the
		// gate's (list_patch field); rules come back with ids (subset).
		block: with(headerAuth("https://statsigapi.net", "STATSIG_API_URL", "STATSIG-API-KEY", "STATSIG_CONSOLE_API_KEY"),
			"headers", map[string]any{"STATSIG-API-VERSION": "20240601"}, "object_path", "/data", "list_patch", PatchField, "list_entries", "subset"),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			pct := p["pass_percentage"]
			if pct == nil {
				pct = int64(100)
			}
			rule := map[string]any{"name": ruleName(p, run), "passPercentage": pct, "conditions": p["conditions"]}
			if v, ok := p["environments"]; ok {
				rule["environments"] = v
			}
			return arrayEntry("/console/v1/gates/"+seg(p, "gate"), "/rules", rule), nil
		},
	},
}

// postmarkTriggers is every trigger as Postmark answers a webhook's
// (each one, off unless the line turns it on), so the answer and the line
// compare equal: the line's triggers on top of all of them off, Delivery on
// when the line names none.
func postmarkTriggers(v any) map[string]any {
	out := map[string]any{
		"Open":               map[string]any{"Enabled": false, "PostFirstOpenOnly": false},
		"Click":              map[string]any{"Enabled": false},
		"Delivery":           map[string]any{"Enabled": false},
		"Bounce":             map[string]any{"Enabled": false, "IncludeContent": false},
		"SpamComplaint":      map[string]any{"Enabled": false, "IncludeContent": false},
		"SubscriptionChange": map[string]any{"Enabled": false},
	}
	given, _ := v.(map[string]any)
	if given == nil {
		given = map[string]any{"Delivery": map[string]any{"Enabled": true}}
	}
	for name, t := range given {
		m, _ := out[name].(map[string]any)
		merged := maps.Clone(m)
		if merged == nil {
			merged = map[string]any{}
		}
		if tm, ok := t.(map[string]any); ok {
			maps.Copy(merged, tm)
		}
		out[name] = merged
	}
	return out
}

// sendgridEvents are the event booleans of a SendGrid event webhook.
var sendgridEvents = []string{"bounce", "click", "deferred", "delivered", "dropped", "group_resubscribe", "group_unsubscribe", "open", "processed", "spam_report", "unsubscribe"}

func invalidEvent(s string) error {
	return param.Invalid("recipe sendgrid.event_webhook", "events", "holds %q, which is no SendGrid event (%s)", s, strings.Join(sendgridEvents, ", "))
}

// escapePointer escapes a JSON pointer segment (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
