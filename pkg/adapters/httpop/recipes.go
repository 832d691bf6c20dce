package httpop

import (
	"net/url"
	"strconv"

	"github.com/sponson/apply/pkg/adapter"
)

// The recipes. Each expands to an http.resource (or http.list_item) line
// that follows its provider's documented REST API; the pages are each
// recipe's Sources. Decisions common to all: identity parameters (path
// parts, names that find the object) must be known before the run;
// secrets the provider returns only once are never compared (they are not
// in fields); a recipe's credential variable and base-URL override are the
// provider's usual names, so CI secrets carry over.

func str(p map[string]any, name, def string) any {
	if v, ok := p[name]; ok {
		return v
	}
	return def
}

func seg(p map[string]any, name string) string {
	switch v := p[name].(type) {
	case string:
		return url.PathEscape(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatInt(int64(v), 10)
	}
	return ""
}

func bearer(api, baseURL, urlVar, tokenVar string) map[string]any {
	b := map[string]any{"base_url_env": urlVar, "auth": map[string]any{"bearer_env": tokenVar}}
	if baseURL != "" {
		b["base_url"] = baseURL
	}
	return b
}

// arrayEntry is a list_item expansion: item, an entry of the array at
// listPath (a JSON pointer) in the object at parentPath.
func arrayEntry(parentPath, listPath string, item any) map[string]any {
	return map[string]any{"parent": map[string]any{"path": parentPath}, "list_path": listPath, "shape": ShapeArray, "item": item}
}

func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

var idOut = adapter.OutputSpec{Name: "id", When: adapter.Immediate, Doc: "the provider's id of the object"}

var recipes = map[string]recipe{
	"cloudflare.dns_cname": {
		spec: adapter.Recipe{Name: "cloudflare.dns_cname", Expands: "resource",
			Summary: "a CNAME record in a Cloudflare zone",
			Params: []adapter.ParamSpec{
				{Name: "zone", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the zone id"},
				{Name: "name", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the record's full name (pr-42.example.com)"},
				{Name: "content", Type: adapter.TypeString, Required: true, Doc: "the target host name"},
				{Name: "proxied", Type: adapter.TypeBool, Default: "false", Doc: "served through Cloudflare's proxy"},
				{Name: "ttl", Type: adapter.TypeInt, Default: "1 (automatic)", Doc: "time to live in seconds, 1 for automatic"},
			},
			Outputs:     []adapter.OutputSpec{idOut, {Name: "hostname", When: adapter.Immediate, Doc: "the record's name"}},
			Key:         "cloudflare:/zones/<zone>/dns_records?name=<name>&type=CNAME",
			Credentials: []string{"CLOUDFLARE_API_TOKEN"}, BaseURLVar: "CLOUDFLARE_API_URL", BaseURL: "https://api.cloudflare.com/client/v4",
			API: "Cloudflare API v4: /client/v4/zones/{zone_id}/dns_records[/{dns_record_id}]",
			Sources: []string{
				"https://developers.cloudflare.com/api/resources/dns/subresources/records/methods/create/ (POST /zones/{zone_id}/dns_records; answers {result: record})",
				"https://app.unpkg.com/cloudflare@3.1.0/files/src/resources/dns/records.ts (create, edit PATCH, delete and list of /zones/{zone_id}/dns_records[/{id}], unwrapping result)",
			}},
		api:   "cloudflare",
		block: with(bearer("cloudflare", "https://api.cloudflare.com/client/v4", "CLOUDFLARE_API_URL", "CLOUDFLARE_API_TOKEN"), "object_path", "/result"),
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			coll := "/zones/" + seg(p, "zone") + "/dns_records"
			fields := map[string]any{"type": "CNAME", "name": p["name"], "content": p["content"], "proxied": false, "ttl": 1}
			for _, k := range []string{"proxied", "ttl"} {
				if v, ok := p[k]; ok {
					fields[k] = v
				}
			}
			return map[string]any{
				"create": map[string]any{"path": coll}, "read": map[string]any{"path": coll + "/{id}"},
				"list":   map[string]any{"path": coll, "items": "/result"},
				"match":  map[string]any{"type": "CNAME", "name": p["name"]},
				"fields": fields, "outputs": map[string]any{"hostname": "/name"},
			}, nil
		},
	},

	"github.repo_webhook": {
		spec: adapter.Recipe{Name: "github.repo_webhook", Expands: "resource",
			Summary: "a webhook of a GitHub repository, found again by its payload URL",
			Params: []adapter.ParamSpec{
				{Name: "owner", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the repository's owner"},
				{Name: "repo", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the repository's name"},
				{Name: "url", Type: adapter.TypeString, Required: true, Doc: "the payload URL (it identifies the hook)"},
				{Name: "events", Type: adapter.TypeList, Default: "[push]", Doc: "the events that trigger it"},
				{Name: "content_type", Type: adapter.TypeString, Enum: []string{"json", "form"}, Default: "json", Doc: "the payload's media type"},
				{Name: "active", Type: adapter.TypeBool, Default: "true", Doc: "deliveries are sent"},
			},
			Outputs:     []adapter.OutputSpec{idOut, {Name: "ping_url", When: adapter.Immediate, Doc: "the hook's ping endpoint"}},
			Key:         "github:/repos/<owner>/<repo>/hooks?/config/url=<url>",
			Credentials: []string{"GITHUB_TOKEN"}, BaseURLVar: "GITHUB_API_URL", BaseURL: "https://api.github.com",
			API: "GitHub REST API, version 2022-11-28 (the default): /repos/{owner}/{repo}/hooks[/{hook_id}]",
			Sources: []string{
				"https://docs.github.com/en/rest/repos/webhooks (create POST /repos/{owner}/{repo}/hooks with name web, config {url, content_type, insecure_ssl}, events, active; get, update PATCH and delete /hooks/{hook_id}; list /hooks)",
				"https://github.com/github/docs/blob/main/content/rest/repos/webhooks.md",
			}},
		api:   "github",
		block: bearer("github", "https://api.github.com", "GITHUB_API_URL", "GITHUB_TOKEN"),
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			coll := "/repos/" + seg(p, "owner") + "/" + seg(p, "repo") + "/hooks"
			events := p["events"]
			if events == nil {
				events = []any{"push"}
			}
			active := p["active"]
			if active == nil {
				active = true
			}
			config := map[string]any{"url": p["url"], "content_type": str(p, "content_type", "json"), "insecure_ssl": "0"}
			fields := map[string]any{"active": active, "events": events, "config": config}
			body := map[string]any{"name": "web", "active": active, "events": events, "config": config}
			return map[string]any{
				"create": map[string]any{"path": coll, "body": body}, "read": map[string]any{"path": coll + "/{id}"},
				"list":  map[string]any{"path": coll},
				"match": map[string]any{"/config/url": p["url"]}, "fields": fields,
				"outputs": map[string]any{"ping_url": "/ping_url"},
			}, nil
		},
	},

	"sentry.release": {
		spec: adapter.Recipe{Name: "sentry.release", Expands: "resource",
			Summary: "a release of a Sentry organization, by version",
			Params: []adapter.ParamSpec{
				{Name: "organization", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the organization's slug"},
				{Name: "version", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the release version (${ctx.git.sha}, app@1.2.3)"},
				{Name: "projects", Type: adapter.TypeList, Required: true, CreateOnly: true, Doc: "the project slugs the release belongs to"},
				{Name: "ref", Type: adapter.TypeString, Doc: "a commit reference"},
				{Name: "url", Type: adapter.TypeString, Doc: "a URL that points to the release"},
			},
			Outputs:     []adapter.OutputSpec{{Name: "id", When: adapter.Immediate, Doc: "the release's version"}},
			Key:         "sentry:/organizations/<organization>/releases/<version>/",
			Credentials: []string{"SENTRY_AUTH_TOKEN"}, BaseURLVar: "SENTRY_API_URL", BaseURL: "https://sentry.io/api/0",
			API: "Sentry Web API v0: /api/0/organizations/{organization}/releases/[{version}/]",
			Sources: []string{
				"https://docs.sentry.io/api/releases/ (Create a New Release for an Organization: POST /api/0/organizations/{org}/releases/ {version, projects, ref, url}; Retrieve, Update (PUT) and Delete an Organization's Release at /releases/{version}/)",
				"https://raw.githubusercontent.com/api-evangelist/sentry/refs/heads/main/examples/sentry-create-release-example.json (request and 201 answer: projects come back as objects, so they are sent at create only)",
			}},
		api:   "sentry",
		block: with(bearer("sentry", "https://sentry.io/api/0", "SENTRY_API_URL", "SENTRY_AUTH_TOKEN"), "id_path", "/version"),
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			coll := "/organizations/" + seg(p, "organization") + "/releases/"
			path := coll + seg(p, "version") + "/"
			fields := map[string]any{}
			body := map[string]any{"version": p["version"], "projects": p["projects"]}
			for _, k := range []string{"ref", "url"} {
				if v, ok := p[k]; ok {
					fields[k], body[k] = v, v
				}
			}
			return map[string]any{
				"create": map[string]any{"path": coll, "body": body}, "read": map[string]any{"path": path},
				"update": map[string]any{"method": "PUT"}, "fields": fields,
			}, nil
		},
	},

	"posthog.release_condition": {
		spec: adapter.Recipe{Name: "posthog.release_condition", Expands: "list_item",
			Summary: "a release condition (a condition group) of a PostHog feature flag",
			Params: []adapter.ParamSpec{
				{Name: "project", Type: adapter.TypeAny, Required: true, Identity: true, Doc: "the project id"},
				{Name: "flag", Type: adapter.TypeAny, Required: true, Identity: true, Doc: "the feature flag's id"},
				{Name: "properties", Type: adapter.TypeList, Required: true, Identity: true,
					Doc: "the condition's property filters [{key, value, operator, type}] (with the rollout, they identify the condition)"},
				{Name: "rollout_percentage", Type: adapter.TypeNumber, Identity: true, Default: "100", Doc: "the share of matching users who get the flag"},
				{Name: "variant", Type: adapter.TypeString, Identity: true, Doc: "a multivariate flag's variant for them"},
			},
			Outputs:     []adapter.OutputSpec{},
			Key:         "posthog:/api/projects/<project>/feature_flags/<flag>/#/filters/groups=<the condition as canonical JSON>",
			Lock:        "http:<base url>/api/projects/<project>/feature_flags/<flag>/",
			Credentials: []string{"POSTHOG_PERSONAL_API_KEY"}, BaseURLVar: "POSTHOG_API_URL", BaseURL: "https://us.posthog.com",
			API: "PostHog API: GET and PATCH /api/projects/{project_id}/feature_flags/{id}/",
			Sources: []string{
				"https://posthog.com/docs/feature-flags/surfaces/api.md (manage flag definitions and release conditions with a personal API key, feature_flag:write)",
				"https://posthog.com/tutorials/api-feature-flags (GET and PATCH /api/projects/{project_id}/feature_flags/{id}/ with filters)",
				"https://raw.githubusercontent.com/api-evangelist/posthog/refs/heads/main/json-schema/posthog-featureflagconditiongroupschema-schema.json (a condition group: properties, rollout_percentage, variant)",
			}},
		api: "posthog",
		// PostHog replaces filters whole on PATCH: the list is written
		// with the rest of filters (list_patch field).
		block: with(bearer("posthog", "https://us.posthog.com", "POSTHOG_API_URL", "POSTHOG_PERSONAL_API_KEY"), "list_patch", PatchField),
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			group := map[string]any{"properties": p["properties"], "rollout_percentage": p["rollout_percentage"]}
			if group["rollout_percentage"] == nil {
				group["rollout_percentage"] = int64(100)
			}
			if v, ok := p["variant"]; ok {
				group["variant"] = v
			}
			return arrayEntry("/api/projects/"+seg(p, "project")+"/feature_flags/"+seg(p, "flag")+"/", "/filters/groups", group), nil
		},
	},

	"resend.webhook": {
		spec: adapter.Recipe{Name: "resend.webhook", Expands: "resource",
			Summary: "a Resend webhook, found again by its endpoint",
			Params: []adapter.ParamSpec{
				{Name: "endpoint", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the URL events are sent to (it identifies the webhook)"},
				{Name: "events", Type: adapter.TypeList, Required: true, Doc: "the event types (email.sent, email.bounced, ...)"},
			},
			Outputs: []adapter.OutputSpec{idOut,
				{Name: "signing_secret", When: adapter.Immediate, Sensitive: true, Doc: "the secret that signs deliveries (whsec_...)"}},
			Key:         "resend:/webhooks?endpoint=<endpoint>",
			Credentials: []string{"RESEND_API_KEY"}, BaseURLVar: "RESEND_API_URL", BaseURL: "https://api.resend.com",
			API: "Resend API (unversioned): /webhooks[/{webhook_id}], listed by after/has_more",
			Sources: []string{
				"https://resend.com/docs/api-reference/webhooks (create POST /webhooks {endpoint, events} → {object, id, signing_secret})",
				"https://resend.com/changelog/managing-webhooks-via-api.md (create, retrieve GET /webhooks/{id}, update PATCH, delete, list {data: [...]})",
			}},
		api:   "resend",
		block: bearer("resend", "https://api.resend.com", "RESEND_API_URL", "RESEND_API_KEY"),
		build: func(p map[string]any, _ adapter.RunCtx) (map[string]any, error) {
			return map[string]any{
				"create": map[string]any{"path": "/webhooks"}, "read": map[string]any{"path": "/webhooks/{id}"},
				// GET /webhooks takes limit, after and before only: the
				// match is found in the pages (after/has_more), not by
				// the query.
				"list":    map[string]any{"path": "/webhooks", "items": "/data", "filter": "none"},
				"match":   map[string]any{"endpoint": p["endpoint"]},
				"fields":  map[string]any{"endpoint": p["endpoint"], "events": p["events"]},
				"outputs": map[string]any{"signing_secret": "/signing_secret"},
			}, nil
		},
	},

	"svix.endpoint": {
		spec: adapter.Recipe{Name: "svix.endpoint", Expands: "resource",
			Summary: "an endpoint of a Svix application, addressed by its uid",
			Params: []adapter.ParamSpec{
				{Name: "app", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the application's id or uid"},
				{Name: "uid", Type: adapter.TypeString, Identity: true, Default: "sponson-${ctx.env}-${ctx.scope}", Doc: "the endpoint's own unique identifier"},
				{Name: "url", Type: adapter.TypeString, Required: true, Doc: "the URL messages are delivered to"},
				{Name: "description", Type: adapter.TypeString, Default: "\"\"", Doc: "a note about the endpoint"},
				{Name: "filter_types", Type: adapter.TypeList, Doc: "only these event types are delivered (absent: all)"},
				{Name: "disabled", Type: adapter.TypeBool, Default: "false", Doc: "deliveries are paused"},
			},
			Outputs:     []adapter.OutputSpec{idOut},
			Key:         "svix:/api/v1/app/<app>/endpoint/<uid>",
			Credentials: []string{"SVIX_AUTH_TOKEN"}, BaseURLVar: "SVIX_API_URL", BaseURL: "https://api.svix.com",
			API: "Svix API v1: /api/v1/app/{app_id}/endpoint[/{endpoint_id}]",
			Sources: []string{
				"https://glama.ai/mcp/connectors/io.usefulapi/svix/tools/svix_create_endpoint (POST /api/v1/app/{app_id}/endpoint; app_id is the id or uid; uid, url, description, disabled)",
				"https://github.com/paypaplane/svix-client/blob/HEAD/docs/Model/EndpointIn.md (EndpointIn: uid, url, description default '', disabled default false, filter types, version)",
				"https://app.unpkg.com/svix@1.67.0/files/dist/api/endpoint.js (get, update PUT, delete /api/v1/app/{app_id}/endpoint/{endpoint_id}, which takes the uid too)",
			}},
		api:   "svix",
		block: bearer("svix", "https://api.svix.com", "SVIX_API_URL", "SVIX_AUTH_TOKEN"),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			uid := str(p, "uid", "sponson-"+run.Env+"-"+run.Scope)
			coll := "/api/v1/app/" + seg(p, "app") + "/endpoint"
			fields := map[string]any{"url": p["url"], "description": str(p, "description", ""), "disabled": p["disabled"]}
			if fields["disabled"] == nil {
				fields["disabled"] = false
			}
			// Svix's EndpointIn names the event type filter eventTypes
			// (svix.json, v1.endpoint.create); a filterTypes field is
			// ignored and the endpoint gets every event.
			if v, ok := p["filter_types"]; ok {
				fields["eventTypes"] = v
			}
			body := with(map[string]any{"uid": uid}, "url", fields["url"], "description", fields["description"], "disabled", fields["disabled"])
			if v, ok := fields["eventTypes"]; ok {
				body["eventTypes"] = v
			}
			s, _ := uid.(string)
			return map[string]any{
				"create": map[string]any{"path": coll, "body": body},
				"read":   map[string]any{"path": coll + "/" + url.PathEscape(s)},
				"update": map[string]any{"method": "PUT"}, "fields": fields,
			}, nil
		},
	},

	"turso.database_branch": {
		spec: adapter.Recipe{Name: "turso.database_branch", Expands: "resource",
			Summary: "a Turso database branched from another database of the organization",
			Params: []adapter.ParamSpec{
				{Name: "organization", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the organization's slug"},
				{Name: "name", Type: adapter.TypeString, Identity: true, Default: "sponson-${ctx.scope}", Doc: "the new database's name"},
				{Name: "parent", Type: adapter.TypeString, Required: true, CreateOnly: true, Doc: "the database it is branched from"},
				{Name: "group", Type: adapter.TypeString, Default: "default", CreateOnly: true, Doc: "the group it is created in"},
			},
			Outputs: []adapter.OutputSpec{{Name: "id", When: adapter.Immediate, Doc: "the database's name"},
				{Name: "hostname", When: adapter.Immediate, Doc: "the database's host name"},
				{Name: "db_id", When: adapter.Immediate, Doc: "the database's DbId"}},
			Key:         "turso:/v1/organizations/<organization>/databases/<name>",
			Credentials: []string{"TURSO_API_TOKEN"}, BaseURLVar: "TURSO_API_URL", BaseURL: "https://api.turso.tech",
			API: "Turso Platform API v1: /v1/organizations/{organizationSlug}/databases[/{databaseName}]",
			Sources: []string{
				"https://turso.tech/openapi.json (POST /v1/organizations/{organizationSlug}/databases {name, group, seed: {type: database, name}}; GET and DELETE .../databases/{databaseName}; answers {database: {DbId, Hostname, Name}})",
				"https://docs.turso.tech/features/platform-api (database branches through the Platform API)",
				"https://github.com/tursodatabase/create-database-action (a branch is a new database seeded from an existing one; group default \"default\")",
			}},
		api:   "turso",
		block: with(bearer("turso", "https://api.turso.tech", "TURSO_API_URL", "TURSO_API_TOKEN"), "object_path", "/database", "id_path", "/Name"),
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			name := str(p, "name", "sponson-"+run.Scope)
			s, _ := name.(string)
			coll := "/v1/organizations/" + seg(p, "organization") + "/databases"
			body := map[string]any{"name": name, "group": str(p, "group", "default"),
				"seed": map[string]any{"type": "database", "name": p["parent"]}}
			return map[string]any{
				"create": map[string]any{"path": coll, "body": body},
				"read":   map[string]any{"path": coll + "/" + url.PathEscape(s)},
				"fields": map[string]any{}, "outputs": map[string]any{"hostname": "/Hostname", "db_id": "/DbId"},
			}, nil
		},
	},

	"unleash.flag_strategy": {
		spec: adapter.Recipe{Name: "unleash.flag_strategy", Expands: "resource",
			Summary: "a strategy of an Unleash feature flag in one environment, found again by its title",
			Params: []adapter.ParamSpec{
				{Name: "project", Type: adapter.TypeString, Identity: true, Default: "default", Doc: "the project id"},
				{Name: "feature", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the feature flag's name"},
				{Name: "environment", Type: adapter.TypeString, Required: true, Identity: true, Doc: "the environment (development, production, ...)"},
				{Name: "title", Type: adapter.TypeString, Identity: true, Default: "sponson ${ctx.env}/${ctx.scope}", Doc: "the strategy's title (it identifies the strategy)"},
				{Name: "strategy", Type: adapter.TypeString, Default: "flexibleRollout", Doc: "the strategy's name (flexibleRollout, default, userWithId, ...)"},
				{Name: "parameters", Type: adapter.TypeMap, Default: "{rollout: \"100\", stickiness: default, groupId: <feature>}", Doc: "the strategy's parameters (strings)"},
				{Name: "constraints", Type: adapter.TypeList, Default: "[]", Doc: "constraints [{contextName, operator, values}]"},
			},
			Outputs:     []adapter.OutputSpec{idOut},
			Key:         "unleash:/api/admin/projects/<project>/features/<feature>/environments/<environment>/strategies?title=<title>",
			Credentials: []string{"UNLEASH_API_TOKEN"}, BaseURLVar: "UNLEASH_API_URL",
			API: "Unleash Admin API: /api/admin/projects/{projectId}/features/{featureName}/environments/{environment}/strategies[/{strategyId}]",
			Sources: []string{
				"https://github.com/Unleash/unleash-server-api-go/blob/client/v0.0.1/client/docs/FeaturesApi.md (AddFeatureStrategy POST, and GET, PUT, DELETE .../environments/{environment}/strategies[/{strategyId}])",
				"https://glama.ai/mcp/servers/@cuongtl1992/unleash-mcp/tools/addStrategy (name, parameters, constraints [{contextName, operator, values}])",
				"https://app.unpkg.com/unleash-server@7.6.1/files/dist/lib/features/project-environments/project-environments-controller.js (createFeatureStrategySchema)",
			}},
		api: "unleash",
		// Unleash has no public host; its API tokens are the whole
		// Authorization value, without a scheme.
		block: map[string]any{"base_url_env": "UNLEASH_API_URL", "auth": map[string]any{"authorization_env": "UNLEASH_API_TOKEN"}},
		build: func(p map[string]any, run adapter.RunCtx) (map[string]any, error) {
			feature, _ := p["feature"].(string)
			project, _ := str(p, "project", "default").(string)
			coll := "/api/admin/projects/" + url.PathEscape(project) + "/features/" + url.PathEscape(feature) +
				"/environments/" + seg(p, "environment") + "/strategies"
			params := p["parameters"]
			if params == nil {
				params = map[string]any{"rollout": "100", "stickiness": "default", "groupId": feature}
			}
			constraints := p["constraints"]
			if constraints == nil {
				constraints = []any{}
			}
			title := str(p, "title", "sponson "+run.Env+"/"+run.Scope)
			return map[string]any{
				"create": map[string]any{"path": coll}, "read": map[string]any{"path": coll + "/{id}"},
				"update": map[string]any{"method": "PUT"},
				// The strategies listing takes no query parameters.
				"list":   map[string]any{"path": coll, "filter": "none"},
				"match":  map[string]any{"title": title},
				"fields": map[string]any{"name": str(p, "strategy", "flexibleRollout"), "title": title, "parameters": params, "constraints": constraints},
			}, nil
		},
	},
}
