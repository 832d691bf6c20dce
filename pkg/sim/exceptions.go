package sim

import (
	"fmt"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
)

// Exception is one place where a provider's published description is
// itself wrong: the provider's documentation (Docs) says otherwise, and
// the sim validates against the description corrected by Fix. Sample is a
// request (or, with Status, the answer to one) the documentation describes
// and the uncorrected description rejects; a test checks that each row is
// still needed.
type Exception struct {
	Description string // the description's file name: "launchdarkly"
	Operation   string // the operationId it corrects
	Docs        string // the provider's documentation that says otherwise
	Why         string
	Sample      ExceptionSample
	fix         func(op *openapi3.Operation) error
}

// ExceptionSample is a request beneath the provider's base path; with a
// Status, Response is the answer to it that the row is about.
type ExceptionSample struct {
	Method, Path, ContentType, Body string
	Status                          int
	Response                        string
}

func (x Exception) apply(op *openapi3.Operation) error { return x.fix(op) }

// LaunchDarklySemanticPatch is the media type of LaunchDarkly's semantic
// patch requests.
const LaunchDarklySemanticPatch = "application/json; domain-model=launchdarkly.semanticpatch"

// Exceptions is the table of corrections to the providers' descriptions.
var Exceptions = []Exception{
	{
		Description: "launchdarkly", Operation: "patchFeatureFlag",
		Docs: "https://launchdarkly.com/docs/api#updates-using-semantic-patch (and the operation's own description: " +
			"\"To make a semantic patch request, you must append domain-model=launchdarkly.semanticpatch to your Content-Type header\"; " +
			"the body takes comment, environmentKey and instructions, each an object with a kind)",
		Why: "the description documents the semantic patch in prose only: its requestBody has application/json with a JSON patch schema " +
			"({patch} required), so a semantic patch ({environmentKey, instructions}) is refused; the row adds the media type with the documented body",
		Sample: ExceptionSample{Method: "PATCH", Path: "/api/v2/flags/p/f", ContentType: LaunchDarklySemanticPatch,
			Body: `{"environmentKey":"preview","instructions":[{"kind":"addTargets","contextKind":"user","values":["k"],"variationId":"v"}]}`},
		fix: func(op *openapi3.Operation) error {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				return fmt.Errorf("no request body")
			}
			instruction := openapi3.NewObjectSchema().
				WithProperty("kind", openapi3.NewStringSchema()).
				WithAnyAdditionalProperties()
			instruction.Required = []string{"kind"}
			body := openapi3.NewObjectSchema().
				WithProperty("comment", openapi3.NewStringSchema()).
				WithProperty("environmentKey", openapi3.NewStringSchema()).
				WithProperty("instructions", openapi3.NewArraySchema().WithItems(instruction).WithMinItems(1))
			body.Required = []string{"instructions"}
			content := openapi3.Content{}
			for k, v := range op.RequestBody.Value.Content {
				content[k] = v
			}
			content[LaunchDarklySemanticPatch] = openapi3.NewMediaType().WithSchema(body)
			rb := *op.RequestBody.Value
			rb.Content = content
			op.RequestBody = &openapi3.RequestBodyRef{Value: &rb}
			return nil
		},
	},
	{
		Description: "cloudflare", Operation: "dns-records-for-a-zone-create-dns-record",
		Docs: "https://developers.cloudflare.com/api/resources/dns/subresources/records/methods/create/ " +
			"(the create body is type, name, content, proxied, ttl, comment, tags; the id is the answer's, \"Identifier\", read only)",
		Why: "Cloudflare's 2024 description reuses the record schema, which requires id, proxiable, created_on and modified_on, as the " +
			"create body; Cloudflare assigns those (read only), a create cannot send them, so the row drops them from what the create body requires",
		Sample: ExceptionSample{Method: "POST", Path: "/zones/z1/dns_records", ContentType: "application/json",
			Body: `{"type":"CNAME","name":"pr-7.example.com","content":"pr-7.pages.dev","proxied":false,"ttl":1}`},
		fix: func(op *openapi3.Operation) error {
			return rewriteBody(op, func(s *openapi3.SchemaRef) *openapi3.SchemaRef {
				for _, f := range []string{"id", "proxiable", "created_on", "modified_on"} {
					s = dropRequired(s, f, 0)
				}
				return s
			})
		},
	},
	{
		Description: "cloudflare", Operation: "dns-records-for-a-zone-delete-dns-record",
		Docs: "https://developers.cloudflare.com/api/resources/dns/subresources/records/methods/delete/ " +
			"(DELETE /zones/{zone_id}/dns_records/{dns_record_id} with path parameters only; the SDKs send no body)",
		Why:    "Cloudflare's 2024 description marks a request body required on the delete; the row makes it optional",
		Sample: ExceptionSample{Method: "DELETE", Path: "/zones/z1/dns_records/r1"},
		fix: func(op *openapi3.Operation) error {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				return fmt.Errorf("no request body")
			}
			rb := *op.RequestBody.Value
			rb.Required = false
			op.RequestBody = &openapi3.RequestBodyRef{Value: &rb}
			return nil
		},
	},
	{
		Description: "vercel", Operation: "filterProjectEnvs",
		Docs: "https://vercel.com/docs/rest-api/reference/endpoints/projects/retrieve-the-environment-variables-of-a-project-by-id-or-name " +
			"(the answer is {envs: [...], pagination: {...}}; with decrypt and a single variable, the variable)",
		Why: "the answer is a oneOf of the variable, {envs, pagination} and {envs}, none closed to other fields: every listing " +
			"Vercel sends, {envs, pagination}, matches the last two, so no answer can satisfy the oneOf; the row reads it as the anyOf it means",
		Sample: ExceptionSample{Method: "GET", Path: "/v10/projects/web/env", Status: 200,
			Response: `{"envs":[` + vercelEnv + `],"pagination":{"count":1,"next":null,"prev":null}}`},
		fix: anyOfResponse("200"),
	},
	{
		Description: "vercel", Operation: "editProjectEnv",
		Docs: "https://vercel.com/docs/rest-api/reference/endpoints/projects/edit-an-environment-variable " +
			"(the answer is the edited variable)",
		Why: "the answer is a oneOf of the variable and an empty object schema, which every object matches: the variable Vercel " +
			"sends matches both, so no answer can satisfy the oneOf; the row reads it as the anyOf it means",
		Sample: ExceptionSample{Method: "PATCH", Path: "/v9/projects/web/env/e1", ContentType: "application/json",
			Body: `{"value":"v2"}`, Status: 200, Response: vercelEnv},
		fix: anyOfResponse("200"),
	},
	{
		Description: "clerk", Operation: "ListRedirectURLs",
		Docs: "https://clerk.com/docs/reference/backend/redirect-urls/get-redirect-url-list (the list is a paginated resource " +
			"response, data and the total count) and the operation's own paginated parameter (\"If true, the results will be paginated\")",
		Why: "the description declares paginated but documents only the bare array; with paginated=true Clerk answers as its other " +
			"paginated lists do, {data, total_count}; the row adds that shape beside the array",
		Sample: ExceptionSample{Method: "GET", Path: "/v1/redirect_urls?paginated=true&limit=10&offset=0", Status: 200,
			Response: `{"data":[{"object":"redirect_url","id":"ru_1","url":"https://a.example/cb","created_at":1,"updated_at":1}],"total_count":1}`},
		fix: func(op *openapi3.Operation) error {
			r := op.Responses.Value("200")
			if r == nil || r.Value == nil {
				return fmt.Errorf("no 200 answer")
			}
			mt := r.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil || mt.Schema.Value.Items == nil {
				return fmt.Errorf("the 200 answer is not an array")
			}
			page := openapi3.NewObjectSchema().
				WithPropertyRef("data", mt.Schema).
				WithProperty("total_count", openapi3.NewInt64Schema())
			page.Required = []string{"data", "total_count"}
			m := *mt
			m.Schema = &openapi3.SchemaRef{Value: openapi3.NewAnyOfSchema(mt.Schema.Value, page)}
			resp := *r.Value
			resp.Content = openapi3.Content{"application/json": &m}
			op.Responses.Set("200", &openapi3.ResponseRef{Value: &resp})
			return nil
		},
	},
	{
		Description: "cloudflare", Operation: "pages-project-get-project",
		Docs: cloudflareErrors,
		Why:  cloudflareErrorsWhy,
		Sample: ExceptionSample{Method: "GET", Path: "/accounts/a1/pages/projects/gone", ContentType: "", Body: ``,
			Status: 404, Response: cloudflareNotFound},
		fix: failureOnly("4XX"),
	},
	{
		Description: "cloudflare", Operation: "pages-project-update-project",
		Docs: cloudflareErrors,
		Why:  cloudflareErrorsWhy,
		Sample: ExceptionSample{Method: "PATCH", Path: "/accounts/a1/pages/projects/gone", ContentType: "application/json", Body: `{"deployment_configs":{"preview":{"env_vars":{"K":{"type":"plain_text","value":"v"}}}}}`,
			Status: 404, Response: cloudflareNotFound},
		fix: failureOnly("4XX"),
	},
	{
		Description: "cloudflare", Operation: "dns-records-for-a-zone-dns-record-details",
		Docs:   cloudflareErrors,
		Why:    cloudflareErrorsWhy,
		Sample: ExceptionSample{Method: "GET", Path: "/zones/z1/dns_records/gone", Status: 404, Response: cloudflareNotFound},
		fix:    failureOnly("4XX"),
	},
	{
		Description: "vercel", Operation: "getDeployment",
		Docs: "https://vercel.com/docs/rest-api/reference/endpoints/deployments/get-a-deployment-by-id-or-url " +
			"(the answer is the deployment, with its build, environment names, queues, plan and routes)",
		Why: "the answer is a oneOf of the whole deployment and a lighter one whose required fields are a subset of it, neither " +
			"closed to other fields: the whole deployment Vercel sends matches both, so no answer can satisfy the oneOf; the row reads it as the anyOf it means",
		Sample: ExceptionSample{Method: "GET", Path: "/v13/deployments/dpl_1", Status: 200, Response: `{"id":"dpl_1","name":"web",` +
			`"url":"web-1.vercel.app","createdAt":1,"buildingAt":1,"bootedAt":1,"readyState":"READY","status":"READY","type":"LAMBDAS",` +
			`"creator":{"uid":"u1"},"meta":{},"projectId":"prj_1","inspectorUrl":null,"build":{"env":[]},"env":[],` +
			`"isInConcurrentBuildsQueue":false,"isInSystemBuildsQueue":false,"projectSettings":{},"aliasAssigned":true,` +
			`"buildSkipped":false,"public":false,"regions":["iad1"],"version":2,"plan":"hobby","createdIn":"sfo1","ownerId":"team_1","routes":null}`},
		fix: anyOfResponse("200"),
	},
	{
		Description: "unleash", Operation: "getFeatureStrategies",
		Docs: "https://github.com/Unleash/unleash/blob/main/src/lib/features/feature-toggle/feature-toggle-controller.ts " +
			"(getFeatureStrategies answers res.status(200).json(featureStrategies), typed Response<FeatureStrategySchema[]>: the environment's strategies)",
		Why: "the description declares the answer one featureStrategySchema, while the server answers the array of them " +
			"(the route's response schema was written for a single strategy); the row makes the answer an array of featureStrategySchema",
		Sample: ExceptionSample{Method: "GET", Path: "/api/admin/projects/default/features/f/environments/development/strategies", Status: 200,
			Response: `[{"id":"6b5157cb-343a-41e7-bfa3-7b4ec3044840","name":"flexibleRollout","title":"t","parameters":{"rollout":"100"},"constraints":[]}]`},
		fix: arrayResponse("200"),
	},
}

