package httpop

import "github.com/sponson/apply/pkg/adapter"

// The provider block of both ops: providers.http.<api>.
var apiBlock = []adapter.ParamSpec{
	{Name: "<api>", Type: adapter.TypeObject, Doc: "one API a line names with its api parameter",
		Fields: []adapter.ParamSpec{
			{Name: "base_url", Type: adapter.TypeString, Doc: "the API's absolute http(s) base URL"},
			{Name: "base_url_env", Type: adapter.TypeString, Doc: "the environment variable holding the base URL (instead of base_url)"},
			{Name: "auth", Type: adapter.TypeObject, Doc: "how to authenticate, one form: {bearer_env}, {authorization_env}, {username_env, password_env} (basic) or {header, value_env}; absent: no credential",
				Fields: []adapter.ParamSpec{
					{Name: "bearer_env", Type: adapter.TypeString, Doc: "the environment variable holding a bearer token"},
					{Name: "authorization_env", Type: adapter.TypeString, Doc: "the environment variable holding the whole Authorization value"},
					{Name: "username_env", Type: adapter.TypeString, Doc: "basic auth: the environment variable holding the user name"},
					{Name: "password_env", Type: adapter.TypeString, Doc: "basic auth: the environment variable holding the password (absent: empty)"},
					{Name: "header", Type: adapter.TypeString, Doc: "header auth: the header the credential is sent in (X-Api-Key)"},
					{Name: "value_env", Type: adapter.TypeString, Doc: "header auth: the environment variable holding its value"}}},
			{Name: "headers", Type: adapter.TypeMap, Doc: "extra headers sent with every request: name → literal value (an API version; never a credential)"},
			{Name: "encoding", Type: adapter.TypeString, Enum: []string{EncodingJSON, EncodingForm}, Doc: "json (default) or form: request bodies as application/x-www-form-urlencoded (nested values as a[b]=v, a[0]=v)"},
			{Name: "idempotency_header", Type: adapter.TypeString, Doc: "a header (Idempotency-Key) sent with a new random key on each create, which makes the create safe to retry"},
			{Name: "paging", Type: adapter.TypeAny, Doc: "how listings page: cursor, after, link or offset, or {type, next: /pointer, param, size_param, size}; default next_cursor (sent as cursor) or has_more (after=<last id>)"},
			{Name: "list_method", Type: adapter.TypeString, Enum: []string{"PATCH", "PUT", "POST"}, Doc: "how http.list_item writes a parent of this API, destroy included; default the line's update_method, else PATCH"},
			{Name: "list_items", Type: adapter.TypeString, Doc: "JSON pointer to the array of this API's listings (/Servers), for Lookup and Destroy; default items, data or results"},
			{Name: "list_suffix", Type: adapter.TypeString, Doc: "a path the listing adds to the objects' collection (SendGrid's /all), cut when an object is addressed by key"},
			{Name: "list_entries", Type: adapter.TypeString, Enum: []string{"exact", "subset"}, Doc: "exact (default): an object entry is the item; subset: an entry holding the item's fields and more the API adds (an id) is the item"},
			{Name: "object_path", Type: adapter.TypeString, Doc: "JSON pointer to the object in a single-object answer (/result); default the answer"},
			{Name: "id_path", Type: adapter.TypeString, Doc: "JSON pointer to an object's id, for every line of this API; default /id"},
			{Name: "list_patch", Type: adapter.TypeString, Doc: "merge (default) or field: how http.list_item PATCHes a list of this API"},
		}},
}

var destroyParam = adapter.ParamSpec{Name: "destroy", Type: adapter.TypeString, Enum: []string{"delete", "keep"}, Default: "delete",
	Doc: "keep: the object outlives the scope (a deploy marker): it is recorded as adopted, so destroy and rollback leave it"}

var sources = []string{
	"https://www.rfc-editor.org/rfc/rfc8288 (Link header, rel=next)",
	"https://www.rfc-editor.org/rfc/rfc7617 (basic authentication)",
	"https://url.spec.whatwg.org/#application/x-www-form-urlencoded",
	"https://www.rfc-editor.org/rfc/rfc6901 (JSON pointer)",
	"https://www.rfc-editor.org/rfc/rfc7386 (JSON merge patch)",
}

func requestParam(name, doc string, fields ...adapter.ParamSpec) adapter.ParamSpec {
	return adapter.ParamSpec{Name: name, Type: adapter.TypeObject, Doc: doc, Fields: fields}
}

var (
	methodField = func(doc string) adapter.ParamSpec {
		return adapter.ParamSpec{Name: "method", Type: adapter.TypeString, Doc: doc}
	}
	pathField = adapter.ParamSpec{Name: "path", Type: adapter.TypeString, Doc: "the path under the API's base URL; {id} is the object's id"}
	bodyField = adapter.ParamSpec{Name: "body", Type: adapter.TypeAny, Doc: "the request body; default fields"}
)

