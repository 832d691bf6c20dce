package sim

import (
	"fmt"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
)

// Exception is one place where a provider's published description is
// itself wrong: the provider's documentation (Docs) says otherwise, and
// the sim validates against the description corrected by Fix. Sample is a
// request the documentation describes and the uncorrected description
// rejects; a test checks that each row is still needed.
type Exception struct {
	Description string // the description's file name: "launchdarkly"
	Operation   string // the operationId it corrects
	Docs        string // the provider's documentation that says otherwise
	Why         string
	Sample      ExceptionSample
	fix         func(op *openapi3.Operation) error
}

// ExceptionSample is a request beneath the provider's base path.
type ExceptionSample struct {
	Method, Path, ContentType, Body string
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
