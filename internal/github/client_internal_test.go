package github

import (
	"testing"
)

func TestBases(t *testing.T) {
	cases := []struct{ in, api, upload string }{
		{"", "https://api.github.com/", "https://uploads.github.com/"},
		{"https://api.github.com", "https://api.github.com/", "https://uploads.github.com/"},
		{"https://ghe.example.com/api/v3", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/uploads/"},
		{"https://ghe.example.com/api/v3/", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/uploads/"},
		{"http://127.0.0.1:8080/api/v3//", "http://127.0.0.1:8080/api/v3/", "http://127.0.0.1:8080/api/uploads/"},
		// A base that is not GitHub's layout is taken as given.
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/api/uploads/"},
	}
	for _, c := range cases {
		u, err := apiBase(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if u.String() != c.api || uploadBase(u).String() != c.upload {
			t.Errorf("%q: api %s upload %s, want %s %s", c.in, u, uploadBase(u), c.api, c.upload)
		}
	}
	for _, bad := range []string{"not a url", "ftp//x", "/api/v3"} {
		if _, err := apiBase(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := serverBase("https://ghe.example.com/"); got != "https://ghe.example.com" {
		t.Errorf("server base %q", got)
	}
	if got := serverBase(""); got != "https://github.com" {
		t.Errorf("default server base %q", got)
	}
}

func TestRateLimitMessage(t *testing.T) {
	for body, want := range map[string]bool{
		`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`: true,
		`{"message":"API rate limit exceeded for installation ID 7."}`:                                            true,
		`{"message":"You have triggered an abuse detection mechanism."}`:                                          true,
		`{"message":"Resource not accessible by integration"}`:                                                    false,
		`{"message":"Must have admin rights to Repository."}`:                                                     false,
	} {
		if got := rateLimitMessage([]byte(body)); got != want {
			t.Errorf("%s: %v", body, got)
		}
	}
}

func TestAcceptedPermission(t *testing.T) {
	for h, want := range map[string]string{
		"":                                  "",
		"contents=write":                    "contents: write",
		"issues=write; pull_requests=write": "issues: write` or `pull-requests: write",
		"actions=read,contents=read":        "actions: read, contents: read",
	} {
		if got := acceptedPermission(h); got != want {
			t.Errorf("%q: %q, want %q", h, got, want)
		}
	}
}