// resourceSpec declares http.resource (id; the outputs a line declares
// come on top).
var resourceSpec = adapter.Spec{
	Adapter: "http", Op: "resource",
	Summary: "a generic REST object",
	Params: []adapter.ParamSpec{
		{Name: "api", Type: adapter.TypeString, Required: true, Doc: "the provider block providers.http.<api>"},
		{Name: "create", Type: adapter.TypeObject, Required: true, Doc: "the create request (path required)", Fields: []adapter.ParamSpec{methodField("POST (default) or PUT"), pathField, bodyField}},
		requestParam("read", "the read request; default <create.path>/{id}", pathField,
			adapter.ParamSpec{Name: "from", Type: adapter.TypeString, Enum: []string{"list"}, Doc: "list: the object is read from its collection's listing (APIs with no read of one object)"}),
		requestParam("update", "the update request; default PATCH of read.path", methodField("PATCH (default), PUT or POST"), pathField, bodyField),
		requestParam("delete", "the delete request; default DELETE of read.path", pathField),
		requestParam("list", "the collection the object is found in by match",
			adapter.ParamSpec{Name: "path", Type: adapter.TypeString, Doc: "default create.path"},
			adapter.ParamSpec{Name: "items", Type: adapter.TypeString, Doc: "JSON pointer to the array; default the answer, or its items, data or results"},
			adapter.ParamSpec{Name: "filter", Type: adapter.TypeString, Enum: []string{"query", "none"}, Doc: "query (default): the match's top-level fields are the listing's query; none: found in the pages"},
			adapter.ParamSpec{Name: "paging", Type: adapter.TypeAny, Doc: "as the API block's paging, for this listing"}),
		{Name: "id_path", Type: adapter.TypeString, Default: "/id", Doc: "JSON pointer to the id in the object"},
		{Name: "fields", Type: adapter.TypeMap, Doc: "the desired state: top-level fields, each compared whole; a field may be {keep: true}"},
		{Name: "match", Type: adapter.TypeMap, Default: "{name: fields.name}", Doc: "fields that identify the object in its collection"},
		{Name: "outputs", Type: adapter.TypeMap, Doc: "output name → JSON pointer into the object, or {path, sensitive: true (masked, never in a receipt), once: true (answered to the create only)}"},
		{Name: "encoding", Type: adapter.TypeString, Enum: []string{EncodingJSON, EncodingForm}, Doc: "the bodies' encoding; default the API block's"},
		destroyParam,
	},
	Outputs:  []adapter.OutputSpec{{Name: "id", When: adapter.Immediate, Doc: "the object's id; the names under outputs come on top"}},
	Key:      "<api>:<read path>, or <api>:<collection path>?<match query>",
	Provider: apiBlock,
	API:      "any JSON REST API: the version is the base URL's and the paths' the line gives",
	Sources:  sources,
}

var listItemSpec = adapter.Spec{
	Adapter: "http", Op: "list_item",
	Summary: "a generic entry in a collection on a parent object",
	Params: []adapter.ParamSpec{
		{Name: "api", Type: adapter.TypeString, Required: true, Doc: "the provider block providers.http.<api>"},
		{Name: "parent", Type: adapter.TypeObject, Required: true, Doc: "the parent object (path required)", Fields: []adapter.ParamSpec{
			{Name: "path", Type: adapter.TypeString, Doc: "the parent's path under the API's base URL"},
			{Name: "update_method", Type: adapter.TypeString, Doc: "PATCH (default, or the API block's list_method), PUT (the whole object) or POST (as PATCH)"},
			{Name: "patch", Type: adapter.TypeString, Doc: "how a PATCH writes the list: merge (a merge patch of the list alone) or field (its top-level field whole); default the API block's list_patch, else merge"}}},
		{Name: "list_path", Type: adapter.TypeString, Required: true, Doc: "JSON pointer to the list in the parent"},
		{Name: "shape", Type: adapter.TypeString, Enum: []string{ShapeArray, ShapeDelimited, ShapeMap}, Default: ShapeArray, Doc: "how the list is held"},
		{Name: "delimiter", Type: adapter.TypeString, Default: ",", Doc: "shape delimited: the separator"},
		{Name: "item", Type: adapter.TypeAny, Required: true, Doc: "the entry: a string (a key, for shape map), or an object for shape array (identified by its canonical JSON)"},
		{Name: "value", Type: adapter.TypeAny, Default: "true", Doc: "shape map: the entry's value"},
		destroyParam,
	},
	Key:      "<api>:<parent path>#<list_path>=<item>",
	ListItem: true,
	Lock:     "http:<base url><parent path>",
	Unmanaged: "the list's entries that are the line's item in another scope (the scope in the item replaced by another scope's name: " +
		"`https://pr-12.preview.acme.dev` beside this line's `https://pr-7.preview.acme.dev`) and that no scope's receipt holds; " +
		"the rest of the list is never reported, nor an object entry of an array. A line whose item holds no scope reports only its own entry.",
	Provider: apiBlock,
	API:      "any JSON REST API: the version is the base URL's and the paths' the line gives",
	Sources:  sources,
}
