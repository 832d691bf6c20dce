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
//       {...}}, PATCH replaces the fields it names; STATSIG-API-KEY; a
//       rule written without an id is given one (so is a GrowthBook
//       rule).
//       Source: docs.statsig.com/api-reference/gates.

import (
	"encoding/json"
	"net/http"
	"path"
	"strings"
)

// HTTPTarget is one collection pattern of a recipe's target and its shape.
type HTTPTarget struct {
	Pattern string
	Shape   HTTPShape
}

// HTTPTargets are the shapes of the recipes' targets, by recipe.
var HTTPTargets = map[string][]HTTPTarget{
	// Described: answers checked against the providers' descriptions.
	"cloudflare.dns_cname": {{"zones/*/dns_records", HTTPShape{Object: "result", List: "result", Checked: true, Errors: "cloudflare",
		CreateStatus: 200, DeleteStatus: 200, DeleteBody: `{"result":{"id":{id}},"success":true,"errors":[],"messages":[]}`,
		Envelope:  map[string]any{"success": true, "errors": []any{}, "messages": []any{}},
		Generated: map[string]string{"created_on": "now", "modified_on": "now", "proxiable": "json:true", "tags": "json:[]", "meta": "json:{}"}}}},
	"github.repo_webhook": {{"repos/*/*/hooks", HTTPShape{BareList: true, NumericID: true, Checked: true, Errors: "github",
		Generated: map[string]string{"type": `json:"Repository"`, "created_at": "now", "updated_at": "now", "url": "self", "test_url": "self:/test",
			"ping_url": "self:/pings", "deliveries_url": "self:/deliveries", "last_response": `json:{"code":null,"status":"unused","message":null}`}}}},
	"resend.webhook": {{"webhooks", HTTPShape{List: "data", AfterPaging: true, Checked: true,
		DeleteStatus: 200, DeleteBody: `{"object":"webhook","id":{id},"deleted":true}`,
		Generated: map[string]string{"object": `json:"webhook"`, "created_at": "now", "status": `json:"enabled"`, "signing_secret": "token"}}}},
	"resend.api_key": {{"api-keys", HTTPShape{List: "data", AfterPaging: true, Checked: true, Once: []string{"token"},
		DeleteStatus: 200, DeleteBody: `{"object":"api_key","id":{id},"deleted":true}`,
		Generated: map[string]string{"token": "token", "created_at": "now"}}}},
	"svix.endpoint": {{"api/v1/app/*/endpoint", HTTPShape{IDField: "uid", Checked: true, Errors: "svix", IDPrefix: "ep_", IDLength: 30,
		Generated: map[string]string{"createdAt": "now", "updatedAt": "now", "metadata": "json:{}", "version": "json:1"}}}},
	"turso.database_branch": {{"v1/organizations/*/databases", HTTPShape{IDField: "name", Object: "database", Checked: true, Errors: "turso",
		CreateStatus: 200, DeleteStatus: 200, DeleteBody: `{"database":{id}}`,
		Generated: map[string]string{"DbId": "token", "Hostname": "slug:name"}}}},
	"unleash.flag_strategy": {{"api/admin/projects/*/features/*/environments/*/strategies", HTTPShape{BareList: true, Checked: true,
		CreateStatus: 200, DeleteStatus: 200}}},

	// Without a description here: the shapes model the documented API.
	"sentry.release":           {{"organizations/*/releases", HTTPShape{IDField: "version"}}},
	"configcat.targeting_rule": {{"v1/environments/*/settings/*", HTTPShape{}}},
	"growthbook.force_rule":    {{"api/v1/features", HTTPShape{Object: "feature", PostUpdates: true, EntryIDs: []string{"/environments/dev/rules", "/environments/production/rules"}}}},
	"honeycomb.marker":         {{"1/markers/*", HTTPShape{BareList: true, CreateStatus: 200, Generated: map[string]string{"created_at": "now"}}}},
	"postmark.server": {{"postmark/servers", HTTPShape{IDField: "ID", NumericID: true, List: "Servers", OffsetParam: "offset", SizeParam: "count",
		CreateStatus: 200, Generated: map[string]string{"ApiTokens": "tokens"}}}},
	"postmark_server.webhook": {{"postmark/webhooks", HTTPShape{IDField: "ID", NumericID: true, List: "Webhooks", CreateStatus: 200}}},
	"sendgrid.event_webhook":  {{"v3/user/webhooks/event/settings", HTTPShape{List: "webhooks", ListSuffix: "all"}}},
	"sendgrid.parse_setting":  {{"v3/user/webhooks/parse/settings", HTTPShape{IDField: "hostname", List: "result"}}},
	"sentry.deploy":           {{"organizations/*/releases/*/deploys", HTTPShape{LinkPaging: true, Generated: map[string]string{"dateFinished": "now"}}}},
	"split.targeting_rule":    {{"internal/api/v2/splits/ws/*/*/environments", HTTPShape{}}},
	"statsig.gate_rule":       {{"console/v1/gates", HTTPShape{Object: "data", EntryIDs: []string{"/rules"}}}},
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

// targeted answers as the target whose shape the request's collection
// has: its error format, and its delete's status and body.
func (g *generic) targeted(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := newRecorder()
		h(rec, r)
		g.mu.Lock()
		sh, id := g.requestShape(r)
		g.mu.Unlock()
		if rec.status >= 400 && sh.Errors != "" {
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal(rec.body.Bytes(), &e) == nil && e.Error.Code != "" {
				rec.body.Reset()
				writeJSON(rec, rec.status, targetError(sh.Errors, rec.status, e.Error.Code, e.Error.Message))
			}
		}
		if r.Method == http.MethodDelete && rec.status == http.StatusNoContent && sh.DeleteStatus != 0 {
			rec.status = sh.DeleteStatus
			if sh.DeleteBody != "" {
				idj, _ := json.Marshal(id)
				rec.header.Set("Content-Type", "application/json; charset=utf-8")
				rec.body.WriteString(strings.ReplaceAll(sh.DeleteBody, "{id}", string(idj)))
			}
		}
		rec.flush(w)
	}
}

