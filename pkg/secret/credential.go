package secret

import (
	"slices"
	"strings"
)

// credentialSuffixes end the names of variables that hold credentials.
var credentialSuffixes = []string{
	"_TOKEN", "_KEY", "_SECRET", "PASSWORD", "_PASS", "PASSWD", "PRIVATE_KEY", "_API_KEY", "_PASSPHRASE",
}

// wellKnownCredentials are named explicitly, so that a change to the suffix
// rules cannot drop one of the credentials Sponson itself uses.
var wellKnownCredentials = map[string]bool{
	"GITHUB_TOKEN": true, "GH_TOKEN": true, "VERCEL_TOKEN": true, "NEON_API_KEY": true,
	"SUPABASE_ACCESS_TOKEN": true, "AUTH0_MANAGEMENT_TOKEN": true, "SPONSON_GIT_TOKEN": true,
	"ACTIONS_RUNTIME_TOKEN": true, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": true,
	"TOKEN": true, "SECRET": true, "PASS": true, "API_KEY": true,
}

// LooksLikeCredentialEnv reports whether an environment variable's name says
// it holds a credential: a well-known name, or a name ending (in any case) in
// _TOKEN, _KEY, _SECRET, PASSWORD, _PASS, PASSWD, PRIVATE_KEY, _API_KEY or
// _PASSPHRASE. Passwords inside URL- or DSN-valued variables (DATABASE_URL)
// are found by the redactor's URL rule, not by name.
func LooksLikeCredentialEnv(name string) bool {
	up := strings.ToUpper(name)
	if wellKnownCredentials[up] {
		return true
	}
	return slices.ContainsFunc(credentialSuffixes, func(s string) bool { return strings.HasSuffix(up, s) })
}
