package supabase

import "github.com/sponson/apply/pkg/adapter"

var redirectSpec = adapter.Spec{
	Adapter: "supabase", Op: "auth_redirect",
	Summary: "an entry in a Supabase project's auth redirect allow-list",
	Params: []adapter.ParamSpec{
		{Name: "url", Type: adapter.TypeString, Required: true, Doc: "the redirect URL (no commas: the list is one comma-separated string)"},
		{Name: "project", Type: adapter.TypeString, Default: "providers.supabase.project", Doc: "the project ref"},
	},
	Outputs:  []adapter.OutputSpec{{Name: "url", When: adapter.Immediate, Doc: "the URL"}},
	Key:      "redirect:<project>:<url>",
	ListItem: true,
	Lock:     "supabase:<project>:auth-uri-allow-list",
	Unmanaged: "the allow-list's entries that are the line's URL in another scope (the scope in the URL replaced by another scope's name: " +
		"`https://pr-12.preview.acme.dev/**` beside this line's `https://pr-7.preview.acme.dev/**`) and that no scope's receipt holds; " +
		"the rest of the allow-list (production URLs, anyone's own) is never reported. A line whose URL holds no scope reports only its own URL.",
	Provider:    []adapter.ParamSpec{{Name: "project", Type: adapter.TypeString, Doc: "the project ref (a line's project overrides it)"}},
	Credentials: []string{TokenVar},
	BaseURLVar:  URLVar, BaseURL: DefaultURL,
	API: "Supabase Management API v1: GET and PATCH /v1/projects/{ref}/config/auth",
	Sources: []string{
		"https://supabase.com/docs/reference/api",
		"https://zone-www-dot-aapwkakko-supabase.vercel.app/docs/reference/api/v1-get-auth-service-config",
	},
}