// Cloudflare's error answers, which its descriptions of 2024 type as both
// a success and a failure at once.
const (
	cloudflareErrors = "https://developers.cloudflare.com/fundamentals/api/how-to/make-api-calls/ (an answer that fails is " +
		"{success: false, errors: [{code, message}], messages: [], result: null})"
	cloudflareErrorsWhy = "the 4XX answer is the allOf of the success envelope (success: true, a result) and the failure " +
		"envelope (success: false, result null): no answer can be both; the row keeps the failure envelope"
	cloudflareNotFound = `{"success":false,"errors":[{"code":8000007,"message":"Project not found."}],"messages":[],"result":null}`
)

// failureOnly keeps, of the allOf that op's JSON answer of status is, the
// parts that describe a failure (success: false).
func failureOnly(status string) func(op *openapi3.Operation) error {
	return rewriteResponse(status, func(sc *openapi3.Schema) (*openapi3.Schema, error) {
		if len(sc.AllOf) == 0 {
			return nil, fmt.Errorf("the %s answer is not an allOf", status)
		}
		var keep openapi3.SchemaRefs
		for _, part := range sc.AllOf {
			if part.Value == nil {
				continue
			}
			if sp := part.Value.Properties["success"]; sp != nil && sp.Value != nil && len(sp.Value.Enum) == 1 && sp.Value.Enum[0] == false {
				keep = append(keep, part)
			}
		}
		if len(keep) == 0 {
			return nil, fmt.Errorf("the %s answer has no failure part", status)
		}
		c := *sc
		c.AllOf = keep
		return &c, nil
	})
}

