package clerk

import "github.com/sponson/apply/pkg/adapter"

var redirectSpec = adapter.Spec{
	Adapter: "clerk", Op: "redirect_allow",
	Summary: "an allowed redirect URL of a Clerk instance (one object per URL)",
	Params: []adapter.ParamSpec{
		{Name: "url", Type: adapter.TypeString, Required: true, Doc: "the redirect URL: https:// or a custom scheme (my-app://callback); an URL already allowed is taken over, never duplicated"},
	},
	Outputs: []adapter.OutputSpec{{Name: "url", When: adapter.Immediate, Doc: "the URL"}},
	Key:     "redirect_url:<url>",
	Unmanaged: "the instance's redirect URLs that are the line's URL in another scope (the scope in the URL replaced by another scope's name) " +
		"and that no scope's receipt holds; its other redirect URLs are never reported. A line whose URL holds no scope reports only its own URL.",
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "Clerk Backend API v1 (description 2026-05-12): GET and POST /v1/redirect_urls, DELETE /v1/redirect_urls/{id}",
	Sources: []string{
		"https://clerk.com/docs/reference/backend/redirect-urls/get-redirect-url-list.md",
		"https://clerk.com/docs/reference/backend/redirect-urls/create-redirect-url.md",
		"https://clerk.com/docs/reference/backend-api/tag/redirect-urls",
	},
}