// requestShape is the shape of the request's collection: the whole path
// when a rule names it, else its parent (the path is an object's). Callers
// hold g.mu.
func (g *generic) requestShape(r *http.Request) (HTTPShape, string) {
	p := collectionPath(r)
	for _, rule := range g.shapes {
		if ok, _ := path.Match(rule.pattern, p); ok {
			return g.shapeOf(p), ""
		}
	}
	coll, id := objectPath(r)
	return g.shapeOf(coll), id
}

// answersChecked reports whether the answer to a request for sub (the
// path beneath /http) is the target's own, to be validated.
func (g *generic) answersChecked(sub string) bool {
	r := &http.Request{}
	r.SetPathValue("path", strings.TrimPrefix(sub, "/"))
	g.mu.Lock()
	defer g.mu.Unlock()
	sh, _ := g.requestShape(r)
	return sh.Checked
}

// targetError is an error body in a target's format.
func targetError(format string, status int, code, msg string) any {
	switch format {
	case "github":
		return map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest"}
	case "svix":
		return map[string]any{"code": code, "detail": msg}
	case "turso":
		return map[string]any{"error": msg}
	case "cloudflare":
		return map[string]any{"success": false, "errors": []any{map[string]any{"code": 7000 + status, "message": msg}}, "messages": []any{}, "result": nil}
	}
	return map[string]any{"error": map[string]any{"code": code, "message": msg}}
}

// withEnvelope adds the shape's envelope fields to an answer.
func withEnvelope(sh HTTPShape, m map[string]any) map[string]any {
	for k, v := range sh.Envelope {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

// selfURL is an object's URL beneath the sim's /http prefix (a path: the
// sim does not know the host it is served at).
func selfURL(coll, id string) string {
	return "https://sim.invalid/" + ProviderHTTP + "/" + coll + "/" + id
}

// giveEntryIDs gives every object entry of the arrays the shape's EntryIDs
// point at an "id" when it has none. Callers hold g.mu.
func (g *generic) giveEntryIDs(sh HTTPShape, doc map[string]any) {
	for _, p := range sh.EntryIDs {
		var v any = doc
		for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[seg]
		}
		list, _ := v.([]any)
		for _, e := range list {
			if m, ok := e.(map[string]any); ok && m["id"] == nil {
				m["id"] = "rule_" + g.randString(12, lowerDigits)
			}
		}
	}
}