// arrayResponse makes op's JSON answer of status an array of what it
// declares.
func arrayResponse(status string) func(op *openapi3.Operation) error {
	return rewriteResponse(status, func(sc *openapi3.Schema) (*openapi3.Schema, error) {
		if sc.Type.Is("array") {
			return nil, fmt.Errorf("the %s answer is already an array", status)
		}
		return openapi3.NewArraySchema().WithItems(sc), nil
	})
}

// rewriteResponse replaces the JSON answer schema of op's status with f
// of it, on copies: the description's other operations keep theirs.
func rewriteResponse(status string, f func(sc *openapi3.Schema) (*openapi3.Schema, error)) func(op *openapi3.Operation) error {
	return func(op *openapi3.Operation) error {
		r := op.Responses.Value(status)
		if r == nil || r.Value == nil {
			return fmt.Errorf("no %s answer", status)
		}
		mt := r.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
			return fmt.Errorf("the %s answer has no JSON schema", status)
		}
		sc, err := f(mt.Schema.Value)
		if err != nil {
			return err
		}
		m := *mt
		m.Schema = &openapi3.SchemaRef{Value: sc}
		resp := *r.Value
		resp.Content = openapi3.Content{}
		for k, v := range r.Value.Content {
			resp.Content[k] = v
		}
		resp.Content["application/json"] = &m
		op.Responses.Set(status, &openapi3.ResponseRef{Value: &resp})
		return nil
	}
}

// vercelEnv is a variable as Vercel answers it.
const vercelEnv = `{"id":"e1","key":"K","value":"v","type":"encrypted","target":["preview"],"gitBranch":"feat","createdAt":1,"updatedAt":1}`

// anyOfResponse makes the oneOf at the top of op's JSON answer of status
// an anyOf: for a description whose alternatives overlap, so that what the
// provider sends matches several of them and no oneOf can hold.
func anyOfResponse(status string) func(op *openapi3.Operation) error {
	return rewriteResponse(status, func(sc *openapi3.Schema) (*openapi3.Schema, error) {
		if len(sc.OneOf) == 0 {
			return nil, fmt.Errorf("the %s answer is not a oneOf", status)
		}
		c := *sc
		c.AnyOf, c.OneOf = c.OneOf, nil
		return &c, nil
	})
}

// rewriteBody replaces the JSON request body schema of op with f of it,
// leaving the shared components (which answers use) as they are.
func rewriteBody(op *openapi3.Operation, f func(*openapi3.SchemaRef) *openapi3.SchemaRef) error {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return fmt.Errorf("no request body")
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return fmt.Errorf("no JSON request body")
	}
	m := *mt
	m.Schema = f(mt.Schema)
	rb := *op.RequestBody.Value
	rb.Content = openapi3.Content{}
	for k, v := range op.RequestBody.Value.Content {
		rb.Content[k] = v
	}
	rb.Content["application/json"] = &m
	op.RequestBody = &openapi3.RequestBodyRef{Value: &rb}
	return nil
}

// dropRequired copies s with name removed from every required list it and
// its allOf, anyOf and oneOf parts hold (not from nested properties).
func dropRequired(s *openapi3.SchemaRef, name string, depth int) *openapi3.SchemaRef {
	if s == nil || s.Value == nil || depth > 8 {
		return s
	}
	v := *s.Value
	v.Required = slices.DeleteFunc(slices.Clone(v.Required), func(r string) bool { return r == name })
	each := func(parts openapi3.SchemaRefs) openapi3.SchemaRefs {
		if parts == nil {
			return nil
		}
		out := make(openapi3.SchemaRefs, len(parts))
		for i, p := range parts {
			out[i] = dropRequired(p, name, depth+1)
		}
		return out
	}
	v.AllOf, v.AnyOf, v.OneOf = each(v.AllOf), each(v.AnyOf), each(v.OneOf)
	return &openapi3.SchemaRef{Value: &v}
}
